// Differential test of lib/f32.wgsl (the integer-only float operations the SSIM and
// psnr_hvs kernels use) against the host's IEEE arithmetic: f32_from_f64 against
// Math.fround (a double rounded to a float, to nearest even, subnormals kept), f32_mul
// against Math.fround(a * b) (the double product of two floats is exact, so that is the
// correctly rounded float product). Over a million operands per op: random bits, the
// subnormal and overflow boundaries, exact ties and their neighbours, zeros, infinities,
// NaNs. f32_add, f32_sub, f32_div, f32_sqrt against Math.fround of the double result (double
// rounding is innocuous for these at 53 bits, so that is the correctly rounded float
// result), f32_from_i32 against Math.fround, f32_lt / f32_gt against JS's < and >.
// f32_add, f32_sub and f32_div also against exact BigInt sums and quotients rounded to
// nearest even (independent of the double-rounding argument). GPU_F32_SEED replays a run.
// XDG_RUNTIME_DIR must be set for Mesa's lavapipe (any writable folder).
import assert from 'node:assert/strict';
import { openGpuDevice } from '../dist/kernels/gpu/device.js';
import { composeWgsl } from '../dist/kernels/gpu/wgsl.js';
import { f32Constants, probeCases } from '../dist/kernels/gpu/f32-probe.js';
import { resetStartupCacheForTest } from '../dist/kernels/gpu/startup-cache.js';
import { ITEM_KERNEL_PRELUDE, makeRng, runItemKernel } from './helpers/gpu.mjs';

const SEED = Number(process.env.GPU_F32_SEED ?? 0x5f32c0de) >>> 0;
const N = 1 << 20;

const f64 = new Float64Array(1);
const f64w = new Uint32Array(f64.buffer);
const f32 = new Float32Array(1);
const f32w = new Uint32Array(f32.buffer);
const doubleOf = (lo, hi) => { f64w[0] = lo; f64w[1] = hi; return f64[0]; };
const wordsOf = (x) => { f64[0] = x; return [f64w[0], f64w[1]]; };
const floatBits = (x) => { f32[0] = x; return f32w[0]; };
const floatOf = (bits) => { f32w[0] = bits; return f32[0]; };
const isNaN32 = (b) => (b & 0x7fffffff) >>> 0 > 0x7f800000;
const hex = (x) => `0x${(x >>> 0).toString(16).padStart(8, '0')}`;

// A double that rounds to near a float's boundaries: a float widened, then nudged by a tie
// (bit 28 of the low word: half a float ulp) and maybe a double ulp either way.
function nearTie(R, floatWord) {
  const [lo, hi] = wordsOf(floatOf(floatWord));
  const tie = (lo + 0x10000000) >>> 0;
  const nudge = R.pick([0, 0, 1, -1]);
  return [(tie + nudge) >>> 0, hi];
}

function randomFloatWord(R) {
  const s = R.bool() ? 0x80000000 : 0;
  switch (R.int(8)) {
    case 0: return R.u32();
    case 1: return (s | (R.u32() & 0x007fffff)) >>> 0; // subnormal
    case 2: return (s | ((1 + R.int(8)) << 23) | (R.u32() & 0x7fffff)) >>> 0; // just above subnormal
    case 3: return (s | ((254 - R.int(8)) << 23) | (R.u32() & 0x7fffff)) >>> 0; // near overflow
    case 4: return (s | ((100 + R.int(56)) << 23) | (R.u32() & 0x7fffff)) >>> 0; // moderate
    case 5: return floatBits(R.int(65536) / R.pick([1, 4, 16, 256])); // samples as the SSIM kernels read them
    case 6: return R.pick([0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffc12345, 1, 0x80000001, 0x007fffff, 0x00800000, 0x7f7fffff, 0x3f800000]);
    default: return floatBits(floatOf((s | ((110 + R.int(30)) << 23) | (R.u32() & 0x7fffff)) >>> 0)); // SSIM-like magnitudes
  }
}

function randomDouble(R) {
  const s = R.bool() ? 0x80000000 : 0;
  switch (R.int(8)) {
    case 0: return [R.u32(), R.u32()];
    case 1: return nearTie(R, randomFloatWord(R)); // ties in every float range
    case 2: return [R.u32(), (s | ((1023 - 126 - R.int(30)) << 20) | (R.u32() & 0xfffff)) >>> 0]; // float subnormal range and below
    case 3: return [R.u32(), (s | ((1023 + 126 + R.int(4)) << 20) | (R.u32() & 0xfffff)) >>> 0]; // around float overflow
    case 4: { // k * 2^-150 with odd k: exact ties between subnormals, and their neighbours
      const k = (R.int(1 << 24) | 1) * (R.bool() ? 1 : -1);
      const [lo, hi] = wordsOf(k * 2 ** -150);
      return [(lo + R.pick([0, 0, 1, -1])) >>> 0, hi];
    }
    case 5: return [R.u32(), (s | ((1023 - 40 + R.int(80)) << 20) | (R.u32() & 0xfffff)) >>> 0];
    case 6: return R.pick([[0, 0], [0, 0x80000000], [0, 0x7ff00000], [0, 0xfff00000], [0, 0x7ff80000], [1, 0x7ff00000], [0xffffffff, 0x000fffff], [0, 0x47efffff], [0xf0000000, 0x47efffff], [0xefffffff, 0x47efffff], [0, 0x36a00000], [1, 0x36a00000], [0, 0x369fffff]]);
    default: return wordsOf((R.u32() / 2 ** 32) * 2 ** (R.int(60) - 30)); // the filters' sums
  }
}


// Exact references for the sums and quotients, independent of the double path the kernels
// take: a finite float is an integer times 2^-149, so a sum is one exactly (a BigInt), and
// a quotient is rounded from enough quotient bits plus a sticky remainder bit.
function scaled(bits) { // the float as k * 2^-149, k a BigInt
  const e = (bits >>> 23) & 0xff;
  const m = BigInt(e === 0 ? bits & 0x7fffff : (bits & 0x7fffff) | 0x800000);
  const k = e === 0 ? m : m << BigInt(e - 1);
  return bits >>> 31 ? -k : k;
}
// The float nearest to n * 2^p (n a BigInt, p an integer), ties to even, subnormals kept.
function roundScaled(n, p) {
  const neg = n < 0n;
  const a = neg ? -n : n;
  // Bring to at least the subnormal grid: exponent p must reach -149 (or keep 24 bits).
  const keep = Math.max(0, a.toString(2).length - 24, -149 - p);
  let q = a >> BigInt(keep);
  const rest = a - (q << BigInt(keep));
  if (keep > 0) {
    const half = 1n << BigInt(keep - 1);
    if (rest > half || (rest === half && (q & 1n) === 1n)) q += 1n;
  }
  const v = Number(q) * 2 ** (keep + p);
  return floatBits(Math.fround(neg ? -v : v));
}
const finite = (b) => ((b >>> 23) & 0xff) !== 0xff;
function addReference(a, b, negateB) {
  const bb = negateB ? (b ^ 0x80000000) >>> 0 : b;
  const sum = scaled(a) + scaled(bb);
  if (!finite(a) || !finite(bb) || sum === 0n) return floatBits(Math.fround(floatOf(a) + floatOf(bb)));
  return roundScaled(sum, -149);
}
function divReference(a, b) {
  const x = scaled(a);
  const y = scaled(b);
  if (!finite(a) || !finite(b) || x === 0n || y === 0n) return floatBits(Math.fround(floatOf(a) / floatOf(b)));
  // 60 more quotient bits than the divisor: far more than the 24 kept plus a rounding bit.
  const shift = 60 + y.toString(2).length;
  const num = (x < 0n ? -x : x) << BigInt(shift);
  const den = y < 0n ? -y : y;
  let q = num / den;
  if (q * den !== num) q |= 1n; // sticky: the dropped remainder, below every rounding bit
  return roundScaled((x < 0n) !== (y < 0n) ? -q : q, -shift);
}

describe('lib/f32.wgsl: integer-exact float rounding and products (gpu)', function () {
  this.timeout(600000);
  let gpu;
  before(async () => (gpu = await openGpuDevice({ label: 'f32 tests' })));
  after(() => gpu?.destroy());

  async function run(body, inWords, input, constants) {
    const n = input.length / inWords;
    const code = composeWgsl(['lib/f32.wgsl'], `
${ITEM_KERNEL_PRELUDE}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = item_index(gid);
  if (i >= params.x) { return; }
  ${body}
}`);
    const pipeline = await gpu.createComputePipeline(code, { label: 'f32 test', ...(constants ? { constants } : {}) });
    return runItemKernel(gpu, pipeline, 'f32 test', input, n, 1);
  }

  function check(what, n, got, want, describe) {
    let bad = 0;
    const samples = [];
    for (let i = 0; i < n; i++) {
      const w = want(i);
      const ok = isNaN32(w) ? isNaN32(got[i]) && (got[i] & 0x00400000) !== 0 : got[i] === w;
      if (!ok && ++bad <= 8) samples.push(`${describe(i)}: got ${hex(got[i])}, want ${hex(w)}`);
    }
    assert.equal(bad, 0, `${what}: ${bad} of ${n} wrong (seed ${SEED}):\n  ${samples.join('\n  ')}`);
  }

  it(`f32_from_f64 == Math.fround on ${N} doubles (ties, subnormals, overflow, NaN)`, async function () {
    const R = makeRng(SEED);
    const input = new Uint32Array(2 * N);
    for (let i = 0; i < N; i++) input.set(randomDouble(R), 2 * i);
    const got = await run('outp[i] = f32_from_f64(vec2<u32>(inp[2u * i], inp[2u * i + 1u]));', 2, input);
    const x = (i) => doubleOf(input[2 * i], input[2 * i + 1]);
    check('f32_from_f64', N, got, (i) => floatBits(Math.fround(x(i))), (i) => `${hex(input[2 * i + 1])}${hex(input[2 * i]).slice(2)} (${x(i)})`);
    // The NaN results keep the sign and are quiet, as cvtsd2ss gives them.
    for (let i = 0; i < N; i++) if (Number.isNaN(x(i))) assert.equal(got[i] >>> 31, input[2 * i + 1] >>> 31);
  });

  it(`f32_mul == Math.fround(a * b) on ${N} float pairs (ties, subnormal products, overflow, specials)`, async function () {
    const R = makeRng(SEED + 1);
    const input = new Uint32Array(2 * N);
    for (let i = 0; i < N; i++) {
      let a = randomFloatWord(R);
      let b = randomFloatWord(R);
      if (R.int(4) === 0) { // exponents that put the product near the subnormal or overflow edge
        const ea = 1 + R.int(253);
        const eb = R.bool() ? Math.max(1, Math.min(254, 127 - 126 - (ea - 127) + R.int(30) - 24)) : Math.max(1, Math.min(254, 127 + 127 - (ea - 127) - R.int(3)));
        a = ((a & 0x807fffff) | (ea << 23)) >>> 0;
        b = ((b & 0x807fffff) | (eb << 23)) >>> 0;
      } else if (R.int(4) === 0) { // odd 12-bit by 13-bit significands: products that tie at 24 bits
        a = floatBits((2049 + 2 * R.int(1023)) * 2 ** (R.int(40) - 20));
        b = floatBits((4097 + 2 * R.int(2047)) * 2 ** (R.int(40) - 20));
      }
      input[2 * i] = a;
      input[2 * i + 1] = b;
    }
    const got = await run('outp[i] = f32_mul(inp[2u * i], inp[2u * i + 1u]);', 2, input);
    check('f32_mul', N, got, (i) => floatBits(Math.fround(floatOf(input[2 * i]) * floatOf(input[2 * i + 1]))), (i) => `${hex(input[2 * i])} * ${hex(input[2 * i + 1])} (${floatOf(input[2 * i])} * ${floatOf(input[2 * i + 1])})`);
  });
  // Float pairs for +, -, /: random ones, and close exponents with random low bits (ties
  // and cancellation), and far ones (the smaller one's bits all in the sticky part).
  function floatPairs(R, n) {
    const input = new Uint32Array(2 * n);
    for (let i = 0; i < n; i++) {
      let a = randomFloatWord(R);
      let b = randomFloatWord(R);
      if (R.int(3) === 0) {
        const ea = 1 + R.int(253);
        const eb = Math.max(0, Math.min(254, ea + R.range(-26, 26)));
        a = ((a & 0x807fffff) | (ea << 23)) >>> 0;
        b = ((b & 0x807fffff) | (eb << 23)) >>> 0;
      }
      input[2 * i] = a;
      input[2 * i + 1] = b;
    }
    return input;
  }
  const M = 1 << 17;
  const pairText = (input, op) => (i) => `${hex(input[2 * i])} ${op} ${hex(input[2 * i + 1])} (${floatOf(input[2 * i])} ${op} ${floatOf(input[2 * i + 1])})`;

  it(`f32_add, f32_sub == the exactly rounded sum and difference on ${M} float pairs each`, async function () {
    const R = makeRng(SEED + 2);
    const input = floatPairs(R, M);
    const sum = await run('outp[i] = f32_add(inp[2u * i], inp[2u * i + 1u]);', 2, input);
    check('f32_add', M, sum, (i) => addReference(input[2 * i], input[2 * i + 1], false), pairText(input, '+'));
    const diff = await run('outp[i] = f32_sub(inp[2u * i], inp[2u * i + 1u]);', 2, input);
    check('f32_sub', M, diff, (i) => addReference(input[2 * i], input[2 * i + 1], true), pairText(input, '-'));
    // The serial sums' add takes the adapter's own float add where that is exact: same bits.
    const serial = await run('outp[i] = f32_add_serial(inp[2u * i], inp[2u * i + 1u]);', 2, input);
    check('f32_add_serial', M, serial, (i) => addReference(input[2 * i], input[2 * i + 1], false), pairText(input, '+'));
  });

  it(`f32_div == the exactly rounded quotient, f32_lt == <, on ${M} float pairs`, async function () {
    const R = makeRng(SEED + 3);
    const input = floatPairs(R, M);
    const q = await run('outp[i] = f32_div(inp[2u * i], inp[2u * i + 1u]);', 2, input);
    check('f32_div', M, q, (i) => divReference(input[2 * i], input[2 * i + 1]), pairText(input, '/'));
    const lt = await run('outp[i] = select(0u, 1u, f32_lt(inp[2u * i], inp[2u * i + 1u]));', 2, input);
    check('f32_lt', M, lt, (i) => (floatOf(input[2 * i]) < floatOf(input[2 * i + 1]) ? 1 : 0), pairText(input, '<'));
  });

  it(`f32_add, f32_sub, f32_div, f32_sqrt, f32_lt, f32_gt, f32_from_i32 == the host's float arithmetic on ${N / 4} operands each`, async function () {
    const R = makeRng(SEED + 4);
    const n = N / 4;
    const input = new Uint32Array(2 * n);
    for (let i = 0; i < n; i++) {
      let a = randomFloatWord(R);
      let b = randomFloatWord(R);
      const pick = R.int(6);
      if (pick === 0) { // close exponents: cancellation and carries
        b = ((b & 0x807fffff) | (a & 0x7f800000)) >>> 0;
      } else if (pick === 1) { // integers and halves as psnr_hvs forms them
        a = floatBits(R.int(1 << 24) / R.pick([1, 2, 64, 16]));
        b = floatBits(R.int(1 << 20) - R.int(1 << 19));
      } else if (pick === 2) { // exact squares and their neighbours (sqrt's exact and near-exact cases)
        const r = Math.fround((1 + R.int(1 << 12)) * 2 ** (R.int(60) - 30));
        a = (floatBits(Math.fround(r * r)) + R.pick([0, 0, 1, -1])) >>> 0;
      }
      input[2 * i] = a;
      input[2 * i + 1] = b;
    }
    const A = (i) => floatOf(input[2 * i]);
    const B = (i) => floatOf(input[2 * i + 1]);
    const show = (op) => (i) => `${hex(input[2 * i])} ${op} ${hex(input[2 * i + 1])} (${A(i)} ${op} ${B(i)})`;
    const ops = [
      ['f32_add', 'outp[i] = f32_add(inp[2u * i], inp[2u * i + 1u]);', (i) => floatBits(Math.fround(A(i) + B(i))), '+'],
      ['f32_sub', 'outp[i] = f32_sub(inp[2u * i], inp[2u * i + 1u]);', (i) => floatBits(Math.fround(A(i) - B(i))), '-'],
      ['f32_div', 'outp[i] = f32_div(inp[2u * i], inp[2u * i + 1u]);', (i) => floatBits(Math.fround(A(i) / B(i))), '/'],
      ['f32_sqrt', 'outp[i] = f32_sqrt(inp[2u * i]);', (i) => floatBits(Math.fround(Math.sqrt(A(i)))), 'sqrt'],
      ['f32_lt', 'outp[i] = select(0u, 1u, f32_lt(inp[2u * i], inp[2u * i + 1u]));', (i) => (A(i) < B(i) ? 1 : 0), '<'],
      ['f32_gt', 'outp[i] = select(0u, 1u, f32_gt(inp[2u * i], inp[2u * i + 1u]));', (i) => (A(i) > B(i) ? 1 : 0), '>'],
      ['f32_from_i32', 'outp[i] = f32_from_i32(bitcast<i32>(inp[2u * i]));', (i) => floatBits(Math.fround(input[2 * i] | 0)), 'from_i32'],
    ];
    for (const [name, body, want, op] of ops) {
      const got = await run(body, 2, input);
      check(name, n, got, want, show(op));
    }
    // sqrt's signed zero and negative inputs, as sqrtss gives them.
    const special = await run('outp[i] = f32_sqrt(inp[2u * i]);', 2, new Uint32Array([0x80000000, 0, 0xbf800000, 0, 0x7f800000, 0, 0xff800000, 0]));
    assert.deepEqual([...special].map(hex), ['0x80000000', '0xffc00000', '0x7f800000', '0xffc00000']);
  });
  // The native paths (f32.wgsl's f32_native_begin: the GPU's own *, + and - where the inputs
  // and result are normal, products XORed with a run-time 0 so that no native sum can fuse
  // with them). params.z is 0 at run time. Each op against Math.fround of the exact double
  // result, against the integer-only path, and with F32_NATIVE off.
  const NATIVE = 'f32_native_begin(params.z);';
  function nativePairs(R, n) {
    const input = new Uint32Array(3 * n);
    for (let i = 0; i < n; i++) {
      let a = randomFloatWord(R);
      let b = randomFloatWord(R);
      const pick = R.int(6);
      if (pick === 0) { // products at the subnormal / overflow edges, both sides of them
        const ea = 1 + R.int(253);
        const eb = R.bool() ? Math.max(1, Math.min(254, 128 - ea + R.int(6) - 3)) : Math.max(1, Math.min(254, 254 - (ea - 127) - R.int(3)));
        a = ((a & 0x807fffff) | (ea << 23)) >>> 0;
        b = ((b & 0x807fffff) | (eb << 23)) >>> 0;
      } else if (pick === 1) { // odd 12-bit by 13-bit significands: products that tie at 24 bits
        a = floatBits((2049 + 2 * R.int(1023)) * 2 ** (R.int(40) - 20));
        b = floatBits((4097 + 2 * R.int(2047)) * 2 ** (R.int(40) - 20));
      } else if (pick === 2) { // moderate magnitudes, as the filters form them
        a = floatBits(floatOf((((R.bool() ? 1 : 0) << 31) | ((110 + R.int(30)) << 23) | (R.u32() & 0x7fffff)) >>> 0));
        b = floatBits(floatOf((((R.bool() ? 1 : 0) << 31) | ((110 + R.int(30)) << 23) | (R.u32() & 0x7fffff)) >>> 0));
      }
      const p = Math.fround(floatOf(a) * floatOf(b));
      // c: minus the rounded product (an FMA would leave the product's rounding error, the
      // separate operations 0), a near neighbour of it (cancellation), or random.
      let c;
      switch (R.int(4)) {
        case 0: c = floatBits(-p); break;
        case 1: c = (floatBits(-p) + R.pick([1, -1, 2, -2])) >>> 0; break;
        case 2: c = floatBits(Math.fround(-p * (1 + (R.u32() / 2 ** 32 - 0.5) * 2 ** -20))); break;
        default: c = randomFloatWord(R);
      }
      input[3 * i] = a;
      input[3 * i + 1] = b;
      input[3 * i + 2] = c;
    }
    return input;
  }

  for (const [label, constants] of [['native paths on', undefined], ['F32_NATIVE off', { F32_NATIVE: 0 }]]) {
    it(`${label}: f32_mul, f32_add, f32_sub, f32_div and product-then-sum chains == the host's rounding and the integer path on ${M} triples`, async function () {
      const R = makeRng(SEED + 5);
      const input = nativePairs(R, M);
      const A = (i) => floatOf(input[3 * i]);
      const B = (i) => floatOf(input[3 * i + 1]);
      const C = (i) => floatOf(input[3 * i + 2]);
      const show = (op) => (i) => `${hex(input[3 * i])} ${hex(input[3 * i + 1])} ${hex(input[3 * i + 2])} ${op} (${A(i)}, ${B(i)}, ${C(i)})`;
      const a = 'inp[3u * i]';
      const b = 'inp[3u * i + 1u]';
      const c = 'inp[3u * i + 2u]';
      const ops = [
        ['a * b', `outp[i] = f32_mul(${a}, ${b});`, (i) => floatBits(Math.fround(A(i) * B(i)))],
        ['a * b (integer path)', `outp[i] = f32_mul_exact(${a}, ${b});`, (i) => floatBits(Math.fround(A(i) * B(i)))],
        ['b + c', `outp[i] = f32_add(${b}, ${c});`, (i) => floatBits(Math.fround(B(i) + C(i)))],
        ['b - c', `outp[i] = f32_sub(${b}, ${c});`, (i) => floatBits(Math.fround(B(i) - C(i)))],
        ['a * b + c', `outp[i] = f32_add(f32_mul(${a}, ${b}), ${c});`, (i) => floatBits(Math.fround(Math.fround(A(i) * B(i)) + C(i)))],
        ['c + a * b (serial)', `outp[i] = f32_add_serial(${c}, f32_mul(${a}, ${b}));`, (i) => floatBits(Math.fround(C(i) + Math.fround(A(i) * B(i))))],
        ['c - a * b', `outp[i] = f32_sub(${c}, f32_mul(${a}, ${b}));`, (i) => floatBits(Math.fround(C(i) - Math.fround(A(i) * B(i))))],
        ['a * b - c * c', `outp[i] = f32_sub(f32_mul(${a}, ${b}), f32_mul(${c}, ${c}));`, (i) => floatBits(Math.fround(Math.fround(A(i) * B(i)) - Math.fround(C(i) * C(i))))],
        ['a / b', `outp[i] = f32_div(${a}, ${b});`, (i) => divReference(input[3 * i], input[3 * i + 1])],
        ['c / a', `outp[i] = f32_div(${c}, ${a});`, (i) => divReference(input[3 * i + 2], input[3 * i])],
        ['c + a / b', `outp[i] = f32_add(${c}, f32_div(${a}, ${b}));`, (i) => floatBits(Math.fround(C(i) + Math.fround(A(i) / B(i))))],
        ['(a * b) * c + a', `outp[i] = f32_add(f32_mul(f32_mul(${a}, ${b}), ${c}), ${a});`, (i) => floatBits(Math.fround(Math.fround(Math.fround(A(i) * B(i)) * C(i)) + A(i)))],
      ];
      for (const [name, body, want] of ops) {
        const got = await run(`${NATIVE}\n  ${body}`, 3, input, constants);
        check(`${label}: ${name}`, M, got, want, show(name));
      }
    });
  }

  it('f32_lt, f32_gt on signed zeros, NaNs, infinities and neighbours == JS < and >', async function () {
    const words = [0, 0x80000000, 1, 0x80000001, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001, 0x3f800000, 0xbf800000, 0x3f800001, 0xbf800001, 0x7f7fffff, 0xff7fffff, 0x00800000, 0x80800000];
    const input = new Uint32Array(2 * words.length * words.length);
    words.forEach((x, i) => words.forEach((y, j) => input.set([x, y], 2 * (i * words.length + j))));
    const n = input.length / 2;
    const show = (op) => (i) => `${hex(input[2 * i])} ${op} ${hex(input[2 * i + 1])}`;
    const lt = await run('outp[i] = select(0u, 1u, f32_lt(inp[2u * i], inp[2u * i + 1u]));', 2, input);
    check('f32_lt', n, lt, (i) => (floatOf(input[2 * i]) < floatOf(input[2 * i + 1]) ? 1 : 0), show('<'));
    const gt = await run('outp[i] = select(0u, 1u, f32_gt(inp[2u * i], inp[2u * i + 1u]));', 2, input);
    check('f32_gt', n, gt, (i) => (floatOf(input[2 * i]) > floatOf(input[2 * i + 1]) ? 1 : 0), show('>'));
  });
  it('the start-up probe keeps the native paths on this adapter, and its cases tell a fused or truncating adapter apart', async function () {
    // The probe itself, not a verdict an earlier run kept (startup-cache.ts).
    const saved = process.env.VMAF_STREAM_CACHE;
    process.env.VMAF_STREAM_CACHE = '0';
    resetStartupCacheForTest();
    try {
      assert.deepEqual(await f32Constants(gpu), { F32_NATIVE: 1 });
    } finally {
      if (saved === undefined) delete process.env.VMAF_STREAM_CACHE;
      else process.env.VMAF_STREAM_CACHE = saved;
      resetStartupCacheForTest();
    }
    const cases = probeCases();
    const n = cases.length / 3;
    let fused = 0;
    let truncated = 0;
    let belowNormal = 0;
    for (let i = 0; i < n; i++) {
      const [a, b, c] = [floatOf(cases[3 * i]), floatOf(cases[3 * i + 1]), floatOf(cases[3 * i + 2])];
      const exact = a * b; // exact in a double
      const p = Math.fround(exact);
      // An FMA rounds a * b + c once (the double sum is within a double ulp, enough to differ).
      if (Math.fround(exact + c) !== Math.fround(p + c)) fused++;
      // Round toward zero: the float below in magnitude where the product is not exact.
      if (p !== exact && Math.abs(p) > Math.abs(exact)) truncated++;
      if (Math.abs(exact) < 2 ** -126 && exact !== 0) belowNormal++;
    }
    assert.ok(fused > n / 10, `${fused} of ${n} cases change under contraction`);
    assert.ok(truncated > n / 10, `${truncated} of ${n} cases round up in magnitude`);
    assert.ok(belowNormal > n / 50, `${belowNormal} of ${n} products are subnormal`);
  });
});

// Differential tests of the GPU foundation: i64.wgsl against BigInt, f64.wgsl against JS
// numbers (IEEE doubles, round to nearest even, with subnormals), the i64 reduction, the
// device wrapper and the WGSL loader. Runs on any WebGPU adapter; on a CPU-only machine
// on lavapipe (scripts/install-lavapipe.sh). Each op is checked on a few hundred thousand
// inputs in one dispatch; GPU_LIB_SEED=<n> replays a run, GPU_LIB_N=<n> resizes it.
import assert from 'node:assert/strict';
import { openGpuDevice, listGpuAdapters, hasHardwareAdapter } from '../dist/kernels/gpu/device.js';
import { composeWgsl, loadWgsl, f64Bits, f64Literal, i64Literal, readI64, writeI64 } from '../dist/kernels/gpu/wgsl.js';
import { I64Reducer, REDUCE_CHUNK } from '../dist/kernels/gpu/reduce-i64.js';
import { BackendError } from '../dist/errors.js';
import { ITEM_KERNEL_PRELUDE, makeRng, runItemKernel } from './helpers/gpu.mjs';

const SEED = Number(process.env.GPU_LIB_SEED ?? 0x5eed1234) >>> 0;
const N = Number(process.env.GPU_LIB_N ?? 1 << 19); // inputs per op
const MASK64 = (1n << 64n) - 1n;

// ---- doubles as words -------------------------------------------------------------------

const f64buf = new Float64Array(1);
const u32buf = new Uint32Array(f64buf.buffer);
const bitsOf = (x) => { f64buf[0] = x; return [u32buf[0], u32buf[1]]; };
const fromBits = (lo, hi) => { u32buf[0] = lo; u32buf[1] = hi; return f64buf[0]; };
const isNaNBits = (lo, hi) => ((hi & 0x7fffffff) >>> 0) > 0x7ff00000 || (((hi & 0x7fffffff) >>> 0) === 0x7ff00000 && lo !== 0);
const hex64 = (lo, hi) => `0x${(hi >>> 0).toString(16).padStart(8, '0')}${(lo >>> 0).toString(16).padStart(8, '0')}`;
const show = (lo, hi) => `${hex64(lo, hi)} (${fromBits(lo, hi)})`;

// x86 SSE NaN result of a binary op: the first NaN operand made quiet, else the default NaN.
function nanResult(alo, ahi, blo, bhi) {
  if (isNaNBits(alo, ahi)) return [alo, (ahi | 0x00080000) >>> 0];
  if (isNaNBits(blo, bhi)) return [blo, (bhi | 0x00080000) >>> 0];
  return [0, 0xfff80000];
}

const SPECIALS = [
  0, -0, 1, -1, 2, 0.5, 3, Infinity, -Infinity, NaN,
  Number.MAX_VALUE, -Number.MAX_VALUE, Number.MIN_VALUE, -Number.MIN_VALUE,
  2.2250738585072014e-308, -2.2250738585072014e-308, // smallest normal
  2.225073858507201e-308, // largest subnormal
  2 ** 53, 2 ** 53 + 2, 2 ** 52 + 1, 2 ** 31, -(2 ** 31), 2 ** 31 - 1, 2 ** 32, 2 ** 63, -(2 ** 63), 2 ** 64,
  6.5536e-6, 65536 * 1.0e-10, 100, 1e-300, 1e300, 1 / 3, 0.1, Math.PI,
];
const SPECIAL_BITS = [
  ...SPECIALS.map(bitsOf),
  [0x00000001, 0x7ff00000], // signaling NaN
  [0x12345678, 0xfff00001], // negative signaling NaN with payload
  [0x00000000, 0x7ff80000], // quiet NaN
  [0xdeadbeef, 0x7fffffff], // quiet NaN, full payload
  [0xffffffff, 0x000fffff], // largest subnormal
  [0x00000000, 0x00100000], // smallest normal
  [0xffffffff, 0x7fefffff], // largest finite
];

// A double's words, drawn from a mix of shapes that reach every path of the library.
function randomF64(R, shape) {
  const s = R.bool() ? 0x80000000 : 0;
  switch (shape) {
    case 0: return [R.u32(), R.u32()]; // any bits: NaN, inf, subnormal, huge, tiny
    case 1: return [R.u32(), (s | ((1023 - 30 + R.int(61)) << 20) | (R.u32() & 0xfffff)) >>> 0]; // moderate
    case 2: return [R.u32(), (s | (R.u32() & 0xfffff)) >>> 0]; // subnormal
    case 3: return [R.int(2) ? R.u32() & 0xff : 0, (s | (R.int(3) << 20) | (R.bool() ? 0 : R.u32() & 0xfffff)) >>> 0]; // near underflow
    case 4: return [R.u32(), (s | ((2047 - 1 - R.int(40)) << 20) | (R.u32() & 0xfffff)) >>> 0]; // near overflow
    case 5: return bitsOf((R.u32() | 0) >> R.int(32)); // int32 of any size
    case 6: return bitsOf(((R.u32() | 0) >> R.int(32)) + 6.5536e-6); // VIF: int + eps
    case 7: return R.pick(SPECIAL_BITS);
    case 8: return [R.bool() ? 0 : R.u32() & ~((1 << R.int(32)) - 1), (s | ((1023 + R.int(60) - 30) << 20) | (R.u32() & 0xfffff)) >>> 0]; // few low bits
    default: return bitsOf((R.u32() / 4294967296) * 2 ** (R.int(200) - 100) * (s ? -1 : 1));
  }
}

// Pairs (a, b) for a binary op; shapes aimed at rounding, cancellation, exactness, ties.
function randomPair(R, op) {
  const k = R.int(16);
  if (k < 6) return [randomF64(R, R.int(10)), randomF64(R, R.int(10))];
  if (k === 6) { // same or close exponents: cancellation in add/sub
    const a = randomF64(R, 1);
    const e = (a[1] >>> 20) & 0x7ff;
    const e2 = Math.max(1, Math.min(2046, e + R.int(5) - 2));
    const b = [R.bool() ? a[0] ^ (1 << R.int(32)) : R.u32(), (((R.bool() ? 0x80000000 : 0) | (e2 << 20) | (R.bool() ? a[1] & 0xfffff : R.u32() & 0xfffff))) >>> 0];
    return [a, b];
  }
  if (k === 7) { // large exponent gaps: sticky bits in add/sub
    const a = randomF64(R, 1);
    const gap = R.pick([53, 54, 55, 62, 63, 64, 65, 100, 1000]) + R.int(3) - 1;
    const e = (a[1] >>> 20) & 0x7ff;
    const e2 = Math.max(0, e - gap);
    return R.bool() ? [a, [R.u32(), ((R.bool() ? 0x80000000 : 0) | (e2 << 20) | (R.u32() & 0xfffff)) >>> 0]]
      : [[R.u32(), ((R.bool() ? 0x80000000 : 0) | (e2 << 20) | (R.u32() & 0xfffff)) >>> 0], a];
  }
  if (k === 8) { // ties for add: big even integer + odd small
    const big = (2 ** 53) + 2 * R.int(2 ** 20) + (R.bool() ? 0 : 2 ** 53 - 2 ** 30);
    const small = R.pick([1, -1, 3, -3, 0.5, -0.5, 1.5]) * (R.bool() ? 1 : 2);
    return R.bool() ? [bitsOf(big), bitsOf(small)] : [bitsOf(-big), bitsOf(-small)];
  }
  if (k === 9) { // ties for mul: odd 27- and 28-bit integers (product 54..55 bits)
    const a = (2 ** 26 + R.int(2 ** 26)) | 1;
    const b = (2 ** 27 + R.int(2 ** 27)) | 1;
    const sa = 2 ** (R.int(40) - 20) * (R.bool() ? 1 : -1);
    return [bitsOf(a * sa), bitsOf(b * (R.bool() ? 1 : -1))];
  }
  if (k === 10) { // exact quotients and their neighbours
    const b = (2 ** 25 + R.int(2 ** 25)) * 2 ** (R.int(60) - 30);
    const q = 1 + R.int(2 ** 26);
    let a = bitsOf(b * q);
    if (R.bool()) { // one ulp off
      const t = BigInt.asUintN(64, (BigInt(a[1]) << 32n | BigInt(a[0])) + (R.bool() ? 1n : -1n));
      a = [Number(t & 0xffffffffn), Number(t >> 32n)];
    }
    return op === 'div' ? [a, bitsOf(b)] : [a, bitsOf(q)];
  }
  if (k === 11) { // VIF: sigma12 / (sigma1_sq + eps), g * sigma12, g * g * sigma1_sq
    const s12 = (R.u32() | 0) >> R.int(32);
    const s1 = (R.u32() >>> 1) >> R.int(31);
    const den = s1 + 65536 * 1.0e-10;
    const g = s12 / den;
    return R.pick([[bitsOf(s12), bitsOf(den)], [bitsOf(g), bitsOf(s12)], [bitsOf(g * g), bitsOf(s1)], [bitsOf((R.u32() | 0)), bitsOf(g * s12)]]);
  }
  if (k === 12) { // subnormal results: small * small, small / big, small - small
    return [randomF64(R, R.pick([2, 3])), randomF64(R, R.pick([1, 2, 3, 4]))];
  }
  if (k === 13) { // close values near the bottom of the range: subnormal differences and sums
    const a = randomF64(R, R.pick([2, 3]));
    const b = [R.bool() ? a[0] ^ (R.u32() >>> R.int(32)) : R.u32(), ((a[1] & 0x80000000) | (R.bool() ? a[1] & 0x7fffffff : (R.int(3) << 20) | (R.u32() & 0xfffff))) >>> 0];
    return R.bool() ? [a, b] : [b, [a[0], (a[1] ^ 0x80000000) >>> 0]];
  }
  if (k === 14) { // products and quotients that land in or near the subnormal range
    const ea = 1 + R.int(1100), eb = op === 'div' ? Math.max(1, Math.min(2046, ea + 1000 + R.int(80))) : Math.max(1, Math.min(2046, 1023 - 1021 - ea + 1023 - R.int(60)));
    return [[R.u32(), ((R.bool() ? 0x80000000 : 0) | (ea << 20) | (R.u32() & 0xfffff)) >>> 0], [R.u32(), ((R.bool() ? 0x80000000 : 0) | (eb << 20) | (R.u32() & 0xfffff)) >>> 0]];
  }
  return [R.pick(SPECIAL_BITS), randomF64(R, R.int(10))].sort(() => (R.bool() ? 1 : -1));
}

// ---- the harness: one kernel, N invocations, words in and words out -------------------

let gpu;
const pipelines = new Map();

async function run(label, libs, inWords, outWords, body, input) {
  const n = input.length / inWords;
  let pipeline = pipelines.get(label);
  if (!pipeline) {
    const code = composeWgsl(libs, `
${ITEM_KERNEL_PRELUDE}
fn in_u32(i: u32, j: u32) -> u32 { return inp[i * ${inWords}u + j]; }
fn in_i32(i: u32, j: u32) -> i32 { return bitcast<i32>(in_u32(i, j)); }
fn in_v2(i: u32, j: u32) -> vec2<u32> { return vec2<u32>(in_u32(i, j), in_u32(i, j + 1u)); }
fn out_u32(i: u32, j: u32, v: u32) { outp[i * ${outWords}u + j] = v; }
fn out_v2(i: u32, j: u32, v: vec2<u32>) { out_u32(i, j, v.x); out_u32(i, j + 1u, v.y); }
fn out_bool(i: u32, j: u32, v: bool) { out_u32(i, j, select(0u, 1u, v)); }
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = item_index(gid);
  if (i >= params.x) { return; }
${body}
}`);
    pipeline = await gpu.createComputePipeline(code, { label });
    pipelines.set(label, pipeline);
  }
  return runItemKernel(gpu, pipeline, label, input, n, outWords);
}

// Collects mismatches; fails with the first few.
class Check {
  constructor(what) { this.what = what; this.count = 0; this.bad = 0; this.samples = []; }
  eq(got, want, describe) {
    this.count++;
    if (got === want) return;
    this.bad++;
    if (this.samples.length < 8) this.samples.push(`${describe()}: got ${got}, want ${want}`);
  }
  done() {
    assert.equal(this.bad, 0, `${this.what}: ${this.bad} of ${this.count} wrong (seed ${SEED}):\n  ${this.samples.join('\n  ')}`);
  }
}

// ---- BigInt helpers ---------------------------------------------------------------------

const toS64 = (x) => BigInt.asIntN(64, x);
const toU64 = (x) => BigInt.asUintN(64, x);
const wordsOf = (x) => { const v = toU64(x); return [Number(v & 0xffffffffn), Number(v >> 32n)]; };
const fromWords = (lo, hi) => (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0);

const I64_EDGES = [0n, 1n, -1n, 2n, -2n, 0xffffffffn, 0x100000000n, 0xfffffffen, 0x80000000n, 0x7fffffffn, -0x80000000n, -0x100000000n, -0xffffffffn,
  (1n << 63n) - 1n, -(1n << 63n), (1n << 63n) - 2n, -(1n << 63n) + 1n, 1n << 62n, -(1n << 62n), 1n << 53n, (1n << 53n) + 1n, 1n << 32n, (1n << 32n) + 1n];

function randomI64(R) {
  switch (R.int(8)) {
    case 0: case 1: return toS64(R.u64());
    case 2: return BigInt(R.u32() | 0) >> BigInt(R.int(32)); // small, many negative
    case 3: return (R.bool() ? 1n : -1n) * ((1n << 32n) + BigInt(R.int(2000) - 1000)); // around 2^32
    case 4: return R.bool() ? (1n << 63n) - 1n - BigInt(R.int(1 << 20)) : -(1n << 63n) + BigInt(R.int(1 << 20)); // around 2^63
    case 5: return R.pick(I64_EDGES);
    case 6: return toS64(R.u64() >> BigInt(R.int(64))); // random bit length
    default: return -toS64(R.u64() >> BigInt(1 + R.int(63)));
  }
}

// ---- the tests ----------------------------------------------------------------------------

describe('gpu foundation (WebGPU, i64/f64 WGSL libraries, reduction)', function () {
  this.timeout(600000);

  before(async function () {
    gpu = await openGpuDevice({ label: 'gpu-lib tests' });
    console.log(`      adapter: ${gpu.adapterName} (${gpu.isSoftware ? 'software' : 'hardware'}; ${gpu.adapterInfo.description}); features: ${[...gpu.features].join(', ')}; seed ${SEED}, ${N} inputs per op`);
  });

  after(function () {
    gpu?.destroy();
  });

  describe('device', function () {
    it('lists adapters and opens one with limits and features', async function () {
      const list = await listGpuAdapters();
      assert.ok(list.length >= 1);
      assert.ok(list.some((a) => a.id === gpu.adapterId));
      assert.equal(await hasHardwareAdapter(), list.some((a) => !a.isSoftware));
      assert.equal(gpu.isSoftware, list.find((a) => a.id === gpu.adapterId).isSoftware || gpu.adapterInfo.isFallbackAdapter);
      assert.ok(gpu.limits.maxStorageBufferBindingSize >= 128 * 1024 * 1024);
      assert.ok(gpu.limits.maxComputeWorkgroupStorageSize >= 16384);
      assert.ok(gpu.features instanceof Set);
    });

    it('picks an adapter by name substring, case-insensitively, and names the others when none matches', async function () {
      const list = await listGpuAdapters();
      const sub = gpu.adapterName.slice(0, 6).toUpperCase();
      const other = await openGpuDevice({ adapter: sub });
      try {
        assert.equal(other.adapterId, gpu.adapterId);
      } finally {
        other.destroy();
      }
      await assert.rejects(openGpuDevice({ adapter: 'no-such-gpu-xyz' }), (e) => {
        assert.ok(e instanceof BackendError);
        assert.equal(e.code, 'E_GPU');
        assert.match(e.message, /no-such-gpu-xyz/);
        assert.ok(e.message.includes(list.find((a) => a.id === gpu.adapterId).name));
        return true;
      });
    });

    it('turns uncaptured errors and device loss into BackendError E_GPU, and destroy() into neither', async function () {
      const d2 = await openGpuDevice({ label: 'doomed' });
      const seen = [];
      d2.onFailure((e) => seen.push(e));
      d2.device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.STORAGE }); // invalid (Dawn prints it too)
      await assert.rejects(d2.failed, (e) => e instanceof BackendError && e.code === 'E_GPU' && /MapRead|usage/i.test(e.message));
      assert.equal(seen.length, 1);
      assert.throws(() => d2.throwIfFailed(), BackendError);
      d2.destroy();

      const d3 = await openGpuDevice({ label: 'destroyed' });
      d3.destroy();
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(d3.error, undefined);

      const d4 = await openGpuDevice({ label: 'lost' });
      const buf = d4.device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
      const pending = d4.read(buf);
      d4.device.destroy(); // not through d4.destroy(): an unexpected loss
      await assert.rejects(pending, (e) => e instanceof BackendError && e.code === 'E_GPU');
      await assert.rejects(d4.failed, (e) => e instanceof BackendError && /lost/.test(e.message));
    });

    it('reports WGSL errors with line numbers', async function () {
      await assert.rejects(gpu.createComputePipeline('@compute @workgroup_size(1) fn main() {\n  let x: u32 = 1.5;\n}', { label: 'bad.wgsl' }),
        (e) => e instanceof BackendError && e.code === 'E_GPU' && /bad\.wgsl:2:/.test(e.message));
      assert.equal(gpu.error, undefined);
    });
  });

  describe('wgsl loader', function () {
    it('expands includes once each, dependencies first', function () {
      const code = composeWgsl(['lib/i64.wgsl', 'lib/f64.wgsl'], '// #include "lib/i64.wgsl"\nfn k() {}');
      assert.equal(code.match(/^fn i64_add\(/gm).length, 1);
      assert.equal(code.match(/^fn f64_div\(/gm).length, 1);
      assert.ok(code.indexOf('fn i64_add(') < code.indexOf('fn f64_add('));
      assert.ok(!/#include/.test(code));
      assert.ok(loadWgsl('reduce-i64.wgsl').includes('fn workgroup_sum_i64('));
    });

    it('writes exact literals', function () {
      assert.equal(f64Literal(1), 'vec2<u32>(0x0u, 0x3ff00000u)');
      assert.equal(f64Literal(-0), 'vec2<u32>(0x0u, 0x80000000u)');
      assert.deepEqual(f64Bits(65536 * 1.0e-10), bitsOf(65536 * 1.0e-10));
      assert.equal(i64Literal(-1n), 'vec2<u32>(0xffffffffu, 0xffffffffu)');
      assert.equal(i64Literal(0x100000000n), 'vec2<u32>(0x0u, 0x1u)');
      const w = new Uint32Array(2);
      writeI64(w, 0, -(1n << 63n));
      assert.equal(readI64(w), -(1n << 63n));
    });
  });

  describe('i64.wgsl', function () {
    it('add, sub, mul, compare, min/max on 64-bit pairs', async function () {
      const R = makeRng(SEED ^ 1);
      const A = [], B = [];
      const input = new Uint32Array(N * 4);
      for (let i = 0; i < N; i++) {
        let a = randomI64(R), b = randomI64(R);
        if (i % 7 === 0) b = toS64((R.bool() ? 0x100000000n : 1n << 63n) - a + BigInt(R.int(5) - 2)); // sums crossing 2^32 / 2^63
        A.push(a); B.push(b);
        input.set([...wordsOf(a), ...wordsOf(b)], i * 4);
      }
      const out = await run('i64-binary', ['lib/i64.wgsl'], 4, 24, `
  let a = in_v2(i, 0u); let b = in_v2(i, 2u);
  out_v2(i, 0u, i64_add(a, b)); out_v2(i, 2u, i64_sub(a, b)); out_v2(i, 4u, i64_mul(a, b));
  out_v2(i, 6u, i64_min(a, b)); out_v2(i, 8u, i64_max(a, b)); out_v2(i, 10u, u64_min(a, b)); out_v2(i, 12u, u64_max(a, b));
  out_bool(i, 14u, i64_lt(a, b)); out_bool(i, 15u, i64_le(a, b)); out_bool(i, 16u, i64_gt(a, b)); out_bool(i, 17u, i64_ge(a, b));
  out_bool(i, 18u, i64_eq(a, b)); out_bool(i, 19u, i64_ne(a, b)); out_bool(i, 20u, u64_lt(a, b)); out_bool(i, 21u, u64_le(a, b));
  out_bool(i, 22u, u64_gt(a, b)); out_bool(i, 23u, u64_ge(a, b));`, input);
      const c = new Check('i64 binary ops');
      const b2 = (x) => (x ? 1 : 0);
      for (let i = 0; i < N; i++) {
        const a = A[i], b = B[i], ua = toU64(a), ub = toU64(b), o = i * 24;
        const v = (k) => toS64(fromWords(out[o + k], out[o + k + 1]));
        const desc = (op) => () => `${op}(${a}, ${b})`;
        c.eq(v(0), toS64(a + b), desc('add'));
        c.eq(v(2), toS64(a - b), desc('sub'));
        c.eq(v(4), toS64(a * b), desc('mul'));
        c.eq(v(6), a < b ? a : b, desc('min'));
        c.eq(v(8), a > b ? a : b, desc('max'));
        c.eq(toU64(v(10)), ua < ub ? ua : ub, desc('u64_min'));
        c.eq(toU64(v(12)), ua > ub ? ua : ub, desc('u64_max'));
        c.eq(out[o + 14], b2(a < b), desc('lt')); c.eq(out[o + 15], b2(a <= b), desc('le'));
        c.eq(out[o + 16], b2(a > b), desc('gt')); c.eq(out[o + 17], b2(a >= b), desc('ge'));
        c.eq(out[o + 18], b2(a === b), desc('eq')); c.eq(out[o + 19], b2(a !== b), desc('ne'));
        c.eq(out[o + 20], b2(ua < ub), desc('u64_lt')); c.eq(out[o + 21], b2(ua <= ub), desc('u64_le'));
        c.eq(out[o + 22], b2(ua > ub), desc('u64_gt')); c.eq(out[o + 23], b2(ua >= ub), desc('u64_ge'));
      }
      c.done();
    });

    it('shifts (0..70), rounding shifts, neg/abs/clz, mixed 64 x 32 ops, conversions', async function () {
      const R = makeRng(SEED ^ 2);
      const A = [], S = [], C = [];
      const input = new Uint32Array(N * 4);
      for (let i = 0; i < N; i++) {
        const a = randomI64(R), s = R.int(71), cc = R.bool() ? R.u32() : (R.u32() | 0) >> R.int(32) >>> 0;
        A.push(a); S.push(s); C.push(cc);
        input.set([...wordsOf(a), s, cc], i * 4);
      }
      const out = await run('i64-unary', ['lib/i64.wgsl'], 4, 32, `
  let a = in_v2(i, 0u); let s = in_u32(i, 2u); let c = in_u32(i, 3u); let s63 = s & 63u;
  out_v2(i, 0u, i64_shr(a, s)); out_v2(i, 2u, u64_shr(a, s)); out_v2(i, 4u, i64_shl(a, s));
  out_v2(i, 6u, i64_round_shr(a, s63)); out_v2(i, 8u, u64_round_shr(a, s63)); out_v2(i, 10u, i64_bit(s63));
  out_v2(i, 12u, i64_neg(a)); out_v2(i, 14u, i64_abs(a)); out_u32(i, 16u, u64_clz(a));
  out_bool(i, 17u, i64_is_neg(a)); out_bool(i, 18u, i64_is_zero(a)); out_u32(i, 19u, bitcast<u32>(i64_to_i32(a)));
  out_v2(i, 20u, i64_add_i32(a, bitcast<i32>(c))); out_v2(i, 22u, i64_add_u32(a, c));
  out_v2(i, 24u, i64_mul_i32(a, bitcast<i32>(c))); out_v2(i, 26u, i64_mul_u32(a, c));
  out_v2(i, 28u, i64_from_i32(bitcast<i32>(c))); out_v2(i, 30u, i64_from_u32(c));`, input);
      const c = new Check('i64 shifts and mixed ops');
      for (let i = 0; i < N; i++) {
        const a = A[i], s = S[i], s63 = s & 63, cu = BigInt(C[i]), ci = BigInt(C[i] | 0), ua = toU64(a), o = i * 32;
        const v = (k) => toS64(fromWords(out[o + k], out[o + k + 1]));
        const desc = (op) => () => `${op}(${a}, ${s}, ${C[i]})`;
        c.eq(v(0), s >= 64 ? (a < 0n ? -1n : 0n) : a >> BigInt(s), desc('shr'));
        c.eq(toU64(v(2)), s >= 64 ? 0n : ua >> BigInt(s), desc('u64_shr'));
        c.eq(v(4), s >= 64 ? 0n : toS64(a << BigInt(s)), desc('shl'));
        c.eq(v(6), s63 === 0 ? a : toS64(a + (1n << BigInt(s63 - 1))) >> BigInt(s63), desc('round_shr'));
        c.eq(toU64(v(8)), s63 === 0 ? ua : toU64(ua + (1n << BigInt(s63 - 1))) >> BigInt(s63), desc('u64_round_shr'));
        c.eq(toU64(v(10)), 1n << BigInt(s63), desc('bit'));
        c.eq(v(12), toS64(-a), desc('neg'));
        c.eq(v(14), toS64(a < 0n ? -a : a), desc('abs'));
        c.eq(out[o + 16], ua === 0n ? 64 : 64 - ua.toString(2).length, desc('clz'));
        c.eq(out[o + 17], a < 0n ? 1 : 0, desc('is_neg'));
        c.eq(out[o + 18], a === 0n ? 1 : 0, desc('is_zero'));
        c.eq(out[o + 19], Number(ua & 0xffffffffn), desc('to_i32'));
        c.eq(v(20), toS64(a + ci), desc('add_i32'));
        c.eq(v(22), toS64(a + cu), desc('add_u32'));
        c.eq(v(24), toS64(a * ci), desc('mul_i32'));
        c.eq(v(26), toS64(a * cu), desc('mul_u32'));
        c.eq(v(28), ci, desc('from_i32'));
        c.eq(v(30), cu, desc('from_u32'));
      }
      c.done();
    });

    it('exact wide products: 32 x 32 -> 64 (signed, unsigned, mixed) and 64 x 64 -> 128', async function () {
      const R = makeRng(SEED ^ 3);
      const X = [], Y = [], A = [], B = [];
      const input = new Uint32Array(N * 6);
      const edge32 = [0, 1, 0xffffffff, 0x80000000, 0x7fffffff, 0xffff, 0x10000, 0xfffe0001];
      for (let i = 0; i < N; i++) {
        const x = R.int(4) === 0 ? R.pick(edge32) : R.u32() >>> R.int(32);
        const y = R.int(4) === 0 ? R.pick(edge32) : R.u32() >>> R.int(32);
        const a = toU64(randomI64(R)), b = toU64(randomI64(R));
        X.push(x); Y.push(y); A.push(a); B.push(b);
        input.set([x, y, ...wordsOf(a), ...wordsOf(b)], i * 6);
      }
      const out = await run('i64-wide', ['lib/i64.wgsl'], 6, 11, `
  let x = in_u32(i, 0u); let y = in_u32(i, 1u); let a = in_v2(i, 2u); let b = in_v2(i, 4u);
  out_v2(i, 0u, u64_mul_u32_u32(x, y)); out_v2(i, 2u, i64_mul_i32_i32(bitcast<i32>(x), bitcast<i32>(y)));
  out_v2(i, 4u, i64_mul_i32_u32(bitcast<i32>(x), y)); out_u32(i, 6u, u32_mul_hi(x, y));
  let p = u64_mul_128(a, b); out_u32(i, 7u, p.x); out_u32(i, 8u, p.y); out_u32(i, 9u, p.z); out_u32(i, 10u, p.w);`, input);
      const c = new Check('wide products');
      for (let i = 0; i < N; i++) {
        const x = BigInt(X[i]), y = BigInt(Y[i]), xs = BigInt(X[i] | 0), ys = BigInt(Y[i] | 0), o = i * 11;
        const desc = (op) => () => `${op}(${X[i]}, ${Y[i]}, ${A[i]}, ${B[i]})`;
        c.eq(fromWords(out[o], out[o + 1]), x * y, desc('mul_u32_u32'));
        c.eq(toS64(fromWords(out[o + 2], out[o + 3])), xs * ys, desc('mul_i32_i32'));
        c.eq(toS64(fromWords(out[o + 4], out[o + 5])), xs * y, desc('mul_i32_u32'));
        c.eq(BigInt(out[o + 6]), (x * y) >> 32n, desc('mul_hi'));
        const p = (fromWords(out[o + 9], out[o + 10]) << 64n) | fromWords(out[o + 7], out[o + 8]);
        c.eq(p, A[i] * B[i], desc('mul_128'));
      }
      c.done();
    });
  });

  describe('f64.wgsl', function () {
    for (const [op, jsOp] of [['add', (a, b) => a + b], ['sub', (a, b) => a - b], ['mul', (a, b) => a * b], ['div', (a, b) => a / b]]) {
      it(`f64_${op} is bit-exact with IEEE doubles (incl. subnormals, ties, specials, VIF values)`, async function () {
        const R = makeRng(SEED ^ (0x100 + op.charCodeAt(0) + op.charCodeAt(2)));
        const input = new Uint32Array(N * 4);
        for (let i = 0; i < N; i++) {
          const [a, b] = randomPair(R, op);
          input.set([a[0], a[1], b[0], b[1]], i * 4);
        }
        const out = await run(`f64-${op}`, ['lib/f64.wgsl'], 4, 2, `  out_v2(i, 0u, f64_${op}(in_v2(i, 0u), in_v2(i, 2u)));`, input);
        const c = new Check(`f64_${op}`);
        for (let i = 0; i < N; i++) {
          const [alo, ahi, blo, bhi] = input.subarray(i * 4, i * 4 + 4);
          const r = jsOp(fromBits(alo, ahi), fromBits(blo, bhi));
          const [wlo, whi] = Number.isNaN(r) ? nanResult(alo, ahi, blo, bhi) : bitsOf(r);
          c.eq(hex64(out[2 * i], out[2 * i + 1]), hex64(wlo, whi), () => `f64_${op}(${show(alo, ahi)}, ${show(blo, bhi)}) = ${show(wlo, whi)}`);
        }
        c.done();
      });
    }

    it('VIF expression chain: g = s12 / (s1 + eps); sv = (int)(s2 - g*s12); g = min(g, limit); (int64)(g*g*s1) + numer', async function () {
      const R = makeRng(SEED ^ 0x77);
      const input = new Uint32Array(N * 4);
      for (let i = 0; i < N; i++) {
        const sigma1 = R.int(3) === 0 ? R.int(64) : (R.u32() >>> 1) >> R.int(31);
        const sigma2 = R.int(3) === 0 ? R.int(64) : (R.u32() >>> 1) >> R.int(31);
        const sigma12 = R.int(4) === 0 ? R.int(4) : (R.u32() >>> 1) >> R.int(31);
        input.set([sigma1, sigma2, sigma12, R.int(2) ? 100 : 1], i * 4);
      }
      const eps = 65536 * 1.0e-10;
      const out = await run('f64-vif', ['lib/f64.wgsl'], 4, 5, `
  let s1 = in_i32(i, 0u); let s2 = in_i32(i, 1u); let s12 = in_i32(i, 2u); let limit = f64_from_u32(in_u32(i, 3u));
  var g = f64_div(f64_from_i32(s12), f64_add(f64_from_i32(s1), ${f64Literal(eps)}));
  let sv_sq = f64_to_i32(f64_sub(f64_from_i32(s2), f64_mul(g, f64_from_i32(s12))));
  g = f64_min(g, limit);
  let numer1 = u32(max(sv_sq, 0)) + 131072u; // sigma_nsq
  let t = i64_add(f64_to_i64(f64_mul(f64_mul(g, g), f64_from_i32(s1))), i64_from_u32(numer1));
  out_u32(i, 0u, bitcast<u32>(sv_sq)); out_v2(i, 1u, t); out_v2(i, 3u, g);`, input);
      const c = new Check('VIF chain');
      for (let i = 0; i < N; i++) {
        const [s1, s2, s12, limit] = [input[i * 4] | 0, input[i * 4 + 1] | 0, input[i * 4 + 2] | 0, input[i * 4 + 3]];
        let g = s12 / (s1 + eps);
        const svd = s2 - g * s12;
        const st = Math.trunc(svd);
        const sv = Number.isNaN(svd) || st >= 2 ** 31 || st < -(2 ** 31) ? -(2 ** 31) : st;
        g = g < limit ? g : limit;
        const numer1 = (Math.max(sv, 0) + 131072) >>> 0;
        const t = BigInt(Math.trunc(g * g * s1)) + BigInt(numer1);
        const desc = () => `s1=${s1} s2=${s2} s12=${s12} limit=${limit}`;
        c.eq(out[i * 5] | 0, sv, desc);
        c.eq(toS64(fromWords(out[i * 5 + 1], out[i * 5 + 2])), t, desc);
        c.eq(hex64(out[i * 5 + 3], out[i * 5 + 4]), hex64(...bitsOf(g)), desc);
      }
      c.done();
    });

    it('compare (lt, le, gt, ge, eq), min, max follow IEEE and the C macros', async function () {
      const R = makeRng(SEED ^ 0x55);
      const input = new Uint32Array(N * 4);
      for (let i = 0; i < N; i++) {
        let [a, b] = randomPair(R, 'cmp');
        if (i % 5 === 0) b = R.bool() ? a : [a[0] ^ R.int(2), a[1]]; // equal and neighbours
        if (i % 11 === 0) { a = R.pick([bitsOf(0), bitsOf(-0)]); b = R.pick([bitsOf(0), bitsOf(-0), bitsOf(Number.MIN_VALUE)]); }
        input.set([a[0], a[1], b[0], b[1]], i * 4);
      }
      const out = await run('f64-compare', ['lib/f64.wgsl'], 4, 9, `
  let a = in_v2(i, 0u); let b = in_v2(i, 2u);
  out_bool(i, 0u, f64_lt(a, b)); out_bool(i, 1u, f64_le(a, b)); out_bool(i, 2u, f64_gt(a, b));
  out_bool(i, 3u, f64_ge(a, b)); out_bool(i, 4u, f64_eq(a, b));
  out_v2(i, 5u, f64_min(a, b)); out_v2(i, 7u, f64_max(a, b));`, input);
      const c = new Check('f64 compare');
      for (let i = 0; i < N; i++) {
        const [alo, ahi, blo, bhi] = input.subarray(i * 4, i * 4 + 4);
        const a = fromBits(alo, ahi), b = fromBits(blo, bhi), o = i * 9;
        const desc = (op) => () => `${op}(${show(alo, ahi)}, ${show(blo, bhi)})`;
        c.eq(out[o], a < b ? 1 : 0, desc('lt')); c.eq(out[o + 1], a <= b ? 1 : 0, desc('le'));
        c.eq(out[o + 2], a > b ? 1 : 0, desc('gt')); c.eq(out[o + 3], a >= b ? 1 : 0, desc('ge'));
        c.eq(out[o + 4], a === b ? 1 : 0, desc('eq'));
        c.eq(hex64(out[o + 5], out[o + 6]), a < b ? hex64(alo, ahi) : hex64(blo, bhi), desc('min'));
        c.eq(hex64(out[o + 7], out[o + 8]), a > b ? hex64(alo, ahi) : hex64(blo, bhi), desc('max'));
      }
      c.done();
    });

    it('conversions: from i32/u32/i64/u64/f32 (rounding), to i32/i64/u32 (C truncation, x86 out of range)', async function () {
      const R = makeRng(SEED ^ 0x99);
      const input = new Uint32Array(N * 5);
      const aroundInt = [2 ** 31, 2 ** 31 - 1, -(2 ** 31), -(2 ** 31) - 1, 2 ** 32, 2 ** 63, -(2 ** 63), 2 ** 53, 0.5, -0.5, 0.9999999999999999, -1];
      for (let i = 0; i < N; i++) {
        let a;
        switch (R.int(4)) {
          case 0: a = randomF64(R, R.int(10)); break;
          case 1: a = bitsOf(R.pick(aroundInt) * (1 + (R.int(5) - 2) * 2 ** -52) + (R.bool() ? 0 : R.pick([0.5, -0.5, 0.25, -0.75]))); break;
          case 2: a = bitsOf(((R.u32() | 0) + R.u32() / 4294967296) * 2 ** (R.int(70) - 30)); break;
          default: a = [R.u32(), ((R.bool() ? 0x80000000 : 0) | ((1023 + R.int(70)) << 20) | (R.u32() & 0xfffff)) >>> 0];
        }
        const cc = R.int(3) === 0 ? R.pick([0, 1, 0xffffffff, 0x80000000, 0x7fffffff, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0x00000001, 0x807fffff, 0x00800000])
          : R.u32() >>> R.int(32);
        let d = R.int(3) === 0 ? R.pick(I64_EDGES) : toS64(R.u64() >> BigInt(R.int(64)));
        if (i % 9 === 0) d = toS64((R.u64() >> BigInt(R.int(10))) | 1n << BigInt(54 + R.int(9))); // halfway-prone
        if (i % 13 === 0) d = toS64((1n << BigInt(53 + R.int(10))) + (1n << BigInt(R.int(10)))); // exact ties
        if (i % 17 === 0) d = toS64((1n << 63n) | (R.u64() & ~0x7ffn & MASK64) | 0x400n | BigInt(R.int(2))); // u64 ties, sticky bit 0
        input.set([a[0], a[1], cc, ...wordsOf(d)], i * 5);
      }
      const out = await run('f64-convert', ['lib/f64.wgsl'], 5, 20, `
  let a = in_v2(i, 0u); let c = in_u32(i, 2u); let d = in_v2(i, 3u);
  out_u32(i, 0u, bitcast<u32>(f64_to_i32(a))); out_v2(i, 1u, f64_to_i64(a)); out_u32(i, 3u, f64_to_u32(a));
  out_v2(i, 4u, f64_from_i32(bitcast<i32>(c))); out_v2(i, 6u, f64_from_u32(c)); out_v2(i, 8u, f64_from_i64(d));
  out_v2(i, 10u, f64_from_u64(d)); out_v2(i, 12u, f64_from_f32_bits(c)); out_v2(i, 14u, f64_neg(a)); out_v2(i, 16u, f64_abs(a));
  out_bool(i, 18u, f64_is_nan(a)); out_u32(i, 19u, select(0u, 1u, f64_is_inf(a)) | select(0u, 2u, f64_is_zero(a)));`, input);
      const c = new Check('f64 conversions');
      const f32 = new Float32Array(1), f32w = new Uint32Array(f32.buffer);
      for (let i = 0; i < N; i++) {
        const [alo, ahi, cc, dlo, dhi] = input.subarray(i * 5, i * 5 + 5);
        const a = fromBits(alo, ahi), d = toS64(fromWords(dlo, dhi)), o = i * 20;
        const desc = (op) => () => `${op}(a=${show(alo, ahi)}, c=0x${cc.toString(16)}, d=${d})`;
        const t = Math.trunc(a);
        c.eq(out[o] | 0, Number.isNaN(a) || t >= 2 ** 31 || t < -(2 ** 31) ? -(2 ** 31) : t, desc('to_i32'));
        const t64 = Number.isNaN(a) || t >= 2 ** 63 || t < -(2 ** 63) ? -(1n << 63n) : BigInt(t);
        c.eq(toS64(fromWords(out[o + 1], out[o + 2])), t64, desc('to_i64'));
        c.eq(out[o + 3], Number(toU64(t64) & 0xffffffffn), desc('to_u32'));
        c.eq(hex64(out[o + 4], out[o + 5]), hex64(...bitsOf(cc | 0)), desc('from_i32'));
        c.eq(hex64(out[o + 6], out[o + 7]), hex64(...bitsOf(cc)), desc('from_u32'));
        c.eq(hex64(out[o + 8], out[o + 9]), hex64(...bitsOf(Number(d))), desc('from_i64'));
        c.eq(hex64(out[o + 10], out[o + 11]), hex64(...bitsOf(Number(toU64(d)))), desc('from_u64'));
        f32w[0] = cc;
        const fNaN = ((cc & 0x7f800000) === 0x7f800000) && (cc & 0x7fffff) !== 0;
        const want32 = fNaN ? [(cc << 29) >>> 0, ((cc & 0x80000000) | 0x7ff80000 | ((cc & 0x7fffff) >>> 3)) >>> 0] : bitsOf(f32[0]);
        c.eq(hex64(out[o + 12], out[o + 13]), hex64(...want32), desc('from_f32_bits'));
        c.eq(hex64(out[o + 14], out[o + 15]), hex64(alo, (ahi ^ 0x80000000) >>> 0), desc('neg'));
        c.eq(hex64(out[o + 16], out[o + 17]), hex64(alo, (ahi & 0x7fffffff) >>> 0), desc('abs'));
        c.eq(out[o + 18], Number.isNaN(a) ? 1 : 0, desc('is_nan'));
        c.eq(out[o + 19], (Math.abs(a) === Infinity ? 1 : 0) | (a === 0 ? 2 : 0), desc('is_inf/is_zero'));
      }
      c.done();
    });
  });

  describe('reduce-i64', function () {
    let reducer;
    before(async function () { reducer = await I64Reducer.create(gpu); });
    after(function () { reducer?.destroy(); });

    function upload(values, extraUsage = 0) {
      const words = new Uint32Array(Math.max(2, values.length * 2));
      values.forEach((v, i) => writeI64(words, 2 * i, v));
      const buf = gpu.device.createBuffer({ size: words.byteLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | extraUsage });
      gpu.device.queue.writeBuffer(buf, 0, words);
      return buf;
    }
    const sumOf = (vals) => toS64(vals.reduce((s, v) => s + v, 0n));

    it('sums 1M values crossing 2^32 and 2^63 with negatives, exactly and identically on every run', async function () {
      const R = makeRng(SEED ^ 0xabc);
      const n = 1 << 20;
      const vals = Array.from({ length: n }, (_, i) =>
        i % 3 === 0 ? BigInt(R.u32()) + 0xffff0000n // just under / over 2^32
          : i % 3 === 1 ? -BigInt(R.u32()) * BigInt(1 + R.int(1 << 16))
            : toS64(R.u64()) >> BigInt(R.int(8)));
      const buf = upload(vals);
      try {
        const want = sumOf(vals);
        const runs = [];
        for (let k = 0; k < 3; k++) runs.push((await reducer.sum(buf, n))[0]);
        assert.deepEqual(runs, [want, want, want]);
      } finally {
        buf.destroy();
      }
    });

    it('handles segments, offsets, strides and the chunk edges (0, 1, 4095, 4096, 4097, 3 * 4096 + 17)', async function () {
      const R = makeRng(SEED ^ 0xdef);
      for (const n of [0, 1, REDUCE_CHUNK - 1, REDUCE_CHUNK, REDUCE_CHUNK + 1, 3 * REDUCE_CHUNK + 17]) {
        const segments = 3, offset = 5, stride = n + 7;
        const vals = Array.from({ length: offset + segments * stride }, () => toS64(R.u64()) >> BigInt(R.int(40)));
        const buf = upload(vals);
        try {
          const got = await reducer.sum(buf, n, { segments, inputOffset: offset, inputStride: stride });
          const want = Array.from({ length: segments }, (_, s) => sumOf(vals.slice(offset + s * stride, offset + s * stride + n)));
          assert.deepEqual(got, want, `n=${n}`);
        } finally {
          buf.destroy();
        }
      }
    });

    it('lib/reduce-i64.wgsl: workgroup_sum_i64 called twice in a row in a kernel of its own (64 wide)', async function () {
      const R = makeRng(SEED ^ 0x64);
      const groups = 300;
      const vals = Array.from({ length: groups * 64 }, () => toS64(R.u64()) >> BigInt(R.int(34)));
      const buf = upload(vals);
      const out = gpu.device.createBuffer({ size: groups * 16, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
      try {
        const pipeline = await gpu.createComputePipeline(composeWgsl([], `// #include "lib/reduce-i64.wgsl"
const REDUCE_WG_SIZE: u32 = 64u;
@group(0) @binding(0) var<storage, read> inp: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read_write> outp: array<vec2<u32>>;
@compute @workgroup_size(REDUCE_WG_SIZE)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  let v = inp[wg.x * REDUCE_WG_SIZE + lid];
  let s1 = workgroup_sum_i64(lid, v);
  let s2 = workgroup_sum_i64(lid, i64_mul_i32(v, -3));
  if (lid == 0u) { outp[2u * wg.x] = s1; outp[2u * wg.x + 1u] = s2; }
}`), { label: 'wg-sum-twice' });
        const words = await gpu.withErrorScopes('wg-sum-twice', async () => {
          const enc = gpu.device.createCommandEncoder();
          const pass = enc.beginComputePass();
          pass.setPipeline(pipeline);
          pass.setBindGroup(0, gpu.device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: buf } }, { binding: 1, resource: { buffer: out } }] }));
          pass.dispatchWorkgroups(groups);
          pass.end();
          gpu.device.queue.submit([enc.finish()]);
          return new Uint32Array(await gpu.read(out));
        });
        for (let g = 0; g < groups; g++) {
          const part = vals.slice(g * 64, g * 64 + 64);
          assert.equal(readI64(words, 4 * g), sumOf(part), `group ${g}`);
          assert.equal(readI64(words, 4 * g + 2), toS64(sumOf(part) * -3n), `group ${g}`);
        }
      } finally {
        buf.destroy();
        out.destroy();
      }
    });

    it('records into a caller encoder, reusable across submits (one plan per job shape)', async function () {
      const vals = Array.from({ length: 10000 }, (_, i) => BigInt(i) * (i % 2 ? -1n : 1n) * 0x1_0000_0001n);
      const buf = upload(vals);
      const out = gpu.device.createBuffer({ size: 64, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
      try {
        for (let k = 0; k < 2; k++) {
          const enc = gpu.device.createCommandEncoder();
          reducer.encode(enc, { input: buf, count: 10000, output: out, outputOffset: 3 });
          gpu.device.queue.submit([enc.finish()]);
        }
        const words = new Uint32Array(await gpu.read(out));
        assert.equal(readI64(words, 6), sumOf(vals));
        assert.throws(() => reducer.encode(gpu.device.createCommandEncoder(), { input: buf, count: 10000, output: buf }), BackendError);
      } finally {
        buf.destroy();
        out.destroy();
      }
    });
  });
});

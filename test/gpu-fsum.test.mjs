// Differential test of lib/fsum.wgsl (the fixed-point form of a sequential double sum of
// float terms, ssim-maps.wgsl's tap sums) against the sequential double sum itself: the
// host's (JS numbers are IEEE doubles: acc += t is the chain libvmaf runs) and the device's
// f64_add chain. The kernel below sums each term set as window_sum and decimate do (bounds,
// fixed point with the per-step check, else f64_add), and also by the f64_add chain alone.
// Term sets are adversarial: exponent spans just under and over the 53-bit limit, negative
// terms, cancellations whose partial sums leave the 53 bits midway, partial sums at exactly
// +-2^53 units and one past, zeros of both signs, subnormals, final roundings at float ties
// and their neighbours, float overflow, infinities and NaNs, and SSIM-like products of
// samples and Gaussian or decimation taps. GPU_FSUM_SEED replays a run.
// XDG_RUNTIME_DIR must be set for Mesa's lavapipe (any writable folder).
import assert from 'node:assert/strict';
import { openGpuDevice } from '../dist/kernels/gpu/device.js';
import { composeWgsl } from '../dist/kernels/gpu/wgsl.js';
import { ITEM_KERNEL_PRELUDE, makeRng, runItemKernel } from './helpers/gpu.mjs';

const SEED = Number(process.env.GPU_FSUM_SEED ?? 0xf5c0de) >>> 0;
const SETS = 1 << 14;
const MAX_TERMS = 81; // decimate's 9 x 9
const STRIDE = MAX_TERMS + 1; // count, then the terms
const OUT = 10; // result double (lo, hi), chain double (lo, hi), fixed path taken, float; the same
// three from the two-pass form (fsum_least, fsum_start_at): double (lo, hi), taken, float

const f32 = new Float32Array(1);
const f32w = new Uint32Array(f32.buffer);
const f64 = new Float64Array(1);
const f64w = new Uint32Array(f64.buffer);
const floatBits = (x) => { f32[0] = x; return f32w[0]; };
const floatOf = (b) => { f32w[0] = b; return f32[0]; };
const wordsOf = (x) => { f64[0] = x; return [f64w[0], f64w[1]]; };
const hex = (x) => `0x${(x >>> 0).toString(16).padStart(8, '0')}`;
// m 2^e as a float's bits (m an integer, |m| < 2^24; exact where representable).
const fl = (m, e) => floatBits(m * 2 ** e);

const KERNEL = `
${ITEM_KERNEL_PRELUDE}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let s = item_index(gid);
  if (s >= params.x) { return; }
  let at = s * ${STRIDE}u;
  let n = inp[at];
  var f = FSUM_START;
  for (var k = 0u; k < n; k = k + 1u) {
    f = fsum_add(f, inp[at + 1u + k]);
  }
  let ok = f.ok;
  var chain = F64_ZERO;
  for (var k = 0u; k < n; k = k + 1u) {
    chain = f64_add(chain, f64_from_f32_bits(inp[at + 1u + k]));
  }
  let r = select(chain, fsum_to_f64(f), ok);
  outp[s * ${OUT}u] = r.x;
  outp[s * ${OUT}u + 1u] = r.y;
  outp[s * ${OUT}u + 2u] = chain.x;
  outp[s * ${OUT}u + 3u] = chain.y;
  outp[s * ${OUT}u + 4u] = select(0u, 1u, ok);
  outp[s * ${OUT}u + 5u] = select(f32_from_f64(chain), fsum_to_f32(f), ok);
  var low = 1000;
  for (var k = 0u; k < n; k = k + 1u) {
    low = fsum_least(low, inp[at + 1u + k]);
  }
  var g = fsum_start_at(low);
  for (var k = 0u; k < n; k = k + 1u) {
    g = fsum_add(g, inp[at + 1u + k]);
  }
  let r2 = select(chain, fsum_to_f64(g), g.ok);
  outp[s * ${OUT}u + 6u] = r2.x;
  outp[s * ${OUT}u + 7u] = r2.y;
  outp[s * ${OUT}u + 8u] = select(0u, 1u, g.ok);
  outp[s * ${OUT}u + 9u] = select(f32_from_f64(chain), fsum_to_f32(g), g.ok);
}`;

const GAUSSIAN = [0.001028, 0.007599, 0.036001, 0.109361, 0.213006, 0.266012, 0.213006, 0.109361, 0.036001, 0.007599, 0.001028].map(Math.fround);

// Term-set generators: each returns { kind, terms } (float bits).
function makeSet(R) {
  const n = R.pick([1, 2, 3, 11, 11, 11, 64, 81]);
  const sign = () => (R.bool() ? -1 : 1);
  const sig = () => sign() * (1 + R.int((1 << 24) - 1)); // any 24-bit significand
  const kind = R.int(10);
  const terms = [];
  switch (kind) {
    case 0: { // exponent span (top of the largest over the lowest unit) around 53
      const span = 44 + R.int(20);
      const e0 = -60 + R.int(100);
      for (let i = 0; i < n; i++) terms.push(fl(sig(), e0 + R.int(Math.max(1, span - 23))));
      break;
    }
    case 1: { // cancellation: big terms and their negatives around small ones
      const big = 20 + R.int(40);
      for (let i = 0; i < n; i++) {
        if (i % 3 === 2 && terms.length) terms.push((terms[terms.length - 1] ^ 0x80000000) >>> 0);
        else terms.push(R.bool() ? fl(sig(), big - 24 + R.int(4)) : fl(sig(), big - 24 - 20 - R.int(20)));
      }
      break;
    }
    case 2: { // partial sums at 2^53 - 1, 2^53, 2^53 + 1 units (either sign), then more
      const e = -40 + R.int(80);
      const s = sign();
      terms.push(fl(s * ((1 << 24) - 1), e + 29), fl(s * ((1 << 24) - 1), e + 5), fl(s * 31, e));
      const extra = R.int(4);
      for (let i = 0; i < extra; i++) terms.push(fl(s * R.pick([1, 1, -1, 2]), e));
      for (let i = terms.length; i < Math.min(n, 6); i++) terms.push(fl(sig(), e + R.int(30)));
      break;
    }
    case 3: { // zeros of both signs, alone or among others
      for (let i = 0; i < n; i++) terms.push(R.int(3) ? R.pick([0, 0x80000000]) : fl(sig(), -20 + R.int(30)));
      break;
    }
    case 4: { // subnormals, alone or with small normals
      for (let i = 0; i < n; i++) {
        terms.push(R.bool() ? ((R.bool() ? 0x80000000 : 0) | (R.u32() & 0x7fffff)) >>> 0 : fl(sig(), -149 + R.int(40)));
      }
      break;
    }
    case 5: { // the exact sum at a float tie (or one unit either side) of a 24-bit F
      const e = -100 + R.int(200);
      const F = (1 << 23) + R.int(1 << 23);
      const s = sign();
      terms.push(fl(s * F, e), fl(s, e - 1)); // F + 1/2 ulp
      const off = R.pick([0, 0, 1, -1]);
      if (off) terms.push(fl(s * off, e - 1 - 20 - R.int(10)));
      for (let i = terms.length; i < n && R.bool(); i++) terms.push(R.pick([0, 0x80000000]));
      break;
    }
    case 6: { // near float overflow, infinities, NaNs
      for (let i = 0; i < n; i++) {
        terms.push(R.int(8) ? fl(sig(), 104 - R.int(6)) : R.pick([0x7f800000, 0xff800000, 0x7fc00000, 0x7f7fffff, 0xff7fffff]));
      }
      break;
    }
    case 7: { // SSIM-like: samples (and their products) times the Gaussian
      const q = R.int(3);
      for (let i = 0; i < 11 && i < n; i++) {
        const a = Math.fround(R.pick([R.int(256), R.int(1024) / 4, R.float() * 255, R.float() * 1e-3]));
        const b = Math.fround(R.pick([R.int(256), R.float() * 255]));
        const v = q === 0 ? a : Math.fround(q === 1 ? a * a : a * b);
        terms.push(floatBits(Math.fround(v * GAUSSIAN[i])));
      }
      break;
    }
    case 9: { // exact cancellation to 0, then terms far below (the unit restarts); or a big
      // partial sum shifted to a much lower unit; or a term 2^38..2^56 units above the sum's
      // unit (its shifted significand would wrap 64 bits)
      const x = fl(sig(), 40 + R.int(20));
      if (R.int(4) === 0) { // a partial sum whose shift to a lower unit would wrap 64 bits
        const e = -40 + R.int(60);
        const a = 30 + R.int(23);
        const s = sign();
        terms.push(fl(s, e), fl(s, e + a), fl(sign() * (1 + 2 * R.int(1 << 20)), e - 64 + a + R.int(4)));
        break;
      }
      if (R.int(3) === 0) {
        const e = -60 + R.int(60);
        terms.push(fl(sign() * (1 + 2 * R.int(4)), e), fl(sign() * ((1 << 23) + 2 * R.int(R.bool() ? 1 << 22 : 4) + 1), e + 38 + R.int(19)));
        break;
      }
      terms.push(x);
      if (R.bool()) terms.push((x ^ 0x80000000) >>> 0);
      for (let i = terms.length; i < n; i++) terms.push(fl(sig(), -40 + R.int(10)));
      break;
    }
    default: { // random floats of any finite exponent (mostly fall back)
      for (let i = 0; i < n; i++) terms.push((R.u32() & 0x7f7fffff | (R.bool() ? 0x80000000 : 0)) >>> 0);
      break;
    }
  }
  return { kind, terms: terms.slice(0, MAX_TERMS) };
}

describe('lib/fsum.wgsl: fixed-point sums of float terms == the sequential double sum (gpu)', function () {
  this.timeout(600000);
  let gpu;
  before(async () => (gpu = await openGpuDevice({ label: 'fsum tests' })));
  after(() => gpu?.destroy());

  async function run(input, n) {
    const code = composeWgsl(['lib/fsum.wgsl', 'lib/f32.wgsl'], KERNEL);
    const pipeline = await gpu.createComputePipeline(code, { label: 'fsum test' });
    return runItemKernel(gpu, pipeline, 'fsum test', input, n, OUT);
  }

  it(`fixed point or fallback == the host's and the device's double chains on ${SETS} adversarial term sets (seed ${hex(SEED)})`, async function () {
    const R = makeRng(SEED);
    const sets = Array.from({ length: SETS }, () => makeSet(R));
    const input = new Uint32Array(SETS * STRIDE);
    sets.forEach((s, i) => {
      input[i * STRIDE] = s.terms.length;
      input.set(s.terms, i * STRIDE + 1);
    });
    const got = await run(input, SETS);
    const fixedBy = new Array(10).fill(0);
    const fellBy = new Array(10).fill(0);
    let bad = 0;
    const samples = [];
    let twoPass = 0; // two-pass form's fixed path taken
    let wideButExact = 0; // fixed path taken where the span bound (sum |t| < 2^(L+53)) fails
    sets.forEach((s, i) => {
      let acc = 0;
      for (const t of s.terms) acc += floatOf(t);
      const o = got.subarray(i * OUT, i * OUT + OUT);
      const fixed = o[4] === 1;
      (fixed ? fixedBy : fellBy)[s.kind]++;
      let ok;
      if (o[8] === 1) twoPass++;
      if (Number.isNaN(acc)) {
        ok = !fixed && o[8] === 0 && (o[1] & 0x7ff80000) === 0x7ff80000 && (o[3] & 0x7ff80000) === 0x7ff80000;
      } else {
        const [lo, hi] = wordsOf(acc);
        // Same double from the fixed point (or fallback) and the device chain; the device
        // chain is bit-exact with the host's (signed zeros included).
        ok = o[0] === lo && o[1] === hi && o[2] === lo && o[3] === hi && o[5] === floatBits(acc)
          && o[6] === lo && o[7] === hi && o[9] === floatBits(acc);
      }
      if (fixed) {
        let L = Infinity;
        let absSum = 0n;
        for (const t of s.terms) {
          if ((t & 0x7fffffff) === 0) continue;
          const field = (t >>> 23) & 0xff;
          const m = field ? (t & 0x7fffff) | 0x800000 : t & 0x7fffff;
          const low = 31 - Math.clz32(m & -m);
          L = Math.min(L, Math.max(field, 1) - 150 + low);
        }
        for (const t of s.terms) {
          if ((t & 0x7fffffff) === 0) continue;
          const field = (t >>> 23) & 0xff;
          const m = BigInt(field ? (t & 0x7fffff) | 0x800000 : t & 0x7fffff);
          absSum += m << BigInt(Math.max(field, 1) - 150 - L);
        }
        if (absSum >= 1n << 53n) wideButExact++;
      }
      if (!ok && ++bad <= 8) {
        samples.push(`set ${i} (kind ${s.kind}, ${fixed ? 'fixed' : 'fallback'}) [${s.terms.map(hex).join(' ')}]: got ${hex(o[1])}${hex(o[0]).slice(2)} chain ${hex(o[3])}${hex(o[2]).slice(2)}, want ${acc}`);
      }
    });
    assert.equal(bad, 0, `${bad} of ${SETS} sums differ:\n${samples.join('\n')}`);
    // Both paths are exercised by every generator that can take both, and the per-step check
    // accepts sets beyond the sufficient bound (so it is what decides).
    for (const k of [0, 1, 2]) {
      assert.ok(fixedBy[k] > 20 && fellBy[k] > 20, `generator ${k}: ${fixedBy[k]} fixed, ${fellBy[k]} fell back`);
    }
    for (const k of [3, 5, 7, 9]) assert.ok(fixedBy[k] > 100, `generator ${k}: ${fixedBy[k]} fixed`);
    assert.ok(fixedBy[4] > 20 && fellBy[6] > 100, `subnormals: ${fixedBy[4]} fixed; overflow/specials: ${fellBy[6]} fell back`);
    assert.ok(twoPass > SETS / 3, `two-pass form: ${twoPass} fixed`);
    assert.ok(wideButExact > 20, `${wideButExact} sets beyond the span bound took the fixed path`);
    console.log(`      fixed path by generator: ${fixedBy.join(' ')}; fell back: ${fellBy.join(' ')}; beyond the bound but fixed: ${wideButExact}; two-pass form fixed: ${twoPass}`);
  });
});

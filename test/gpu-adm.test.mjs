// The gpu backend's ADM kernel against the cpu backend, accumulator for accumulator: the 36
// int64 stats of src/kernels/cpu/adm.h must be equal, bit for bit, on random sizes (odd,
// the 33x33 minimum, non-square), every bit depth, noise, gradients and extremes (constant,
// zero, full-scale, a frame against its own negative), repeatedly, and on a golden clip.
// The angle test (adm-angle.wgsl, integer arithmetic) is checked on its own against a
// BigInt/double model of the binary32/binary64 expression, including cases built so that
// the one binary64 rounding decides the outcome. Runs on any WebGPU adapter (lavapipe in
// CI). GPU_ADM_SEED=<n> replays a run; GPU_ADM_SWEEP=<n> (random geometries, default 40)
// and GPU_ADM_ANGLE_N=<n> (angle-test inputs, default 100000) make it longer.
import assert from 'node:assert/strict';
import { openGpuDevice } from '../dist/kernels/gpu/device.js';
import { composeWgsl } from '../dist/kernels/gpu/wgsl.js';
import { AdmKernel, ADM_STATS_LENGTH, ADM_MIN_SIZE, admPlan } from '../dist/kernels/gpu/adm/adm-kernel.js';
import { loadNative } from '../dist/kernels/native.js';
import { FINISHED_FEATURE_KEYS } from '../dist/kernels/native-features.js';
import { goldenClip } from './helpers/golden.mjs';
import { makeRng, uploadPlane } from './helpers/gpu.mjs';
import { readY4mLumas } from './helpers/y4m-lumas.mjs';

const SEED = Number(process.env.GPU_ADM_SEED ?? 0xad3ad3) >>> 0;
const BIT_DEPTHS = [8, 10, 12, 16];

// ---- the angle test's model: binary32 rounding in BigInt, then JS (binary64) arithmetic ----

const COS1_SQ = 16772106 / 2 ** 24; // f64(f32(cos^2(1 degree))) = 0x1.ffd814p-1

const bitLength = (x) => (x === 0n ? 0 : x.toString(2).length);

/** f32(x) for a BigInt x, round to nearest even, as an exact JS number. */
function f32OfBig(x) {
  const neg = x < 0n;
  const m = neg ? -x : x;
  const n = bitLength(m);
  if (n <= 24) return neg ? -Number(m) : Number(m);
  const k = BigInt(n - 24);
  let q = m >> k;
  const rem = m & ((1n << k) - 1n);
  const half = 1n << (k - 1n);
  if (rem > half || (rem === half && (q & 1n) === 1n)) q += 1n;
  const v = Number(q) * 2 ** Number(k);
  return neg ? -v : v;
}

/** The C++ angle test (adm.cpp angleRow) from the int64 dot product and magnitudes. */
function angleModel(dot, om, tm) {
  const d = f32OfBig(dot) / 4096;
  const o = f32OfBig(om) / 4096;
  const t = f32OfBig(tm) / 4096;
  return d >= 0 && d * d >= COS1_SQ * o * t;
}

const i64 = (x) => BigInt.asIntN(64, x);

function angleModelVec(oh, ov, th, tv) {
  const [a, b, c, d] = [oh, ov, th, tv].map(BigInt);
  return angleModel(i64(a * c + b * d), i64(a * a + b * b), i64(c * c + d * d));
}

// Vectors (oh, ov, th, tv) for the i32 and i16 paths: random magnitudes, near-1-degree
// rotations, and special shapes.
function angleVectors(R, count) {
  const out = [];
  const I32_MIN = -2147483648, I32_MAX = 2147483647;
  const clampI32 = (v) => Math.max(I32_MIN, Math.min(I32_MAX, Math.round(v)));
  const mag = () => 2 ** (R.float() * R.pick([4, 8, 15, 16, 24, 31]));
  const val = (m) => clampI32((R.float() * 2 - 1) * m);
  const specials = [0, 1, -1, 32767, -32768, 22930, -22930, I32_MAX, I32_MIN, 1 << 30, -(1 << 30), 46341, -46341];
  while (out.length < count) {
    const kind = R.int(6);
    if (kind === 0) {
      const m = mag();
      out.push([val(m), val(m), val(m), val(m)]);
    } else if (kind <= 2) {
      // t = lambda * rotation(+-(1 degree + eps)) * o, rounded: close to the threshold.
      const m = mag();
      const oh = val(m), ov = val(m);
      const eps = (R.float() * 2 - 1) * 10 ** -(2 + R.int(7));
      const th0 = (R.bool() ? 1 : -1) * (Math.PI / 180) * (1 + eps);
      const lambda = 0.25 + R.float() * 4;
      const c = Math.cos(th0) * lambda, s = Math.sin(th0) * lambda;
      out.push([oh, ov, clampI32(c * oh - s * ov), clampI32(s * oh + c * ov)]);
    } else if (kind === 3) {
      // i16-range near-threshold cases (scale 0 values)
      const oh = R.range(-32768, 32767), ov = R.range(-32768, 32767);
      const eps = (R.float() * 2 - 1) * 10 ** -(1 + R.int(5));
      const th0 = (R.bool() ? 1 : -1) * (Math.PI / 180) * (1 + eps);
      const lambda = 0.2 + R.float() * 1.2;
      const c = Math.cos(th0) * lambda, s = Math.sin(th0) * lambda;
      const cl = (v) => Math.max(-32768, Math.min(32767, Math.round(v)));
      out.push([oh, ov, cl(c * oh - s * ov), cl(s * oh + c * ov)]);
    } else if (kind === 4) {
      out.push([R.pick(specials), R.pick(specials), R.pick(specials), R.pick(specials)]);
    } else {
      // exact multiples, opposites, orthogonal and zero vectors
      const m = mag();
      const oh = val(m), ov = val(m);
      const f = R.pick([0, 1, -1, 2, 3, -2]);
      const shape = R.int(4);
      if (shape === 0) out.push([oh, ov, clampI32(f * oh), clampI32(f * ov)]);
      else if (shape === 1) out.push([oh, ov, clampI32(-ov * f), clampI32(oh * f)]);
      else if (shape === 2) out.push([0, 0, oh, ov]);
      else out.push([oh, ov, 0, 0]);
    }
  }
  return out;
}

// Raw (dot, om, tm) int64 triples: random ones, f32 ties at the threshold, and triples
// where binary64's rounding of (c*O)*T turns a false exact comparison into true (or,
// at an exact tie of the rounding, depends on the rounding direction).
function angleTriples(R, count) {
  const out = [];
  const randI64 = () => {
    const bits = R.range(0, 63);
    const v = R.big(bits);
    return R.int(8) === 0 ? -v : v;
  };
  // Cases that depend on binary64 rounding: pick md (24 bits) and j; N = ceil(md^2 2^j / mc)
  // such that X = mc*N lies in (md^2 2^j, md^2 2^j + 1 ulp]: binary64 rounds c*O*T onto
  // D*D or just above it. Split N = mo*mt into two 24-bit factors when small primes allow.
  const MC = 16772106n;
  const SMALL_PRIMES = [];
  for (let p = 2; SMALL_PRIMES.length < 1500; p++) if (SMALL_PRIMES.every((q) => p % q !== 0)) SMALL_PRIMES.push(p);
  const split = (n) => {
    // mo in [2^23 + 1, 2^24) with n / mo in [2^23 + 1, 2^24): try products of small factors.
    const factors = [];
    let rest = n;
    for (const p of SMALL_PRIMES.map(BigInt)) while (rest % p === 0n) { factors.push(p); rest /= p; }
    const lo = (1n << 23n) + 1n, hi = 1n << 24n;
    const divisors = new Set([1n]);
    for (const f of factors) for (const d of [...divisors]) divisors.add(d * f);
    for (const d of divisors) {
      for (const mo of [d, d * rest]) {
        if (n % mo !== 0n) continue;
        const mt = n / mo;
        if (mo >= lo && mo < hi && mt >= lo && mt < hi) return [mo, mt];
      }
    }
    return null;
  };
  let built = 0, tries = 0;
  const wantBuilt = 200; // about 2% of the tries succeed
  while (built < wantBuilt && tries < 40000 * wantBuilt) {
    tries++;
    const md = (1n << 23n) + 1n + R.big(23);
    const j = BigInt(R.range(22, 25));
    const t = md * md << j;
    const n = (t + MC) / MC; // the smallest N with MC*N > t
    const x = MC * n;
    const k = BigInt(bitLength(x) - 53);
    if (k < 1n || j < k) continue;
    // delta <= half an ulp: binary64 rounds onto D*D (true, exact false); half to one ulp:
    // it rounds up (false), where truncating would not. (A tie, delta == half, can never
    // meet D*D: that would need -2^i to be a square modulo 3 and 23, factors of mc / 2.)
    const delta = x - t;
    if (delta > (1n << k)) continue;
    const f = split(n);
    if (!f) continue;
    const [mo, mt] = f;
    // LHS' = md^2 2^(2 ed), RHS' = MC mo mt 2^(eo + et - 24): need 2 ed = j + eo + et - 24.
    const ed = BigInt(R.range(12, 20));
    const eSum = 2n * ed - j + 24n;
    if (eSum < 0n || eSum > 70n) continue;
    const eo = eSum / 2n, et = eSum - eo;
    const jitter = (e) => (e === 0n ? 0n : R.big(Number(e) - 1) * (R.bool() ? 1n : -1n)); // |.| < half an f32 ulp
    out.push([md << ed, mo << eo, mt << et]); // exact values
    out.push([(md << ed) + jitter(ed), (mo << eo) + jitter(eo), (mt << et) + jitter(et)]); // round to the same
    out.push([(md - 1n) << ed, mo << eo, mt << et]); // one f32 step below: false
    built++;
  }
  while (out.length < count) {
    const kind = R.int(4);
    if (kind === 0) {
      out.push([randI64(), randI64(), randI64()]);
    } else if (kind === 1) {
      // non-negative, realistic magnitudes
      const b = R.range(0, 62);
      out.push([R.big(b), R.big(R.range(0, 62)), R.big(R.range(0, 62))]);
    } else {
      // dot at an f32 tie or one unit off it, right at the threshold sqrt(c * om * tm)
      const om = R.big(R.range(20, 62)) + 1n, tm = R.big(R.range(20, 62)) + 1n;
      const o = f32OfBig(om), t = f32OfBig(tm);
      const thr = Math.sqrt(COS1_SQ * o * t); // about the threshold value of f32(dot)
      if (!(thr >= 2 ** 24) || thr >= 2 ** 62) continue;
      const e = Math.floor(Math.log2(thr)) - 23;
      const m = BigInt(Math.round(thr / 2 ** e));
      const E = BigInt(e);
      const base = (m + BigInt(R.range(-2, 2))) << E;
      const half = 1n << (E - 1n);
      out.push([base + R.pick([0n, half, -half, half - 1n, 1n - half, half + 1n]), om, tm]);
    }
  }
  return out.slice(0, count);
}

const ANGLE_KERNEL = /* wgsl */ `
// #include "adm/adm-angle.wgsl"
@group(0) @binding(0) var<storage, read> vecs: array<vec4<i32>>;
@group(0) @binding(1) var<storage, read> triples: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> result: array<u32>;
@group(0) @binding(3) var<uniform> counts: vec4<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i < counts.x) {
    let v = vecs[i];
    var r = select(0u, 1u, adm_angle_i32(v.x, v.y, v.z, v.w));
    if (all(v >= vec4<i32>(-32768)) && all(v <= vec4<i32>(32767))) {
      r = r | select(0u, 2u, adm_angle_i16(v.x, v.y, v.z, v.w)) | 4u;
    }
    result[i] = r;
  }
  if (i < counts.y) {
    result[counts.x + i] = select(0u, 1u, adm_angle(triples[3u * i], triples[3u * i + 1u], triples[3u * i + 2u]));
  }
}
`;

// ---- frames -----------------------------------------------------------------------------

function newPlane(w, h, bitDepth) {
  return bitDepth === 8 ? new Uint8Array(w * h) : new Uint16Array(w * h);
}

function fill(w, h, bitDepth, f) {
  const p = newPlane(w, h, bitDepth);
  const max = (1 << bitDepth) - 1;
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) p[y * w + x] = Math.max(0, Math.min(max, Math.round(f(x, y))));
  return p;
}

const noise = (R, w, h, B) => fill(w, h, B, () => R.int(1 << B));
const around = (R, src, w, h, B, amp) => fill(w, h, B, (x, y) => src[y * w + x] + (R.float() * 2 - 1) * amp * (1 << (B - 8)));
const negative = (src, w, h, B) => fill(w, h, B, (x, y) => (1 << B) - 1 - src[y * w + x]);
const constant = (w, h, B, v) => fill(w, h, B, () => v);

function gradient(R, w, h, B) {
  const max = (1 << B) - 1;
  const fx = R.float() * 0.2, fy = R.float() * 0.2, ph = R.float() * 6;
  const ax = R.float(), ay = R.float();
  return fill(w, h, B, (x, y) => max * (0.5 + 0.25 * Math.sin(fx * x + fy * y + ph) + 0.2 * (ax * x / w - ay * y / h)));
}

function checker(w, h, B, cell) {
  const max = (1 << B) - 1;
  return fill(w, h, B, (x, y) => ((Math.floor(x / cell) + Math.floor(y / cell)) & 1 ? max : 0));
}

/** A blurred and slightly shifted copy: a smooth, structured distortion. */
function blurShift(src, w, h, B) {
  return fill(w, h, B, (x, y) => {
    let s = 0, n = 0;
    for (let dy = -1; dy <= 1; dy++) for (let dx = 0; dx <= 2; dx++) {
      const yy = Math.min(h - 1, Math.max(0, y + dy)), xx = Math.min(w - 1, Math.max(0, x + dx));
      s += src[yy * w + xx];
      n++;
    }
    return s / n;
  });
}

// ---- the suite ----------------------------------------------------------------------------

describe('gpu ADM kernel (bit-exact with the cpu backend)', function () {
  let gpu;
  let native;
  let vifLength;
  const kernels = new Map();

  before(async function () {
    native = loadNative();
    vifLength = native.statsLayout().vif;
    assert.equal(native.statsLayout().adm, ADM_STATS_LENGTH);
    gpu = await openGpuDevice({ label: 'gpu-adm tests' });
    console.log(`      adapter: ${gpu.adapterName}${gpu.isSoftware ? ' (software)' : ''}; seed ${SEED}`);
  });

  after(function () {
    for (const k of kernels.values()) k.destroy();
    gpu?.destroy();
  });

  async function kernelFor(width, height, bitDepth) {
    const key = `${width}x${height}x${bitDepth}`;
    let k = kernels.get(key);
    if (!k) {
      k = await AdmKernel.create(gpu, { width, height, bitDepth });
      kernels.set(key, k);
    }
    return k;
  }

  /**
   * The GPU's 36 stats for each pair, all frames recorded into one command buffer, each
   * into its own slot of one stats buffer (at odd word offsets, to exercise the slot).
   */
  async function gpuStats(width, height, bitDepth, pairs) {
    const kernel = await kernelFor(width, height, bitDepth);
    const slotWords = 2 * ADM_STATS_LENGTH + 6;
    const base = 10; // words before the first slot
    const out = gpu.device.createBuffer({ size: 4 * (base + slotWords * pairs.length), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST, label: 'test stats' });
    const buffers = [];
    try {
      const words = await gpu.withErrorScopes('gpu-adm test', async () => {
        const encoder2 = gpu.device.createCommandEncoder();
        pairs.forEach(([ref, dis], i) => {
          const rb = uploadPlane(gpu, ref);
          const db = dis === ref ? rb : uploadPlane(gpu, dis);
          buffers.push(rb, db);
          kernel.encode(encoder2, { ref: rb, dis: db }, { buffer: out, offset: 4 * (base + slotWords * i) });
        });
        // poison first: a word the kernel should not touch keeps it, a stat it forgets shows
        gpu.device.queue.writeBuffer(out, 0, new Uint32Array(base + slotWords * pairs.length).fill(0xdeadbeef));
        gpu.device.queue.submit([encoder2.finish()]);
        return new Uint32Array(await gpu.read(out));
      });
      return pairs.map((_, i) => {
        const at = base + slotWords * i;
        const stats = new BigInt64Array(ADM_STATS_LENGTH);
        for (let k = 0; k < ADM_STATS_LENGTH; k++) {
          stats[k] = BigInt.asIntN(64, (BigInt(words[at + 2 * k + 1]) << 32n) | BigInt(words[at + 2 * k]));
        }
        for (let k = 2 * ADM_STATS_LENGTH; k < slotWords; k++) assert.equal(words[at + k], 0xdeadbeef, `the kernel writes only its ${ADM_STATS_LENGTH} stats`);
        return stats;
      });
    } finally {
      out.destroy();
      for (const b of new Set(buffers)) b.destroy();
    }
  }

  async function cpuStats(ref, dis, width, height, bitDepth) {
    const { stats } = await native.computeFrameStats(ref, dis, width, height, bitDepth);
    return stats.slice(vifLength, vifLength + ADM_STATS_LENGTH);
  }

  // adm.h's layout: per scale 9 DLM stats, then per scale 6 AIM numerators.
  const NAMES = ['num_h', 'num_v', 'num_d', 'egl_h', 'egl_v', 'egl_d', 'den_h', 'den_v', 'den_d'];
  const AIM_NAMES = ['aim_h', 'aim_v', 'aim_d', 'aim_egl_h', 'aim_egl_v', 'aim_egl_d'];
  const statName = (k) => (k < 36 ? `scale ${Math.floor(k / 9)} ${NAMES[k % 9]}` : `scale ${Math.floor((k - 36) / 6)} ${AIM_NAMES[(k - 36) % 6]}`);
  // Nonzero AIM stats seen by any comparison: the AIM part must not pass vacuously.
  let aimStatsSeen = 0;
  let comparisons = 0;
  after(() => assert.ok(comparisons === 0 || aimStatsSeen > 0, 'some comparison had nonzero AIM stats'));
  function assertSameStats(gpuS, cpuS, what) {
    comparisons++;
    const diffs = [];
    for (let k = 0; k < ADM_STATS_LENGTH; k++) {
      if (gpuS[k] !== cpuS[k]) diffs.push(`${statName(k)}: gpu ${gpuS[k]}, cpu ${cpuS[k]}`);
      if (k >= 36 && cpuS[k] !== 0n) aimStatsSeen++;
    }
    assert.ok(diffs.length === 0, `${what}: ${diffs.length} of ${ADM_STATS_LENGTH} stats differ\n  ${diffs.join('\n  ')}`);
  }

  /** GPU and cpu stats for frame pairs of one geometry; returns the GPU's. */
  async function check(width, height, bitDepth, cases) {
    const got = await gpuStats(width, height, bitDepth, cases.map((c) => [c.ref, c.dis]));
    for (let i = 0; i < cases.length; i++) {
      const want = await cpuStats(cases[i].ref, cases[i].dis, width, height, bitDepth);
      assertSameStats(got[i], want, `${width}x${height} ${bitDepth}-bit, ${cases[i].name}`);
    }
    return got;
  }

  describe('angle test (adm-angle.wgsl) against a binary32/binary64 model', function () {
    it('the model rounds to binary32 as Math.fround does where numbers are exact', function () {
      const R = makeRng(SEED ^ 0x1111);
      for (let i = 0; i < 20000; i++) {
        const x = R.big(R.range(0, 53)) * (R.bool() ? 1n : -1n);
        assert.equal(f32OfBig(x), Math.fround(Number(x)), `f32(${x})`);
      }
    });

    it('agrees on random, near-threshold and built rounding-decided inputs', async function () {
      const R = makeRng(SEED ^ 0x2222);
      const n = Number(process.env.GPU_ADM_ANGLE_N ?? 100000);
      const vecs = angleVectors(R, Math.round(n * 0.6));
      const triples = angleTriples(R, Math.round(n * 0.4));
      const d = gpu.device;
      const pipeline = await gpu.createComputePipeline(composeWgsl([], ANGLE_KERNEL), { label: 'adm angle test' });
      const vb = d.createBuffer({ size: vecs.length * 16, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
      d.queue.writeBuffer(vb, 0, new Int32Array(vecs.flat()));
      const tw = new Uint32Array(triples.length * 6);
      triples.forEach((t, i) => t.forEach((v, j) => {
        const u = BigInt.asUintN(64, v);
        tw[6 * i + 2 * j] = Number(u & 0xffffffffn);
        tw[6 * i + 2 * j + 1] = Number(u >> 32n);
      }));
      const tb = d.createBuffer({ size: tw.byteLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
      d.queue.writeBuffer(tb, 0, tw);
      const total = vecs.length + triples.length;
      const rb = d.createBuffer({ size: total * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
      const ub = d.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
      d.queue.writeBuffer(ub, 0, new Uint32Array([vecs.length, triples.length, 0, 0]));
      const result = await gpu.withErrorScopes('angle test', async () => {
        const bg = d.createBindGroup({
          layout: pipeline.getBindGroupLayout(0),
          entries: [vb, tb, rb, ub].map((buffer, binding) => ({ binding, resource: { buffer } })),
        });
        const enc = d.createCommandEncoder();
        const pass = enc.beginComputePass();
        pass.setPipeline(pipeline);
        pass.setBindGroup(0, bg);
        pass.dispatchWorkgroups(Math.ceil(Math.max(vecs.length, triples.length) / 64));
        pass.end();
        d.queue.submit([enc.finish()]);
        return new Uint32Array(await gpu.read(rb));
      });
      for (const b of [vb, tb, rb, ub]) b.destroy();

      const failures = [];
      let i16Cases = 0, trueCount = 0;
      vecs.forEach((v, i) => {
        const want = angleModelVec(...v);
        trueCount += want ? 1 : 0;
        const r = result[i];
        if (((r & 1) === 1) !== want) failures.push(`adm_angle_i32(${v}) = ${r & 1}, model ${want}`);
        if (r & 4) {
          i16Cases++;
          if (((r & 2) === 2) !== want) failures.push(`adm_angle_i16(${v}) = ${(r >> 1) & 1}, model ${want}`);
        }
      });
      let decided = 0;
      triples.forEach((t, i) => {
        const want = angleModel(...t);
        // Where the exact comparison (no binary64 rounding) differs, the rounding decided.
        if (t[0] >= 0n && t[1] > 0n && t[2] > 0n) {
          const o = BigInt(f32OfBig(t[1])), tt = BigInt(f32OfBig(t[2])), dd = BigInt(f32OfBig(t[0]));
          const exact = dd * dd * 2n ** 24n >= 16772106n * o * tt;
          if (exact !== want) decided++;
        }
        const got = result[vecs.length + i] === 1;
        if (got !== want) failures.push(`adm_angle(${t.join(', ')}) = ${got}, model ${want}`);
      });
      assert.ok(failures.length === 0, `${failures.length} disagreements, e.g.\n  ${failures.slice(0, 10).join('\n  ')}`);
      assert.ok(i16Cases > 10000, `${i16Cases} int16 cases`);
      assert.ok(trueCount > vecs.length / 10 && trueCount < vecs.length * 0.9, `balanced outcomes (${trueCount} of ${vecs.length} true)`);
      assert.ok(decided >= 100, `at least 100 cases where binary64 rounding decides (got ${decided})`);
    });
  });

  describe('frames', function () {
    it(`gives all-zero stats below ${ADM_MIN_SIZE}x${ADM_MIN_SIZE}, as the cpu backend`, async function () {
      const R = makeRng(SEED ^ 0x3333);
      for (const [w, h] of [[32, 40], [40, 32], [32, 32], [8, 8], [3, 3]]) {
        const ref = noise(R, w, h, 8), dis = noise(R, w, h, 8);
        const [got] = await check(w, h, 8, [{ name: 'noise', ref, dis }]);
        assert.ok(got.every((v) => v === 0n));
      }
      // (the cpu backend refuses frames under 3x3; the kernel still writes its zeros)
      const [tiny] = await gpuStats(1, 1, 16, [[new Uint16Array([5]), new Uint16Array([9])]]);
      assert.ok(tiny.every((v) => v === 0n));
    });

    it('matches on the minimum size and on small odd and non-square sizes, every bit depth', async function () {
      const R = makeRng(SEED ^ 0x4444);
      const sizes = [[33, 33], [33, 34], [34, 33], [35, 97], [97, 35], [65, 64], [201, 69], [63, 33]];
      for (const [w, h] of sizes) {
        for (const B of BIT_DEPTHS) {
          const ref = noise(R, w, h, B);
          const g = gradient(R, w, h, B);
          await check(w, h, B, [
            { name: 'noise vs noisy', ref, dis: around(R, ref, w, h, B, 12) },
            { name: 'gradient vs blurred', ref: g, dis: blurShift(g, w, h, B) },
          ]);
        }
      }
    });

    it('matches on random sizes (33..200), noise and smooth content, every bit depth', async function () {
      const R = makeRng(SEED ^ 0x5555);
      for (let n = 0; n < 12; n++) {
        const w = R.range(33, 200), h = R.range(33, 200);
        const B = BIT_DEPTHS[n % 4];
        const ref = noise(R, w, h, B);
        const g = gradient(R, w, h, B);
        const g2 = gradient(R, w, h, B);
        await check(w, h, B, [
          { name: 'noise vs noise', ref, dis: noise(R, w, h, B) },
          { name: 'noise vs slightly noisier', ref, dis: around(R, ref, w, h, B, 3) },
          { name: 'gradient vs blurred', ref: g, dis: blurShift(g, w, h, B) },
          { name: 'gradient vs gradient', ref: g, dis: g2 },
          { name: 'gradient vs noisy', ref: g, dis: around(R, g, w, h, B, 40) },
        ]);
      }
    });

    it('matches on extremes: constant, zero and full-scale planes, checkers, negatives', async function () {
      const R = makeRng(SEED ^ 0x6666);
      for (const [w, h, B] of [[33, 33, 8], [71, 45, 10], [64, 50, 12], [47, 81, 16], [120, 68, 8]]) {
        const max = (1 << B) - 1;
        const ref = noise(R, w, h, B);
        const g = gradient(R, w, h, B);
        const ch1 = checker(w, h, B, 1), ch2 = checker(w, h, B, 2), ch3 = checker(w, h, B, 3);
        await check(w, h, B, [
          { name: 'zero vs zero', ref: constant(w, h, B, 0), dis: constant(w, h, B, 0) },
          { name: 'max vs max', ref: constant(w, h, B, max), dis: constant(w, h, B, max) },
          { name: 'zero vs max', ref: constant(w, h, B, 0), dis: constant(w, h, B, max) },
          { name: 'constant vs constant', ref: constant(w, h, B, R.int(max + 1)), dis: constant(w, h, B, R.int(max + 1)) },
          { name: 'noise vs itself', ref, dis: ref },
          { name: 'noise vs its negative', ref, dis: negative(ref, w, h, B) },
          { name: 'gradient vs its negative', ref: g, dis: negative(g, w, h, B) },
          { name: 'noise vs constant', ref, dis: constant(w, h, B, R.int(max + 1)) },
          { name: 'constant vs noise', ref: constant(w, h, B, max), dis: ref },
          { name: 'checker 1 vs its negative', ref: ch1, dis: negative(ch1, w, h, B) },
          { name: 'checker 2 vs its negative', ref: ch2, dis: negative(ch2, w, h, B) },
          { name: 'checker 3 vs checker 1', ref: ch3, dis: ch1 },
          { name: 'checker 2 vs zero', ref: ch2, dis: constant(w, h, B, 0) },
          { name: 'zero vs checker 1', ref: constant(w, h, B, 0), dis: ch1 },
          { name: 'noise vs full-scale noise', ref, dis: fill(w, h, B, () => (R.bool() ? max : 0)) },
        ]);
      }
    });

    it('matches on a randomized sweep of geometries, bit depths and content mixes', async function () {
      const R = makeRng(SEED ^ 0x9999);
      const sweep = Number(process.env.GPU_ADM_SWEEP ?? 40);
      const content = [
        (w, h, B) => noise(R, w, h, B),
        (w, h, B) => gradient(R, w, h, B),
        (w, h, B) => checker(w, h, B, R.range(1, 4)),
        (w, h, B) => constant(w, h, B, R.int(1 << B)),
        (w, h, B) => fill(w, h, B, (x, y) => ((x * 7 + y * 13) % 17 < 8 ? (1 << B) - 1 : R.int(1 << B))),
      ];
      for (let n = 0; n < sweep; n++) {
        const w = R.bool() ? R.range(33, 80) : R.range(33, 200);
        const h = R.bool() ? R.range(33, 80) : R.range(33, 200);
        const B = R.pick(BIT_DEPTHS);
        const ref = R.pick(content)(w, h, B);
        const other = R.pick(content)(w, h, B);
        await check(w, h, B, [
          { name: 'content vs other content', ref, dis: other },
          { name: 'content vs distorted', ref, dis: around(R, ref, w, h, B, R.pick([1, 4, 30, 120])) },
          { name: 'content vs negative', ref, dis: negative(ref, w, h, B) },
          { name: 'content vs blurred', ref, dis: blurShift(ref, w, h, B) },
        ]);
      }
    });

    it('is deterministic: the same stats on every run, in any batch', async function () {
      const R = makeRng(SEED ^ 0x7777);
      const [w, h, B] = [123, 77, 10];
      const ref = noise(R, w, h, B), dis = around(R, ref, w, h, B, 20);
      const other = gradient(R, w, h, B);
      const runs = [];
      for (let i = 0; i < 3; i++) {
        const got = await gpuStats(w, h, B, [[ref, dis], [other, ref], [ref, dis]]);
        runs.push(got[0], got[2]);
      }
      const want = await cpuStats(ref, dis, w, h, B);
      for (const r of runs) assertSameStats(r, want, 'repeated run');
    });

    it('reuses a kernel across frames and geometries without interference', async function () {
      const R = makeRng(SEED ^ 0x8888);
      const a = [80, 60, 8], b = [61, 99, 8];
      for (let round = 0; round < 2; round++) {
        for (const [w, h, B] of [a, b]) {
          const ref = noise(R, w, h, B);
          await check(w, h, B, [{ name: `round ${round}`, ref, dis: around(R, ref, w, h, B, 8) }]);
        }
      }
    });

    it('refuses bad geometries, stats slots and luma buffers with BackendError', async function () {
      await assert.rejects(AdmKernel.create(gpu, { width: 64, height: 64, bitDepth: 9 }), { code: 'E_GPU' });
      await assert.rejects(AdmKernel.create(gpu, { width: 0, height: 64, bitDepth: 8 }), { code: 'E_GPU' });
      const k = await kernelFor(64, 48, 10);
      const small = gpu.device.createBuffer({ size: 64 * 48 * 2 - 4, usage: GPUBufferUsage.STORAGE });
      const ok = gpu.device.createBuffer({ size: 64 * 48 * 2, usage: GPUBufferUsage.STORAGE });
      const out = gpu.device.createBuffer({ size: 400, usage: GPUBufferUsage.STORAGE });
      try {
        const enc = gpu.device.createCommandEncoder();
        assert.throws(() => k.encode(enc, { ref: ok, dis: ok }, { buffer: out, offset: 2 }), { code: 'E_GPU' });
        assert.throws(() => k.encode(enc, { ref: ok, dis: ok }, { buffer: out, offset: 400 - 284 }), { code: 'E_GPU' });
        assert.throws(() => k.encode(enc, { ref: ok, dis: small }, { buffer: out, offset: 0 }), { code: 'E_GPU' });
      } finally {
        for (const b of [small, ok, out]) b.destroy();
      }
    });

    const clip = goldenClip('src01_160x90_8bit');
    it('matches the cpu backend on the golden clip src01_160x90_8bit, and libvmaf through finishFeatures', async function () {
      const ref = readY4mLumas(clip.ref);
      const dis = readY4mLumas(clip.dis);
      const golden = clip.log();
      const { width, height } = ref;
      const n = Math.min(ref.lumas.length, dis.lumas.length);
      const pairs = [];
      for (let i = 0; i < n; i++) pairs.push([ref.lumas[i], dis.lumas[i]]);
      const got = await gpuStats(width, height, 8, pairs);
      let worst = 0;
      for (let i = 0; i < n; i++) {
        const { stats } = await native.computeFrameStats(ref.lumas[i], dis.lumas[i], width, height, 8);
        assertSameStats(got[i], stats.slice(vifLength), `golden frame ${i}`);
        // cpu VIF + gpu ADM stats through the shared finish step, against libvmaf's log
        const mixed = stats.slice();
        mixed.set(got[i], vifLength);
        const values = native.finishFeatures(mixed, width, height, 8);
        FINISHED_FEATURE_KEYS.forEach((key, k) => {
          if (!/^integer_(adm|aim)/.test(key)) return;
          const want = golden.frames[i].metrics[key];
          const diff = Math.abs(values[k] - want);
          worst = Math.max(worst, diff);
          assert.ok(diff <= 1e-6, `frame ${i}: ${key} = ${values[k]}, libvmaf ${want}`);
        });
      }
      console.log(`      ${n} frames, largest ADM feature difference from libvmaf's log: ${worst}`);
    });

    it('plans the scales as adm.cpp does (sizes, rects, shifts)', function () {
      // 1920x1080: bands 960x540, 480x270, 240x135, 120x68
      const p = admPlan(1920, 1080);
      assert.deepEqual(p.map((s) => [s.width, s.height]), [[960, 540], [480, 270], [240, 135], [120, 68]]);
      assert.deepEqual([p[0].left, p[0].right, p[0].top, p[0].bottom], [95, 865, 53, 487]);
      assert.deepEqual(p[0].cubeShift, [6, 6, 7]);
      assert.equal(p[0].rowShift, 10);
      assert.equal(p[0].denRowShift, 0);
      assert.deepEqual([p[3].cubeShift[0], p[3].denCubeShift, p[3].denRowShift], [7, 7, 6]);
      // 33x33: scale 3 is 3x3, scored whole
      const q = admPlan(33, 33);
      assert.deepEqual([q[3].width, q[3].left, q[3].right, q[3].top, q[3].bottom], [3, 0, 3, 0, 3]);
    });
  });
});

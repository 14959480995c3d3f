// Differential tests of the GPU VIF kernel (src/kernels/gpu/vif/) against the cpu backend:
// the 20 int64 accumulators must equal the native addon's vifStats bit for bit, for every
// bit depth, odd and minimal sizes, random/smooth/extreme content and a golden clip. The
// per-pixel gain arithmetic is checked alone against JS doubles (IEEE binary64, like the
// C++): the software binary64 path value for value, the fast path's terms, and that the fast
// path's intervals really contain the doubles r and P (with the margin they leave); the log2
// table against log2 computed to 110 bits. Runs on any WebGPU adapter (lavapipe on a CPU-only
// machine). GPU_VIF_SEED=<n> replays a run, GPU_VIF_N=<n> resizes the gain test,
// GPU_VIF_ALL_TILES=1 adds two more tile shapes (each compiles its own pipelines).
import assert from 'node:assert/strict';
import { openGpuDevice } from '../dist/kernels/gpu/device.js';
import { composeWgsl, f64Bits } from '../dist/kernels/gpu/wgsl.js';
import {
  VifKernel, VIF_STATS_LEN, VIF_SMALL_TILE, VIF_DEFAULT_TILE, vifLog2Table, vifWorkgroupBytes,
} from '../dist/kernels/gpu/vif/vif-kernel.js';
import { loadNative } from '../dist/kernels/native.js';
import { goldenClip } from './helpers/golden.mjs';
import { makeRng, uploadPlane } from './helpers/gpu.mjs';
import { readY4mLumas } from './helpers/y4m-lumas.mjs';

const SEED = Number(process.env.GPU_VIF_SEED ?? 0x71f5eed) >>> 0;
const GAIN_N = Number(process.env.GPU_VIF_N ?? 1 << 16);

// ---- frames -------------------------------------------------------------------------------

const maxOf = (bd) => (1 << bd) - 1;
const plane = (w, h, bd) => (bd === 8 ? new Uint8Array(w * h) : new Uint16Array(w * h));
const clampTo = (v, bd) => Math.max(0, Math.min(maxOf(bd), Math.round(v)));

function fill(w, h, bd, f) {
  const p = plane(w, h, bd);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) p[y * w + x] = clampTo(f(x, y), bd);
  return p;
}

const map = (src, bd, f) => src.map((v, i) => clampTo(f(v, i), bd));

/** A named ref/dis pair of the given kind. */
function content(kind, w, h, bd, R) {
  const M = maxOf(bd);
  const noise = () => fill(w, h, bd, () => R.unit() * (M + 1) - 0.5);
  const smooth = () => {
    const fx = 3 + R.unit() * 20, fy = 3 + R.unit() * 20, ph = R.unit() * 6;
    return fill(w, h, bd, (x, y) => M * (0.5 + 0.35 * Math.sin(x / fx + ph) * Math.cos(y / fy) + 0.1 * Math.sin((x + 2 * y) / 2.3)));
  };
  switch (kind) {
    case 'noise': return [noise(), noise()];
    case 'noise+small': { const r = noise(); return [r, map(r, bd, (v) => v + (R.unit() - 0.5) * M * 0.05)]; }
    case 'smooth+noise': { const r = smooth(); return [r, map(r, bd, (v) => v + (R.unit() - 0.5) * M * 0.1)]; }
    case 'smooth+blur': {
      const r = smooth();
      const d = fill(w, h, bd, (x, y) => {
        let s = 0, n = 0;
        for (let dy = -1; dy <= 1; dy++) for (let dx = -1; dx <= 1; dx++) {
          const xx = Math.min(w - 1, Math.max(0, x + dx)), yy = Math.min(h - 1, Math.max(0, y + dy));
          s += r[yy * w + xx]; n++;
        }
        return s / n;
      });
      return [r, d];
    }
    case 'smooth+contrast': { const r = smooth(); return [r, map(r, bd, (v) => M / 2 + (v - M / 2) * 0.6)]; }
    case 'identical': { const r = R.bool() ? smooth() : noise(); return [r, r.slice()]; }
    case 'negative': { const r = R.bool() ? smooth() : noise(); return [r, map(r, bd, (v) => M - v)]; }
    case 'zero': return [plane(w, h, bd), plane(w, h, bd)];
    case 'max': return [fill(w, h, bd, () => M), fill(w, h, bd, () => M)];
    case 'constants': { const a = R.int(M + 1), b = R.int(M + 1); return [fill(w, h, bd, () => a), fill(w, h, bd, () => b)]; }
    case 'flat-ref': { const a = R.int(M + 1); return [fill(w, h, bd, () => a), noise()]; } // numNonLog grows past 2^32
    case 'flat-dis': { const a = R.int(M + 1); return [noise(), fill(w, h, bd, () => a)]; }
    case 'zero-vs-max': return [plane(w, h, bd), fill(w, h, bd, () => M)];
    case 'checker': { // extreme local variance: 0 / max alternating
      const r = fill(w, h, bd, (x, y) => ((x + y) & 1 ? M : 0));
      return [r, R.bool() ? map(r, bd, (v) => M - v) : fill(w, h, bd, (x, y) => ((x >> 1) + y) & 1 ? M : 0)];
    }
    case 'sparse': { // mostly flat with a few spikes: flat and log pixels side by side
      const r = fill(w, h, bd, () => (R.int(40) === 0 ? R.int(M + 1) : M >> 2));
      return [r, map(r, bd, (v) => (R.int(30) === 0 ? R.int(M + 1) : v))];
    }
    default: throw new Error(kind);
  }
}

const KINDS = ['noise', 'noise+small', 'smooth+noise', 'smooth+blur', 'smooth+contrast', 'identical', 'negative',
  'zero', 'max', 'constants', 'flat-ref', 'flat-dis', 'zero-vs-max', 'checker', 'sparse'];

// ---- running ------------------------------------------------------------------------------

let gpu;
let addon;
const kernels = new Map(); // "w x h x bd x tile" -> VifKernel

async function kernelFor(w, h, bd, tile) {
  const key = `${w}x${h}x${bd}x${tile ? JSON.stringify(tile) : ''}`;
  let k = kernels.get(key);
  if (!k) {
    k = await VifKernel.create(gpu, { width: w, height: h, bitDepth: bd }, tile ? { tile } : {});
    kernels.set(key, k);
  }
  return k;
}

/**
 * Runs every case through the GPU in one command buffer (all frames share one stats buffer,
 * at slot offsets that are multiples of 8 but not of 256), returns the accumulators per case.
 */
async function gpuStatsBatch(cases) {
  const SLOT = VIF_STATS_LEN * 8 + 8; // 168 bytes: unaligned slots on purpose
  const out = gpu.device.createBuffer({ size: SLOT * cases.length + 8, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
  const owned = [out];
  try {
    return await gpu.withErrorScopes('vif test batch', async () => {
      const enc = gpu.device.createCommandEncoder();
      for (let i = 0; i < cases.length; i++) {
        const c = cases[i];
        const k = c.kernel ?? await kernelFor(c.w, c.h, c.bd, c.tile);
        const ref = uploadPlane(gpu, c.ref), dis = uploadPlane(gpu, c.dis);
        owned.push(ref, dis);
        k.encode(enc, { ref, dis }, { buffer: out, offset: 8 + SLOT * i });
      }
      gpu.device.queue.submit([enc.finish()]);
      const words = new Uint32Array(await gpu.read(out));
      return cases.map((_, i) => {
        const at = (8 + SLOT * i) / 4;
        return Array.from({ length: VIF_STATS_LEN }, (_, k) =>
          BigInt.asIntN(64, (BigInt(words[at + 2 * k + 1]) << 32n) | BigInt(words[at + 2 * k])));
      });
    });
  } finally {
    for (const b of owned) b.destroy();
  }
}

async function cpuStats(c) {
  const { stats } = await addon.computeFrameStats(c.ref, c.dis, c.w, c.h, c.bd);
  return Array.from(stats.subarray(0, VIF_STATS_LEN));
}

const NAMES = ['numLog', 'numLogEgl', 'denLog', 'numNonLog', 'denNonLog'];

function assertSame(c, got, want) {
  const diffs = [];
  for (let k = 0; k < VIF_STATS_LEN; k++) {
    if (got[k] !== want[k]) diffs.push(`scale ${k / 5 | 0} ${NAMES[k % 5]}: gpu ${got[k]} cpu ${want[k]}`);
  }
  if (diffs.length > 0) {
    assert.fail(`${c.name} ${c.w}x${c.h} ${c.bd}-bit${c.tile ? ` tile ${JSON.stringify(c.tile)}` : ''}: ${diffs.length} accumulators differ:\n  ${diffs.join('\n  ')}`);
  }
}

async function checkCases(cases) {
  const got = await gpuStatsBatch(cases);
  for (let i = 0; i < cases.length; i++) assertSame(cases[i], got[i], await cpuStats(cases[i]));
  return got;
}

// ---- JS references ------------------------------------------------------------------------

/** vif.cpp addGainTerms' double arithmetic, literally (JS numbers are IEEE binary64). */
function gainArgsRef(s1, s2, s12) {
  const gain = s12 / (s1 + 65536 * 1.0e-10);
  const explained = gain * s12;
  const residual = s2 - explained;
  const svSq = Math.max(residual >= -2147483648 ? Math.trunc(residual) : -2147483648, 0);
  const base = svSq + 131072;
  const gD = 100 < gain ? 100 : gain; // std::min(gain, 100.0)
  const gE = 1 < gain ? 1 : gain;
  const pDef = Math.trunc((gD * gD) * s1);
  const pEgl = Math.trunc((gE * gE) * s1);
  return [base, BigInt(pDef), BigInt(pEgl)];
}

/** T[i - 32768] = round(correctly rounded binary32 of log2(i) * 2048), from log2 to ~100 bits. */
function exactLog2Table() {
  const P = 110n;
  const lnRatio = (num, den) => { // ln(num / den) * 2^P for num / den in [1, 2]
    const z = ((num - den) << P) / (num + den);
    const z2 = (z * z) >> P;
    let term = z, sum = 0n;
    for (let k = 1n; term > 0n; k += 2n) {
      sum += term / k;
      term = (term * z2) >> P;
    }
    return 2n * sum;
  };
  const LN2 = lnRatio(2n, 1n);
  const table = new Uint16Array(32768);
  let closest = 1;
  for (let i = 32768; i < 65536; i++) {
    // log2(i) - 15 in [0, 1), scaled by 2^P; binary32 keeps 20 fraction bits at [15, 16).
    const frac = (lnRatio(BigInt(i), 32768n) << P) / LN2;
    const shift = P - 20n;
    let m = frac >> shift;
    const rem = frac - (m << shift);
    const half = 1n << (shift - 1n);
    const dist = Number(rem > half ? rem - half : half - rem) / Number(1n << shift); // to the rounding midpoint, in ulps
    closest = Math.min(closest, dist);
    if (rem > half || (rem === half && (m & 1n))) m += 1n;
    const q = (15n << 20n) + m; // float(log2 i) * 2^20
    table[i - 32768] = Number((q + 256n) >> 9n); // * 2048 = q / 512, halves away from zero
  }
  return { table, closest };
}

// ---- the tests ----------------------------------------------------------------------------

describe('gpu VIF kernel (bit-exact with the cpu backend)', function () {
  this.timeout(600000);

  before(async function () {
    addon = loadNative();
    gpu = await openGpuDevice({ label: 'gpu-vif tests' });
    console.log(`      adapter: ${gpu.adapterName}; seed ${SEED}; ${vifWorkgroupBytes(VIF_DEFAULT_TILE)} bytes of workgroup memory per stats pass`);
  });

  after(function () {
    for (const k of kernels.values()) k.destroy();
    gpu?.destroy();
  });

  it('uses a log2 table equal to round(correctly rounded float(log2 i) * 2048) on every entry', function () {
    const { table, closest } = exactLog2Table();
    const ours = vifLog2Table();
    let diffs = 0;
    for (let i = 0; i < 32768; i++) if (ours[i] !== table[i]) diffs++;
    assert.equal(diffs, 0, `${diffs} entries differ`);
    // Every log2(i) is at least this far (in binary32 ulps) from a rounding midpoint, so any
    // log2 within a few double ulps (Math.log2, glibc's log2 / log2f) rounds to the same float.
    assert.ok(closest > 1e-6, `log2 lands ${closest} ulp from a binary32 midpoint`);
  });

  it('computes the gain terms exactly like IEEE doubles, fast path and binary64 path (randomized)', async function () {
    const R = makeRng(SEED ^ 0x6a1);
    const n = GAIN_N;
    const input = new Int32Array(3 * n);
    const kinds = new Uint8Array(n);
    const logUniform = (lo, hi) => Math.max(lo, Math.min(hi, Math.floor(Math.exp(Math.log(lo) + R.unit() * (Math.log(hi) - Math.log(lo))))));
    const S1MIN = 131072, MAX = 2147483647;
    const clampI = (v) => Math.max(1, Math.min(MAX, v));
    const KIND_COUNT = 12;
    for (let i = 0; i < n; i++) {
      let s1, s2, s12;
      const kind = R.int(KIND_COUNT);
      kinds[i] = kind;
      switch (kind) {
        case 0: s1 = R.range(S1MIN, MAX); s2 = R.range(1, MAX); s12 = R.range(1, MAX); break;
        case 1: s1 = logUniform(S1MIN, MAX); s2 = logUniform(1, MAX); s12 = logUniform(1, MAX); break;
        case 2: s1 = logUniform(S1MIN, MAX); s12 = s1; s2 = s1; break; // identical frames
        case 3: s1 = logUniform(S1MIN, MAX); s12 = clampI(s1 + R.range(-3, 3)); s2 = clampI(s12 + R.range(-3, 3)); break; // g ~ 1
        case 4: s1 = logUniform(S1MIN, 21474836); s12 = clampI(100 * s1 + R.range(-200, 200)); s2 = logUniform(1, MAX); break; // g ~ 100
        case 5: { // r near an integer: s2 ~ s12^2 / s1
          s1 = logUniform(S1MIN, MAX); s12 = logUniform(1, Math.min(MAX, Math.floor(Math.sqrt(s1 * MAX))));
          s2 = clampI(Math.round((s12 * s12) / s1) + R.range(-2, 2));
          break;
        }
        case 6: s1 = logUniform(S1MIN, MAX); s12 = logUniform(1, s1); s2 = logUniform(1, MAX); break; // g < 1
        case 7: s1 = R.pick([S1MIN, S1MIN + 1, MAX, MAX - 1, 1 << 30, (1 << 30) - 1, 21474836, 21474837]); s12 = R.pick([1, 2, s1, s1 - 1, s1 + 1, MAX, 100 * 131072, Math.min(MAX, 100 * s1), Math.min(MAX, 100 * s1 + 1)]); s2 = R.pick([1, MAX, s1, s12]); break;
        case 8: { // s12^2 / s1 an integer: e* and P* a hair below integers (r and p near steps)
          const c = logUniform(1, 64), a = logUniform(1, 2048);
          s1 = a * a * c;
          if (s1 < S1MIN || s1 > MAX) { s1 = S1MIN * c; s12 = logUniform(1, MAX); s2 = logUniform(1, MAX); break; }
          const b = logUniform(1, Math.floor(MAX / (a * c)));
          s12 = a * b * c;
          s2 = clampI(b * b * c + R.range(-2, 3));
          break;
        }
        case 9: { // p + base on a log2q step: t ~ a multiple of 2^k
          s1 = logUniform(S1MIN, MAX);
          const bits = R.range(18, 44), step = 2 ** (bits - 16);
          const target = Math.floor((2 ** bits + R.int(2 ** 16) * step) / step) * step - S1MIN;
          s12 = clampI(Math.round(Math.sqrt(Math.max(1, target) * s1)) + R.range(-1, 1));
          s2 = R.bool() ? R.range(1, 4) : logUniform(1, MAX);
          break;
        }
        case 10: { // base on a log2q step: r ~ a multiple of 2^k
          s1 = logUniform(S1MIN, MAX); s12 = logUniform(1, s1);
          const e = (s12 * s12) / s1, bits = R.range(18, 30), step = 2 ** (bits - 16);
          s2 = clampI(Math.round(e) + Math.floor((2 ** bits - S1MIN) / step) * step + R.range(-1, 2));
          break;
        }
        default: { // from real-looking 8-bit statistics: Q16 variances of 8-bit samples
          const v1 = 2 + R.unit() * 4000, v2 = R.unit() * 4000, rho = R.unit() * 2 - 0.5;
          s1 = Math.floor(v1 * 65536); s2 = clampI(Math.floor(v2 * 65536)); s12 = clampI(Math.floor(rho * Math.sqrt(v1 * Math.max(v2, 1e-3)) * 65536));
          break;
        }
      }
      input.set([s1, s2, s12], 3 * i);
    }
    const W = 16; // words per entry
    const code = composeWgsl(['vif/vif-gain.wgsl'], `
      @group(0) @binding(0) var<storage, read> inp: array<i32>;
      @group(0) @binding(1) var<storage, read_write> outp: array<u32>;
      @group(0) @binding(2) var<storage, read> log2_tab: array<u32>;
      @compute @workgroup_size(64)
      fn main(@builtin(global_invocation_id) id: vec3<u32>) {
        let i = id.y * 65535u * 64u + id.x;
        if (i == 0u) {
          outp[${W}u * ${n}u] = VIF_GAIN_EPS.x;
          outp[${W}u * ${n}u + 1u] = VIF_GAIN_EPS.y;
          for (var e = 0u; e < 14u; e = e + 1u) {
            outp[${W}u * ${n}u + 2u + e] = VIF_DELTA_BITS[e];
          }
        }
        if (i >= ${n}u) { return; }
        let s1 = inp[3u * i];
        let s2 = inp[3u * i + 1u];
        let s12 = inp[3u * i + 2u];
        let r = vif_gain_args(s1, s2, s12);
        let x = vif_gain_terms_exact(s1, s2, s12);
        let f = vif_gain_terms_fast(s1, s2, s12);
        let o = ${W}u * i;
        outp[o] = r.base;
        outp[o + 1u] = r.p_def.x;
        outp[o + 2u] = r.p_def.y;
        outp[o + 3u] = r.p_egl.x;
        outp[o + 4u] = r.p_egl.y;
        outp[o + 5u] = x.x | (x.y << 16u);
        outp[o + 6u] = f.x | (f.y << 16u);
        outp[o + 7u] = f.z;
        let c = vif_gain_enclose(s1, s2, s12);
        outp[o + 8u] = select(0u, 1u, c.has_r);
        outp[o + 9u] = c.i;
        outp[o + 10u] = bitcast<u32>(c.y);
        outp[o + 11u] = bitcast<u32>(c.er);
        outp[o + 12u] = c.q.x;
        outp[o + 13u] = c.q.y;
        outp[o + 14u] = bitcast<u32>(c.z);
        outp[o + 15u] = bitcast<u32>(c.ep);
      }`);
    const pipeline = await gpu.createComputePipeline(code, { label: 'vif gain test' });
    const d = gpu.device;
    const inBuf = d.createBuffer({ size: input.byteLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
    d.queue.writeBuffer(inBuf, 0, input);
    const outBuf = d.createBuffer({ size: (W * n + 16) * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const table = vifLog2Table();
    const tabBuf = d.createBuffer({ size: table.byteLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
    d.queue.writeBuffer(tabBuf, 0, table);
    const bg = d.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [inBuf, outBuf, tabBuf].map((buffer, binding) => ({ binding, resource: { buffer } })),
    });
    const enc = d.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bg);
    const groups = Math.ceil(n / 64);
    pass.dispatchWorkgroups(Math.min(groups, 65535), Math.ceil(groups / 65535));
    pass.end();
    d.queue.submit([enc.finish()]);
    const out = new Uint32Array(await gpu.read(outBuf));
    for (const b of [inBuf, outBuf, tabBuf]) b.destroy();

    assert.deepEqual([out[W * n], out[W * n + 1]], f64Bits(65536 * 1.0e-10), 'VIF_GAIN_EPS is 65536 * 1e-10');
    const f32 = new Float32Array(1), f32bits = new Uint32Array(f32.buffer);
    for (let e = 17; e <= 30; e++) {
      const delta = (2 ** e + 65536 * 1.0e-10) - 2 ** e;
      // the same for every s1 of the binade (no rounding tie): its largest member agrees
      assert.equal((2 ** (e + 1) - 1 + 65536 * 1.0e-10) - (2 ** (e + 1) - 1), delta);
      f32[0] = delta;
      assert.equal(f32[0], delta, 'delta exact in binary32');
      assert.equal(out[W * n + 2 + e - 17], f32bits[0], `VIF_DELTA_BITS[${e - 17}]`);
    }
    const log2q = (x) => { // x: bigint >= 2^17
      const k = x.toString(2).length - 16;
      return table[Number(x >> BigInt(k)) - 32768] + 2048 * k;
    };
    const outF = new Float32Array(out.buffer);
    let worstR = 0, worstP = 0;
    const bad = [];
    const fallbacks = new Array(KIND_COUNT).fill(0), counts = new Array(KIND_COUNT).fill(0);
    const u64 = (lo, hi) => (BigInt(hi) << 32n) | BigInt(lo);
    for (let i = 0; i < n && bad.length < 10; i++) {
      const [s1, s2, s12] = input.subarray(3 * i, 3 * i + 3);
      const [base, pDef, pEgl] = gainArgsRef(s1, s2, s12);
      const lb = log2q(BigInt(base));
      const num = log2q(pDef + BigInt(base)) - lb, egl = log2q(pEgl + BigInt(base)) - lb;
      const o = W * i;
      const got = [out[o], u64(out[o + 1], out[o + 2]), u64(out[o + 3], out[o + 4])];
      const what = `(${s1}, ${s2}, ${s12}) [kind ${kinds[i]}]`;
      if (got[0] !== base || got[1] !== pDef || got[2] !== pEgl) {
        bad.push(`${what}: binary64 path base ${got[0]} p100 ${got[1]} p1 ${got[2]}; js ${base} ${pDef} ${pEgl}`);
      }
      if ((out[o + 5] & 0xffff) !== num || out[o + 5] >>> 16 !== egl) {
        bad.push(`${what}: binary64 path terms ${out[o + 5] & 0xffff}, ${out[o + 5] >>> 16}; js ${num}, ${egl}`);
      }
      // The enclosures hold the doubles: r (when has_r, else r < 0) and P (unless g > 100).
      const gain = s12 / (s1 + 65536 * 1.0e-10);
      const r = s2 - gain * s12;
      if (out[o + 8]) {
        const dev = Math.abs((r - out[o + 9]) - outF[o + 10]);
        worstR = Math.max(worstR, dev / outF[o + 11]);
        if (!(dev <= outF[o + 11])) bad.push(`${what}: r = ${r} outside ${out[o + 9]} + ${outF[o + 10]} +- ${outF[o + 11]}`);
      } else if (!(r < 0)) {
        bad.push(`${what}: r = ${r} but the enclosure says r < 0`);
      }
      if (!(100 < gain)) {
        const gl = Math.min(gain, 100);
        const P = (gl * gl) * s1;
        const dev = Math.abs((P - Number(u64(out[o + 12], out[o + 13]))) - outF[o + 14]);
        worstP = Math.max(worstP, dev / outF[o + 15]);
        if (!(dev <= outF[o + 15])) bad.push(`${what}: P = ${P} outside ${u64(out[o + 12], out[o + 13])} + ${outF[o + 14]} +- ${outF[o + 15]}`);
      }
      counts[kinds[i]]++;
      if (out[o + 7] === 0) fallbacks[kinds[i]]++;
      else if ((out[o + 6] & 0xffff) !== num || out[o + 6] >>> 16 !== egl) {
        bad.push(`${what}: fast path terms ${out[o + 6] & 0xffff}, ${out[o + 6] >>> 16}; js ${num}, ${egl} (base ${base} p100 ${pDef} p1 ${pEgl})`);
      }
    }
    assert.equal(bad.length, 0, `gain terms differ:\n  ${bad.join('\n  ')}`);
    const rates = fallbacks.map((f, k) => `${k}: ${(100 * f / Math.max(1, counts[k])).toFixed(2)}%`);
    console.log(`      fast path undecided (binary64 fallback) by input kind: ${rates.join(', ')}`);
    console.log(`      largest deviation of the doubles from the enclosures' centres, in radii: r ${worstR.toFixed(4)}, P ${worstP.toFixed(4)}`);
    // The kinds drawn like real statistics must almost never need the fallback.
    for (const k of [0, 1, 2, 6, 11]) assert.ok(fallbacks[k] <= counts[k] * 0.01 + 2, `kind ${k}: ${fallbacks[k]} of ${counts[k]} fall back`);
  });

  it('matches the cpu backend at every bit depth on random sizes and content', async function () {
    const R = makeRng(SEED);
    const cases = [];
    for (const bd of [8, 10, 12, 16]) {
      for (const kind of KINDS) {
        const w = R.bool() ? R.range(33, 80) : R.range(33, 200);
        const h = R.bool() ? R.range(33, 80) : R.range(33, 120);
        const [ref, dis] = content(kind, w, h, bd, R);
        cases.push({ name: kind, w, h, bd, ref, dis });
      }
    }
    await checkCases(cases);
  });

  it('matches at the minimum sizes, odd sizes and tile-edge sizes', async function () {
    const R = makeRng(SEED ^ 0x33);
    const sizes = [[33, 33], [33, 34], [34, 33], [35, 37], [63, 33], [33, 65], [64, 32], [65, 17 + 16], [97, 49], [127, 129],
      [16, 16], [17, 23], [31, 16]]; // down to vif.h's 16 x 16 minimum
    const cases = [];
    for (const [w, h] of sizes) {
      const bd = R.pick([8, 10, 12, 16]);
      const kind = R.pick(['noise', 'smooth+noise', 'smooth+blur', 'negative', 'sparse']);
      const [ref, dis] = content(kind, w, h, bd, R);
      cases.push({ name: kind, w, h, bd, ref, dis });
    }
    await checkCases(cases);
  });

  it('writes zeros below 16 x 16, like vifStats', async function () {
    const cases = [[15, 40], [40, 15], [3, 3]].map(([w, h]) => {
      const R = makeRng(w * 100 + h);
      const [ref, dis] = content('noise', w, h, 8, R);
      return { name: 'tiny', w, h, bd: 8, ref, dis };
    });
    const got = await checkCases(cases);
    for (const g of got) assert.ok(g.every((v) => v === 0n));
  });

  it('carries into the high words: sums past 2^32', async function () {
    const R = makeRng(SEED ^ 0x232);
    const cases = [8, 16].map((bd) => {
      const [ref, dis] = content('flat-ref', 160, 120, bd, R);
      return { name: 'flat-ref', w: 160, h: 120, bd, ref, dis };
    });
    const got = await checkCases(cases);
    for (const g of got) assert.ok(g[3] > 1n << 32n, `numNonLog ${g[3]} should pass 2^32`);
  });

  it('matches with other tile shapes (16 KB workgroup memory, small workgroups)', async function () {
    const R = makeRng(SEED ^ 0x711e);
    // Each tile shape compiles its own pipelines (slow on lavapipe): GPU_VIF_ALL_TILES=1 adds more.
    const tiles = [VIF_SMALL_TILE];
    if (process.env.GPU_VIF_ALL_TILES) tiles.push({ workgroupSize: 64, tileWidth: 16, tileHeight: 8 }, { workgroupSize: 128, tileWidth: 64, tileHeight: 8 });
    const cases = [];
    for (const tile of tiles) {
      for (const bd of tile === VIF_SMALL_TILE ? [12] : [8, 16]) {
        const w = R.range(33, 150), h = R.range(33, 100);
        const [ref, dis] = content(R.pick(['smooth+noise', 'noise', 'sparse']), w, h, bd, R);
        cases.push({ name: 'tiles', w, h, bd, ref, dis, tile });
      }
    }
    await checkCases(cases);
  });

  it('is deterministic: the same bits on every run, batch and kernel instance', async function () {
    const R = makeRng(SEED ^ 0xde7);
    const cases = [];
    for (const bd of [8, 10]) {
      const [ref, dis] = content('smooth+noise', 121, 77, bd, R);
      cases.push({ name: 'det', w: 121, h: 77, bd, ref, dis });
    }
    const first = await gpuStatsBatch([...cases, ...cases]); // the same kernel twice in one submit
    const second = await gpuStatsBatch(cases);
    const fresh = await VifKernel.create(gpu, { width: 121, height: 77, bitDepth: 8 });
    kernels.set('fresh', fresh);
    const third = await gpuStatsBatch([{ ...cases[0], kernel: fresh }]);
    assert.deepEqual(first.slice(0, 2), first.slice(2));
    assert.deepEqual(first.slice(0, 2), second);
    assert.deepEqual(first[0], third[0]);
    for (let i = 0; i < cases.length; i++) assertSame(cases[i], first[i], await cpuStats(cases[i]));
  });

  it('matches on golden clip frames (src01 160x90 8-bit)', async function () {
    const clip = goldenClip('src01_160x90_8bit');
    const frames = [0, 1, 23, 47];
    const ref = readY4mLumas(clip.ref);
    const dis = readY4mLumas(clip.dis);
    const picked = (clip) => clip.lumas.filter((_, f) => frames.includes(f));
    const disLumas = picked(dis);
    const cases = picked(ref).map((r, i) => ({ name: `src01 frame ${frames[i]}`, w: ref.width, h: ref.height, bd: 8, ref: r, dis: disLumas[i] }));
    assert.equal(cases.length, frames.length);
    await checkCases(cases);
  });
});

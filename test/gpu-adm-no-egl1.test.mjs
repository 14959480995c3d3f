// The gpu backend without ADM's egl_1 variant (every model but the NEG ones; adm-no-egl1
// covers the cpu side): its core ADM kernel is compiled without the gain-limit-1 variant
// (AdmKernel.createWithoutEgl1, adm-variants.wgsl), and gives the default variant's stats
// bit for bit: the full kernel's and the cpu's, the egl_1 slots 0. The kernel really does
// less (one variant, smaller scratch), the backend picks it from parts.admEgl1, and a run
// without a NEG model scores exactly as one with it and as the cpu backend, on odd sizes at
// 8 and 10 bits. Instance kernels at one gain limit take the one-variant passes too.
// XDG_RUNTIME_DIR must be set for Mesa's lavapipe (any writable folder).
import assert from 'node:assert/strict';
import { openGpuDevice } from '../dist/kernels/gpu/device.js';
import { GpuBackend } from '../dist/kernels/gpu/gpu-backend.js';
import { AdmKernel, ADM_STATS_LENGTH, admPlan } from '../dist/kernels/gpu/adm/adm-kernel.js';
import { admKernelParams } from '../dist/kernels/adm-options.js';
import { loadNative } from '../dist/kernels/native.js';
import { goldenClip } from './helpers/golden.mjs';
import { makeRng, uploadPlane } from './helpers/gpu.mjs';
import { readY4mLumas } from './helpers/y4m-lumas.mjs';
import { assertOnGpu, assertSameFrames, scoreRun, scratchDir, writeLumaValuesPair } from './helpers/gpu-vs-cpu.mjs';

// adm.h's layout: per scale 9 (num h v d, num egl_1 h v d, den h v d), then per scale 6 AIM
// (variant 0 h v d, variant 1 h v d).
const eglSlot = (i) => (i < 36 ? i % 9 >= 3 && i % 9 < 6 : (i - 36) % 6 >= 3);
const isAdmEgl1Key = (k) => /^integer_(adm|aim)/.test(k) && k.endsWith('_egl_1');
const to10 = (l) => Uint16Array.from(l, (v) => (v << 2) | (v >> 6));

/** Smooth content with noise on the distorted side: [ref, dis] lumas of width x height. */
function synthetic(width, height, bitDepth, seed) {
  const rng = makeRng(seed);
  const max = 2 ** bitDepth - 1;
  const Array_ = bitDepth > 8 ? Uint16Array : Uint8Array;
  const ref = new Array_(width * height);
  const dis = new Array_(width * height);
  const [fx, fy] = [3 + rng.int(9), 3 + rng.int(9)];
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const v = max * (0.5 + 0.35 * Math.sin(x / fx) * Math.cos(y / fy) + 0.1 * (rng.float() - 0.5));
      const i = y * width + x;
      ref[i] = Math.min(max, Math.max(0, Math.round(v)));
      dis[i] = Math.min(max, Math.max(0, Math.round(v * 0.97 + max * 0.12 * (rng.float() - 0.5))));
    }
  }
  return [ref, dis];
}

describe('gpu ADM without its egl_1 variant', function () {
  this.timeout(600_000);
  let gpu;
  let native;

  before(async function () {
    native = loadNative();
    assert.equal(native.statsLayout().adm, ADM_STATS_LENGTH);
    gpu = await openGpuDevice({ label: 'gpu-adm-no-egl1 tests' });
    console.log(`      adapter: ${gpu.adapterName}${gpu.isSoftware ? ' (software)' : ''}`);
  });

  after(() => gpu?.destroy());

  /** The kernel's 60 stats for one pair. */
  async function stats(kernel, ref, dis) {
    const out = gpu.device.createBuffer({ size: 8 * ADM_STATS_LENGTH, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    const rb = uploadPlane(gpu, ref);
    const db = uploadPlane(gpu, dis);
    try {
      const words = await gpu.withErrorScopes('gpu-adm-no-egl1', async () => {
        gpu.device.queue.writeBuffer(out, 0, new Uint32Array(2 * ADM_STATS_LENGTH).fill(0xdeadbeef));
        const enc = gpu.device.createCommandEncoder();
        kernel.encode(enc, { ref: rb, dis: db }, { buffer: out, offset: 0 });
        gpu.device.queue.submit([enc.finish()]);
        return new Uint32Array(await gpu.read(out));
      });
      return Array.from({ length: ADM_STATS_LENGTH }, (_, k) => BigInt.asIntN(64, (BigInt(words[2 * k + 1]) << 32n) | BigInt(words[2 * k])));
    } finally {
      for (const b of [out, rb, db]) b.destroy();
    }
  }

  // Odd sizes (the 33 minimum among them), 8 and 10 bits, synthetic and natural frames.
  const src01 = () => {
    const clip = goldenClip('src01_160x90_8bit');
    const [r, d] = [readY4mLumas(clip.ref), readY4mLumas(clip.dis)];
    return { width: r.width, height: r.height, pairs: [0, 1].map((f) => [r.lumas[f], d.lumas[f]]) };
  };
  const cases = [
    ['97x61 8-bit', () => ({ width: 97, height: 61, bitDepth: 8, pairs: [synthetic(97, 61, 8, 1), synthetic(97, 61, 8, 2)] })],
    ['213x121 10-bit', () => ({ width: 213, height: 121, bitDepth: 10, pairs: [synthetic(213, 121, 10, 3)] })],
    ['33x35 10-bit', () => ({ width: 33, height: 35, bitDepth: 10, pairs: [synthetic(33, 35, 10, 4)] })],
    ['src01 160x90 8-bit', () => ({ ...src01(), bitDepth: 8 })],
    ['src01 160x90 10-bit', () => {
      const c = src01();
      return { ...c, bitDepth: 10, pairs: c.pairs.map((p) => p.map(to10)) };
    }],
  ];
  for (const [name, make] of cases) {
    it(`${name}: the default variant's stats are the full kernel's and the cpu's, the egl_1 slots 0`, async () => {
      const { width, height, bitDepth, pairs } = make();
      const g = { width, height, bitDepth };
      const full = await AdmKernel.create(gpu, g);
      const one = await AdmKernel.createWithoutEgl1(gpu, g);
      try {
        assert.equal(full.variants, 2);
        assert.equal(one.variants, 1);
        // Variant 1's M words (1 of 3 vec4 per position at scale 0, 2 of 5 above) and its 6
        // of 15 row sums are not allocated.
        const plans = admPlan(width, height);
        const mSaved = 16 * plans.reduce((n, p, s) => n + (s === 0 ? 1 : 2) * p.width * p.height, 0);
        const rowsSaved = 8 * 6 * plans.reduce((n, p) => n + p.bottom - p.top, 0);
        assert.ok(full.scratchBytes - one.scratchBytes >= mSaved + rowsSaved - 16, `scratch ${full.scratchBytes} -> ${one.scratchBytes}`);
        for (const [f, [ref, dis]] of pairs.entries()) {
          const gFull = await stats(full, ref, dis);
          const gOne = await stats(one, ref, dis);
          const cFull = [...(await native.computeFrameStats(ref, dis, width, height, bitDepth, undefined, 2)).stats];
          const cOne = [...(await native.computeFrameStats(ref, dis, width, height, bitDepth, undefined, 6)).stats];
          assert.deepEqual(gFull, cFull, `frame ${f}: the full kernel is the cpu's`);
          assert.deepEqual(gOne, cOne, `frame ${f}: without egl_1, the cpu's without egl_1`);
          for (let i = 0; i < ADM_STATS_LENGTH; i++) assert.equal(gOne[i], eglSlot(i) ? 0n : gFull[i], `frame ${f} stat ${i}`);
          assert.ok(gFull.some((v, i) => eglSlot(i) && v !== 0n), 'the full kernel computes the egl_1 variant');
        }
      } finally {
        full.destroy();
        one.destroy();
      }
    });
  }

  it('instance kernels at one gain limit compute one variant, at two both', async () => {
    const g = { width: 97, height: 61, bitDepth: 8 };
    const params = admKernelParams(native, { csfMode: 2, enhnGainLimit: 1 });
    const single = await AdmKernel.create(gpu, g, params);
    const pair = await AdmKernel.create(gpu, g, params, 100);
    try {
      assert.equal(single.variants, 1);
      assert.equal(pair.variants, 2);
      assert.ok(single.scratchBytes < pair.scratchBytes);
      const [ref, dis] = synthetic(97, 61, 8, 5);
      const want = [...(await native.computeAdmStats(ref, dis, 97, 61, 8, { csfMode: 2, enhnGainLimit: 1 }))];
      assert.deepEqual(await stats(single, ref, dis), want);
      // The pair's variant 0 is the same instance.
      const both = await stats(pair, ref, dis);
      for (let i = 0; i < ADM_STATS_LENGTH; i++) if (!eglSlot(i)) assert.equal(both[i], want[i], `stat ${i}`);
    } finally {
      single.destroy();
      pair.destroy();
    }
  });

  it('the gpu backend compiles the one-variant kernel exactly when parts.admEgl1 is false', async () => {
    const g = { width: 64, height: 48, bitDepth: 8 };
    const parts = { vif: false, adm: true, motion: false };
    for (const [admEgl1, variants] of [[false, 1], [true, 2], [undefined, 2]]) {
      const backend = await GpuBackend.open({ parts: admEgl1 === undefined ? parts : { ...parts, admEgl1 } });
      try {
        const set = await backend.kernels(g);
        assert.equal(set.core.adm.variants, variants, `admEgl1 ${admEgl1}`);
      } finally {
        await backend.close();
      }
    }
  });

  describe('score(): without a NEG model == with it == the cpu backend', function () {
    const dir = scratchDir('gpu-adm-no-egl1-');
    const formats = [
      { width: 99, height: 57, bitDepth: 8, frames: 3, seed: 11 },
      { width: 131, height: 75, bitDepth: 10, frames: 2, seed: 12 },
    ];
    for (const { frames, seed, ...format } of formats) {
      it(`${format.width}x${format.height} ${format.bitDepth}-bit`, async () => {
        const values = Array.from({ length: frames }, (_, f) => synthetic(format.width, format.height, format.bitDepth, seed + 100 * f));
        const [ref, dis] = writeLumaValuesPair(dir, `p${format.bitDepth}`, format, values);
        const plain = { models: ['version=vmaf_v0.6.1'] };
        const gpuPlain = await scoreRun(ref, dis, { ...plain, backend: 'gpu' });
        const cpuPlain = await scoreRun(ref, dis, { ...plain, backend: 'cpu' });
        const gpuNeg = await scoreRun(ref, dis, { models: ['version=vmaf_v0.6.1:name=plain', 'version=vmaf_v0.6.1neg:name=neg'], backend: 'gpu' });
        assertOnGpu(gpuPlain.warnings, 'plain');
        assertSameFrames(gpuPlain.frames, cpuPlain.frames, 'gpu vs cpu');
        assertSameFrames(gpuPlain.frames, cpuPlain.frames, 'gpu vs cpu scores', { field: 'scores' });
        assert.equal(gpuNeg.frames.length, frames);
        for (const [i, f] of gpuPlain.frames.entries()) {
          const keys = Object.keys(f.features).filter((k) => /^integer_(adm|aim)/.test(k));
          assert.ok(keys.includes('integer_adm2') && keys.includes('integer_adm_scale0'), keys.join());
          assert.ok(!keys.some(isAdmEgl1Key), `frame ${i}: no egl_1 ADM keys without a NEG model`);
          const neg = gpuNeg.frames[i].features;
          assert.ok(Object.keys(neg).some(isAdmEgl1Key), 'the NEG run has the egl_1 ADM keys');
          for (const k of keys) assert.ok(Object.is(f.features[k], neg[k]), `frame ${i} ${k}: ${f.features[k]} without NEG, ${neg[k]} with`);
          assert.ok(Object.is(f.scores.vmaf, gpuNeg.frames[i].scores.plain), `frame ${i}: vmaf ${f.scores.vmaf} without NEG, ${gpuNeg.frames[i].scores.plain} with`);
        }
      });
    }
  });
});

// The gpu ADM kernel at libvmaf's integer_adm options (AdmKernel.create with an instance's
// AdmKernelParams) against the cpu backend's admStatsWithOptions: the 60 int64 stats must be
// equal bit for bit, and so the 7 values of the shared host finish (adm-options.ts
// finishAdm), for every option (CSF modes, viewing distance, display height, integral and
// non-integral gain limits, noise and dlm weights, min_val, skip_aim, skip_scale0) and VMAF
// v1's combination; on seeded random planes of odd and even sizes at 8, 10, 12 and 16 bits,
// and on the carried golden clips, where the v1 instances' values must also equal
// libvmaf's logged ones (libvmaf-extra.json.gz). Several instances run side by side in one
// command buffer, each kernel writing its own stats slot.
// GPU_ADM_OPTIONS_SEED=<n> replays a run; GPU_ADM_OPTIONS_FRAMES=<n> caps the golden frames
// per clip compared at every option (default 2, none for clips over a megapixel unless it is
// set; the default, egl_1 and v1 instances see every frame).
import assert from 'node:assert/strict';
import { openGpuDevice } from '../dist/kernels/gpu/device.js';
import { AdmKernel, ADM_STATS_LENGTH } from '../dist/kernels/gpu/adm/adm-kernel.js';
import { AdmInstancesKernel } from '../dist/kernels/gpu/adm/adm-instances.js';
import { loadNative } from '../dist/kernels/native.js';
import { admKernelParams, finishAdm, ADM_VALUE_KEYS } from '../dist/kernels/adm-options.js';
import { openFrameSource, pairFrames } from '../dist/index.js';
import { goldenClips } from './helpers/golden.mjs';
import { makeRng, uploadPlane } from './helpers/gpu.mjs';

const SEED = Number(process.env.GPU_ADM_OPTIONS_SEED ?? 0xad0975) >>> 0;
const GOLDEN_FRAMES = Number(process.env.GPU_ADM_OPTIONS_FRAMES ?? 2);

const V1 = { csfMode: 2, dlmWeight: 0.7, enhnGainLimit: 1, minVal: 0.5, noiseWeight: 0.02 };
const V1_SUFFIX = '_csf_2_dlmw_0.7_egl_1_min_0.5_nw_0.02';

/** Every option, alone and combined; the v1 family as libvmaf's logs name it. */
const OPTION_SETS = [
  { name: 'defaults', options: {} },
  { name: 'egl 1', options: { enhnGainLimit: 1 } },
  { name: 'egl 7 (integral)', options: { enhnGainLimit: 7 } },
  { name: 'egl 2.5', options: { enhnGainLimit: 2.5 } },
  { name: 'egl 1.0000001', options: { enhnGainLimit: 1.0000001 } },
  { name: 'egl 99.9', options: { enhnGainLimit: 99.9 } },
  { name: 'csf 1 (Barten)', options: { csfMode: 1 } },
  { name: 'csf 1, scf 3, scfd 0.5', options: { csfMode: 1, csfScale: 3, csfDiagScale: 0.5 } },
  { name: 'csf 1, scf 50, scfd 50 (wrapping weights)', options: { csfMode: 1, csfScale: 50, csfDiagScale: 50 } },
  { name: 'csf 1, scf 0', options: { csfMode: 1, csfScale: 0, csfDiagScale: 0 } },
  { name: 'csf 2', options: { csfMode: 2 } },
  { name: 'csf 3', options: { csfMode: 3 } },
  { name: 'csf 3, rdh 720, nvd 5', options: { csfMode: 3, refDisplayHeight: 720, normViewDist: 5 } },
  { name: 'csf 2, rdh 2160', options: { csfMode: 2, refDisplayHeight: 2160 } },
  { name: 'nvd 5', options: { normViewDist: 5 } },
  { name: 'rdh 2160', options: { refDisplayHeight: 2160 } },
  { name: 'nvd 1.5, rdh 2160 (the default weights)', options: { normViewDist: 1.5, refDisplayHeight: 2160 } },
  { name: 'nvd 24, rdh 4320', options: { normViewDist: 24, refDisplayHeight: 4320 } },
  { name: 'nw 0', options: { noiseWeight: 0 } },
  { name: 'nw 1500', options: { noiseWeight: 1500 } },
  { name: 'dlmw 0', options: { dlmWeight: 0 } },
  { name: 'dlmw 1', options: { dlmWeight: 1 } },
  { name: 'min 1', options: { minVal: 1 } },
  { name: 'skip aim', options: { skipAim: true } },
  { name: 'skip scale0', options: { skipScale0: true } },
  { name: 'v1', options: V1, suffix: V1_SUFFIX },
  { name: 'v1 nvd 5', options: { ...V1, normViewDist: 5 }, suffix: `${V1_SUFFIX}_nvd_5` },
  { name: 'v1 nvd 1.5 rdh 2160', options: { ...V1, normViewDist: 1.5, refDisplayHeight: 2160 }, suffix: `${V1_SUFFIX}_nvd_1.5_rdh_2160` },
  { name: 'v1 rdh 2160', options: { ...V1, refDisplayHeight: 2160 }, suffix: `${V1_SUFFIX}_rdh_2160` },
  {
    name: 'everything at once',
    options: { csfMode: 3, normViewDist: 5, refDisplayHeight: 1080, noiseWeight: 0.5, dlmWeight: 0.3, minVal: 0.2, enhnGainLimit: 3.7, skipScale0: true },
  },
  { name: 'skip aim, skip scale0, csf 1, egl 1.5', options: { csfMode: 1, skipAim: true, skipScale0: true, enhnGainLimit: 1.5 } },
];
const V1_FAMILY = OPTION_SETS.filter((o) => o.suffix);

// ---- planes -----------------------------------------------------------------------------

function fill(w, h, B, f) {
  const p = B === 8 ? new Uint8Array(w * h) : new Uint16Array(w * h);
  const max = (1 << B) - 1;
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) p[y * w + x] = Math.max(0, Math.min(max, Math.round(f(x, y))));
  return p;
}
const noise = (R, w, h, B) => fill(w, h, B, () => R.int(1 << B));
const around = (R, src, w, h, B, amp) => fill(w, h, B, (x, y) => src[y * w + x] + (R.float() * 2 - 1) * amp * (1 << (B - 8)));
function gradient(R, w, h, B) {
  const max = (1 << B) - 1;
  const fx = R.float() * 0.2, fy = R.float() * 0.2, ph = R.float() * 6;
  return fill(w, h, B, (x, y) => max * (0.5 + 0.3 * Math.sin(fx * x + fy * y + ph) + 0.15 * Math.cos(0.05 * x * y / w)));
}
/** An enhanced copy (contrast stretched about the mean): exercises the gain limit. */
const sharpened = (src, w, h, B, gain) => {
  const mid = 1 << (B - 1);
  return fill(w, h, B, (x, y) => mid + (src[y * w + x] - mid) * gain);
};
const negative = (src, w, h, B) => fill(w, h, B, (x, y) => (1 << B) - 1 - src[y * w + x]);

function cases(R, w, h, B) {
  const n = noise(R, w, h, B);
  const g = gradient(R, w, h, B);
  return [
    { name: 'noise vs noisy', ref: n, dis: around(R, n, w, h, B, 10) },
    { name: 'gradient vs sharpened', ref: g, dis: sharpened(g, w, h, B, 1.4) },
    { name: 'gradient vs noisy', ref: g, dis: around(R, g, w, h, B, 25) },
    { name: 'noise vs its negative', ref: n, dis: negative(n, w, h, B) },
  ];
}

// ---- the suite ----------------------------------------------------------------------------

describe('gpu ADM kernel at integer_adm options (bit-exact with the cpu backend)', function () {
  this.timeout(600_000);
  let gpu;
  let native;
  const kernels = new Map();
  const equal = {}; // option name -> [equal values, compared values]
  const libvmafEqual = {}; // key -> [equal, compared]

  before(async function () {
    native = loadNative();
    gpu = await openGpuDevice({ label: 'gpu-adm-options tests' });
    console.log(`      adapter: ${gpu.adapterName}${gpu.isSoftware ? ' (software)' : ''}; seed ${SEED}`);
  });

  after(function () {
    for (const k of kernels.values()) k.destroy();
    gpu?.destroy();
    const rows = Object.entries(equal).map(([name, [e, n]]) => `${name}: ${e}/${n}`);
    if (rows.length) console.log(`      gpu == cpu values per option set:\n        ${rows.join('\n        ')}`);
    const lib = Object.entries(libvmafEqual).map(([key, [e, n]]) => `${key}: ${e}/${n}`);
    if (lib.length) console.log(`      gpu == libvmaf's log:\n        ${lib.join('\n        ')}`);
  });

  async function kernelFor(geometry, set) {
    const key = `${geometry.width}x${geometry.height}x${geometry.bitDepth} ${set.name}`;
    let k = kernels.get(key);
    if (!k) {
      k = await AdmKernel.create(gpu, geometry, admKernelParams(native, set.options));
      kernels.set(key, k);
    }
    return k;
  }

  /**
   * The stats of every (pair, option set): all recorded into one command buffer, each
   * instance's kernel writing its own slot. Returns stats[pair][set].
   */
  async function gpuStats(geometry, sets, pairs) {
    const ks = [];
    for (const set of sets) ks.push(await kernelFor(geometry, set));
    const slotWords = 2 * ADM_STATS_LENGTH + 2;
    const slots = pairs.length * sets.length;
    const out = gpu.device.createBuffer({ size: 4 * slotWords * slots, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST, label: 'test stats' });
    const buffers = [];
    try {
      const words = await gpu.withErrorScopes('gpu-adm-options test', async () => {
        gpu.device.queue.writeBuffer(out, 0, new Uint32Array(slotWords * slots).fill(0xdeadbeef));
        const enc = gpu.device.createCommandEncoder();
        pairs.forEach(([ref, dis], i) => {
          const rb = uploadPlane(gpu, ref);
          const db = uploadPlane(gpu, dis);
          buffers.push(rb, db);
          ks.forEach((k, j) => k.encode(enc, { ref: rb, dis: db }, { buffer: out, offset: 4 * slotWords * (i * sets.length + j) }));
        });
        gpu.device.queue.submit([enc.finish()]);
        return new Uint32Array(await gpu.read(out));
      });
      return pairs.map((_, i) => sets.map((_, j) => {
        const at = slotWords * (i * sets.length + j);
        const stats = new BigInt64Array(ADM_STATS_LENGTH);
        for (let k = 0; k < ADM_STATS_LENGTH; k++) stats[k] = BigInt.asIntN(64, (BigInt(words[at + 2 * k + 1]) << 32n) | BigInt(words[at + 2 * k]));
        assert.equal(words[at + 2 * ADM_STATS_LENGTH], 0xdeadbeef, 'a kernel writes only its own slot');
        return stats;
      }));
    } finally {
      out.destroy();
      for (const b of buffers) b.destroy();
    }
  }

  /** GPU against cpu, stats and values, for every set on every pair; returns the GPU values [pair][set]. */
  async function check(geometry, sets, pairs, what) {
    const { width, height, bitDepth } = geometry;
    const got = await gpuStats(geometry, sets, pairs.map((p) => [p.ref, p.dis]));
    const values = [];
    for (let i = 0; i < pairs.length; i++) {
      const row = [];
      for (let j = 0; j < sets.length; j++) {
        const set = sets[j];
        const want = await native.computeAdmStats(pairs[i].ref, pairs[i].dis, width, height, bitDepth, set.options);
        const diffs = [];
        for (let k = 0; k < ADM_STATS_LENGTH; k++) if (got[i][j][k] !== want[k]) diffs.push(`stat ${k}: gpu ${got[i][j][k]}, cpu ${want[k]}`);
        assert.ok(diffs.length === 0, `${what}, ${pairs[i].name}, ${set.name}: ${diffs.length} stats differ\n  ${diffs.slice(0, 12).join('\n  ')}`);
        const gv = finishAdm(native, got[i][j], width, height, set.options);
        const cv = finishAdm(native, want, width, height, set.options);
        const tally = (equal[set.name] ??= [0, 0]);
        for (const key of ADM_VALUE_KEYS) {
          assert.ok(Object.is(gv[key], cv[key]), `${what}, ${pairs[i].name}, ${set.name}: ${key} gpu ${gv[key]}, cpu ${cv[key]}`);
          tally[0]++;
          tally[1]++;
        }
        row.push(gv);
      }
      values.push(row);
    }
    return values;
  }

  it('writes 0 where an instance has no value: the second variant, AIM under skip_aim, scale 0 under skip_scale0', async function () {
    const R = makeRng(SEED ^ 0x101);
    const [w, h, B] = [97, 65, 8];
    const g = gradient(R, w, h, B);
    const sets = [OPTION_SETS[0], OPTION_SETS.find((s) => s.name === 'skip aim'), OPTION_SETS.find((s) => s.name === 'skip scale0')];
    const [[plain, noAim, noScale0]] = await gpuStats({ width: w, height: h, bitDepth: B }, sets, [[g, around(R, g, w, h, B, 30)]]);
    const zeroIn = (stats, ks) => ks.every((k) => stats[k] === 0n);
    const range = (a, b) => Array.from({ length: b - a }, (_, i) => a + i);
    const eglSlots = [0, 1, 2, 3].flatMap((s) => [9 * s + 3, 9 * s + 4, 9 * s + 5, 36 + 6 * s + 3, 36 + 6 * s + 4, 36 + 6 * s + 5]);
    for (const stats of [plain, noAim, noScale0]) assert.ok(zeroIn(stats, eglSlots), 'one variant per instance');
    assert.ok(!zeroIn(plain, [36, 37, 38]), 'AIM computed at scale 0');
    assert.ok(zeroIn(noAim, range(36, 60)), 'no AIM under skip_aim');
    assert.deepEqual([...noAim.slice(0, 36)], [...plain.slice(0, 36)], 'DLM unchanged under skip_aim');
    assert.ok(zeroIn(noScale0, [...range(0, 9), 36, 37, 38]), 'no scale 0 under skip_scale0');
    assert.deepEqual([...noScale0.slice(9, 36)], [...plain.slice(9, 36)], 'the other scales unchanged');
  });

  it('applies a non-integral gain limit: between the limits 1 and 100, and not as its floor or ceiling', async function () {
    const R = makeRng(SEED ^ 0x111);
    const [w, h, B] = [120, 90, 10];
    const g = gradient(R, w, h, B);
    const geometry = { width: w, height: h, bitDepth: B };
    const egl = (enhnGainLimit) => ({ name: `egl ${enhnGainLimit}`, options: { enhnGainLimit } });
    const sets = [egl(1), egl(1.2), egl(2), egl(100)];
    const pairs = [{ name: 'gradient vs sharpened', ref: g, dis: sharpened(g, w, h, B, 1.6) }];
    const [[v1, v12, v2, v100]] = await check(geometry, sets, pairs, `${w}x${h} ${B}-bit`);
    assert.ok(v1.integer_adm2 < v12.integer_adm2 && v12.integer_adm2 < v2.integer_adm2 && v2.integer_adm2 <= v100.integer_adm2,
      `adm2 grows with the gain limit: ${v1.integer_adm2}, ${v12.integer_adm2}, ${v2.integer_adm2}, ${v100.integer_adm2}`);
  });

  it('matches at every option on random planes: odd and even sizes, 8/10/12/16-bit', async function () {
    const R = makeRng(SEED ^ 0x202);
    const geometries = [[33, 33, 8], [34, 35, 10], [97, 61, 12], [120, 68, 8], [151, 83, 10], [64, 200, 16], [201, 69, 12]];
    for (const [w, h, B] of geometries) {
      await check({ width: w, height: h, bitDepth: B }, OPTION_SETS, cases(R, w, h, B), `${w}x${h} ${B}-bit`);
    }
  });

  it('matches on a seeded sweep of sizes, bit depths and option sets', async function () {
    const R = makeRng(SEED ^ 0x303);
    for (let n = 0; n < 12; n++) {
      const w = R.range(33, 180), h = R.range(33, 180), B = R.pick([8, 10, 12]);
      const sets = [R.pick(OPTION_SETS), R.pick(OPTION_SETS), R.pick(V1_FAMILY)];
      await check({ width: w, height: h, bitDepth: B }, sets, cases(R, w, h, B).slice(0, 2), `sweep ${w}x${h} ${B}-bit`);
    }
  });

  it('runs several instances in shared passes (same weights: two gain limits per kernel), each equal to its own cpu computation', async function () {
    const R = makeRng(SEED ^ 0x404);
    const instances = [
      {},
      { enhnGainLimit: 1 },
      { enhnGainLimit: 2.5 },
      { noiseWeight: 0.5, dlmWeight: 0.9, skipAim: true }, // the defaults' passes, other finish
      V1,
      { ...V1, noiseWeight: 0.1, minVal: 0 },
      { ...V1, skipAim: true },
      { csfMode: 2, enhnGainLimit: 1.5, skipScale0: true },
      { ...V1, normViewDist: 5 },
      { csfMode: 1, csfScale: 2 },
    ];
    const frames = [];
    for (const [w, h, B] of [[96, 54, 8], [83, 47, 10], [150, 99, 12]]) {
      const g = gradient(R, w, h, B);
      frames.push({ geometry: { width: w, height: h, bitDepth: B }, ref: g, dis: sharpened(g, w, h, B, 1.3) });
    }
    const clip = goldenClips().find((c) => c.name === 'src01_288x162_10bit');
    if (clip) {
      const ref = openFrameSource(clip.ref);
      const dis = openFrameSource(clip.dis);
      try {
        for await (const pair of pairFrames(ref, dis)) {
          const f = pair.ref.format;
          frames.push({ geometry: { width: f.width, height: f.height, bitDepth: f.bitDepth }, ref: pair.ref.luma.slice(), dis: pair.dis.luma.slice() });
          pair.ref.release();
          pair.dis.release();
        }
      } finally {
        await Promise.all([ref.close(), dis.close()]);
      }
    }
    const params = instances.map((o) => admKernelParams(native, o));
    let compared = 0;
    for (const { geometry, ref, dis } of frames) {
      const multi = await AdmInstancesKernel.create(gpu, geometry, params);
      try {
        // Watson at 3 x 1080: 100/1 and 2.5 (2 kernels); the blend: 1, 1.5 (1); blend at 5H (1); Barten x2 (1)
        assert.equal(multi.kernelCount, 5, 'kernels shared');
        const out = gpu.device.createBuffer({ size: 8 * multi.statsLength + 16, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC, label: 'test stats' });
        const rb = uploadPlane(gpu, ref);
        const db = uploadPlane(gpu, dis);
        let words;
        try {
          words = await gpu.withErrorScopes('adm instances test', async () => {
            const enc = gpu.device.createCommandEncoder();
            multi.encode(enc, { ref: rb, dis: db }, { buffer: out, offset: 16 });
            gpu.device.queue.submit([enc.finish()]);
            return new Uint32Array(await gpu.read(out));
          });
        } finally {
          for (const b of [out, rb, db]) b.destroy();
        }
        const block = new BigInt64Array(multi.statsLength);
        for (let k = 0; k < block.length; k++) block[k] = BigInt.asIntN(64, (BigInt(words[4 + 2 * k + 1]) << 32n) | BigInt(words[4 + 2 * k]));
        for (let i = 0; i < instances.length; i++) {
          const got = multi.instanceStats(block, i);
          const want = await native.computeAdmStats(ref, dis, geometry.width, geometry.height, geometry.bitDepth, instances[i]);
          assert.deepEqual([...got], [...want], `${geometry.width}x${geometry.height}: instance ${JSON.stringify(instances[i])}`);
          const gv = finishAdm(native, got, geometry.width, geometry.height, instances[i]);
          const cv = finishAdm(native, want, geometry.width, geometry.height, instances[i]);
          assert.deepEqual(gv, cv);
          compared++;
        }
      } finally {
        multi.destroy();
      }
    }
    assert.ok(compared >= 60, `${compared} instance frames compared`);
  });

  // The golden clips: every option set on the first frames, the v1 family (and the default
  // and egl_1 instances) on every frame, against the cpu and against libvmaf's logs.
  for (const clip of goldenClips()) {
    it(`matches on the golden clip ${clip.name}, and libvmaf's logged values`, async function () {
      const logs = { default: clip.log('libvmaf').frames, extra: clip.hasLog('libvmaf-extra') ? clip.log('libvmaf-extra').frames : [] };
      // The 8-bit-as-10-bit clip's logs are of converted frames (see adm-options.test.mjs).
      const compareLog = !clip.name.startsWith('hfr_');
      const ref = openFrameSource(clip.ref);
      const dis = openFrameSource(clip.dis);
      const pairs = [];
      let geometry;
      try {
        for await (const pair of pairFrames(ref, dis)) {
          geometry ??= { width: pair.ref.format.width, height: pair.ref.format.height, bitDepth: pair.ref.format.bitDepth };
          pairs.push({ name: `frame ${pairs.length}`, ref: pair.ref.luma.slice(), dis: pair.dis.luma.slice() });
          pair.ref.release();
          pair.dis.release();
        }
      } finally {
        await Promise.all([ref.close(), dis.close()]);
      }
      const logged = [
        { set: OPTION_SETS[0], log: 'default', suffix: '' },
        { set: OPTION_SETS[1], log: 'default', suffix: '_egl_1' },
        ...V1_FAMILY.map((set) => ({ set, log: 'extra', suffix: set.suffix })),
      ];
      // (over a megapixel, lavapipe and the cpu take long: only the logged instances there)
      const everyOption = geometry.width * geometry.height > 1 << 20 && !process.env.GPU_ADM_OPTIONS_FRAMES ? 0 : GOLDEN_FRAMES;
      const batch = 16;
      for (let at = 0; at < pairs.length; at += batch) {
        const chunk = pairs.slice(at, at + batch);
        const first = at < everyOption ? chunk.slice(0, everyOption - at) : [];
        if (first.length) await check(geometry, OPTION_SETS, first, clip.name);
        const values = await check(geometry, logged.map((l) => l.set), chunk, clip.name);
        if (!compareLog) continue;
        chunk.forEach((_, i) => {
          logged.forEach((l, j) => {
            const metrics = logs[l.log][at + i]?.metrics;
            if (!metrics || !(`integer_adm2${l.suffix}` in metrics)) return;
            for (const key of ADM_VALUE_KEYS) {
              const name = key + l.suffix;
              const tally = (libvmafEqual[name.replace(/^integer_/, '')] ??= [0, 0]);
              assert.equal(values[i][j][key], metrics[name], `${clip.name} frame ${at + i}: ${name}`);
              tally[0]++;
              tally[1]++;
            }
          });
        });
      }
    });
  }
});

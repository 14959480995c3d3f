// cambi on the gpu backend (cambi-gpu.ts, cambi.wgsl): the per-pixel stages on the GPU and
// cambi.cpp's pooling give the cpu backend's values bit for bit, which are libvmaf 3.2.0's
// (the carried logs, every frame: the default instance and VMAF v1's), under the options of
// libvmaf's table it supports, and on seeded random pictures (sizes >= 216 a side, 8 and
// 10 bits, smooth gradients that band, flat patches, noise). full_ref runs the reference
// through the same kernels (cambi_source, cambi_full_reference): equal to libvmaf's logs and
// to the cpu backend on seeded random pairs (odd sizes, 8 and 10 bits, encode and source
// sizes, several frames). What it does not support (max_log_contrast > 2) runs on the host.
// XDG_RUNTIME_DIR must be set for Mesa's lavapipe (any writable folder).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { lastValueFrom, toArray } from 'rxjs';
import { score } from '../../dist/index.js';
import { cambi } from '../../dist/extractors/cambi/cambi.js';
import { cambiPooling } from '../../dist/extractors/cambi/cambi-gpu.js';
import { gpuPrefixOf } from '../helpers/env.mjs';
import { goldenClip, goldenClips } from '../helpers/golden.mjs';
import { writeLumaPair, writeLumaValuesPair } from '../helpers/gpu-vs-cpu.mjs';

const V1 = 'cambi=cambi_high_res_speedup=1080:cambi_vis_lum_threshold=0.06:cambi_max_val=17';
const V1_KEY = 'cambi_hrs_1080_cmxv_17_vlt_0.06';
const FULL_REF_KEYS = ['cambi', 'cambi_source', 'cambi_full_reference'];
const tmp = mkdtempSync(join(tmpdir(), 'vmaf-cambi-gpu-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

async function run(ref, dis, backend, features, frameCnt = undefined) {
  const warnings = [];
  const frames = await lastValueFrom(
    score(ref, dis, { backend, features, noPrediction: true, threads: 2, frameCnt, onWarning: (m) => warnings.push(m) }).pipe(toArray()),
  );
  return { frames, warnings };
}

function assertSame(got, want, what) {
  assert.equal(got.length, want.length, `${what}: ${got.length} frames, want ${want.length}`);
  for (let i = 0; i < want.length; i++) {
    assert.deepEqual(Object.keys(got[i].features), Object.keys(want[i].features), `${what}: frame ${i} keys`);
    for (const [k, v] of Object.entries(want[i].features)) {
      assert.ok(Object.is(got[i].features[k], v), `${what}: frame ${i} ${k}: gpu ${got[i].features[k]} cpu ${v}`);
    }
  }
}

const onHost = (warnings) => warnings.filter((w) => /host's cpu/.test(w) && /cambi/.test(w));

describe('cambi on the gpu backend', function () {
  this.timeout(1_200_000);

  it('supports the distorted at the frame size or a smaller encode, and full_ref; max_log_contrast > 2 stays on the host', async () => {
    const { supports } = await cambi.implementation.gpu();
    const defaults = Object.fromEntries(cambi.options.map((o) => [o.name, o.default]));
    const fmt = { width: 640, height: 360, bitDepth: 10, chroma: '420' };
    assert.equal(supports(defaults, fmt), true);
    assert.equal(supports({ ...defaults, cambi_high_res_speedup: 1080, cambi_vis_lum_threshold: 0.06, cambi_max_val: 17 }, fmt), true);
    assert.equal(supports({ ...defaults, full_ref: true }, fmt), true);
    assert.equal(supports({ ...defaults, full_ref: true, src_width: 1280, src_height: 720, enc_width: 320, enc_height: 180 }, fmt), true);
    assert.equal(supports({ ...defaults, enc_width: 320, enc_height: 180 }, fmt), true);
    assert.equal(supports({ ...defaults, max_log_contrast: 3 }, fmt), false);
    // Buffers too large for WebGPU's default binding limit stay on the host: 8K at full size.
    const uhd = { width: 3840, height: 2160, bitDepth: 10, chroma: '420' };
    const full8k = { width: 7680, height: 4320, bitDepth: 10, chroma: '420' };
    assert.equal(supports(defaults, uhd), true);
    assert.equal(supports(defaults, full8k), false);
    assert.equal(supports({ ...defaults, cambi_high_res_speedup: 2160 }, full8k), true);
    // The reference is measured at the source size, which may exceed the frame's.
    assert.equal(supports({ ...defaults, full_ref: true, src_width: 7680, src_height: 4320 }, uhd), false);
  });

  describe('golden parity: gpu == cpu == libvmaf 3.2.0, every frame (full_ref and VMAF v1 instances)', function () {
    const clips = goldenClips().filter((c) => c.hasLog('libvmaf-extra') && 'cambi' in (c.log('libvmaf-extra').frames[0]?.metrics ?? {}));
    const counts = {};
    let pooledBefore;
    before(() => (pooledBefore = { ...cambiPooling }));
    after(() => console.log(`      cambi gpu values equal to libvmaf: ${JSON.stringify(counts)}; frames pooled on the GPU ${cambiPooling.gpu - pooledBefore.gpu}, on the host ${cambiPooling.host - pooledBefore.host}`));
    it('has the carried clips libvmaf scores with cambi', () => assert.ok(clips.length >= 10, `found ${clips.length}`));
    for (const clip of clips) {
      it(clip.name, async () => {
        // A long clip's first frames (helpers/env.mjs gpuPrefixOf; VMAF_TEST_FULL=1: all of it).
        const prefix = gpuPrefixOf(clip.log('libvmaf-extra').frames.length);
        const extra = clip.log('libvmaf-extra').frames.slice(0, prefix?.scored);
        const withV1 = V1_KEY in extra[0].metrics;
        const features = ['cambi=full_ref=true', ...(withV1 ? [V1] : [])];
        const gpu = await run(clip.ref, clip.dis, 'gpu', features, prefix?.scored);
        const cpu = await run(clip.ref, clip.dis, 'cpu', features, prefix?.scored);
        assertSame(gpu.frames, cpu.frames, clip.name);
        assert.deepEqual(onHost(gpu.warnings), [], `${clip.name}: cambi ran on the host: ${gpu.warnings.join('\n')}`);
        assert.equal(gpu.frames.length, extra.length, 'every frame is scored');
        for (const [i, f] of gpu.frames.entries()) {
          for (const key of [...FULL_REF_KEYS, ...(withV1 ? [V1_KEY] : [])]) {
            assert.ok(Object.is(f.features[key], extra[i].metrics[key]), `${clip.name} frame ${i}: ${key}: gpu ${f.features[key]}, libvmaf ${extra[i].metrics[key]}`);
            counts[key] = (counts[key] ?? 0) + 1;
          }
        }
      });
    }
  });

  describe("libvmaf's runs with each option (those the gpu part supports), gpu == cpu == libvmaf", function () {
    for (const name of ['banding_640x360_10bit', 'src01_288x162_8bit']) {
      const clip = goldenClip(name);
      const log = JSON.parse(gunzipSync(readFileSync(join(clip.dir, 'libvmaf-cambi-options.json.gz'))).toString('utf8'));
      for (const { feature, frames } of log.runs) {
        if (/max_log_contrast=[345]|mlc=[345]/.test(feature)) continue;
        const fullRef = /full_ref=true/.test(feature);
        // libvmaf 3.2.0 copies a 10-bit distorted picture with the input's row stride into its
        // wider full_ref buffer when the source size exceeds the frame's: its distorted value
        // reads misplaced rows (cambi.test.mjs). Both backends measure the distorted itself:
        // gpu == cpu there, and the other keys equal libvmaf's.
        const copyBug = name === 'banding_640x360_10bit' && /src_width=960/.test(feature);
        it(`${name}: ${feature}`, async () => {
          const gpu = await run(clip.ref, clip.dis, 'gpu', [feature]);
          assert.deepEqual(onHost(gpu.warnings), [], gpu.warnings.join('\n'));
          assert.equal(gpu.frames.length, frames.length);
          if (fullRef) assertSame(gpu.frames, (await run(clip.ref, clip.dis, 'cpu', [feature])).frames, feature);
          for (const [i, expected] of frames.entries()) {
            for (const [key, value] of Object.entries(expected)) {
              if (copyBug && key !== 'cambi_source') continue;
              assert.ok(Object.is(gpu.frames[i].features[key], value), `${name} frame ${i}: ${key}: gpu ${gpu.frames[i].features[key]}, libvmaf ${value}`);
            }
          }
        });
      }
    }
  });

  it('full_ref runs on the GPU beside another instance, with the cpu backend\'s values', async () => {
    const clip = goldenClip('src01_288x162_8bit');
    const features = ['cambi=full_ref=true', 'cambi=cambi_topk=0.3'];
    const gpu = await run(clip.ref, clip.dis, 'gpu', features);
    const cpu = await run(clip.ref, clip.dis, 'cpu', features);
    assertSame(gpu.frames, cpu.frames, 'full_ref');
    assert.deepEqual(onHost(gpu.warnings), [], gpu.warnings.join('\n'));
  });

  it('full_ref, randomized: seeded pairs (odd sizes, 8/10-bit, encode and source sizes, several frames), gpu == cpu exactly', async () => {
    let seed = 8128;
    const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
    const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
    // The reference: smooth gradients dithered with noise; the distorted: the same quantised
    // without it (it bands more), so cambi_source and cambi_full_reference both vary.
    const cases = [
      { width: 233, height: 219, bitDepth: 8, frames: 3, options: '' },
      { width: 301, height: 227, bitDepth: 10, frames: 2, options: ':enc_width=251:enc_height=189:enc_bitdepth=8' },
      // A source larger than the frame (its samples picked up to it) and an encode below it.
      { width: 320, height: 241, bitDepth: 8, frames: 2, options: ':src_width=481:src_height=361:enc_width=279:enc_height=211' },
      // A source below the frame, beside a default instance; pooled on the host too.
      { width: 403, height: 271, bitDepth: 10, frames: 2, options: ':src_width=323:src_height=217:cambi_vis_lum_threshold=0.06:cambi_max_val=17:window_size=31', alongside: ['cambi'], host: true },
      { width: 257, height: 229, bitDepth: 10, frames: 5, options: ':cambi_high_res_speedup=1080:topk=0.3' },
    ];
    let sourceBands = 0;
    let worse = 0;
    for (const [c, { width, height, bitDepth, frames, options, alongside = [], host = false }] of cases.entries()) {
      const max = 2 ** bitDepth - 1;
      // Steps CAMBI sees: at most 4 levels at 10 bits.
      const step = bitDepth === 8 ? 1 : 4;
      const files = writeLumaPair(tmp, `fullref${c}`, { width, height, bitDepth }, frames, (ref, dis, f) => {
        const gx = (rand() - 0.5) * (max / width) * 0.5;
        const gy = (rand() - 0.5) * (max / height) * 0.5;
        const base = int(Math.floor(max * 0.15), Math.floor(max * 0.6));
        const period = int(20, 60);
        for (let y = 0; y < height; y++) {
          for (let x = 0; x < width; x++) {
            const v = base + gx * x + gy * y + 6 * Math.sin((x + 0.5 * y + 5 * f) / period);
            const i = y * width + x;
            ref[i] = Math.min(max, Math.max(0, Math.round(v + (rand() < 0.5 ? int(-2, 2) : 0))));
            dis[i] = Math.min(max, Math.max(0, step * Math.round(v / step)));
          }
        }
      });
      const features = [`cambi=full_ref=true${options}`, ...alongside];
      const what = `case ${c}: ${width}x${height} ${bitDepth}-bit ${features.join(' ')}`;
      const before = { ...cambiPooling };
      const g = await run(files[0], files[1], 'gpu', features);
      const k = await run(files[0], files[1], 'cpu', features);
      assert.equal(g.frames.length, frames, what);
      assertSame(g.frames, k.frames, what);
      assert.deepEqual(onHost(g.warnings), [], `${what}: ${g.warnings.join('\n')}`);
      assert.equal(cambiPooling.gpu - before.gpu, frames * features.length, `${what}: every frame pooled on the GPU`);
      for (const f of g.frames) {
        assert.ok(Number.isFinite(f.features.cambi_source) && Number.isFinite(f.features.cambi_full_reference), what);
        if (f.features.cambi_source > 0) sourceBands++;
        if (f.features.cambi_full_reference > 0) worse++;
      }
      if (host) {
        cambiPooling.forceHost = true;
        try {
          const h = await run(files[0], files[1], 'gpu', features);
          assertSame(h.frames, k.frames, `${what} (pooled on the host)`);
        } finally {
          cambiPooling.forceHost = false;
        }
      }
    }
    assert.ok(sourceBands >= 3 && worse >= 3, `frames where the reference bands: ${sourceBands}, where the distorted bands more: ${worse}`);
  });

  it('a 10-bit input holding a value above 1023 is refused on both backends, naming the bit depth', async () => {
    const width = 240;
    const height = 216;
    const cw = width / 2;
    const ch = height / 2;
    const samples = new Uint16Array(width * height + 2 * cw * ch).fill(512);
    samples[width * 100 + 37] = 2000;
    const file = join(tmp, 'over.y4m');
    writeFileSync(file, Buffer.concat([Buffer.from(`YUV4MPEG2 W${width} H${height} F25:1 Ip A1:1 C420p10\n`, 'latin1'), Buffer.from('FRAME\n', 'latin1'), Buffer.from(samples.buffer)]));
    for (const backend of ['cpu', 'gpu']) {
      await assert.rejects(run(file, file, backend, ['cambi']), /cambi: the input holds a value greater than 1023, the largest at 10 bits/, backend);
    }
  });

  it('contrast, randomized: the widest windows (pad 32, 25, 16, 10), odd sizes, flat, noisy and many-level content, max_log_contrast 0-2, gpu == cpu exactly', async () => {
    // cambi.wgsl's contrast counts a window in chunks of nearby values per strip: these
    // pictures put flat patches of far apart levels and steep staircases of flat steps in
    // one strip (several chunks, values at a chunk's edges), noise and gradients beside them,
    // under windows up to the largest cambi.ts allows (65 pixels: window_size=127 at 1601x1439).
    let seed = 4242;
    const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
    const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
    const cases = [
      { width: 1601, height: 1439, bitDepth: 10, frames: 1, features: ['cambi=window_size=127', 'cambi=window_size=127:cambi_high_res_speedup=1080', 'cambi=max_log_contrast=1:cambi_vis_lum_threshold=0.06', 'cambi=max_log_contrast=0:window_size=100'] },
      { width: 641, height: 359, bitDepth: 8, frames: 2, features: ['cambi=window_size=127', 'cambi=max_log_contrast=1:window_size=100'] },
    ];
    for (const [c, { width, height, bitDepth, frames, features }] of cases.entries()) {
      const max = 2 ** bitDepth - 1;
      const lumas = [];
      for (let f = 0; f < frames; f++) {
        const luma = new Float64Array(width * height);
        const gx = (rand() - 0.5) * (max / width) * 0.6;
        const gy = (rand() - 0.5) * (max / height) * 0.6;
        const base = int(Math.floor(max * 0.1), Math.floor(max * 0.6));
        for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) luma[y * width + x] = base + gx * x + gy * y + 8 * Math.sin((x + y * 0.5) / 40);
        for (let r = 0; r < (width * height) / 4000; r++) {
          const x0 = int(0, width - 8);
          const y0 = int(0, height - 8);
          const rw = int(8, 160);
          const rh = int(8, 160);
          const kind = int(0, 3);
          const level = int(0, max);
          const step = int(1, bitDepth === 8 ? 10 : 40);
          const run = int(6, 16);
          for (let y = y0; y < Math.min(height, y0 + rh); y++) {
            for (let x = x0; x < Math.min(width, x0 + rw); x++) {
              const i = y * width + x;
              if (kind === 0) luma[i] = level;  // flat, at any level
              else if (kind === 1) luma[i] += int(-3, 3);  // noise
              else if (kind === 2) luma[i] = level + (x - x0) * 0.05;  // a slow ramp: it bands
              else luma[i] = level + step * Math.floor((x - x0) / run);  // flat steps, far apart
            }
          }
        }
        lumas.push(luma);
      }
      const [file] = writeLumaValuesPair(tmp, `contrast${c}`, { width, height, bitDepth }, lumas.map((luma) => [luma, luma]));
      const what = `case ${c}: ${width}x${height} ${bitDepth}-bit`;
      const g = await run(file, file, 'gpu', features);
      const k = await run(file, file, 'cpu', features);
      assert.equal(g.frames.length, frames, what);
      assertSame(g.frames, k.frames, what);
      assert.deepEqual(onHost(g.warnings), [], `${what}: ${g.warnings.join('\n')}`);
      for (const key of Object.keys(k.frames[0].features)) {
        assert.ok(k.frames.some((f) => f.features[key] > 0), `${what}: ${key} finds banding (${k.frames.map((f) => f.features[key])})`);
      }
    }
  });

  it('randomized: seeded random pictures (>= 216 a side, 8/10-bit, banding gradients, flat patches, noise), gpu == cpu exactly', async () => {
    let seed = 1337;
    const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
    const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
    // Eight of 8 and 10 bits, then 12 and 16 bits, then frames far wider than high (the
    // window exceeds the small scales' height: clipped on both sides).
    const cases = 12;
    for (let c = 0; c < cases; c++) {
      const elongated = c >= 10;
      const width = elongated ? int(600, 900) : int(216, 420);
      const height = elongated ? int(34, 80) : int(216, 300);
      const bitDepth = c < 8 ? [8, 10][c % 2] : [12, 16, 8, 10][c - 8];
      const max = 2 ** bitDepth - 1;
      const frames = 2;
      const [refs, diss] = ['ref', 'dis'].map(() => {
        const lumas = [];
        for (let f = 0; f < frames; f++) {
          const luma = new Float64Array(width * height);
          // Smooth gradients (quantised: they band), flat rectangles and noisy patches.
          const gx = (rand() - 0.5) * (max / width) * 0.6;
          const gy = (rand() - 0.5) * (max / height) * 0.6;
          const base = int(Math.floor(max * 0.1), Math.floor(max * 0.7));
          for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) luma[y * width + x] = base + gx * x + gy * y + 8 * Math.sin((x + y * 0.5) / int(20, 60));
          for (let r = 0; r < 6; r++) {
            const x0 = int(0, width - 20);
            const y0 = int(0, height - 20);
            const rw = int(10, 120);
            const rh = int(10, 120);
            const kind = int(0, 2);
            const level = int(0, max);
            for (let y = y0; y < Math.min(height, y0 + rh); y++) {
              for (let x = x0; x < Math.min(width, x0 + rw); x++) {
                if (kind === 0) luma[y * width + x] = level;
                else if (kind === 1) luma[y * width + x] += int(-3, 3);
                else luma[y * width + x] = level + (x - x0) * 0.05;
              }
            }
          }
          lumas.push(luma);
        }
        return lumas;
      });
      const files = writeLumaValuesPair(tmp, `cambi${c}`, { width, height, bitDepth }, refs.map((ref, f) => [ref, diss[f]]));
      const features = ['cambi', 'cambi=cambi_vis_lum_threshold=0.06:cambi_max_val=17:window_size=31', 'cambi=cambi_high_res_speedup=1080:enc_bitdepth=8'];
      const what = `case ${c}: ${width}x${height} ${bitDepth}-bit`;
      const g = await run(files[0], files[1], 'gpu', features);
      const k = await run(files[0], files[1], 'cpu', features);
      assert.equal(g.frames.length, frames, what);
      assertSame(g.frames, k.frames, what);
      assert.deepEqual(onHost(g.warnings), [], `${what}: ${g.warnings.join('\n')}`);
      assert.ok(g.frames.some((f) => f.features.cambi > 0), `${what}: some banding is found (${g.frames.map((f) => f.features.cambi)})`);
    }
  });
});

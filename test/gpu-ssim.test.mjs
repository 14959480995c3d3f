// float_ssim and float_ms_ssim on the gpu backend (common/ssim-maps.wgsl: the filtered maps,
// the SSIM terms and libvmaf's sequential double sums over them, in integer-exact float and
// double arithmetic, on the device; the C++ finishStats takes the sums):
// every value equal to the cpu backend's, bit for bit, and to libvmaf 3.2.0's on the carried
// clips (8/10/12-bit, odd sizes, 4:4:4, the automatic scale 4 of 1080p), with enable_lcs and
// enable_db; and on seeded random pictures of random sizes, depths and scales (flat areas
// included, where the variance and covariance clamps apply); at 1920x1080, float_ssim at
// scale=1 and float_ms_ssim on the gpu (their maps made in bands of rows), equal to the cpu
// backend, and the sizes the gpu takes (up to 2160p). The pooling runs on the device
// (its mapped and term-by-term paths: gpu-ssim-pool.test.mjs); the random cases include
// inverted distortions, whose negative sums take the term-by-term path.
// XDG_RUNTIME_DIR must be set for Mesa's lavapipe (any writable folder).
import assert from 'node:assert/strict';
// The helper first: it loads dist/index.js, which the extractor modules need loaded before them.
import { assertGpuMatchesCpu, assertOnGpu, assertSameFrames, goldenParity, scoreRun, scratchDir, writeFramePair } from './helpers/gpu-vs-cpu.mjs';
import { floatSsimGpu } from '../dist/extractors/float_ssim/float_ssim-gpu.js';
import { floatMsSsimGpu } from '../dist/extractors/float_ms_ssim/float_ms_ssim-gpu.js';
import { goldenClip } from './helpers/golden.mjs';
import { makeRng } from './helpers/gpu.mjs';

const tmp = scratchDir('vmaf-gpu-ssim-');

const run = (ref, dis, options) => scoreRun(ref, dis, { noPrediction: true, ...options });

describe('float_ssim / float_ms_ssim on the gpu backend', function () {
  this.timeout(1200000);

  describe('golden parity: gpu == cpu == libvmaf 3.2.0, every frame', function () {
    goldenParity(
      [
        ['src01_288x162_8bit', ['float_ssim']],
        ['src01_288x162_10bit', ['float_ssim']],
        ['mandel_213x121_odd', ['float_ssim']],
        ['negated_256x144_2f', ['float_ssim']],
        ['rgbtest_301x199_444_12bit', ['float_ssim', 'float_ms_ssim']],
        ['flat_and_static_320x240', ['float_ssim', 'float_ms_ssim']],
        ['gradients_480x270_10bit', ['float_ssim', 'float_ms_ssim']],
        ['hd_1920x1080_x264_2f', ['float_ssim']], // scale 4: the box decimation on the gpu
      ].map(([clip, features]) => ({ clip, features, keys: features })),
    );
  });

  it('enable_lcs, enable_db, clip_db and explicit scales: gpu == cpu', async function () {
    const clip = goldenClip('rgbtest_301x199_444_12bit');
    const features = ['float_ssim=enable_lcs=true:scale=2', 'float_ms_ssim=enable_lcs=true:enable_db=true:clip_db=true'];
    const gpu = await run(clip.ref, clip.dis, { backend: 'gpu', features, frameCnt: 2 });
    const cpu = await run(clip.ref, clip.dis, { backend: 'cpu', features, frameCnt: 2 });
    assertSameFrames(gpu.frames, cpu.frames, 'options');
    assertOnGpu(gpu.warnings, 'options');
    const keys = Object.keys(gpu.frames[0].features);
    assert.ok(['float_ssim_l', 'float_ssim_c', 'float_ssim_s', 'float_ms_ssim_s_scale4'].every((k) => keys.includes(k)), keys.join(' '));
  });

  it('randomized: seeded random pictures of random sizes, depths and scales, gpu == cpu exactly', async function () {
    const R = makeRng(Number(process.env.GPU_SSIM_SEED ?? 20261124) >>> 0);
    const cases = 10;
    for (let c = 0; c < cases; c++) {
      const ms = c % 5 === 4; // two MS-SSIM cases: 176 pixels a side at least
      const width = ms ? R.range(176, 200) : R.range(33, 120);
      const height = ms ? R.range(176, 190) : R.range(33, 90);
      const bitDepth = [8, 10, 12, 16][c % 4];
      const max = 2 ** bitDepth - 1;
      const frames = R.range(1, 2);
      const per = width * height + 2 * Math.ceil(width / 2) * Math.ceil(height / 2);
      const pairs = [];
      for (let f = 0; f < frames; f++) {
        const ref = bitDepth > 8 ? new Uint16Array(per) : new Uint8Array(per);
        const dis = bitDepth > 8 ? new Uint16Array(per) : new Uint8Array(per);
        // A gradient with texture, flat blocks (equal in both: zero variance), extremes, noise in dis.
        const fx = R.float() * 3;
        const fy = R.float() * 3;
        for (let y = 0; y < height; y++) {
          for (let x = 0; x < width; x++) {
            const i = y * width + x;
            const flat = ((x >> 4) + (y >> 4)) % 5 === 0;
            const v = flat ? Math.floor(max / 3) : Math.min(max, Math.floor((max * (0.5 + 0.4 * Math.sin(x * fx / 7 + y * fy / 5))) + R.int(Math.max(2, max >> 5))));
            ref[i] = v;
            dis[i] = flat ? v : R.int(20) === 0 ? R.int(max + 1) : Math.min(max, Math.max(0, v + R.range(-(max >> 6) - 1, (max >> 6) + 1)));
            // Every third case inverted outside the flat blocks (negative structure: the device
            // pooling's term-by-term path, gpu-ssim-pool.test.mjs).
            if (c % 3 === 1 && !flat) dis[i] = max - dis[i];
          }
        }
        for (let i = width * height; i < per; i++) ref[i] = dis[i] = max >> 1;
        pairs.push([ref, dis]);
      }
      const [refFile, disFile] = writeFramePair(tmp, `rand${c}`, { width, height, bitDepth }, pairs);
      const scale = R.pick([0, 1, 2, 3]);
      const ok = (s) => (s > 1 ? Math.trunc(width / s) + (width & 1) : width) >= 11 && (s > 1 ? Math.trunc(height / s) + (height & 1) : height) >= 11;
      const features = [`float_ssim=enable_lcs=true:scale=${ok(scale) ? scale : 1}`, ...(ms ? ['float_ms_ssim=enable_lcs=true'] : [])];
      const what = `case ${c}: ${width}x${height} ${bitDepth}-bit ${features.join(' ')}`;
      await assertGpuMatchesCpu(refFile, disFile, { noPrediction: true, features }, frames, what);
    }
  });

  it('takes 1080p and 2160p at every scale (the maps in bands), leaves 4320p to the host', function () {
    const format = (width, height) => ({ width, height, bitDepth: 10, chroma: '420' });
    for (const [w, h] of [[1920, 1080], [3840, 2160]]) {
      for (const scale of [0, 1, 2, 3]) assert.ok(floatSsimGpu.supports({ scale }, format(w, h)), `float_ssim scale=${scale} ${w}x${h}`);
      assert.ok(floatMsSsimGpu.supports({}, format(w, h)), `float_ms_ssim ${w}x${h}`);
    }
    assert.equal(floatSsimGpu.supports({ scale: 1 }, format(7680, 4320)), false);
    assert.equal(floatMsSsimGpu.supports({}, format(7680, 4320)), false);
  });

  it('1920x1080: float_ssim at scale=1 and float_ms_ssim on the gpu, equal to the cpu backend', async function () {
    const [width, height] = [1920, 1080];
    const R = makeRng(1080);
    const per = (width * height * 3) / 2;
    const ref = new Uint8Array(per);
    const dis = new Uint8Array(per);
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const i = y * width + x;
        const flat = ((x >> 6) + (y >> 6)) % 7 === 0;
        ref[i] = flat ? 90 : Math.floor(128 + 100 * Math.sin(x / 37 + y / 23)) + R.int(8);
        dis[i] = flat ? 90 : Math.min(255, Math.max(0, ref[i] + R.range(-12, 12)));
      }
    }
    ref.fill(128, width * height);
    dis.fill(128, width * height);
    const [refFile, disFile] = writeFramePair(tmp, 'hd', { width, height, bitDepth: 8 }, [[ref, dis]]);
    const features = ['float_ssim=scale=1:enable_lcs=true', 'float_ms_ssim=enable_lcs=true'];
    const [frame] = await assertGpuMatchesCpu(refFile, disFile, { noPrediction: true, features }, 1, '1080p');
    assert.ok(frame.features.float_ssim > 0.5 && frame.features.float_ssim < 1, String(frame.features.float_ssim));
  });
});

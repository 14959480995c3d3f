// float_vif on the gpu backend (float_vif.wgsl: filtering, decimation, the per-pixel statistic
// and per-row float sums in integer-exact soft float; float_vif.cpp's finishStats sums the
// rows and scales): every value equal to the cpu backend's, bit for bit, and to libvmaf
// 3.2.0's on the carried clips (8/10/12-bit, odd sizes, negated, flat); under option variants
// (debug, skip_scale0, kernel scales, gain limit, sigma_nsq = 0 with its infinities and NaNs,
// the min values; a size-changing vif_prescale stays on the host); and on seeded random
// pictures of random sizes (odd included), depths and content (flat, extreme, noisy).
// GPU_FLOAT_VIF_HD=1 adds the 1080p clip (slow on lavapipe).
// XDG_RUNTIME_DIR must be set for Mesa's lavapipe (any writable folder).
import assert from 'node:assert/strict';
import { goldenClip } from './helpers/golden.mjs';
import { makeRng } from './helpers/gpu.mjs';
import { assertGpuMatchesCpu, assertOnGpu, assertSameFrames, goldenParity, onHost, scoreRun, scratchDir, writeLumaPair } from './helpers/gpu-vs-cpu.mjs';

const tmp = scratchDir('vmaf-gpu-float-vif-');

const VIF_KEYS = ['vif_scale0', 'vif_scale1', 'vif_scale2', 'vif_scale3'];

const run = (ref, dis, options) => scoreRun(ref, dis, { noPrediction: true, ...options });

describe('float_vif on the gpu backend', function () {
  this.timeout(1800000);

  describe('golden parity: gpu == cpu == libvmaf 3.2.0', function () {
    goldenParity(
      [
        ['src01_160x90_8bit', 3],
        ['src01_288x162_10bit', 3],
        ['mandel_213x121_odd', 3],
        ['negated_256x144_2f', 2],
        ['rgbtest_301x199_444_12bit', 2],
        ['flat_and_static_320x240', 10],
        // 1080p: minutes a frame on lavapipe (the soft-float filters), so only when asked.
        ...(process.env.GPU_FLOAT_VIF_HD ? [['hd_1920x1080_x264_2f', 1]] : []),
      ].map(([clip, frameCnt]) => ({ clip, frameCnt, features: ['float_vif'], keys: VIF_KEYS })),
    );
  });

  it('option variants: gpu == cpu, all on the gpu', async function () {
    const clip = goldenClip('src01_288x162_8bit');
    const features = [
      'float_vif=debug=true:vif_enhn_gain_limit=1.5',
      'float_vif=vif_skip_scale0=true:vif_scale1_min_val=0.9:vif_scale3_min_val=0.99',
      'float_vif=vif_kernelscale=0.5',
      'float_vif=vif_kernelscale=2:vif_sigma_nsq=1',
      'float_vif=vif_sigma_nsq=0',
    ];
    const gpu = await run(clip.ref, clip.dis, { backend: 'gpu', features, frameCnt: 2 });
    const cpu = await run(clip.ref, clip.dis, { backend: 'cpu', features, frameCnt: 2 });
    assertSameFrames(gpu.frames, cpu.frames, 'options');
    assertOnGpu(gpu.warnings, 'options');
    // Five instances, none sharing a key: 15 debug outputs and 4 x 4 scores.
    assert.equal(Object.keys(gpu.frames[0].features).length, 31, Object.keys(gpu.frames[0].features).join(' '));
  });

  it('vif_prescale that changes the size runs on the host, with the same values', async function () {
    const clip = goldenClip('src01_160x90_8bit');
    const features = ['float_vif=vif_prescale=0.5:vif_prescale_method=bilinear'];
    const gpu = await run(clip.ref, clip.dis, { backend: 'gpu', features, frameCnt: 1 });
    const cpu = await run(clip.ref, clip.dis, { backend: 'cpu', features, frameCnt: 1 });
    assertSameFrames(gpu.frames, cpu.frames, 'prescale');
    assert.ok(onHost(gpu.warnings).some((w) => /float_vif/.test(w)), gpu.warnings.join('\n'));
  });

  it('randomized: seeded random sizes, depths and content, gpu == cpu exactly', async function () {
    const R = makeRng(Number(process.env.GPU_FLOAT_VIF_SEED ?? 20261124) >>> 0);
    const cases = 6;
    for (let c = 0; c < cases; c++) {
      const width = R.range(33, 97) | (c % 2); // odd widths and heights in every other case
      const height = R.range(33, 81) | (c % 2);
      const bitDepth = [8, 10, 12, 16][c % 4];
      const max = 2 ** bitDepth - 1;
      const frames = R.range(1, 2);
      const kind = ['texture', 'flat', 'extreme'][c % 3];
      const fx = R.float() * 3;
      const fy = R.float() * 3;
      const [refFile, disFile] = writeLumaPair(tmp, `rand${c}`, { width, height, bitDepth }, frames, (ref, dis) => {
        for (let y = 0; y < height; y++) {
          for (let x = 0; x < width; x++) {
            const i = y * width + x;
            let v;
            if (kind === 'flat') v = ((x >> 3) + (y >> 3)) % 3 === 0 ? max >> 2 : Math.floor(max / 3);
            else if (kind === 'extreme') v = R.bool() ? 0 : max;
            else v = Math.min(max, Math.floor(max * (0.5 + 0.4 * Math.sin((x * fx) / 7 + (y * fy) / 5))) + R.int(Math.max(2, max >> 5)));
            ref[i] = v;
            // Noise, saturated samples, and areas left equal (zero-variance windows in both).
            const keep = kind === 'flat' ? R.int(3) > 0 : R.int(4) === 0;
            dis[i] = keep ? v : R.int(20) === 0 ? R.int(max + 1) : Math.min(max, Math.max(0, v + R.range(-(max >> 5) - 1, (max >> 5) + 1)));
          }
        }
      });
      const features = ['float_vif=debug=true'];
      const what = `case ${c}: ${width}x${height} ${bitDepth}-bit ${kind}`;
      await assertGpuMatchesCpu(refFile, disFile, { noPrediction: true, features }, frames, what);
    }
  });
});

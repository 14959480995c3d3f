// float_adm on the gpu backend (float_adm.wgsl: the DWT, decoupling with this host's rcpss
// from its table, CSF, contrast masking, p-norm terms and per-row float sums in
// integer-exact soft float; float_adm.cpp's finishStats sums the rows and scales): every
// value equal to the cpu backend's, bit for bit; equal to libvmaf 3.2.0's golden values on
// clips where the cpu backend is (float ADM's rcpss depends on the CPU model, and the golden
// logs come from a host whose rcpss differs from some CPUs' for some samples: on those the
// cpu backend and so the gpu one differ from libvmaf in the last bits of aim/adm2/adm3; the
// per-key counts are printed); under option variants (gain limit, viewing distance, display
// height, CSF modes and factors, skipped scales, bypassed masking, harmonic mean; a p-norm
// other than 3 stays on the host); and on seeded random pictures of random sizes (odd, down
// to 33, the pipeline's minimum), depths, chroma formats and content (flat, extreme, noisy) with random options.
// XDG_RUNTIME_DIR must be set for Mesa's lavapipe (any writable folder).
import assert from 'node:assert/strict';
import { goldenClip } from './helpers/golden.mjs';
import { makeRng } from './helpers/gpu.mjs';
import { assertGpuMatchesCpu, assertSameFrames, goldenParity, onHost, scoreRun, scratchDir, writeLumaPair } from './helpers/gpu-vs-cpu.mjs';

const tmp = scratchDir('vmaf-gpu-float-adm-');

const ADM_KEYS = ['adm2', 'aim', 'adm3', 'adm_scale0', 'adm_scale1', 'adm_scale2', 'adm_scale3'];

const run = (ref, dis, options) => scoreRun(ref, dis, { noPrediction: true, ...options });

describe('float_adm on the gpu backend', function () {
  this.timeout(1800000);

  describe('golden parity: gpu == cpu == libvmaf 3.2.0 (on the CPU vendor of this host: golden.mjs)', function () {
    goldenParity(
      [
        ['negated_256x144_2f', 2],
        ['flat_and_static_320x240', 2],
        ['banding_640x360_10bit', 1],
        ['mandel_213x121_odd', 2],
        ['rgbtest_301x199_444_12bit', 1],
      ].map(([clip, frameCnt]) => ({ clip, frameCnt, features: ['float_adm'], keys: ADM_KEYS })),
    );
  });

  it('option variants: gpu == cpu, on the gpu except a p-norm other than 3', async function () {
    const clip = goldenClip('src01_160x90_8bit');
    const features = [
      'float_adm=debug=true:adm_enhn_gain_limit=1',
      'float_adm=adm_norm_view_dist=1.5:adm_ref_display_height=720:adm_csf_mode=1:adm_noise_weight=0.5',
      'float_adm=adm_skip_scale0=true:adm_bypass_cm=1:adm_skip_aim_scale=2:adm_enhn_gain_limit=1.2',
      'float_adm=adm_csf_mode=2:adm_f1s0=0.5:adm_f2s3=2:adm_min_val=0.3:adm_adm3_apply_hm=true:adm_csf_scale=1.5:adm_csf_diag_scale=0.7',
      'float_adm=adm_p_norm=2.5',
    ];
    const gpu = await run(clip.ref, clip.dis, { backend: 'gpu', features, frameCnt: 1 });
    const cpu = await run(clip.ref, clip.dis, { backend: 'cpu', features, frameCnt: 1 });
    assertSameFrames(gpu.frames, cpu.frames, 'options');
    const host = onHost(gpu.warnings);
    assert.equal(host.length, 1, gpu.warnings.join('\n'));
    assert.match(host[0], /float_adm/);
    // 18 debug outputs and 4 x 7 scores, no two instances sharing a key.
    assert.equal(Object.keys(gpu.frames[0].features).length, 46, Object.keys(gpu.frames[0].features).join(' '));
  });

  it('randomized: seeded random sizes, depths, chroma, content and options, gpu == cpu exactly', async function () {
    const R = makeRng(Number(process.env.GPU_FLOAT_ADM_SEED ?? 20261124) >>> 0);
    const cases = 6;
    for (let c = 0; c < cases; c++) {
      // Odd widths and heights in every other case, the smallest size in the first two.
      const width = c < 2 ? 33 + c : R.range(33, 61) | (c % 2);
      const height = c < 2 ? 33 + c : R.range(33, 49) | (c % 2);
      const bitDepth = [8, 10, 12][c % 3];
      const chroma = c % 2 === 0 ? 420 : 444;
      const max = 2 ** bitDepth - 1;
      const frames = R.range(1, 2);
      const kind = ['noisy', 'flat', 'extreme'][(c + 1) % 3];
      const fx = R.float() * 3;
      const fy = R.float() * 3;
      const [refFile, disFile] = writeLumaPair(tmp, `rand${c}`, { width, height, bitDepth, chroma: String(chroma) }, frames, (ref, dis) => {
        for (let y = 0; y < height; y++) {
          for (let x = 0; x < width; x++) {
            const i = y * width + x;
            let v;
            if (kind === 'flat') v = ((x >> 3) + (y >> 3)) % 3 === 0 ? max >> 2 : Math.floor(max / 3);
            else if (kind === 'extreme') v = R.bool() ? 0 : max;
            else v = Math.min(max, Math.floor(max * (0.5 + 0.4 * Math.sin((x * fx) / 7 + (y * fy) / 5))) + R.int(Math.max(2, max >> 5)));
            ref[i] = v;
            // Noise, saturated samples, scaled detail (gains past 1 and below 0), areas left equal.
            const keep = kind === 'flat' ? R.int(3) > 0 : R.int(4) === 0;
            const r = R.int(10);
            dis[i] = keep ? v : r === 0 ? R.int(max + 1) : r < 3 ? Math.min(max, Math.max(0, Math.round((v - (max >> 1)) * (r === 1 ? 1.6 : -0.7)) + (max >> 1))) : Math.min(max, Math.max(0, v + R.range(-(max >> 5) - 1, (max >> 5) + 1)));
          }
        }
      });
      const egl = [100, 1, 1 + R.float() * 5][c % 3];
      const nvd = [3, 0.75 + R.float() * 6, 24][(c + 1) % 3];
      const rdh = [1080, R.range(1, 2160), 4320][(c + 2) % 3];
      const features = [`float_adm=debug=true:adm_enhn_gain_limit=${egl}:adm_norm_view_dist=${nvd}:adm_ref_display_height=${rdh}:adm_csf_mode=${c % 3}`];
      const what = `case ${c}: ${width}x${height} ${bitDepth}-bit ${chroma} ${kind} ${features[0]}`;
      await assertGpuMatchesCpu(refFile, disFile, { noPrediction: true, features }, frames, what);
    }
  });

  it('2160p and beyond run on the gpu (float_adm, float_vif) where the device allows bindings of that size (its own limit, not WebGPU\'s default)', async function () {
    const { floatAdmGpu } = await import('../dist/extractors/float_adm/float_adm-gpu.js');
    const { floatAdm } = await import('../dist/extractors/float_adm/float_adm.js');
    const { resolveOptions } = await import('../dist/extractors/option.js');
    const options = resolveOptions('float_adm', floatAdm.options, new Map(), 'test');
    const uhd = { width: 3840, height: 2160, bitDepth: 10, chroma: '420' };
    const qhd = { width: 2560, height: 1440, bitDepth: 8, chroma: '420' };
    assert.equal(floatAdmGpu.supports(options, qhd), true, '1440p within the default 128 MiB');
    assert.equal(floatAdmGpu.supports(options, uhd), false, '2160p needs more than the default 128 MiB');
    assert.equal(floatAdmGpu.supports(options, uhd, { maxStorageBufferBindingSize: 128 << 20 }), false);
    assert.equal(floatAdmGpu.supports(options, uhd, { maxStorageBufferBindingSize: 1 << 30 }), true, 'a GPU giving 1 GiB bindings takes 2160p');
    // float_vif sizes itself the same way (its five filtered planes in one binding).
    const { floatVifGpu } = await import('../dist/extractors/float_vif/float_vif-gpu.js');
    const { floatVif } = await import('../dist/extractors/float_vif/float_vif.js');
    const vifOptions = resolveOptions('float_vif', floatVif.options, new Map(), 'test');
    assert.equal(floatVifGpu.supports(vifOptions, qhd), true);
    assert.equal(floatVifGpu.supports(vifOptions, uhd), false);
    assert.equal(floatVifGpu.supports(vifOptions, uhd, { maxStorageBufferBindingSize: 1 << 30 }), true);
  });
});

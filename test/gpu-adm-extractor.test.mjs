// integer_adm at options the fused core does not take (VMAF v1's adm3 instances, any
// `--feature adm=...`) on the gpu backend: the WGSL ADM in its command buffers
// (src/extractors/integer_adm/integer_adm-gpu.ts), finished by integer_adm_options.cpp's
// finishStats. The gpu backend's values == the cpu backend's == libvmaf 3.2.0's logs
// (libvmaf-extra.json.gz: the v1 instance and its _nvd_ / _rdh_ variants), every frame,
// exactly; instances that share CSF weights share passes and still give each its own
// values; the host warning no longer names adm; VMAF v1 scores equal the cpu backend's.
// XDG_RUNTIME_DIR must be set for Mesa's lavapipe (any writable folder).
import assert from 'node:assert/strict';
import { loadNative } from '../dist/kernels/native.js';
import { goldenClip, goldenClips } from './helpers/golden.mjs';
import { assertSameFrames, ladderRun, scoreRun } from './helpers/gpu-vs-cpu.mjs';

const hostWarnings = (r) => r.warnings.filter((w) => /host's cpu/.test(w));

const V1 = 'adm=adm_csf_mode=2:adm_dlm_weight=0.7:adm_enhn_gain_limit=1:adm_min_val=0.5:adm_noise_weight=0.02';
/** The v1 family, as libvmaf's logs key them. */
const V1_FEATURES = { '': V1, _nvd_5: `${V1}:adm_norm_view_dist=5`, '_nvd_1.5_rdh_2160': `${V1}:adm_norm_view_dist=1.5:adm_ref_display_height=2160`, _rdh_2160: `${V1}:adm_ref_display_height=2160` };

describe('integer_adm option instances on the gpu backend', function () {
  this.timeout(600_000);

  it('the C++ side: integer_adm_options finishes 60 accumulators as extract() does', function () {
    const native = loadNative();
    const geometry = { width: 64, height: 48, bitDepth: 8, chromaWidth: 32, chromaHeight: 24 };
    const o = { debug: false, adm_csf_scale: 1, adm_csf_diag_scale: 1, adm_dlm_weight: 0.7, adm_enhn_gain_limit: 1, adm_norm_view_dist: 3, adm_ref_display_height: 1080, adm_csf_mode: 2, adm_noise_weight: 0.02, adm_skip_aim: false, adm_skip_scale0: false, adm_min_val: 0.5 };
    const h = native.createExtractor('integer_adm_options', o, geometry);
    assert.equal(native.extractorStatsCount(h), 60);
    assert.throws(() => native.finishExtractor(h, new BigUint64Array(59)), /BigUint64Array of 60/);
    // The same accumulators through the addon's own ADM finish give the same values.
    const stats = new BigInt64Array(60).map((_, i) => BigInt((i * 7919) % 5000 + 1) << 20n);
    const want = [...native.finishAdm(stats, 64, 48, { csfMode: 2, dlmWeight: 0.7, enhnGainLimit: 1, minVal: 0.5, noiseWeight: 0.02 })];
    assert.deepEqual([...native.finishExtractor(h, new BigUint64Array(stats.buffer))], want);
  });

  describe('golden parity: gpu == cpu == libvmaf 3.2.0 (v1 family), every frame', function () {
    const totals = {};
    after(() => console.log('      gpu vs libvmaf:', Object.entries(totals).map(([k, [e, t]]) => `${k} ${e}/${t}`).join(', ')));
    // The 300-frame ladder clip is left out to keep lavapipe's time down (the cpu backend's tests cover it).
    const clips = goldenClips().filter((c) => c.name !== 'ladder_320x180_300f' && Object.keys(c.log('libvmaf-extra').frames[0].metrics).some((k) => k.startsWith('integer_adm3_csf_2')));
    for (const clip of clips) {
      it(clip.name, async function () {
        const gold = clip.log('libvmaf-extra').frames;
        const features = Object.entries(V1_FEATURES).filter(([suffix]) => `integer_adm3_csf_2_dlmw_0.7_egl_1_min_0.5_nw_0.02${suffix}` in gold[0].metrics).map(([, f]) => f);
        const options = { features, noPrediction: true };
        const gpu = await scoreRun(clip.ref, clip.dis, { ...options, backend: 'gpu' });
        const cpu = await scoreRun(clip.ref, clip.dis, { ...options, backend: 'cpu' });
        assertSameFrames(gpu.frames, cpu.frames, clip.name);
        assert.deepEqual(hostWarnings(gpu), [], `${clip.name}: ${gpu.warnings.join('\n')}`);
        assert.equal(gpu.frames.length, gold.length);
        let compared = 0;
        for (const f of gpu.frames) {
          for (const [k, v] of Object.entries(f.features)) {
            if (!k.startsWith('integer_adm3_csf_2')) continue;
            totals[k] ??= [0, 0];
            totals[k][1]++;
            if (Object.is(v, gold[f.index].metrics[k])) totals[k][0]++;
            assert.ok(Object.is(v, gold[f.index].metrics[k]), `${clip.name} frame ${f.index} ${k}: gpu ${v}, libvmaf ${gold[f.index].metrics[k]}`);
            compared++;
          }
        }
        assert.equal(compared, gpu.frames.length * features.length);
      });
    }
  });

  it('other option sets, several sharing passes (same weights, two gain limits, host-side options), beside the core: gpu == cpu', async function () {
    const clip = goldenClip('testsrc_640x360_x264_12f');
    const features = [
      'adm=adm_csf_mode=1:adm_csf_scale=3:adm_csf_diag_scale=0.5',
      'adm=adm_csf_mode=2:adm_enhn_gain_limit=2.5', // shares csf 2's passes with the next two (gain limits 2.5 and 1)
      'adm=adm_csf_mode=2:adm_enhn_gain_limit=1:adm_noise_weight=0.5',
      'adm=adm_csf_mode=2:adm_enhn_gain_limit=1:adm_dlm_weight=0.2:adm_skip_aim=true',
      'adm=adm_csf_mode=3:adm_ref_display_height=720:adm_norm_view_dist=5:adm_skip_scale0=true',
      'psnr',
    ];
    const options = { features, models: ['version=vmaf_v0.6.1:name=vmaf'], frameCnt: 6 };
    const gpu = await scoreRun(clip.ref, clip.dis, { ...options, backend: 'gpu' });
    const cpu = await scoreRun(clip.ref, clip.dis, { ...options, backend: 'cpu' });
    assertSameFrames(gpu.frames, cpu.frames, 'features');
    assertSameFrames(gpu.frames, cpu.frames, 'scores', { field: 'scores' });
    const keys = Object.keys(gpu.frames[0].features).filter((k) => k.startsWith('integer_adm3_'));
    assert.equal(keys.length, 5, keys.join(' '));
    // Distinct values: each instance got its own stats out of the shared passes.
    assert.equal(new Set(keys.map((k) => gpu.frames[1].features[k])).size, 5, keys.map((k) => `${k}=${gpu.frames[1].features[k]}`).join(' '));
    assert.deepEqual(hostWarnings(gpu), [], gpu.warnings.join('\n'));
  });

  it('a ladder: each rendition gets the cpu backend\'s values from the shared passes', async function () {
    const clip = goldenClip('src01_160x90_8bit');
    const features = [V1, `${V1}:adm_enhn_gain_limit=3`, `${V1}:adm_noise_weight=0.5`];
    const ladder = async (backend) => (await ladderRun(clip.ref, [{ input: clip.dis, name: 'dis' }, { input: clip.ref, name: 'same' }], { backend, features, noPrediction: true, frameCnt: 6 })).by;
    const gpu = await ladder('gpu');
    const cpu = await ladder('cpu');
    for (const name of ['dis', 'same']) assertSameFrames(gpu[name], cpu[name], `ladder ${name}`);
    assert.notEqual(gpu.dis[0].features['integer_adm3_csf_2_dlmw_0.7_egl_1_min_0.5_nw_0.02'], gpu.same[0].features['integer_adm3_csf_2_dlmw_0.7_egl_1_min_0.5_nw_0.02']);
  });

  it('-m version=vmaf_v1.0.16_3d0h: gpu scores == cpu scores; nothing runs on the host', async function () {
    const clip = goldenClip('src01_288x162_10bit');
    const options = { models: ['version=vmaf_v1.0.16_3d0h:name=vmaf_v1'] };
    const gpu = await scoreRun(clip.ref, clip.dis, { ...options, backend: 'gpu' });
    const cpu = await scoreRun(clip.ref, clip.dis, { ...options, backend: 'cpu' });
    assertSameFrames(gpu.frames, cpu.frames, 'v1 features');
    assertSameFrames(gpu.frames, cpu.frames, 'v1 scores', { field: 'scores' });
    const gold = clip.log('libvmaf-extra').frames;
    for (const f of gpu.frames) assert.equal(f.scores.vmaf_v1, gold[f.index].metrics.vmaf_v1, `frame ${f.index}`);
    // adm, cambi and speed_chroma (its decimation; the per-block statistics finish on the
    // host from the kernel's planes) all have gpu parts: no extractor runs on the host.
    assert.deepEqual(hostWarnings(gpu), [], gpu.warnings.join('\n'));
  });
});

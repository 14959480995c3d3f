// SpEED (libvmaf's speed.c): speed_chroma and speed_temporal bit-identical to libvmaf 3.2.0
// on every frame of every carried golden clip (at defaults and as the VMAF v1 models ask for
// them), option-suffixed keys, other options against libvmaf's own values, and the inputs
// libvmaf refuses.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom, toArray } from 'rxjs';
import { score } from '../../dist/index.js';
import { goldenClip, goldenClips } from '../helpers/golden.mjs';
import { writeGray } from '../helpers/y4m-formats.mjs';

const run = (ref, dis, features) =>
  lastValueFrom(score(ref, dis, { backend: 'cpu', features: [features].flat(), noPrediction: true }).pipe(toArray()));

const V1 = 'speed_kernelscale=1:speed_nn_floor=0.1:speed_sigma_nn=0.19:speed_weight_var_mode=5:speed_max_val=45';
const V1_SUFFIX = 'mxv_45_nnf_0.1_snn_0.19_wvm_5';
const chromaKeys = (suffix) => ['u', 'v', 'uv'].map((c) => `speed_chroma_${c}${suffix ? `_${suffix}` : ''}`);

// Each row: the --feature argument and the keys it logs, as libvmaf-extra.json.gz has them.
const CASES = [
  { feature: 'speed_chroma', keys: chromaKeys('') },
  { feature: 'speed_temporal', keys: ['speed_temporal'] },
  { feature: `speed_chroma=${V1}`, keys: chromaKeys(V1_SUFFIX) },
  { feature: `speed_chroma=${V1}:speed_prescale=0.6:speed_prescale_method=bilinear`, keys: chromaKeys('mxv_45_nnf_0.1_ps_0.6_psm_bilinear_snn_0.19_wvm_5') },
  { feature: `speed_chroma=${V1}:speed_prescale=0.5:speed_prescale_method=bilinear`, keys: chromaKeys('mxv_45_nnf_0.1_ps_0.5_psm_bilinear_snn_0.19_wvm_5') },
];

describe('SpEED extractors (speed_chroma, speed_temporal)', function () {
  this.timeout(600_000);
  let tmp;
  before(() => (tmp = mkdtempSync(join(tmpdir(), 'vmafs-speed-'))));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  describe('golden parity on the carried clips (cpu, every frame exactly)', function () {
    const counts = new Map();
    after(() => {
      for (const [feature, n] of counts) console.log(`      ${feature}: ${n} values exactly equal to libvmaf`);
    });
    for (const { feature, keys } of CASES) {
      for (const clip of goldenClips()) {
        const golden = clip.log('libvmaf-extra');
        if (!keys.every((k) => k in golden.frames[0].metrics)) continue;
        it(`${clip.name}: ${feature}`, async () => {
          const results = await run(clip.ref, clip.dis, feature);
          assert.equal(results.length, golden.frames.length);
          for (const [i, frame] of golden.frames.entries()) {
            assert.deepEqual(Object.keys(results[i].features).filter((k) => k.startsWith('speed_')), keys, `frame ${i}: keys in libvmaf's order`);
            for (const key of keys) {
              assert.equal(results[i].features[key], frame.metrics[key], `${clip.name} frame ${i}: ${key}`);
            }
          }
          counts.set(feature, (counts.get(feature) ?? 0) + keys.length * golden.frames.length);
        });
      }
    }
    it('covers the clips with SpEED values (chroma on 9 carried clips, temporal on all 13)', () => {
      const withKey = (key) => goldenClips().filter((c) => key in c.log('libvmaf-extra').frames[0].metrics).length;
      assert.ok(withKey('speed_chroma_uv') >= 9 && withKey('speed_temporal') >= 13);
    });
  });

  it("matches libvmaf for other options (use_ref_diff, kernelscale, weighting modes 3 and 6, lanczos4 prescale, nn floor, max_val)", async () => {
    const clip = goldenClip('testsrc_640x360_x264_12f');
    const results = await run(clip.ref, clip.dis, [
      'speed_temporal=speed_use_ref_diff=true',
      'speed_chroma=speed_weight_var_mode=3:speed_kernelscale=1.5:speed_sigma_nn=0.5',
      'speed_temporal=speed_prescale=0.75:speed_prescale_method=lanczos4:speed_nn_floor=0.2',
      'speed_chroma=speed_weight_var_mode=6:speed_max_val=2',
    ]);
    // libvmaf 3.2.0 (vmaf-cpu17 --no_prediction with these four --feature arguments) on the first three frames.
    const expected = [
      { speed_temporal_urd: 0, 'speed_chroma_u_ks_1.5_snn_0.5_wvm_3': 0.9091454744338989, 'speed_chroma_v_ks_1.5_snn_0.5_wvm_3': 0.9906306266784668, 'speed_chroma_uv_ks_1.5_snn_0.5_wvm_3': 0.9498880505561829, 'speed_temporal_nnf_0.2_ps_0.75_psm_lanczos4': 0, speed_chroma_u_mxv_2_wvm_6: 2, speed_chroma_v_mxv_2_wvm_6: 1.5197148323059082, speed_chroma_uv_mxv_2_wvm_6: 2 },
      { speed_temporal_urd: 27.364652633666992, 'speed_chroma_u_ks_1.5_snn_0.5_wvm_3': 1.3224072456359863, 'speed_chroma_v_ks_1.5_snn_0.5_wvm_3': 1.0355567932128906, 'speed_chroma_uv_ks_1.5_snn_0.5_wvm_3': 1.1789820194244385, 'speed_temporal_nnf_0.2_ps_0.75_psm_lanczos4': 18.91745948791504, speed_chroma_u_mxv_2_wvm_6: 2, speed_chroma_v_mxv_2_wvm_6: 2, speed_chroma_uv_mxv_2_wvm_6: 2 },
      { speed_temporal_urd: 26.658512115478516, 'speed_chroma_u_ks_1.5_snn_0.5_wvm_3': 0.32326841354370117, 'speed_chroma_v_ks_1.5_snn_0.5_wvm_3': 0.4317483901977539, 'speed_chroma_uv_ks_1.5_snn_0.5_wvm_3': 0.37750840187072754, 'speed_temporal_nnf_0.2_ps_0.75_psm_lanczos4': 18.82845115661621, speed_chroma_u_mxv_2_wvm_6: 2, speed_chroma_v_mxv_2_wvm_6: 2, speed_chroma_uv_mxv_2_wvm_6: 2 },
    ];
    for (const [i, want] of expected.entries()) {
      const got = Object.fromEntries(Object.entries(results[i].features).filter(([k]) => k.startsWith('speed_')));
      assert.deepEqual(got, want, `frame ${i}`);
    }
  });

  it('speed_temporal: the frame differences of the inputs (0 on the first frame and for identical inputs)', async () => {
    const clip = goldenClip('testsrc_640x360_x264_12f');
    const all = await run(clip.ref, clip.dis, 'speed_temporal');
    const golden = clip.log('libvmaf-extra').frames;
    assert.ok(all.some((r) => r.features.speed_temporal > 0), 'some frame differs');
    assert.deepEqual(all.map((r) => r.features.speed_temporal), golden.map((f) => f.metrics.speed_temporal));
    // Identical inputs: the reference and distorted differences are equal, so the score is 0.
    const same = await run(clip.ref, clip.ref, 'speed_temporal');
    assert.ok(same.every((r) => r.features.speed_temporal === 0));
  });

  it('refuses chroma planes too small for a 5x5 block after decimation (as libvmaf does) with E_FRAME_TOO_SMALL', async () => {
    const clip = goldenClip('src01_160x90_8bit');
    assert.match(clip.log('libvmaf-extra').refused.speed_chroma, /SpEED: image too small/);
    await assert.rejects(run(clip.ref, clip.dis, 'speed_chroma'), (e) => e.code === 'E_FRAME_TOO_SMALL' && /speed_chroma/.test(e.message) && /80x45/.test(e.message));
  });

  it('refuses a prescale that shrinks the plane below one block', async () => {
    const clip = goldenClip('ladder_320x180_300f');
    await assert.rejects(run(clip.ref, clip.dis, 'speed_temporal=speed_prescale=0.25'), (e) => e.code === 'E_FRAME_TOO_SMALL' && /prescale 0.25/.test(e.message));
  });

  it('refuses odd 4:2:0 sizes and gray input for speed_chroma with E_INPUT_FORMAT; speed_temporal reads luma only', async () => {
    const clip = goldenClip('mandel_213x121_odd');
    await assert.rejects(run(clip.ref, clip.dis, 'speed_chroma'), (e) => e.code === 'E_INPUT_FORMAT' && /213x121/.test(e.message));
    const gray = writeGray(join(tmp, 'gray.y4m'), 96, 96, 8);
    await assert.rejects(run(gray, gray, 'speed_chroma'), (e) => e.code === 'E_INPUT_FORMAT' && /4:0:0/.test(e.message));
    const grayTemporal = await run(gray, gray, 'speed_temporal');
    assert.ok(grayTemporal.every((r) => r.features.speed_temporal === 0));
  });

  it('refuses a kernel scale or prescale method libvmaf does not know (E_USAGE)', async () => {
    const clip = goldenClip('src01_288x162_8bit');
    await assert.rejects(run(clip.ref, clip.dis, 'speed_temporal=speed_kernelscale=0.9'), (e) => e.code === 'E_USAGE' && /speed_kernelscale/.test(e.message));
    await assert.rejects(run(clip.ref, clip.dis, 'speed_chroma=psm=area'), (e) => e.code === 'E_USAGE' && /area/.test(e.message));
    await assert.rejects(run(clip.ref, clip.dis, 'speed_chroma=speed_weight_var_mode=7'), (e) => e.code === 'E_USAGE');
  });
});

// The core computes only the parts (VIF, core ADM, motion) a run's plan has instances of:
// a VMAF v1 run (whose adm3 runs at options of its own) computes motion alone, on both
// backends, and its scores and features still equal libvmaf 3.2.0's carried logs exactly.
import assert from 'node:assert/strict';
import { lastValueFrom, toArray } from 'rxjs';
import { score } from '../dist/index.js';
import { resolveRun } from '../dist/pipeline/run-plan.js';
import { planCoreParts } from '../dist/kernels/core-parts.js';
import { statsLayout } from '../dist/kernels/gpu/stats-layout.js';
import { loadNative } from '../dist/kernels/native.js';
import { readY4mLumas } from './helpers/y4m-lumas.mjs';
import { goldenClip } from './helpers/golden.mjs';
import { backendsUnderTest } from './helpers/env.mjs';

const V1 = 'version=vmaf_v1.0.16_3d0h:name=vmaf_v1';

describe('core parts', function () {
  this.timeout(600_000);

  it('a plan computes the core parts it has instances of (v1: motion alone)', async () => {
    const parts = async (options) => planCoreParts((await resolveRun(options)).plan);
    assert.deepEqual(await parts({ models: [V1] }), { vif: false, adm: false, motion: true });
    assert.deepEqual(await parts({ models: ['version=vmaf_v0.6.1'] }), { vif: true, adm: true, motion: true });
    assert.deepEqual(await parts({ models: ['version=vmaf_v0.6.1neg'] }), { vif: true, adm: true, motion: true });
    assert.deepEqual(await parts({ noPrediction: true, features: ['vif'] }), { vif: true, adm: false, motion: false });
    assert.deepEqual(await parts({ noPrediction: true, features: ['adm=adm_enhn_gain_limit=1'] }), { vif: false, adm: true, motion: false });
    // ADM at options the core does not take is a native instance: not the core's.
    assert.deepEqual(await parts({ noPrediction: true, features: ['adm=adm_csf_mode=1', 'psnr'] }), { vif: false, adm: false, motion: false });
  });

  it("the addon computes and finishes only the parts asked for, each exactly the full call's", async () => {
    const native = loadNative();
    const layout = native.statsLayout();
    const clip = goldenClip('src01_160x90_8bit');
    const [ref, dis] = [readY4mLumas(clip.ref), readY4mLumas(clip.dis)];
    const { width, height } = ref;
    const [r0, r1, d1] = [ref.lumas[0], ref.lumas[1], dis.lumas[1]];
    const all = await native.computeFrameStats(r1, d1, width, height, 8, r0);
    const vif = await native.computeFrameStats(r1, d1, width, height, 8, r0, 1);
    const adm = await native.computeFrameStats(r1, d1, width, height, 8, undefined, 2);
    const none = await native.computeFrameStats(r1, d1, width, height, 8, r0, 0);
    assert.equal(all.stats.length, layout.vif + layout.adm);
    assert.deepEqual([...vif.stats], [...all.stats.subarray(0, layout.vif)]);
    assert.deepEqual([...adm.stats], [...all.stats.subarray(layout.vif)]);
    assert.equal(none.stats.length, 0);
    assert.equal(vif.sad, all.sad);
    assert.equal(none.sad, all.sad);
    assert.equal(adm.sad, null);
    const finished = native.finishFeatures(all.stats, width, height, 8);
    assert.deepEqual([...native.finishFeatures(vif.stats, width, height, 8, 1)], [...finished.subarray(0, 8)]);
    assert.deepEqual([...native.finishFeatures(adm.stats, width, height, 8, 2)], [...finished.subarray(8)]);
    assert.throws(() => native.finishFeatures(all.stats, width, height, 8, 1), TypeError);
    assert.throws(() => native.computeFrameStats(r1, d1, width, height, 8, r0, 4), /parts/);
  });

  it('the gpu stats layout gives room to the computed parts only', () => {
    const v1 = statsLayout({ vif: 0, adm: 0, motion: true }, 2, false, 4);
    assert.deepEqual(
      { finish: v1.finishLength, block: v1.blockBytes, extractors: v1.extractorsInBlock, motion: v1.motionOffset, bytes: v1.bytes, core: v1.core },
      { finish: 0, block: 16, extractors: 0, motion: 32, bytes: 40, core: true },
    );
    const all = statsLayout({ vif: 20, adm: 60, motion: true }, 1, true);
    assert.deepEqual([all.finishLength, all.admInBlock, all.motionOffset, all.motion2Offset, all.bytes], [80, 160, 640, 648, 656]);
    const admOnly = statsLayout({ vif: 0, adm: 60, motion: false }, 1, false);
    assert.deepEqual([admOnly.admInBlock, admOnly.motionOffset, admOnly.motion2Offset, admOnly.bytes], [0, undefined, undefined, 480]);
  });

  for (const backend of backendsUnderTest()) {
    describe(`${backend} backend`, function () {
      it('a VMAF v1 run computes no VIF and no core ADM, and equals libvmaf\'s log exactly', async () => {
        const clip = goldenClip('src01_288x162_10bit');
        const golden = clip.log('libvmaf-extra').frames;
        let opened;
        let format;
        const results = await lastValueFrom(
          score(clip.ref, clip.dis, { backend, threads: 2, models: [V1], onBackend: (b) => (opened = b), onFormat: (f) => (format = f) }).pipe(toArray()),
        );
        const keys = (await resolveRun({ models: [V1] })).plan.featureKeys(format);
        const runs = opened.coreRuns();
        assert.equal(runs.vif, 0);
        assert.equal(runs.adm, 0);
        assert.ok(runs.motion >= golden.length - 1, `motion computed ${runs.motion} times`);
        assert.equal(results.length, golden.length);
        for (const [i, frame] of golden.entries()) {
          const { features, scores } = results[i];
          assert.equal(scores.vmaf_v1, frame.metrics.vmaf_v1, `frame ${i}: vmaf_v1`);
          // The plan's keys, each libvmaf's value; no key of the parts left out.
          assert.deepEqual(Object.keys(features), [...keys]);
          for (const [key, value] of Object.entries(features)) assert.equal(value, frame.metrics[key], `frame ${i}: ${key}`);
          assert.ok(!('integer_vif_scale0' in features) && !('integer_adm2' in features));
        }
      });

      it('a VMAF v0.6.1 run computes every part, once per frame', async () => {
        const clip = goldenClip('src01_288x162_10bit');
        const golden = clip.log('libvmaf').frames;
        let opened;
        const results = await lastValueFrom(score(clip.ref, clip.dis, { backend, threads: 2, onBackend: (b) => (opened = b) }).pipe(toArray()));
        const runs = opened.coreRuns();
        assert.equal(runs.vif, golden.length);
        assert.equal(runs.adm, golden.length);
        assert.ok(runs.motion >= golden.length - 1);
        for (const [i, frame] of golden.entries()) {
          assert.equal(results[i].scores.vmaf, frame.metrics.vmaf, `frame ${i}: vmaf`);
          for (const [key, value] of Object.entries(results[i].features)) assert.equal(value, frame.metrics[key], `frame ${i}: ${key}`);
        }
      });

      it('v0.6.1 and v1 at once share one pass of each part a frame, and each model gets its own run\'s values', async () => {
        const clip = goldenClip('src01_288x162_10bit');
        const v0 = clip.log('libvmaf').frames;
        const v1 = clip.log('libvmaf-extra').frames;
        let opened;
        const results = await lastValueFrom(
          score(clip.ref, clip.dis, { backend, threads: 2, models: ['version=vmaf_v0.6.1', V1], onBackend: (b) => (opened = b) }).pipe(toArray()),
        );
        // v1's motion3 instance (motion_max_val 18) takes its values from the same SADs as v0's motion,
        // and its adm3 runs as an instance of its own: the core's parts still run once a frame.
        const runs = opened.coreRuns();
        assert.equal(runs.vif, v0.length);
        assert.equal(runs.adm, v0.length);
        assert.ok(runs.motion >= v0.length - 1 && runs.motion <= v0.length, `motion computed ${runs.motion} times`);
        assert.equal(results.length, v0.length);
        let compared = 0;
        for (const [i, { features, scores }] of results.entries()) {
          assert.equal(scores.vmaf, v0[i].metrics.vmaf, `frame ${i}: vmaf`);
          assert.equal(scores.vmaf_v1, v1[i].metrics.vmaf_v1, `frame ${i}: vmaf_v1`);
          for (const [key, value] of Object.entries(features)) {
            const want = key in v0[i].metrics ? v0[i].metrics[key] : v1[i].metrics[key];
            assert.notEqual(want, undefined, `frame ${i}: ${key} is in neither log`);
            assert.equal(value, want, `frame ${i}: ${key}`);
            compared++;
          }
        }
        assert.ok(compared >= results.length * 20, `${compared} values compared`);
      });
    });
  }
});

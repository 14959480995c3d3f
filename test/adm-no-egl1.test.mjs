// A run without an adm_enhn_gain_limit=1 instance (every model but the NEG ones) computes
// ADM's default variant alone on the cpu backend (parts bit 4 beside 2): the default
// variant's stats are the full call's exactly, the egl_1 slots stay 0, and the egl_1 keys
// are not emitted; with the NEG model in the run both variants are computed, as before.
import assert from 'node:assert/strict';
import { resolveRun } from '../dist/pipeline/run-plan.js';
import { planAdmEgl1, statsPartsMask } from '../dist/kernels/core-parts.js';
import { featureValues } from '../dist/kernels/native-features.js';
import { loadNative } from '../dist/kernels/native.js';
import { readY4mLumas } from './helpers/y4m-lumas.mjs';
import { goldenClip } from './helpers/golden.mjs';
import { LEVELS } from './helpers/isa-levels.mjs';

// adm.h's layout: per scale 9 (num h v d, num egl_1 h v d, den h v d), then per scale 6 AIM
// (variant 0 h v d, variant 1 h v d).
const ADM_SCALES = 4;
const eglSlot = (i) => (i < 36 ? i % 9 >= 3 && i % 9 < 6 : (i - 36) % 6 >= 3);

describe('ADM without its egl_1 variant', function () {
  this.timeout(600_000);

  it('a plan asks for the egl_1 variant only with an egl_1 ADM instance', async () => {
    const egl1 = async (options) => planAdmEgl1((await resolveRun(options)).plan);
    assert.equal(await egl1({ models: ['version=vmaf_v0.6.1'] }), false);
    assert.equal(await egl1({ models: ['version=vmaf_v0.6.1neg'] }), true);
    assert.equal(await egl1({ models: ['version=vmaf_v0.6.1:name=a', 'version=vmaf_v0.6.1neg:name=b'] }), true);
    assert.equal(await egl1({ noPrediction: true, features: ['adm'] }), false);
    assert.equal(await egl1({ noPrediction: true, features: ['adm=adm_enhn_gain_limit=1'] }), true);
    assert.equal(statsPartsMask({ vif: true, adm: true, motion: true, admEgl1: false }), 7);
    assert.equal(statsPartsMask({ vif: true, adm: false, motion: true, admEgl1: false }), 1);
    assert.equal(statsPartsMask({ vif: true, adm: true, motion: true }), 3);
  });

  // Natural 8-bit frames, and the same spread to 10 bits (v << 2 | v >> 6).
  const to10 = (l) => Uint16Array.from(l, (v) => (v << 2) | (v >> 6));
  for (const [name, depth] of [['src01_160x90_8bit', 8], ['negated_256x144_2f', 8], ['src01_160x90_8bit', 10], ['negated_256x144_2f', 10]]) {
    it(`${name} at ${depth} bits: the default variant's stats and values are the full call's, every ISA`, async () => {
      const native = loadNative();
      const layout = native.statsLayout();
      assert.equal(layout.adm, ADM_SCALES * 15);
      const clip = goldenClip(name);
      const [ref, dis] = [readY4mLumas(clip.ref), readY4mLumas(clip.dis)];
      const { width, height } = ref;
      const luma = (l) => (depth === 8 ? l : to10(l));
      const { detected } = native.limitIsa();
      const levels = LEVELS.slice(0, LEVELS.indexOf(detected) + 1);
      try {
        for (const isa of levels) {
          native.limitIsa(isa);
          for (let f = 0; f < Math.min(2, ref.lumas.length); f++) {
            const [r, d] = [luma(ref.lumas[f]), luma(dis.lumas[f])];
            const full = await native.computeFrameStats(r, d, width, height, depth, undefined, 3);
            const one = await native.computeFrameStats(r, d, width, height, depth, undefined, 7);
            assert.equal(one.stats.length, full.stats.length);
            const admFull = full.stats.subarray(layout.vif);
            const admOne = one.stats.subarray(layout.vif);
            assert.deepEqual([...one.stats.subarray(0, layout.vif)], [...full.stats.subarray(0, layout.vif)]);
            for (let i = 0; i < layout.adm; i++) {
              assert.equal(admOne[i], eglSlot(i) ? 0n : admFull[i], `${isa} frame ${f} ADM stat ${i}`);
            }
            assert.ok(admFull.some((v, i) => eglSlot(i) && v !== 0n), 'the full call computes the egl_1 variant');
            const valuesFull = native.finishFeatures(full.stats, width, height, depth, 3);
            const valuesOne = native.finishFeatures(one.stats, width, height, depth, 7);
            const parts = { vif: true, adm: true, motion: false };
            const keyed = featureValues(valuesOne, [], { ...parts, admEgl1: false });
            const keyedFull = featureValues(valuesFull, [], parts);
            assert.ok(Object.keys(keyedFull).some((k) => k.startsWith('integer_adm') && k.endsWith('_egl_1')));
            const expected = Object.fromEntries(Object.entries(keyedFull).filter(([k]) => !(/^integer_(adm|aim)/.test(k) && k.endsWith('_egl_1'))));
            assert.deepEqual(keyed, expected);
            assert.ok(Object.keys(keyed).includes('integer_vif_scale0_egl_1'), 'VIF egl_1 keys stay');
          }
        }
      } finally {
        native.limitIsa();
      }
    });
  }

  it('refuses bit 4 without ADM', async () => {
    const native = loadNative();
    const clip = goldenClip('src01_160x90_8bit');
    const [ref, dis] = [readY4mLumas(clip.ref), readY4mLumas(clip.dis)];
    assert.throws(() => native.computeFrameStats(ref.lumas[0], dis.lumas[0], ref.width, ref.height, 8, undefined, 5), /parts/);
    assert.throws(() => native.computeFrameStats(ref.lumas[0], dis.lumas[0], ref.width, ref.height, 8, undefined, 8), /parts/);
  });
});

// ADM at non-default options (src/kernels/adm-options.ts through the native addon) against
// libvmaf 3.2.0 on the golden clips (the carried ones, and ../shared/golden's others where it
// exists): the libvmaf-extra log carries the instances VMAF v1 reads
// (integer_adm*_csf_2_dlmw_0.7_egl_1_min_0.5_nw_0.02, + _nvd_5, _nvd_1.5_rdh_2160,
// _rdh_2160), the libvmaf log the default and egl_1 instances. Every value must be equal.
import assert from 'node:assert/strict';
import { loadNative } from '../dist/kernels/native.js';
import { computeAdm, admKernelParams, ADM_VALUE_KEYS } from '../dist/kernels/adm-options.js';
import { openFrameSource, pairFrames, UsageError } from '../dist/index.js';
import { CARRIED_CLIPS } from './helpers/carried-clips.mjs';
import { goldenClips } from './helpers/golden.mjs';

const V1 = { csfMode: 2, dlmWeight: 0.7, enhnGainLimit: 1, minVal: 0.5, noiseWeight: 0.02 };
const INSTANCES = [
  { log: 'libvmaf', suffix: '', options: {} },
  { log: 'libvmaf', suffix: '_egl_1', options: { enhnGainLimit: 1 } },
  { log: 'libvmaf-extra', suffix: '_csf_2_dlmw_0.7_egl_1_min_0.5_nw_0.02', options: V1 },
  { log: 'libvmaf-extra', suffix: '_csf_2_dlmw_0.7_egl_1_min_0.5_nw_0.02_nvd_5', options: { ...V1, normViewDist: 5 } },
  { log: 'libvmaf-extra', suffix: '_csf_2_dlmw_0.7_egl_1_min_0.5_nw_0.02_nvd_1.5_rdh_2160', options: { ...V1, normViewDist: 1.5, refDisplayHeight: 2160 } },
  { log: 'libvmaf-extra', suffix: '_csf_2_dlmw_0.7_egl_1_min_0.5_nw_0.02_rdh_2160', options: { ...V1, refDisplayHeight: 2160 } },
];

// ../shared's 8-bit-as-10-bit HFR clip needs the pipeline's bit-depth conversion, which the
// raw sources here do not do: its default keys are covered by golden-parity. (The carried
// HFR clip's distorted input is already 10-bit.)
const clips = goldenClips({ shared: true }).filter((c) => c.hasLog('libvmaf-extra') && !(c.origin === 'shared' && c.name.startsWith('hfr_')));

async function* framePairs(clip) {
  const ref = openFrameSource(clip.ref);
  const dis = openFrameSource(clip.dis);
  try {
    for await (const pair of pairFrames(ref, dis)) yield pair;
  } finally {
    await Promise.all([ref.close(), dis.close()]);
  }
}

describe('adm at libvmaf options (cpu)', function () {
  this.timeout(600_000);
  const native = loadNative();
  const totals = {};
  after(() => {
    const n = Object.values(totals).reduce((a, b) => a + b, 0);
    if (n) console.log(`      ${n} values equal to libvmaf's over ${Object.keys(totals).length} keys`);
  });

  it('rejects what libvmaf rejects, naming the option', () => {
    assert.throws(() => admKernelParams(native, { normViewDist: 1 }), (e) => e instanceof UsageError && /adm_norm_view_dist \* adm_ref_display_height/.test(e.message));
    assert.throws(() => admKernelParams(native, { csfMode: 2, normViewDist: 4 }), (e) => e instanceof UsageError && /adm_csf_mode = 2 has no table/.test(e.message));
    assert.throws(() => admKernelParams(native, { dlmWeight: 1.5 }), (e) => e instanceof UsageError && /adm_dlm_weight/.test(e.message));
    assert.throws(() => admKernelParams(native, { enhnGainLimit: 0.5 }), (e) => e instanceof UsageError && /adm_enhn_gain_limit/.test(e.message));
    assert.throws(() => admKernelParams(native, { csfMode: 4 }), (e) => e instanceof UsageError && /adm_csf_mode/.test(e.message));
  });

  it("derives libvmaf's fixed-point CSF weights", () => {
    // Watson at 3 x 1080: libvmaf's constants (scale 0) and uint32(f * 2^32) of its factors.
    const watson = admKernelParams(native, {});
    assert.deepEqual(watson.baseWeight, [36453, 36453, 49417]);
    assert.deepEqual(watson.detailWeight, [137373792, 137373792, 61414028, 186284160, 186284160, 104783920, 196165808, 196165808, 134487184]);
    // The same weights computed from the Watson formula at 1.5 x 2160 (the same pixels per degree).
    assert.deepEqual(admKernelParams(native, { normViewDist: 1.5, refDisplayHeight: 2160 }), watson);
    // Blend at 1080 x 3H: uint16(f * 2^21), uint16(f * 2^23) of its table's binary32 values.
    const blend = admKernelParams(native, { csfMode: 2 });
    assert.deepEqual(blend.baseWeight, [Math.trunc(Math.fround(0.01183) * 2 ** 21), Math.trunc(Math.fround(0.01183) * 2 ** 21), Math.trunc(Math.fround(0.004302) * 2 ** 23)]);
    assert.equal(blend.gainLimit, 100);
    assert.equal(admKernelParams(native, { skipAim: true }).aim, false);
  });

  it('has every carried golden clip', () => {
    const names = clips.map((c) => c.name);
    for (const name of CARRIED_CLIPS) assert.ok(names.includes(name), name);
  });

  for (const clip of clips) {
    it(clip.origin === 'repo' ? clip.name : `${clip.name} (shared)`, async function () {
      const logs = {};
      for (const kind of ['libvmaf', 'libvmaf-extra']) logs[kind] = clip.log(kind).frames;
      const counts = {};
      let frame = 0;
      for await (const { ref, dis } of framePairs(clip)) {
        const geometry = { width: ref.format.width, height: ref.format.height, bitDepth: ref.format.bitDepth };
        for (const inst of INSTANCES) {
          const metrics = logs[inst.log][frame].metrics;
          if (!(`integer_adm2${inst.suffix}` in metrics)) continue; // a model libvmaf refused for this clip
          const values = await computeAdm(native, ref.luma, dis.luma, geometry, inst.options);
          for (const key of ADM_VALUE_KEYS) {
            const name = key + inst.suffix;
            assert.equal(values[key], metrics[name], `frame ${frame}: ${name}`);
            counts[name] = (counts[name] ?? 0) + 1;
            totals[name] = (totals[name] ?? 0) + 1;
          }
        }
        ref.release();
        dis.release();
        frame++;
      }
      assert.equal(frame, logs['libvmaf'].length, 'every frame compared');
      assert.ok(Object.keys(counts).length >= 14, 'the default and egl_1 instances at least');
    });
  }
});

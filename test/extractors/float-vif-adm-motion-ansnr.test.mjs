// libvmaf 3.2.0's float extractors (float_vif, float_adm, float_motion, float_ansnr) and the
// float models (vmaf_float_v0.6.1, ..neg, vmaf_float_b_v0.6.3, vmaf_float_4k_v0.6.1) on the
// cpu backend, against libvmaf's values in the golden clips' libvmaf-extra logs: every
// frame, every key, exactly; float_motion under motion_add_uv and motion_add_scale1 against
// the libvmaf-motion-options logs. Also the option-suffixed keys, a refused size, --subsample
// (float_motion is temporal: unscored frames still feed motion2), frame ownership with the
// temporal runner, and float_motion's finishFrame as a pure function.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scoreIterator, openFrameSource, VmafError } from '../../dist/index.js';
import { floatMotion } from '../../dist/extractors/float_motion/float_motion.js';
import { CARRIED_CLIPS } from '../helpers/carried-clips.mjs';
import { goldenClips, reciprocalKey } from '../helpers/golden.mjs';

const FLOAT_MODELS = [
  { version: 'vmaf_float_v0.6.1', name: 'vmaf_float' },
  { version: 'vmaf_float_v0.6.1neg', name: 'vmaf_float_neg' },
  { version: 'vmaf_float_b_v0.6.3', name: 'vmaf_float_b' },
  { version: 'vmaf_float_4k_v0.6.1', name: 'vmaf_float_4k' },
];

// Every key the float extractors and models give that libvmaf logged for the clip.
const isFloatKey = (k) =>
  /^(adm2|aim|adm3|adm_scale[0-3]|motion|motion2|motion3|vif_scale[0-3])(_egl_1)?$/.test(k) ||
  k === 'float_ansnr' || k === 'float_anpsnr' || /^vmaf_float/.test(k);

// The carried clips, and ../shared/golden's others where it exists.
const clips = goldenClips({ shared: true }).filter((clip) => clip.hasLog('libvmaf-extra'));

/** All numeric values of a frame result, models' bootstrap keys included, by key. */
function flatValues(result) {
  const out = {};
  const walk = (x) => {
    for (const [k, v] of Object.entries(x)) {
      if (v && typeof v === 'object') walk(v);
      else if (typeof v === 'number') out[k] = v;
    }
  };
  walk(result);
  return out;
}

/** Every frame result of a run. */
async function run(ref, dis, options) {
  const out = [];
  for await (const r of scoreIterator(ref, dis, options)) out.push(r);
  return out;
}

/** A y4m of `frames` frames of size w x h (4:2:0, 8-bit), luma from fill(frame, x, y). */
function writeY4m(path, w, h, frames, fill) {
  const cw = Math.ceil(w / 2), ch = Math.ceil(h / 2);
  const parts = [Buffer.from(`YUV4MPEG2 W${w} H${h} F25:1 Ip A1:1 C420jpeg\n`)];
  for (let f = 0; f < frames; f++) {
    parts.push(Buffer.from('FRAME\n'));
    const y = Buffer.alloc(w * h);
    for (let i = 0; i < h; i++) for (let j = 0; j < w; j++) y[i * w + j] = fill(f, j, i) & 255;
    parts.push(y, Buffer.alloc(cw * ch * 2, 128));
  }
  writeFileSync(path, Buffer.concat(parts));
}

describe('float extractors and models (cpu) against libvmaf 3.2.0', function () {
  this.timeout(1_200_000);
  const totals = {};
  after(() => {
    const keys = Object.keys(totals);
    if (keys.length) console.log(`      ${keys.reduce((a, k) => a + totals[k], 0)} values equal to libvmaf's over ${keys.length} keys`);
  });

  it('has every carried golden clip with its libvmaf-extra log', () => {
    const names = clips.map((clip) => clip.name);
    for (const name of CARRIED_CLIPS) assert.ok(names.includes(name), name);
  });

  for (const golden of clips) {
    const clip = golden.name;
    it(`${clip}${golden.origin === 'repo' ? '' : ' (shared)'}: every float feature and float model score equals libvmaf's`, async () => {
      const gold = golden.log('libvmaf-extra');
      const seen = new Set();
      let frames = 0;
      for await (const r of scoreIterator(golden.ref, golden.dis, { backend: 'cpu', models: FLOAT_MODELS, features: ['float_ansnr'] })) {
        const g = gold.frames[r.index].metrics;
        frames++;
        for (const [k, v] of Object.entries(flatValues(r))) {
          if (!isFloatKey(k) || !(k in g)) continue;
          assert.equal(v, g[k], `${clip} frame ${r.index} ${k}: ${v} vs libvmaf ${g[k]}`);
          totals[k] = (totals[k] ?? 0) + 1;
          seen.add(k);
        }
      }
      assert.equal(frames, gold.frames.length);
      for (const k of ['adm2', 'adm3', 'aim', 'adm_scale3', 'motion', 'motion2', 'motion3', 'vif_scale0', 'vif_scale3_egl_1', 'adm2_egl_1', 'float_ansnr', 'float_anpsnr', 'vmaf_float', 'vmaf_float_neg', 'vmaf_float_b', 'vmaf_float_b_ci_p95_hi', 'vmaf_float_4k']) {
        if (golden.reciprocalKeysLeftOut && reciprocalKey(k)) continue; // logs of another CPU vendor's rcpss (golden.mjs)
        assert.ok(seen.has(k), `${clip}: ${k} compared`);
      }
    });
  }

  // libvmaf-motion-options (fixtures/golden/README.md): float_motion under motion_add_uv,
  // motion_add_scale1, both (libvmaf's chroma scale-1 read at the chroma's stride from
  // buffers at the luma's: 4:2:0 here, 4:4:4 in rgbtest), and both at filter size 3.
  for (const golden of clips.filter((clip) => clip.hasLog('libvmaf-motion-options'))) {
    it(`${golden.name}: float_motion with motion_add_uv and motion_add_scale1 equals libvmaf's, every frame`, async () => {
      const { runs } = golden.log('libvmaf-motion-options');
      const frames = await run(golden.ref, golden.dis, { backend: 'cpu', noPrediction: true, features: runs.map((r) => r.feature) });
      let compared = 0;
      for (const r of runs) {
        assert.equal(frames.length, r.frames.length, r.feature);
        r.frames.forEach((want, i) => {
          for (const [k, v] of Object.entries(want)) {
            assert.ok(Object.is(frames[i].features[k], v), `${golden.name} frame ${i} ${k}: ${frames[i].features[k]} vs libvmaf ${v}`);
            compared++;
          }
        });
      }
      assert.ok(compared >= 36, `${compared} values`);
    });
  }

  describe('options and frames', () => {
    let tmp, small, moving;
    before(() => {
      tmp = mkdtempSync(join(tmpdir(), 'vmafs-float-'));
      small = join(tmp, 'small.y4m');
      moving = join(tmp, 'moving.y4m');
      writeY4m(small, 48, 40, 2, (f, x, y) => x * 5 + y * 3 + f);
      writeY4m(moving, 64, 48, 7, (f, x, y) => ((x + 3 * f) * 7) ^ (y * 11));
    });
    after(() => rmSync(tmp, { recursive: true, force: true }));

    it('logs option-suffixed keys as libvmaf names them', async () => {
      const frames = await run(moving, moving, {
        backend: 'cpu',
        noPrediction: true,
        features: ['float_vif=vif_enhn_gain_limit=1:debug=true', 'float_adm=adm_csf_mode=1:adm_p_norm=2', 'float_motion=motion_force_zero=true', 'float_ansnr'],
      });
      const f = frames[3].features;
      for (const k of ['vif_scale0_egl_1', 'vif_scale3_egl_1', 'vif_egl_1', 'vif_num_egl_1', 'vif_den_scale3_egl_1', 'adm2_csf_1_apn_2', 'aim_csf_1_apn_2', 'adm_scale3_csf_1_apn_2', 'motion2_force_0', 'motion3_force_0', 'motion_force_0', 'float_ansnr', 'float_anpsnr']) {
        assert.ok(k in f, `${k} in ${Object.keys(f).join(',')}`);
      }
      // Identical inputs: VIF 1, motion forced to 0.
      assert.equal(f['vif_scale0_egl_1'], 1);
      assert.equal(f['vif_egl_1'], f['vif_num_egl_1'] / f['vif_den_egl_1']);
      assert.equal(f['motion2_force_0'], 0);
      assert.equal(f['motion_force_0'], 0);
    });

    it('refuses frames too small for a float_vif scale, naming the extractor', async () => {
      await assert.rejects(
        run(small, small, { backend: 'cpu', noPrediction: true, features: ['float_vif=vif_prescale=0.25'] }),
        (e) => e instanceof VmafError && e.code === 'E_FRAME_TOO_SMALL' && /float_vif/.test(e.message),
      );
      await assert.rejects(
        run(small, small, { backend: 'cpu', noPrediction: true, features: ['float_vif=vif_prescale_method=area'] }),
        (e) => e instanceof VmafError && /vif_prescale_method/.test(e.message),
      );
    });

    it('with --subsample, motion of the kept frames equals a full run (unscored frames feed the chain)', async () => {
      const opts = { backend: 'cpu', noPrediction: true, features: ['float_motion'] };
      const full = await run(moving, moving, opts);
      const sub = await run(moving, moving, { ...opts, subsample: 3 });
      assert.deepEqual(sub.map((f) => f.index), [0, 3, 6]);
      for (const f of sub) {
        for (const k of ['motion', 'motion2', 'motion3']) assert.equal(f.features[k], full[f.index].features[k], `frame ${f.index} ${k}`);
      }
      assert.ok(full[3].features.motion > 0);
    });

    it('needs no more frames in flight than integer motion does (2): motion2 finishes when the core hands a frame back', async () => {
      const opts = { backend: 'cpu', threads: 1, noPrediction: true, features: ['float_motion'] };
      const tight = await run(moving, moving, { ...opts, maxFramesInFlight: 2 });
      const loose = await run(moving, moving, opts);
      assert.deepEqual(tight.map((f) => f.features), loose.map((f) => f.features));
    });

    it('releases every frame exactly once with the temporal runner', async () => {
      const counted = (path) => {
        const source = openFrameSource(path);
        const releases = new Map();
        return {
          releases,
          label: source.label,
          format: () => source.format(),
          close: () => source.close(),
          async *[Symbol.asyncIterator]() {
            for await (const frame of source) {
              const id = frame.index;
              releases.set(id, 0);
              yield Object.assign(Object.create(frame), { release: () => { releases.set(id, releases.get(id) + 1); frame.release(); } });
            }
          },
        };
      };
      for (const subsample of [1, 2]) {
        const ref = counted(moving), dis = counted(moving);
        await run(ref, dis, { backend: 'cpu', noPrediction: true, features: ['float_motion', 'float_vif'], subsample });
        for (const [side, s] of [['ref', ref], ['dis', dis]]) {
          assert.equal(s.releases.size, 7);
          for (const [i, n] of s.releases) assert.equal(n, 1, `subsample ${subsample}: ${side} frame ${i} released ${n} times`);
        }
      }
    });
  });

  it("float_motion's finishFrame: motion2 = min(own, next) weighted and capped, motion3 its blend, first frame 0", () => {
    const options = Object.fromEntries(floatMotion.options.map((o) => [o.name, o.default]));
    let seed = 7;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 60;
    for (let round = 0; round < 50; round++) {
      const weight = round % 5 === 0 ? 1 : rand() / 12;
      const opts = { ...options, motion_fps_weight: weight, motion_blend_factor: 0.5, motion_blend_offset: 20, motion_max_val: 30 };
      const s = Array.from({ length: 6 }, (_, i) => (i === 0 ? 0 : rand()));
      const own = s.map((v) => [v, Math.min(v * weight, 30), v]); // [motion2, motion, motion3] slots
      for (let i = 0; i < s.length; i++) {
        const [m2, m, m3] = floatMotion.finishFrame(own[i], own[i + 1], i === 0, opts);
        const low = i === 0 ? 0 : i + 1 < s.length ? Math.min(s[i], s[i + 1]) : s[i];
        const blend = (x) => x * 0.5 + 0.5 * Math.min(20, x);
        assert.equal(m, own[i][1]);
        assert.equal(m2, i === 0 ? 0 : Math.min(low * weight, 30));
        assert.equal(m3, i === 0 ? Math.min(blend(s[1] * weight), 30) : Math.min(blend(low * weight), 30));
      }
    }
    // A single frame: both 0.
    assert.deepEqual(floatMotion.finishFrame([0, 0, 0], undefined, true, options), [0, 0, 0]);
  });
});

// float_ssim and float_ms_ssim (src/extractors/float_ssim, float_ms_ssim, common/ssim-core):
// libvmaf 3.2.0's option tables and output order, MS-SSIM's size refusal, and bit-exact
// values on the cpu backend, end to end through score(): every golden clip at default
// options (libvmaf-extra log), the CTC presets' options (libvmaf-aom-ctc, libvmaf-nflx-ctc
// logs), and enable_lcs against libvmaf's own output (fixtures), on the carried golden clips
// (and ../shared/golden's other clips where it exists).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { lastValueFrom, toArray } from 'rxjs';
import { score } from '../../dist/index.js';
import { floatSsim, automaticSsimScale } from '../../dist/extractors/float_ssim/float_ssim.js';
import { floatMsSsim, MS_SSIM_MIN_SIDE } from '../../dist/extractors/float_ms_ssim/float_ms_ssim.js';
import { parseFeatureArg } from '../../dist/extractors/request.js';
import { planRun } from '../../dist/extractors/plan.js';
import { CARRIED_CLIPS } from '../helpers/carried-clips.mjs';
import { goldenClip, goldenClips } from '../helpers/golden.mjs';
import { makeRng } from '../helpers/gpu.mjs';

const BIN = fileURLToPath(new URL('../../bin/vmaf-stream', import.meta.url));
const FIXTURES = fileURLToPath(new URL('../fixtures/extractors/', import.meta.url));
const ffmpeg = createRequire(import.meta.url)('@ffmpeg-installer/ffmpeg').path;

const clips = goldenClips({ shared: true }).filter((clip) => clip.hasLog('libvmaf-extra'));
const format = (width, height, bitDepth = 8) => ({ width, height, bitDepth, chroma: '420' });
const optionsOf = (arg) => parseFeatureArg(arg).options;

async function run(ref, dis, features) {
  return lastValueFrom(score(ref, dis, { backend: 'cpu', features, noPrediction: true, threads: 2 }).pipe(toArray()));
}

/** y4m frames: 8-bit 4:2:0, luma from `luma(x, y, frame)`, chroma grey. */
function writeY4m(file, width, height, frames, luma) {
  const cw = Math.ceil(width / 2), ch = Math.ceil(height / 2);
  const parts = [Buffer.from(`YUV4MPEG2 W${width} H${height} F25:1 Ip A1:1 C420jpeg\n`)];
  for (let f = 0; f < frames; f++) {
    const frame = Buffer.alloc(width * height + 2 * cw * ch, 128);
    for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) frame[y * width + x] = luma(x, y, f);
    parts.push(Buffer.from('FRAME\n'), frame);
  }
  writeFileSync(file, Buffer.concat(parts));
  return file;
}

/** Every frame of `golden` (a libvmaf JSON log) for `keys`, compared exactly; returns per-key counts. */
function compareFrames(results, golden, keys, what) {
  assert.equal(results.length, golden.frames.length, `${what}: every frame is scored`);
  const tally = {};
  for (const [i, frame] of golden.frames.entries()) {
    for (const key of keys) {
      const expected = frame.metrics[key];
      assert.equal(typeof expected, 'number', `${what}: libvmaf logged ${key} for frame ${i}`);
      const actual = results[i].features[key];
      const t = (tally[key] ??= { equal: 0, total: 0, maxDiff: 0 });
      t.total++;
      if (actual === expected) t.equal++;
      t.maxDiff = Math.max(t.maxDiff, Math.abs(actual - expected));
    }
  }
  const line = Object.entries(tally).map(([k, t]) => `${k} ${t.equal}/${t.total} max|diff| ${t.maxDiff}`);
  console.log(`        ${what}: ${line.join(', ')}`);
  for (const [key, t] of Object.entries(tally)) assert.equal(t.equal, t.total, `${what}: ${key} equal to libvmaf on ${t.equal} of ${t.total} frames (max |diff| ${t.maxDiff})`);
}

describe('float_ssim and float_ms_ssim extractors', function () {
  const tmp = mkdtempSync(join(tmpdir(), 'vmaf-ssim-'));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  describe('definitions', () => {
    it("declares libvmaf's option tables (no option is a feature param, so none suffixes a name)", () => {
      const table = (def) => def.options.map(({ name, type, default: d, min, max, param }) => ({ name, type, default: d, min, max, param }));
      const shared = [
        { name: 'enable_lcs', type: 'bool', default: false, min: undefined, max: undefined, param: false },
        { name: 'enable_db', type: 'bool', default: false, min: undefined, max: undefined, param: false },
        { name: 'clip_db', type: 'bool', default: false, min: undefined, max: undefined, param: false },
      ];
      assert.deepEqual(table(floatSsim), [...shared, { name: 'scale', type: 'int', default: 0, min: 0, max: 10, param: false }]);
      assert.deepEqual(table(floatMsSsim), shared);
      for (const arg of ['float_ssim=scale=1:enable_db=true:clip_db=true', 'float_ms_ssim=enable_db=true:clip_db=true', 'float_ssim=enable_lcs=true']) {
        const keys = planRun([parseFeatureArg(arg)]).featureKeys(format(640, 360));
        assert.equal(keys[0], arg.split('=')[0], arg);
      }
    });

    it("lists the outputs in libvmaf's append order", () => {
      assert.deepEqual(floatSsim.outputs(optionsOf('float_ssim'), format(640, 360)), ['float_ssim']);
      assert.deepEqual(floatSsim.outputs(optionsOf('float_ssim=enable_lcs=true'), format(640, 360)), ['float_ssim', 'float_ssim_l', 'float_ssim_c', 'float_ssim_s']);
      assert.deepEqual(floatMsSsim.outputs(optionsOf('float_ms_ssim'), format(640, 360)), ['float_ms_ssim']);
      const lcs = floatMsSsim.outputs(optionsOf('float_ms_ssim=enable_lcs=true'), format(640, 360));
      assert.equal(lcs.length, 16);
      assert.deepEqual(lcs.slice(0, 7), ['float_ms_ssim', 'float_ms_ssim_l_scale0', 'float_ms_ssim_l_scale1', 'float_ms_ssim_l_scale2', 'float_ms_ssim_l_scale3', 'float_ms_ssim_l_scale4', 'float_ms_ssim_c_scale0']);
      assert.deepEqual(lcs.slice(11), ['float_ms_ssim_s_scale0', 'float_ms_ssim_s_scale1', 'float_ms_ssim_s_scale2', 'float_ms_ssim_s_scale3', 'float_ms_ssim_s_scale4']);
    });

    it('picks the automatic SSIM scale as libvmaf rounds it', () => {
      assert.deepEqual([[640, 360], [320, 240], [383, 500], [384, 384], [1920, 1080], [3840, 2160], [301, 199]].map(([w, h]) => automaticSsimScale(w, h)), [1, 1, 1, 2, 4, 8, 1]);
    });

    it('refuses frames MS-SSIM cannot take (under 176 px a side) with E_FRAME_TOO_SMALL naming the minimum', () => {
      assert.equal(MS_SSIM_MIN_SIDE, 176);
      const opts = optionsOf('float_ms_ssim');
      for (const [w, h] of [[175, 400], [400, 175], [256, 144], [160, 90]]) {
        assert.throws(
          () => floatMsSsim.check(opts, format(w, h)),
          (e) => e.code === 'E_FRAME_TOO_SMALL' && /^float_ms_ssim: /.test(e.message) && e.message.includes(`${w}x${h}`) && /at least 176x176/.test(e.message),
        );
      }
      for (const [w, h] of [[176, 176], [320, 180]]) floatMsSsim.check(opts, format(w, h));
    });

    it('refuses an explicit float_ssim scale that leaves less than the 11x11 window', () => {
      assert.throws(() => floatSsim.check(optionsOf('float_ssim=scale=10'), format(100, 100)), (e) => e.code === 'E_FRAME_TOO_SMALL' && /float_ssim.*scale=10.*10x10.*at least 11x11/.test(e.message));
      floatSsim.check(optionsOf('float_ssim=scale=10'), format(110, 110));
      floatSsim.check(optionsOf('float_ssim'), format(32, 32));
    });
  });

  describe('refusals end to end', function () {
    this.timeout(120_000);
    let small;
    before(() => {
      small = writeY4m(join(tmp, 'small_256x144.y4m'), 256, 144, 2, (x, y, f) => (x * 3 + y * 5 + f * 7) & 255);
    });

    it('score() rejects float_ms_ssim on 256x144 frames with E_FRAME_TOO_SMALL, float_ssim still runs', async () => {
      await assert.rejects(run(small, small, ['float_ms_ssim']), (e) => e.code === 'E_FRAME_TOO_SMALL' && /float_ms_ssim.*256x144.*176x176/.test(e.message));
      const results = await run(small, small, ['float_ssim']);
      assert.equal(results.length, 2);
      assert.ok(Math.abs(results[0].features.float_ssim - 1) < 1e-6, `identical frames: ${results[0].features.float_ssim}`);
    });

    it('the CLI exits 1 with the message, no stack trace', () => {
      const r = spawnSync(process.execPath, [BIN, '-r', small, '-d', small, '--feature', 'float_ms_ssim', '-n', '--backend', 'cpu', '-q'], { encoding: 'utf8', timeout: 120_000 });
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, /float_ms_ssim: frames of 256x144 are too small: MS-SSIM needs at least 176x176/);
      assert.doesNotMatch(r.stderr, /internal error|    at /);
    });
  });

  describe('properties', function () {
    this.timeout(120_000);
    it('SSIM and MS-SSIM are exactly symmetric in ref and dis, and within [-1, 1]', async () => {
      const rng = makeRng(1234);
      const noise = Array.from({ length: 3 * 200 * 180 }, () => rng.int(61) - 30);
      const base = (x, y, f) => Math.round(128 + 90 * Math.sin(x / 13 + f) * Math.cos(y / 9));
      const a = writeY4m(join(tmp, 'a.y4m'), 200, 180, 3, base);
      const b = writeY4m(join(tmp, 'b.y4m'), 200, 180, 3, (x, y, f) => Math.min(255, Math.max(0, base(x, y, f) + noise[(f * 180 + y) * 200 + x])));
      const features = ['float_ssim=enable_lcs=true', 'float_ms_ssim=enable_lcs=true'];
      const [ab, ba] = await Promise.all([run(a, b, features), run(b, a, features)]);
      const ssimValues = (features) => Object.fromEntries(Object.entries(features).filter(([k]) => k.startsWith('float_')));
      for (const [i, r] of ab.entries()) {
        const values = ssimValues(r.features);
        assert.equal(Object.keys(values).length, 4 + 16);
        assert.deepEqual(values, ssimValues(ba[i].features), `frame ${i}`);
        for (const [k, v] of Object.entries(values)) assert.ok(v > -1 && v < 1, `frame ${i}: ${k} = ${v}`);
      }
    });
  });

  describe('golden parity (cpu backend, bit-exact with libvmaf 3.2.0)', function () {
    this.timeout(900_000);
    it('has the golden clips', () => {
      const names = clips.map((clip) => clip.name);
      for (const name of CARRIED_CLIPS) assert.ok(names.includes(name), `carried clip ${name} with its libvmaf-extra log`);
    });

    // libvmaf scored a pair whose distorted input has a lower bit depth after converting it
    // to the reference's format (golden README): where score() refuses the mismatch, do the
    // same with ffmpeg (once per clip) and score again.
    const converted = new Map();
    async function scoreClip(clip, features) {
      const { ref } = clip;
      const dis = converted.get(clip.name) ?? clip.dis;
      try {
        return await run(ref, dis, features);
      } catch (e) {
        if (e.code !== 'E_INPUT_MISMATCH' || converted.has(clip.name)) throw e;
        const { pix_fmt: pixFmt } = clip.info;
        const y4m = join(tmp, `${clip.name}-dis.y4m`);
        const r = spawnSync(ffmpeg, ['-v', 'error', '-y', '-i', dis, '-vf', `format=${pixFmt}`, '-f', 'yuv4mpegpipe', '-strict', '-1', y4m]);
        assert.equal(r.status, 0, String(r.stderr));
        converted.set(clip.name, y4m);
        return run(ref, y4m, features);
      }
    }

    for (const clip of clips) {
      describe(clip.origin === 'repo' ? clip.name : `${clip.name} (shared)`, () => {
        const { width, height } = clip.info;
        const msSsim = Math.min(width, height) >= MS_SSIM_MIN_SIDE;

        it('default options: libvmaf-extra log', async () => {
          const golden = clip.log('libvmaf-extra');
          if (!msSsim) assert.match(golden.refused.float_ms_ssim, /./, 'libvmaf refused float_ms_ssim too');
          const keys = msSsim ? ['float_ssim', 'float_ms_ssim'] : ['float_ssim'];
          compareFrames(await scoreClip(clip, keys), golden, keys, 'defaults');
        });

        // Not every clip has CTC logs; where libvmaf refused the preset they hold only `refused`.
        const log = (kind) => (clip.hasLog(kind) ? clip.log(kind) : {});
        const aom = log('libvmaf-aom-ctc');
        const nflx = log('libvmaf-nflx-ctc');
        if (aom.frames) {
          it('--aom_ctc v7.0 options: float_ssim=scale=1:enable_db=true:clip_db=true, float_ms_ssim=enable_db=true:clip_db=true', async () => {
            const results = await scoreClip(clip, ['float_ssim=scale=1:enable_db=true:clip_db=true', 'float_ms_ssim=enable_db=true:clip_db=true']);
            compareFrames(results, aom, ['float_ssim', 'float_ms_ssim'], 'aom_ctc');
          });
        }
        if (nflx.frames) {
          it('--nflx_ctc options: float_ssim=enable_db=true:clip_db=true', async () => {
            compareFrames(await scoreClip(clip, ['float_ssim=enable_db=true:clip_db=true']), nflx, ['float_ssim'], 'nflx_ctc');
          });
        }
      });
    }
  });

  describe('other options against libvmaf (fixtures from its CLI)', function () {
    this.timeout(300_000);
    const fixture = join(FIXTURES, 'ssim-options.json');
    const cases = existsSync(fixture) ? JSON.parse(readFileSync(fixture, 'utf8')).cases : [];
    it('has the fixture cases', () => assert.ok(cases.length > 0, fixture));
    for (const c of cases) {
      it(`${c.clip}: --feature ${c.feature}`, async function () {
        const { ref, dis } = goldenClip(c.clip);
        const results = await run(ref, dis, [c.feature]);
        // libvmaf's log lists a frame's features in append order: so must outputs().
        const definition = c.feature.startsWith('float_ms_ssim') ? floatMsSsim : floatSsim;
        assert.deepEqual(definition.outputs(optionsOf(c.feature), format(1, 1)), Object.keys(c.frames[0]));
        compareFrames(results, { frames: c.frames.map((metrics) => ({ metrics })) }, Object.keys(c.frames[0]), c.feature);
      });
    }
  });
});

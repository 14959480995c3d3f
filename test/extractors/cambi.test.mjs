// cambi (libvmaf's cambi.c): bit-identical to libvmaf 3.2.0 on every frame of the carried
// golden clips (defaults, full_ref, VMAF v1's instance), under every option of its table
// (libvmaf-cambi-options.json.gz beside two clips: one `vmaf --feature` run each), its
// option-suffixed keys, its refusals, and the CLI on both backends.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { lastValueFrom, toArray } from 'rxjs';
import { score } from '../../dist/index.js';
import { cambi } from '../../dist/extractors/cambi/cambi.js';
import { goldenClip, goldenClips } from '../helpers/golden.mjs';
import { backendsUnderTest } from '../helpers/env.mjs';

const BIN = fileURLToPath(new URL('../../bin/vmaf-stream', import.meta.url));
const V1 = 'cambi=cambi_high_res_speedup=1080:cambi_vis_lum_threshold=0.06:cambi_max_val=17';
const V1_KEY = 'cambi_hrs_1080_cmxv_17_vlt_0.06';
const FULL_REF_KEYS = ['cambi', 'cambi_source', 'cambi_full_reference'];

const run = (clip, features, backend = 'cpu') =>
  lastValueFrom(score(clip.ref, clip.dis, { backend, features, noPrediction: true }).pipe(toArray()));
const cambiKeys = (features) => Object.keys(features).filter((k) => k.startsWith('cambi'));

describe('cambi extractor', function () {
  this.timeout(600_000);

  describe('golden parity (cpu, every frame exactly)', function () {
    const clips = goldenClips().filter((c) => c.hasLog('libvmaf-extra') && 'cambi' in (c.log('libvmaf-extra').frames[0]?.metrics ?? {}));
    const counts = {};
    after(() => console.log(`      cambi values exactly equal to libvmaf: ${JSON.stringify(counts)}`));
    it('has the carried clips libvmaf scores with cambi', () => assert.ok(clips.length >= 10, `found ${clips.length}`));
    for (const clip of clips) {
      it(clip.name, async () => {
        const extra = clip.log('libvmaf-extra').frames;
        const main = clip.log('libvmaf').frames;
        const withV1 = V1_KEY in extra[0].metrics;
        const results = await run(clip, ['cambi=full_ref=true', ...(withV1 ? [V1] : [])]);
        assert.equal(results.length, extra.length, 'every frame is scored');
        for (const [i, r] of results.entries()) {
          assert.deepEqual(cambiKeys(r.features), [...FULL_REF_KEYS, ...(withV1 ? [V1_KEY] : [])], `frame ${i}: the keys, in libvmaf's order`);
          for (const key of [...FULL_REF_KEYS, ...(withV1 ? [V1_KEY] : [])]) {
            assert.equal(r.features[key], extra[i].metrics[key], `${clip.name} frame ${i}: ${key}`);
            counts[key] = (counts[key] ?? 0) + 1;
          }
          assert.equal(r.features.cambi, main[i].metrics.cambi, `${clip.name} frame ${i}: cambi of libvmaf.json`);
        }
      });
    }
  });

  describe("every option, against libvmaf's run with it", function () {
    for (const name of ['banding_640x360_10bit', 'src01_288x162_8bit']) {
      const clip = goldenClip(name);
      const log = JSON.parse(gunzipSync(readFileSync(join(clip.dir, 'libvmaf-cambi-options.json.gz'))).toString('utf8'));
      for (const { feature, frames } of log.runs) {
        it(`${name}: ${feature}`, async () => {
          const results = await run(clip, [feature]);
          assert.equal(results.length, frames.length);
          // libvmaf 3.2.0 copies a 10-bit distorted picture of the encode size with the input's
          // row stride into its wider full_ref buffer (src larger than the frame): its
          // distorted value then reads misplaced rows and what earlier frames left there.
          // vmaf-stream measures the distorted picture itself (the default cambi).
          const copyBug = name === 'banding_640x360_10bit' && /src_width=960/.test(feature);
          const defaults = copyBug ? clip.log('libvmaf-extra').frames : undefined;
          for (const [i, expected] of frames.entries()) {
            assert.deepEqual(cambiKeys(results[i].features), Object.keys(expected), `frame ${i}: the keys`);
            for (const [key, value] of Object.entries(expected)) {
              if (copyBug && key === 'cambi_srch_540_srcw_960') {
                assert.equal(results[i].features[key], defaults[i].metrics.cambi, `frame ${i}: ${key} is the distorted's own CAMBI`);
                continue;
              }
              if (copyBug && key === 'cambi_full_reference') continue;  // from the misread distorted value
              assert.equal(results[i].features[key], value, `${name} frame ${i}: ${key}`);
            }
          }
        });
      }
    }
  });

  it('names option-suffixed keys as libvmaf does; cambi_source and cambi_full_reference never get a suffix', () => {
    const fmt = { width: 640, height: 360, bitDepth: 10, chroma: '420' };
    assert.deepEqual(cambi.outputs({ full_ref: true }, fmt), ['Cambi_feature_cambi_score', 'cambi_source', 'cambi_full_reference']);
    assert.deepEqual(cambi.unsuffixedOutputs, ['cambi_source', 'cambi_full_reference']);
    const table = Object.fromEntries(cambi.options.map((o) => [o.name, o]));
    assert.deepEqual(
      cambi.options.map((o) => o.name),
      ['cambi_max_val', 'enc_width', 'enc_height', 'enc_bitdepth', 'src_width', 'src_height', 'window_size', 'topk', 'cambi_topk', 'tvi_threshold',
        'cambi_vis_lum_threshold', 'max_log_contrast', 'heatmaps_path', 'full_ref', 'eotf', 'cambi_eotf', 'cambi_high_res_speedup'],
    );
    assert.equal(table.full_ref.param, false);
    assert.equal(table.heatmaps_path.param, false);
    assert.equal(table.cambi_high_res_speedup.alias, 'hrs');
  });

  it('full_ref of a clip against itself: cambi_source equals cambi and cambi_full_reference is 0', async () => {
    const clip = goldenClip('banding_640x360_10bit');
    const results = await lastValueFrom(score(clip.ref, clip.ref, { backend: 'cpu', features: ['cambi=full_ref=true'], noPrediction: true }).pipe(toArray()));
    for (const r of results) {
      assert.ok(r.features.cambi > 0, 'the banding clip has banding');
      assert.equal(r.features.cambi_source, r.features.cambi);
      assert.equal(r.features.cambi_full_reference, 0);
    }
  });

  describe('refusals', function () {
    for (const name of ['src01_160x90_8bit', 'mandel_213x121_odd']) {
      it(`${name}: refused as libvmaf refuses it, naming cambi and its minimum`, async () => {
        const clip = goldenClip(name);
        assert.ok('cambi' in clip.log('libvmaf-extra').refused, 'libvmaf refuses it');
        await assert.rejects(run(clip, ['cambi']), (e) => e.code === 'E_FRAME_TOO_SMALL' && /cambi/.test(e.message) && /216/.test(e.message));
      });
    }
    it('refuses an encode size smaller than 216 in both dimensions', async () => {
      await assert.rejects(
        run(goldenClip('src01_288x162_8bit'), ['cambi=enc_width=200:enc_height=160']),
        (e) => e.code === 'E_FRAME_TOO_SMALL' && /cambi/.test(e.message) && /200x160/.test(e.message),
      );
    });
    it('refuses bad option values with E_USAGE', async () => {
      const clip = goldenClip('src01_288x162_8bit');
      await assert.rejects(run(clip, ['cambi=eotf=hlg']), (e) => e.code === 'E_USAGE' && /eotf "hlg"/.test(e.message));
      await assert.rejects(run(clip, ['cambi=max_log_contrast=6']), (e) => e.code === 'E_USAGE' && /max_log_contrast/.test(e.message) && /range/.test(e.message));
      await assert.rejects(run(clip, ['cambi=topk=0']), (e) => e.code === 'E_USAGE' && /topk/.test(e.message));
    });
    it("refuses a window larger than libvmaf's reciprocal table (window_size=127 at 4K)", () => {
      const options = Object.fromEntries(cambi.options.map((o) => [o.name, o.default]));
      assert.throws(
        () => cambi.check({ ...options, window_size: 127 }, { width: 3840, height: 2160, bitDepth: 10, chroma: '420' }),
        (e) => e.code === 'E_USAGE' && /127-pixel window/.test(e.message),
      );
      cambi.check({ ...options, window_size: 65 }, { width: 3840, height: 2160, bitDepth: 10, chroma: '420' });
    });
  });

  describe('the CLI, --feature cambi', function () {
    let tmp;
    before(() => (tmp = mkdtempSync(join(tmpdir(), 'vmafs-cambi-'))));
    after(() => rmSync(tmp, { recursive: true, force: true }));
    for (const backend of backendsUnderTest()) {
      it(`${backend} backend: banding_640x360_10bit, libvmaf's values`, () => {
        const clip = goldenClip('banding_640x360_10bit');
        const out = join(tmp, `${backend}.json`);
        const r = spawnSync(process.execPath, [BIN, '-r', clip.ref, '-d', clip.dis, '--backend', backend, '--feature', 'cambi=full_ref=true', '--json', '--precision', '17', '-n', '-q', '-o', out], {
          encoding: 'utf8',
          timeout: 300_000,
        });
        assert.equal(r.status, 0, r.stderr);
        const log = JSON.parse(readFileSync(out, 'utf8'));
        const golden = clip.log('libvmaf-extra').frames;
        assert.equal(log.frames.length, golden.length);
        for (const [i, f] of log.frames.entries()) {
          for (const key of FULL_REF_KEYS) assert.equal(f.metrics[key], golden[i].metrics[key], `${backend} frame ${i}: ${key}`);
        }
      });
    }
  });
});

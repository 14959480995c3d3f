// Corners where libvmaf 3.2.0 behaves in a particular way, matched exactly: instances that
// share a name or a log key, float_motion's column order under force_0, a model whose
// chroma_correction_parameter is 0, integer_adm options libvmaf refuses, CAMBI's heatmaps.
// Reference logs under test/fixtures/edges were written by libvmaf 3.2.0's own `vmaf` tool.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import ffmpeg from '@ffmpeg-installer/ffmpeg';
import { parseFeatureArg } from '../dist/extractors/request.js';
import { planRun } from '../dist/extractors/plan.js';
import { resolveRun } from '../dist/pipeline/run-plan.js';
import { backendsUnderTest } from './helpers/env.mjs';
import { goldenClip } from './helpers/golden.mjs';
import { scoreIterator } from '../dist/index.js';

const BIN = fileURLToPath(new URL('../bin/vmaf-stream', import.meta.url));
const cli = (args) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 300000 });
const fixture = (name) => gunzipSync(readFileSync(new URL(`./fixtures/edges/${name}`, import.meta.url))).toString('utf8');
const FORMAT = { width: 160, height: 90, bitDepth: 8, chroma: '420' };
const plan = (...args) => planRun(args.map(parseFeatureArg));

describe('libvmaf 3.2.0 edge behaviour', function () {
  this.timeout(300000);
  const clip = goldenClip('src01_160x90_8bit');

  describe('instances and log keys', () => {
    it('keeps the first of two requests with the same feature-param options, as libvmaf does', () => {
      // libvmaf names instances by their param options only: psnr=enable_mse=true is "psnr".
      const first = plan('psnr', 'psnr=enable_mse=true');
      assert.equal(first.instances.length, 1);
      assert.deepEqual(first.featureKeys(FORMAT), ['psnr_y', 'psnr_cb', 'psnr_cr']);
      const mse = plan('psnr=enable_mse=true', 'psnr');
      assert.equal(mse.instances.length, 1);
      assert.deepEqual(mse.featureKeys(FORMAT), ['psnr_y', 'mse_y', 'psnr_cb', 'mse_cb', 'psnr_cr', 'mse_cr']);
    });

    it('refuses two instances that write the same key, naming both requests', () => {
      const p = plan('cambi=full_ref=true', 'cambi=full_ref=true:topk=0.5');
      assert.equal(p.instances.length, 2);
      const format = { width: 288, height: 162, bitDepth: 8, chroma: '420' };
      assert.throws(() => p.featureKeys(format), (err) => {
        assert.equal(err.code, 'E_USAGE');
        assert.match(err.message, /'cambi=full_ref=true' and 'cambi=topk=0\.5:full_ref=true' both write 'cambi_source'/);
        return true;
      });
    });

    it('the CLI refuses the shared key with a usage error', () => {
      const big = goldenClip('src01_288x162_8bit');
      const out = join(mkdtempSync(join(tmpdir(), 'edges-')), 'log.json');
      const r = cli(['-r', big.ref, '-d', big.dis, '-n', '--backend', 'cpu', '--feature', 'cambi=full_ref=true', '--feature', 'cambi=full_ref=true:topk=0.5', '-o', out, '--json']);
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, /'cambi=full_ref=true' and 'cambi=topk=0\.5:full_ref=true' both write 'cambi_source'/);
    });

    it('the CLI runs one instance per libvmaf name, the first request\'s', () => {
      const out = join(mkdtempSync(join(tmpdir(), 'edges-')), 'log.json');
      const r = cli(['-r', clip.ref, '-d', clip.dis, '-n', '--backend', 'cpu', '--feature', 'float_ssim', '--feature', 'float_ssim=enable_db=true:scale=1', '--feature', 'float_ssim=enable_lcs=true:scale=2', '-o', out, '--json']);
      // float_ssim's scale is no feature param: libvmaf keeps the first float_ssim only.
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(Object.keys(JSON.parse(readFileSync(out, 'utf8')).frames[0].metrics), ['float_ssim']);
      const refused = cli(['-r', clip.ref, '-d', clip.dis, '-n', '--backend', 'cpu', '--feature', 'motion=motion_force_zero=true:debug=true', '--feature', 'motion=motion_force_zero=true', '-o', out, '--json']);
      assert.equal(refused.status, 0, 'debug is no param: one instance');
      const both = cli(['-r', clip.ref, '-d', clip.dis, '-n', '--backend', 'cpu', '--feature', 'float_vif=debug=true', '--feature', 'vif=debug=true', '-o', out, '--json']);
      assert.equal(both.status, 0, 'different extractors with different keys run side by side');
    });
  });

  describe('float_motion under motion_force_zero', () => {
    const args = ['--feature', 'float_motion=motion_force_zero=true', '--feature', 'psnr', '--feature', 'motion'];

    it('logs motion3 right after motion2, as libvmaf appends them', () => {
      assert.deepEqual(plan('float_motion=motion_force_zero=true', 'psnr', 'motion').featureKeys(FORMAT), [
        'motion2_force_0', 'motion3_force_0', 'motion_force_0', 'psnr_y', 'psnr_cb', 'psnr_cr',
        'VMAF_integer_feature_motion_sad_score', 'integer_motion2', 'integer_motion3',
      ]);
      // Without force_0, motion3 waits for the next frame and comes after everything else.
      assert.deepEqual(plan('float_motion', 'psnr').featureKeys(FORMAT), ['motion2', 'motion', 'psnr_y', 'psnr_cb', 'psnr_cr', 'motion3']);
    });

    it('writes the CSV byte for byte and the XML but for version and fps as libvmaf does', () => {
      const dir = mkdtempSync(join(tmpdir(), 'edges-'));
      for (const format of ['csv', 'xml']) {
        const out = join(dir, `log.${format}`);
        const r = cli(['-r', clip.ref, '-d', clip.dis, ...args, '-n', '--backend', 'cpu', '-o', out, `--${format}`]);
        assert.equal(r.status, 0, r.stderr);
        const ours = readFileSync(out, 'utf8');
        const theirs = fixture(`src01_160x90_float_motion_force0.${format}.gz`);
        const strip = (text) => text.replace(/<VMAF version="[^"]*">/, '').replace(/<fyi fps="[^"]*" \/>/, '');
        assert.equal(format === 'csv' ? ours : strip(ours), format === 'csv' ? theirs : strip(theirs));
      }
    });
  });

  describe('chroma_correction_parameter 0', () => {
    const modelWithParameter = (parameter) => {
      const text = readFileSync(new URL('../src/pipeline/model/builtin/vmaf_v1.0.16_hfr_5d0h.json', import.meta.url), 'utf8');
      const json = JSON.parse(text);
      json.model_dict.chroma_correction_parameter = parameter;
      const path = join(mkdtempSync(join(tmpdir(), 'edges-')), 'model.json');
      writeFileSync(path, JSON.stringify(json));
      return path;
    };

    it('refuses to predict with it (libvmaf writes no score and its run fails), before any frame', async () => {
      const path = modelWithParameter(0);
      await assert.rejects(resolveRun({ models: [`path=${path}:name=zero`] }), (err) => {
        assert.equal(err.code, 'E_MODEL');
        assert.match(err.message, /chroma_correction_parameter is 0/);
        return true;
      });
      const r = cli(['-r', clip.ref, '-d', clip.dis, '-m', `path=${path}:name=zero`, '--backend', 'cpu', '-o', '-', '--json']);
      assert.notEqual(r.status, 0);
      assert.match(r.stderr, /chroma_correction_parameter is 0, with which libvmaf 3\.2\.0 predicts no score/);
    });

    it('still gives the features under --no_prediction, and predicts with a non-zero parameter', async () => {
      const zero = await resolveRun({ models: [`path=${modelWithParameter(0)}:name=zero`], noPrediction: true });
      assert.equal(zero.models.length, 0);
      assert.ok(zero.plan.instances.length > 0);
      const other = await resolveRun({ models: [`path=${modelWithParameter(60)}:name=sixty`] });
      assert.equal(other.models.length, 1);
    });
  });

  describe('integer_adm options libvmaf cannot compute with', () => {
    const cases = [
      ['adm=adm_norm_view_dist=1:adm_ref_display_height=1080', /adm_norm_view_dist=1 x adm_ref_display_height=1080 = 1080 is below 3 x 1080 = 3240/],
      ['adm=adm_norm_view_dist=3:adm_ref_display_height=720', /adm_norm_view_dist=3 x adm_ref_display_height=720 = 2160 is below 3 x 1080/],
      ['adm=adm_csf_mode=2:adm_norm_view_dist=4', /adm_csf_mode=2 has no CSF table for adm_norm_view_dist=4 x adm_ref_display_height=1080/],
    ];
    for (const backend of backendsUnderTest()) {
      it(`refuses them with a usage error naming the options, before any frame (${backend})`, async () => {
        for (const [arg, message] of cases) {
          let frames = 0;
          await assert.rejects(
            (async () => {
              for await (const _ of scoreIterator(clip.ref, clip.dis, { features: [arg], noPrediction: true, backend })) frames += 1;
            })(),
            (err) => {
              assert.equal(err.code, 'E_USAGE', err.message);
              assert.match(err.message, message);
              return true;
            },
          );
          assert.equal(frames, 0);
        }
        const r = cli(['-r', clip.ref, '-d', clip.dis, '-n', '--backend', backend, '--feature', cases[0][0], '-o', '-', '--json']);
        assert.equal(r.status, 2);
        assert.match(r.stderr, cases[0][1]);
      });
    }

    it('computes at the limit (3 x 1080 by other factors, a blended mode at a table)', async () => {
      let first;
      for await (const r of scoreIterator(clip.ref, clip.dis, { features: ['adm=adm_norm_view_dist=1.5:adm_ref_display_height=2160', 'adm=adm_csf_mode=2:adm_norm_view_dist=5'], noPrediction: true, backend: 'cpu' })) first ??= r.features;
      assert.equal(typeof first['integer_adm2_nvd_1.5_rdh_2160'], 'number');
      assert.equal(typeof first['integer_adm2_csf_2_nvd_5'], 'number');
    });
  });

  describe('cambi heatmaps_path', () => {
    const reference = JSON.parse(readFileSync(new URL('./fixtures/edges/cambi-heatmaps.json', import.meta.url), 'utf8'));
    const sha256 = (path) => createHash('sha256').update(readFileSync(path)).digest('hex');
    for (const backend of backendsUnderTest()) {
      for (const run of reference.runs) {
        it(`writes libvmaf's files byte for byte: ${run.clip}, ${run.feature} (${backend})`, async () => {
          const golden = goldenClip(run.clip);
          const dir = join(mkdtempSync(join(tmpdir(), 'edges-')), 'heat', 'maps');
          const feature = `${run.feature}${run.feature.includes('=') ? ':' : '='}heatmaps_path=${dir}`;
          let frames = 0;
          for await (const r of scoreIterator(golden.ref, golden.dis, { features: [feature], noPrediction: true, backend })) {
            assert.ok(Object.keys(r.features).some((key) => key.startsWith('cambi')), Object.keys(r.features).join());
            frames += 1;
          }
          assert.equal(frames, golden.info.frames);
          assert.deepEqual(readdirSync(dir).sort(), Object.keys(run.files).sort());
          for (const [name, want] of Object.entries(run.files)) {
            assert.equal(statSync(join(dir, name)).size, want.bytes, name);
            assert.equal(sha256(join(dir, name)), want.sha256, name);
          }
          assert.equal(statSync(dir).mode & 0o7, 0, 'directories made as libvmaf makes them (0770)');
        });
      }
    }

    it('refuses a heatmaps_path it cannot create, before any frame', async () => {
      const golden = goldenClip('src01_288x162_8bit');
      const file = join(mkdtempSync(join(tmpdir(), 'edges-')), 'a-file');
      writeFileSync(file, '');
      let frames = 0;
      await assert.rejects(
        (async () => {
          for await (const _ of scoreIterator(golden.ref, golden.dis, { features: [`cambi=heatmaps_path=${file}/under`], noPrediction: true, backend: 'cpu' })) frames += 1;
        })(),
        /cambi: could not create heatmaps_path .*a-file\/under/,
      );
      assert.equal(frames, 0);
    });
  });

  describe('ADM where its denominator is 0', () => {
    // libvmaf leaves AIM unset on such frames and logs what its variable held: 0 in its
    // builds, also on flat frames that follow moving ones (adm3 is then 1), as ours logs it.
    const reference = JSON.parse(fixture('flat_and_static_reversed_adm.json.gz'));
    const flat = goldenClip('flat_and_static_320x240');
    const dir = mkdtempSync(join(tmpdir(), 'edges-'));
    const reversed = (input, name) => {
      const out = join(dir, name);
      const r = spawnSync(ffmpeg.path, ['-v', 'error', '-y', '-i', input, '-vf', 'reverse', '-pix_fmt', 'yuv420p', out]);
      assert.equal(r.status, 0, String(r.stderr));
      return out;
    };
    for (const backend of backendsUnderTest()) {
      it(`logs libvmaf's values on flat frames after moving ones, every key exactly (${backend})`, async () => {
        const ref = reversed(flat.ref, `ref-${backend}.y4m`);
        const dis = reversed(flat.dis, `dis-${backend}.y4m`);
        const frames = [];
        for await (const r of scoreIterator(ref, dis, { features: reference.features, noPrediction: true, backend })) frames.push(r.features);
        assert.equal(frames.length, reference.frames.length);
        reference.frames.forEach((want, i) => {
          for (const [key, value] of Object.entries(want)) assert.equal(frames[i][key], value, `frame ${i} ${key}`);
        });
        assert.equal(frames[5]['integer_aim'], 0);
      });
    }
  });
});

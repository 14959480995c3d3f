// VMAF v1.0.16 (the eight built-in models): every frame of libvmaf 3.2.0's scores on the
// carried golden clips, through the library and the CLI; their features resolved through the
// registry with the models' options (option-suffixed keys as libvmaf logs them); and the
// chroma correction of predict.c (a speed_chroma of exactly 0 replaced by
// p * (1 - adm3), in unnormalised terms).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { lastValueFrom, toArray } from 'rxjs';
import { score } from '../dist/index.js';
import { BUILTIN_MODELS, loadModel } from '../dist/pipeline/model/index.js';
import { goldenClip, goldenClips } from './helpers/golden.mjs';

const BIN = fileURLToPath(new URL('../bin/vmaf-stream', import.meta.url));
const builtinDir = fileURLToPath(new URL('../dist/pipeline/model/builtin/', import.meta.url));

// version -> the name the golden logs give its score (test/fixtures/golden/README.md).
const V1 = {
  'vmaf_v1.0.16_3d0h': 'vmaf_v1',
  'vmaf_v1.0.16_5d0h': 'vmaf_v1_phone',
  'vmaf_v1.0.16_1d5h_2160': 'vmaf_v1_4k',
  'vmaf_v1.0.16_3d0h_2160': 'vmaf_v1_4k_3h',
  'vmaf_v1.0.16_hfr_3d0h': 'vmaf_v1_hfr',
  'vmaf_v1.0.16_hfr_5d0h': 'vmaf_v1_hfr_phone',
  'vmaf_v1.0.16_hfr_1d5h_2160': 'vmaf_v1_hfr_4k',
  'vmaf_v1.0.16_hfr_3d0h_2160': 'vmaf_v1_hfr_4k_3h',
};

/** The v1 models libvmaf scored for a clip (the others are in its log's `refused`). */
function scoredModels(clip) {
  const log = clip.log('libvmaf-extra');
  return Object.keys(V1).filter((v) => !(v in (log.refused ?? {})) && V1[v] in log.frames[0].metrics);
}

describe('VMAF v1.0.16 models', function () {
  this.timeout(600_000);

  it('are built in', () => {
    for (const v of Object.keys(V1)) assert.ok(BUILTIN_MODELS.includes(v), v);
  });

  describe('golden parity of the predictions, with libvmaf\'s adm3 values (cpu, every frame exactly)', function () {
    let compared = 0;
    after(() => console.log(`      VMAF v1 (CAMBI, SpEED, motion3 computed; adm3 from the logs): ${compared} scores exactly equal to libvmaf`));
    for (const clip of goldenClips()) {
      const versions = scoredModels(clip);
      if (versions.length === 0) continue;
      it(`${clip.name}: ${versions.map((v) => V1[v]).join(', ')}`, async () => {
        const golden = clip.log('libvmaf-extra').frames;
        const models = await Promise.all(versions.map((v) => loadModel({ version: v, name: V1[v] })));
        const requests = models.flatMap((m) => m.features.filter((f) => f.definition.name !== 'adm'));
        const results = await lastValueFrom(score(clip.ref, clip.dis, { backend: 'cpu', features: requests, noPrediction: true }).pipe(toArray()));
        assert.equal(results.length, golden.length);
        for (const [i, frame] of golden.entries()) {
          for (const model of models) {
            const features = { ...results[i].features };
            for (const key of model.featureKeys) {
              if (key.startsWith('integer_adm3')) features[key] = frame.metrics[key];
              else assert.equal(features[key], frame.metrics[key], `${clip.name} frame ${i}: ${key}`);
            }
            assert.equal(model.predict(features)[model.name], frame.metrics[model.name], `${clip.name} frame ${i}: ${model.name}`);
            compared++;
          }
        }
      });
    }
  });

  describe('golden parity through the library (cpu, every frame exactly)', function () {
    let compared = 0;
    after(() => console.log(`      VMAF v1: ${compared} scores exactly equal to libvmaf`));
    for (const clip of goldenClips()) {
      const versions = scoredModels(clip);
      if (versions.length === 0) continue;
      it(`${clip.name}: ${versions.map((v) => V1[v]).join(', ')}`, async () => {
        const golden = clip.log('libvmaf-extra').frames;
        const results = await lastValueFrom(
          score(clip.ref, clip.dis, { backend: 'cpu', models: versions.map((v) => `version=${v}:name=${V1[v]}`) }).pipe(toArray()),
        );
        assert.equal(results.length, golden.length);
        for (const [i, frame] of golden.entries()) {
          for (const v of versions) {
            assert.equal(results[i].scores[V1[v]], frame.metrics[V1[v]], `${clip.name} frame ${i}: ${V1[v]}`);
            compared++;
          }
        }
      });
    }
    it('covers every v1 model on the carried clips', () => {
      const covered = new Set(goldenClips().flatMap(scoredModels));
      assert.deepEqual([...covered].sort(), Object.keys(V1).sort());
    });
  });

  it('gives libvmaf\'s scores through the CLI (-m version=vmaf_v1.0.16_3d0h:name=vmaf_v1, ...)', () => {
    const clip = goldenClip('banding_640x360_10bit');
    const versions = scoredModels(clip);
    assert.equal(versions.length, 8);
    const tmp = mkdtempSync(join(tmpdir(), 'vmafs-v1-'));
    try {
      const out = join(tmp, 'log.json');
      const args = ['-r', clip.ref, '-d', clip.dis, '--backend', 'cpu', '-q', '--json', '--precision', '17', '-o', out];
      for (const v of versions) args.push('-m', `version=${v}:name=${V1[v]}`);
      const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 300_000 });
      assert.equal(r.status, 0, r.stderr);
      const log = JSON.parse(readFileSync(out, 'utf8'));
      const golden = clip.log('libvmaf-extra').frames;
      for (const [i, frame] of golden.entries()) {
        for (const v of versions) assert.equal(log.frames[i].metrics[V1[v]], frame.metrics[V1[v]], `frame ${i}: ${V1[v]}`);
        // The option-suffixed features the models read are logged under libvmaf's keys.
        for (const key of ['speed_chroma_uv_mxv_45_nnf_0.1_snn_0.19_wvm_5', 'speed_chroma_uv_mxv_45_nnf_0.1_ps_0.5_psm_bilinear_snn_0.19_wvm_5',
          'cambi_hrs_1080_cmxv_17_vlt_0.06', 'integer_adm3_csf_2_dlmw_0.7_egl_1_min_0.5_nw_0.02', 'integer_motion3_mffw_mmxv_18_mma']) {
          assert.equal(log.frames[i].metrics[key], frame.metrics[key], `frame ${i}: ${key}`);
        }
      }
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('resolves each model\'s features through the registry with its options (libvmaf\'s keys)', async () => {
    const keys = async (v) => (await loadModel({ version: v })).featureKeys;
    assert.deepEqual(await keys('vmaf_v1.0.16_3d0h'), [
      'cambi_hrs_1080_cmxv_17_vlt_0.06', 'speed_chroma_uv_mxv_45_nnf_0.1_snn_0.19_wvm_5',
      'integer_adm3_csf_2_dlmw_0.7_egl_1_min_0.5_nw_0.02', 'integer_motion3_mmxv_18',
    ]);
    assert.ok((await keys('vmaf_v1.0.16_5d0h')).includes('speed_chroma_uv_mxv_45_nnf_0.1_ps_0.6_psm_bilinear_snn_0.19_wvm_5'));
    assert.ok((await keys('vmaf_v1.0.16_hfr_3d0h_2160')).includes('speed_chroma_uv_mxv_45_nnf_0.1_ps_0.5_psm_bilinear_snn_0.19_wvm_5'));
    assert.ok((await keys('vmaf_v1.0.16_hfr_3d0h')).includes('integer_motion3_mffw_mmxv_18_mma'));
    // Every key a model reads is one libvmaf logged for it on a clip it scored.
    const logged = new Set(Object.keys(goldenClip('banding_640x360_10bit').log('libvmaf-extra').frames[0].metrics));
    for (const v of Object.keys(V1)) for (const k of await keys(v)) assert.ok(logged.has(k), `${v}: ${k}`);
  });

  describe("chroma correction (predict.c's post_process_feature_from_another)", function () {
    const file = (v) => JSON.parse(readFileSync(join(builtinDir, `${v}.json`), 'utf8')).model_dict;

    for (const version of ['vmaf_v1.0.16_3d0h', 'vmaf_v1.0.16_hfr_3d0h_2160']) {
      it(`${version}: a speed_chroma of 0 scores as p * (1 - adm3) would, computed by hand`, async () => {
        const model = await loadModel({ version, name: 'v1' });
        const dict = file(version);
        const p = dict.chroma_correction_parameter;
        assert.ok(p > 0);
        const names = dict.feature_names;
        const adm = names.findIndex((n) => n.includes('adm3'));
        const speed = names.findIndex((n) => n.includes('speed_chroma'));
        const [slopeA, interceptA] = [dict.slopes[adm + 1], dict.intercepts[adm + 1]];
        for (const adm3 of [0.81234567, 0.95, 1]) {
          const logged = goldenClip('banding_640x360_10bit').log('libvmaf-extra').frames[1].metrics;
          const base = Object.fromEntries(model.featureKeys.map((k) => [k, logged[k]]));
          base[model.featureKeys[adm]] = adm3;
          base[model.featureKeys[speed]] = 0;
          // predict.c: the guiding score normalised then denormalised, the correction in
          // unnormalised terms, normalised again before the SVM.
          const guiding = (slopeA * adm3 + interceptA - interceptA) / slopeA;
          const corrected = -p * guiding + p;
          const byHand = { ...base, [model.featureKeys[speed]]: corrected };
          assert.equal(model.predict(base).v1, model.predict(byHand).v1, `adm3 ${adm3}`);
          // A non-zero speed_chroma is left alone.
          const other = { ...base, [model.featureKeys[speed]]: corrected + 0.25 };
          assert.notEqual(model.predict(other).v1, model.predict(base).v1);
        }
      });
    }
  });
});

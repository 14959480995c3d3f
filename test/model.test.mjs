// VMAF models: the built-in models against libvmaf 3.2.0's per-frame scores (golden clips
// and fixtures), bootstrap outputs, transform/clip flags, feature log keys, -m parsing,
// and refusal of bad model files. Exact equality is asserted: the model code reproduces
// libvmaf's floating-point operations (and glibc's exp) bit for bit.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUILTIN_MODELS, loadModel, parseModelSpec } from '../dist/pipeline/model/index.js';
import { expGlibc, expTableWords, fmaEmulated } from '../dist/pipeline/model/exp.js';
import { parseModelFile } from '../dist/pipeline/model/model-file.js';
import { useNativeRbf } from '../dist/pipeline/model/svm.js';
import { loadNative } from '../dist/kernels/native.js';
import { ModelError, UsageError } from '../dist/errors.js';
import { carriedClipNames, goldenClips } from './helpers/golden.mjs';
import { CARRIED_CLIPS } from './helpers/carried-clips.mjs';

const fixtures = fileURLToPath(new URL('./fixtures/model/', import.meta.url));
const builtinDir = fileURLToPath(new URL('../dist/pipeline/model/builtin/', import.meta.url));
const readFixture = (name) => JSON.parse(readFileSync(join(fixtures, name), 'utf8'));
const SCORE_TOLERANCE = 1e-4;

const tmp = mkdtempSync(join(tmpdir(), 'vmaf-model-test-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
let tmpCount = 0;
function writeModel(json) {
  const path = join(tmp, `model-${tmpCount++}.json`);
  writeFileSync(path, typeof json === 'string' ? json : JSON.stringify(json));
  return path;
}
const builtinJson = (version) => JSON.parse(readFileSync(join(builtinDir, `${version}.json`), 'utf8'));

describe('models: golden clips (libvmaf 3.2.0 per-frame scores)', function () {
  const clips = goldenClips({ shared: true });
  const specs = ['version=vmaf_v0.6.1:name=vmaf', 'version=vmaf_v0.6.1neg:name=vmaf_neg', 'version=vmaf_4k_v0.6.1:name=vmaf_4k'];
  const totals = {};
  let models;
  before(async () => {
    models = await Promise.all(specs.map((s) => loadModel(parseModelSpec(s))));
  });
  after(() => {
    for (const [name, t] of Object.entries(totals)) {
      console.log(`      ${name}: ${t.exact} of ${t.compared} frames bit-identical to libvmaf (max |diff| ${t.maxDiff})`);
    }
  });

  it('has the golden clips the repository carries', () => assert.deepEqual(carriedClipNames, CARRIED_CLIPS));

  for (const clip of clips) {
    it(clip.origin === 'repo' ? clip.name : `${clip.name} (shared)`, () => {
      const golden = clip.log();
      for (const frame of golden.frames) {
        for (const model of models) {
          const expected = frame.metrics[model.name];
          assert.equal(typeof expected, 'number', `${clip.name} frame ${frame.frameNum}: golden has ${model.name}`);
          const scores = model.predict(frame.metrics);
          assert.deepEqual(Object.keys(scores), [model.name]);
          const actual = scores[model.name];
          const t = (totals[model.name] ??= { compared: 0, exact: 0, maxDiff: 0 });
          t.compared++;
          if (Object.is(actual, expected)) t.exact++;
          t.maxDiff = Math.max(t.maxDiff, Math.abs(actual - expected));
          assert.ok(Math.abs(actual - expected) <= SCORE_TOLERANCE,
            `${clip.name} frame ${frame.frameNum} ${model.name}: ${actual} vs libvmaf ${expected}`);
          assert.equal(actual, expected, `${clip.name} frame ${frame.frameNum} ${model.name}: not bit-identical`);
        }
      }
    });
  }
});

describe('models: built-ins', function () {
  it('lists the built-in versions', () => {
    assert.deepEqual([...BUILTIN_MODELS].sort(), [
      'vmaf_4k_v0.6.1', 'vmaf_4k_v0.6.1neg', 'vmaf_b_v0.6.3', 'vmaf_float_4k_v0.6.1', 'vmaf_float_b_v0.6.3',
      'vmaf_float_v0.6.1', 'vmaf_float_v0.6.1neg', 'vmaf_v0.6.1', 'vmaf_v0.6.1neg',
      'vmaf_v1.0.16_1d5h_2160', 'vmaf_v1.0.16_3d0h', 'vmaf_v1.0.16_3d0h_2160', 'vmaf_v1.0.16_5d0h',
      'vmaf_v1.0.16_hfr_1d5h_2160', 'vmaf_v1.0.16_hfr_3d0h', 'vmaf_v1.0.16_hfr_3d0h_2160', 'vmaf_v1.0.16_hfr_5d0h',
    ]);
  });

  it('names the score "vmaf" unless name= is given, as libvmaf does', async () => {
    const neg = await loadModel({ version: 'vmaf_v0.6.1neg' });
    assert.equal(neg.name, 'vmaf');
    assert.equal(neg.version, 'vmaf_v0.6.1neg');
    const named = await loadModel({ version: 'vmaf_v0.6.1neg', name: 'vmaf_neg' });
    assert.equal(named.name, 'vmaf_neg');
    const byPath = await loadModel({ path: join(builtinDir, 'vmaf_4k_v0.6.1.json') });
    assert.equal(byPath.name, 'vmaf');
    assert.equal(byPath.version, 'vmaf_4k_v0.6.1');
  });

  it('defaults to vmaf_v0.6.1', async () => {
    const m = await loadModel({});
    assert.equal(m.version, 'vmaf_v0.6.1');
  });

  it('reads the features libvmaf logs for each model', async () => {
    const plain = ['integer_adm2', 'integer_motion2', 'integer_vif_scale0', 'integer_vif_scale1', 'integer_vif_scale2', 'integer_vif_scale3'];
    assert.deepEqual((await loadModel({ version: 'vmaf_v0.6.1' })).featureKeys, plain);
    assert.deepEqual((await loadModel({ version: 'vmaf_4k_v0.6.1' })).featureKeys, plain);
    assert.deepEqual((await loadModel({ version: 'vmaf_b_v0.6.3' })).featureKeys, plain);
    assert.deepEqual((await loadModel({ version: 'vmaf_v0.6.1neg' })).featureKeys, [
      'integer_adm2_egl_1', 'integer_motion2', 'integer_vif_scale0_egl_1',
      'integer_vif_scale1_egl_1', 'integer_vif_scale2_egl_1', 'integer_vif_scale3_egl_1',
    ]);
  });

  it('applies -m extractor overrides to the feature keys (as libvmaf 3.2.0 names them)', async () => {
    // Keys as libvmaf's vmaf tool logs them for the same -m string.
    const m = await loadModel(parseModelSpec(
      'version=vmaf_v0.6.1:adm.adm_enhn_gain_limit=1.0:vif.vif_enhn_gain_limit=1.5:motion.motion_force_zero=true'));
    assert.deepEqual(m.featureKeys, [
      'integer_adm2_egl_1', 'integer_motion2_force_0', 'integer_vif_scale0_egl_1.5',
      'integer_vif_scale1_egl_1.5', 'integer_vif_scale2_egl_1.5', 'integer_vif_scale3_egl_1.5',
    ]);
    await assert.rejects(loadModel(parseModelSpec('version=vmaf_v0.6.1:not_an_extractor.x=1')), UsageError);
    // The float models' extractors take overrides the same way.
    const f = await loadModel(parseModelSpec('version=vmaf_float_v0.6.1:float_adm.adm_enhn_gain_limit=1.0:float_motion.motion_force_zero=true'));
    assert.deepEqual(f.featureKeys, ['adm2_egl_1', 'motion2_force_0', 'vif_scale0', 'vif_scale1', 'vif_scale2', 'vif_scale3']);
  });

  it('builds feature keys from feature_opts_dicts as libvmaf does (sorted options, aliases, %g, defaults dropped)', async () => {
    // These keys were checked against libvmaf 3.2.0: its predictor looks the features up by them.
    const json = builtinJson('vmaf_v0.6.1');
    json.model_dict.feature_opts_dicts = [
      { adm_enhn_gain_limit: 1.2, adm_csf_mode: 1, adm_norm_view_dist: 5, adm_skip_aim: true },
      { motion_max_val: 18.0, motion_five_frame_window: true },
      { vif_enhn_gain_limit: 100.0 },
      { vif_skip_scale0: false },
      { vif_enhn_gain_limit: 1.0000001 },
      {},
    ];
    const m = await loadModel({ path: writeModel(json) });
    assert.deepEqual(m.featureKeys, [
      'integer_adm2_csf_1_egl_1.2_nvd_5', 'integer_motion2_mffw_mmxv_18', 'integer_vif_scale0',
      'integer_vif_scale1', 'integer_vif_scale2_egl_1', 'integer_vif_scale3',
    ]);
  });

  it('throws ModelError when a frame lacks a feature the model reads', async () => {
    const m = await loadModel({ version: 'vmaf_v0.6.1neg' });
    assert.throws(() => m.predict({ integer_adm2: 1, integer_motion2: 0 }), (err) =>
      err instanceof ModelError && /integer_adm2_egl_1/.test(err.message));
  });
});

describe('models: transform and clip flags (libvmaf 3.2.0 reference values)', function () {
  const fix = readFixture('transform_clip.json');
  for (const c of fix.cases) {
    it(JSON.stringify(c.spec), async () => {
      const m = await loadModel(c.spec);
      fix.frames.forEach((frame, i) => {
        assert.equal(m.predict(frame.features).vmaf, c.expected[i], `${frame.clip} frame ${frame.frameNum}`);
      });
    });
  }
  it('covers clipping: scores below 0 without the clip, at 0 with it', () => {
    const plain = fix.cases.find((c) => c.spec.version === 'vmaf_v0.6.1' && !c.spec.disableClip && !c.spec.enableTransform);
    const unclipped = fix.cases.find((c) => c.spec.version === 'vmaf_v0.6.1' && c.spec.disableClip && !c.spec.enableTransform);
    assert.ok(unclipped.expected.some((v) => v < 0));
    assert.ok(plain.expected.every((v) => v >= 0 && v <= 100));
  });
  fix.variants.forEach((v, k) => {
    it(`score_transform variant ${k} (${v.score_transform.knots.length} knots, clip ${v.score_clip})`, async () => {
      const json = builtinJson('vmaf_v0.6.1');
      json.model_dict.score_transform = v.score_transform;
      json.model_dict.score_clip = v.score_clip;
      const m = await loadModel({ path: writeModel(json) });
      fix.frames.forEach((frame, i) => {
        assert.equal(m.predict(frame.features).vmaf, v.expected[i], `${frame.clip} frame ${frame.frameNum}`);
      });
    });
  });
});

describe('models: bootstrap (vmaf_b_v0.6.3)', function () {
  const fix = readFixture('bootstrap_b_v0.6.3_src01_160x90.json');
  const members = Array.from({ length: 20 }, (_, i) => `vmaf_${String(i + 1).padStart(4, '0')}`);
  const extras = ['vmaf_bagging', 'vmaf_stddev', 'vmaf_ci_p95_lo', 'vmaf_ci_p95_hi'];

  it('gives libvmaf\'s outputs, with libvmaf\'s names, bit for bit', async () => {
    const m = await loadModel(parseModelSpec('version=vmaf_b_v0.6.3'));
    assert.equal(m.name, 'vmaf');
    for (const frame of fix.frames) {
      const out = m.predict(frame.features);
      assert.deepEqual(Object.keys(out).sort(), ['vmaf', ...members, ...extras].sort());
      for (const [key, expected] of Object.entries(frame.expected)) {
        assert.equal(out[key], expected, `frame ${frame.frameNum} ${key}`);
      }
    }
  });

  it('gives a finite confidence interval around the score', async () => {
    const m = await loadModel({ path: join(builtinDir, 'vmaf_b_v0.6.3.json'), name: 'boot' });
    for (const frame of fix.frames) {
      const out = m.predict(frame.features);
      for (const k of ['boot', 'boot_bagging', 'boot_stddev', 'boot_ci_p95_lo', 'boot_ci_p95_hi']) {
        assert.ok(Number.isFinite(out[k]), `${k} is finite`);
      }
      assert.ok(out.boot_ci_p95_lo <= out.boot && out.boot <= out.boot_ci_p95_hi, `frame ${frame.frameNum}: lo <= score <= hi`);
      assert.ok(out.boot_ci_p95_lo <= out.boot_bagging && out.boot_bagging <= out.boot_ci_p95_hi);
      assert.ok(out.boot_stddev > 0);
      // name= renames every output, as libvmaf does
      assert.equal(out.boot, frame.expected.vmaf);
      assert.equal(out.boot_ci_p95_hi, frame.expected.vmaf_ci_p95_hi);
    }
  });
});

describe('models: exp as glibc rounds it', function () {
  const f = new Float64Array(1);
  const u = new BigUint64Array(f.buffer);
  const fromHex = (h) => { u[0] = BigInt(`0x${h}`); return f[0]; };
  const rows = readFileSync(join(fixtures, 'exp-glibc.tsv'), 'utf8').trim().split('\n').map((l) => l.split('\t').map(fromHex));

  it('matches glibc exp() bit for bit, where Math.exp does not', () => {
    let mathExpDiffers = 0;
    for (const [x, y] of rows) {
      assert.ok(Object.is(expGlibc(x), y), `exp(${x}): ${expGlibc(x)} vs glibc ${y}`);
      if (!Object.is(Math.exp(x), y)) mathExpDiffers++;
    }
    assert.ok(mathExpDiffers >= 200, 'the vectors exercise the difference');
  });

  it('emulates a fused multiply-add exactly', () => {
    // a*b + c with one rounding: 1 + 2^-52 and 1 - 2^-52: the product is 1 - 2^-104.
    const a = 1 + 2 ** -52;
    const b = 1 - 2 ** -52;
    assert.equal(fmaEmulated(a, b, -1), -(2 ** -104));
    assert.equal(a * b - 1, 0);
    // (1 + 2^-27)^2 + 2^-53 = 1 + 2^-26 + 2^-53 + 2^-54: just above a midpoint, so it
    // rounds up; rounding the product first lands exactly on the midpoint and ties to even.
    const c = 1 + 2 ** -27;
    assert.equal(fmaEmulated(c, c, 2 ** -53), 1 + 2 ** -26 + 2 ** -52);
    assert.equal(c * c + 2 ** -53, 1 + 2 ** -26);
    assert.equal(fmaEmulated(0, 5, 3), 3);
  });

  it("the addon's RBF sum (exp natively) matches glibc exp() bit for bit", () => {
    const addon = loadNative();
    addon.setExpTable(Uint32Array.from(expTableWords().flat()));
    // One support vector at 0, x = [1]: the sum is 1 * exp(negGamma * 1), negGamma = x exactly.
    const one = new Float64Array([1]);
    for (const [x, y] of rows) {
      const got = addon.rbfSum(new Float64Array([x, 1, 1, 1, 0]), one);
      assert.ok(Object.is(got, 0 + y), `exp(${x}): ${got} vs glibc ${y}`);
    }
  });

  it("the addon's SVM predictions equal the JS ones bit for bit (every shipped model)", () => {
    let seed = 12345;
    const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
    const svms = function* (o) {
      if (o && typeof o === 'object') {
        if (typeof o.predict === 'function' && 'gamma' in o) yield o;
        else for (const v of Object.values(o)) yield* svms(v);
      }
    };
    let compared = 0;
    try {
      for (const name of readdirSync(builtinDir).filter((f) => f.endsWith('.json'))) {
        for (const svm of svms(parseModelFile(readFileSync(join(builtinDir, name), 'utf8'), name))) {
          for (let k = 0; k < 500; k++) {
            const x = new Float64Array(k % 11 === 0 ? svm.dimension - 1 : svm.dimension);
            for (let j = 0; j < x.length; j++) x[j] = k % 5 === 0 ? (rnd() - 0.5) * 60 : rnd() * 1.2 - 0.1;
            useNativeRbf(false);
            const js = svm.predict(x);
            useNativeRbf(true);
            const native = svm.predict(x);
            assert.ok(Object.is(native, js), `${name}: ${native} vs ${js} for ${x}`);
            compared++;
          }
        }
      }
    } finally {
      useNativeRbf(true);
    }
    assert.ok(compared >= 5000, `compared ${compared}`);
  });
});

describe('parseModelSpec', function () {
  const cases = [
    ['version=vmaf_v0.6.1', { version: 'vmaf_v0.6.1' }],
    ['version=vmaf_v0.6.1:name=vmaf', { version: 'vmaf_v0.6.1', name: 'vmaf' }],
    ['path=/models/my model.json:name=mine', { path: '/models/my model.json', name: 'mine' }],
    ['version=vmaf_v0.6.1:enable_transform', { version: 'vmaf_v0.6.1', enableTransform: true }],
    ['version=vmaf_v0.6.1:disable_clip:enable_transform=false', { version: 'vmaf_v0.6.1', disableClip: true, enableTransform: false }],
    ['version=vmaf_v0.6.1:disable_clip=true', { version: 'vmaf_v0.6.1', disableClip: true }],
    ['name=a:name=b', { name: 'b' }],
    ['version=vmaf_v0.6.1:adm.adm_enhn_gain_limit=1.0', {
      version: 'vmaf_v0.6.1', overrides: [{ extractor: 'adm', option: 'adm_enhn_gain_limit', value: '1.0' }],
    }],
  ];
  for (const [text, expected] of cases) {
    it(`parses ${text}`, () => assert.deepEqual(parseModelSpec(text), expected));
  }
  const junk = ['', 'version', 'version=', 'vmaf_v0.6.1', 'version=vmaf_v0.6.1:', ':name=x', 'foo=bar',
    'disable_clip=yes', 'path=a=b', '=x', 'adm.=1', '.x=1', 'a.b.c=1', 'adm.x='];
  for (const text of junk) {
    it(`refuses ${JSON.stringify(text)}`, () => assert.throws(() => parseModelSpec(text), UsageError));
  }
});

describe('models: bad model files', function () {
  const rejectsNaming = (spec, path, pattern) =>
    assert.rejects(loadModel(spec), (err) => {
      assert.ok(err instanceof ModelError, `ModelError, got ${err}`);
      assert.equal(err.code, 'E_MODEL');
      assert.ok(err.message.includes(path), `message names ${path}: ${err.message}`);
      if (pattern) assert.match(err.message, pattern);
      return true;
    });

  it('a missing file', async () => {
    const path = join(tmp, 'nope.json');
    await rejectsNaming({ path }, path, /no such file/);
  });
  it('not JSON', async () => {
    const path = writeModel('{"model_dict": ');
    await rejectsNaming({ path }, path, /not valid JSON/);
  });
  it('JSON but not a model', async () => {
    const path = writeModel({ hello: 1 });
    await rejectsNaming({ path }, path, /not a VMAF model/);
  });
  it('a broken libsvm model', async () => {
    const json = builtinJson('vmaf_v0.6.1');
    json.model_dict.model = json.model_dict.model.replace('kernel_type rbf', 'kernel_type banana');
    const path = writeModel(json);
    await rejectsNaming({ path }, path, /kernel_type/);
  });
  it('too few support vectors', async () => {
    const json = builtinJson('vmaf_v0.6.1');
    json.model_dict.model = json.model_dict.model.split('\n').slice(0, 20).join('\n');
    const path = writeModel(json);
    await rejectsNaming({ path }, path, /support vectors/);
  });
  it('slopes that do not match the features', async () => {
    const json = builtinJson('vmaf_v0.6.1');
    json.model_dict.slopes.pop();
    const path = writeModel(json);
    await rejectsNaming({ path }, path, /slopes/);
  });
  it('an unknown norm_type', async () => {
    const json = builtinJson('vmaf_v0.6.1');
    json.model_dict.norm_type = 'clip_0to1';
    const path = writeModel(json);
    await rejectsNaming({ path }, path, /norm_type/);
  });
  it('an option value libvmaf would refuse', async () => {
    const json = builtinJson('vmaf_v0.6.1neg');
    json.model_dict.feature_opts_dicts[0].adm_enhn_gain_limit = 0.5;
    const path = writeModel(json);
    await rejectsNaming({ path }, path, /adm_enhn_gain_limit/);
  });
  it('a bootstrap file with only model "0"', async () => {
    const json = builtinJson('vmaf_b_v0.6.3');
    const path = writeModel({ 0: json['0'] });
    await rejectsNaming({ path }, path, /bootstrap/);
  });
  it('an unknown built-in version is a usage error', async () => {
    await assert.rejects(loadModel({ version: 'vmaf_v9' }), (err) => err instanceof UsageError && /vmaf_v9/.test(err.message));
  });
});

// integer_motion at every option: the registry's declaration (keys, outputs, neighbours),
// the shared finish (motion2, motion3) against libvmaf 3.2.0's values, its streaming form
// (each frame as soon as its frames allow), and end to end on both backends.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Subject, from, lastValueFrom, toArray } from 'rxjs';
import { integerMotion } from '../../dist/extractors/integer_motion/integer_motion.js';
import { motionInstance, motionOptions } from '../../dist/extractors/integer_motion/motion-options.js';
import { motionSeries, motionSadScore, MotionHistory } from '../../dist/pipeline/motion-series.js';
import { withGroupMotion, withMotion } from '../../dist/pipeline/motion-finish.js';
import { parseFeatureArg } from '../../dist/extractors/request.js';
import { planRun } from '../../dist/extractors/plan.js';
import { score } from '../../dist/index.js';
import { CpuBackend } from '../../dist/kernels/cpu-backend.js';
import { backendsUnderTest } from '../helpers/env.mjs';
import { goldenClip, goldenClips } from '../helpers/golden.mjs';
import { readY4mLumas } from '../helpers/y4m-lumas.mjs';

const fixture = JSON.parse(readFileSync(new URL('../fixtures/motion/src01_160x90_options.json', import.meta.url), 'utf8'));

/** The seven instances of the fixture, as --feature arguments, and their key suffixes. */
const INSTANCES = [
  ['motion', ''],
  ['motion=motion_max_val=18', '_mmxv_18'],
  ['motion=motion_five_frame_window=true:motion_max_val=18:motion_moving_average=true', '_mffw_mmxv_18_mma'],
  ['motion=motion_blend_factor=0.5:motion_blend_offset=3:motion_fps_weight=1.7', '_mbf_0.5_mbo_3_mfw_1.7'],
  ['motion=motion_force_zero=true', '_force_0'],
  ['motion=motion_five_frame_window=true', '_mffw'],
  ['motion=motion_moving_average=true:motion_max_val=2.5', '_mmxv_2.5_mma'],
];
const optionsOf = (arg) => parseFeatureArg(arg).options;

/** A seeded generator (mulberry32), for reproducible random sequences. */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('integer_motion: declaration', function () {
  it('logs option-suffixed keys as libvmaf names them', function () {
    for (const [arg, suffix] of INSTANCES) {
      const { keys } = motionInstance(optionsOf(arg));
      assert.deepEqual(keys, {
        sad: `VMAF_integer_feature_motion_sad_score${suffix}`,
        motion2: `integer_motion2${suffix}`,
        motion3: `integer_motion3${suffix}`,
      });
      for (const key of Object.values(keys)) assert.ok(key in fixture.frames[0], `${key} is in libvmaf's log`);
    }
    assert.equal(motionInstance(optionsOf('motion=debug=true')).keys.motion, 'integer_motion', 'debug: not a feature parameter');
  });

  it('outputs the SAD score, then motion2 and motion3 (delayed), as libvmaf appends them', function () {
    assert.deepEqual(integerMotion.outputs(optionsOf('motion')), [
      'VMAF_integer_feature_motion_sad_score',
      'VMAF_integer_feature_motion2_score',
      'VMAF_integer_feature_motion3_score',
    ]);
    assert.deepEqual(integerMotion.outputs(optionsOf('motion=debug=true'))[1], 'VMAF_integer_feature_motion_score');
    assert.deepEqual(integerMotion.delayedOutputs, ['VMAF_integer_feature_motion2_score', 'VMAF_integer_feature_motion3_score']);
    const plan = planRun(INSTANCES.slice(0, 3).map(([arg]) => parseFeatureArg(arg)));
    const keys = plan.featureKeys({ width: 160, height: 90, bitDepth: 8, chroma: '420' });
    assert.deepEqual(keys, [
      'VMAF_integer_feature_motion_sad_score',
      'VMAF_integer_feature_motion_sad_score_mmxv_18',
      'VMAF_integer_feature_motion_sad_score_mffw_mmxv_18_mma',
      'integer_motion2',
      'integer_motion3',
      'integer_motion2_mmxv_18',
      'integer_motion3_mmxv_18',
      'integer_motion2_mffw_mmxv_18_mma',
      'integer_motion3_mffw_mmxv_18_mma',
    ]);
  });

  it('accepts every option (none is refused any more)', function () {
    assert.equal(integerMotion.check, undefined);
    assert.equal(planRun(INSTANCES.map(([arg]) => parseFeatureArg(arg))).instances.length, INSTANCES.length);
  });

  it('declares the neighbours each option set reads', function () {
    const n = (arg) => integerMotion.neighbours(optionsOf(arg));
    assert.deepEqual(n('motion'), { previous: 1, next: 1 });
    assert.deepEqual(n('motion=motion_moving_average=true'), { previous: 2, next: 1 });
    assert.deepEqual(n('motion=motion_five_frame_window=true'), { previous: 3, next: 2 });
    assert.deepEqual(n('motion=motion_five_frame_window=true:motion_moving_average=true'), { previous: 4, next: 2 });
    assert.deepEqual(n('motion=motion_force_zero=true:motion_five_frame_window=true'), { previous: 0, next: 0 });
  });

  // A segment [s, e) of a stream, scored alone with `previous` frames before it and `next`
  // after it (fewer at the stream's ends), gives its frames the whole stream's values: the
  // contract the queue's segment cutting relies on. Fewer neighbours do not always.
  it('neighbours are exactly enough to score a segment alone (randomized)', function () {
    const rnd = random(7);
    for (const [arg] of INSTANCES) {
      const o = motionOptions(optionsOf(arg));
      const d = o.fiveFrameWindow ? 2 : 1;
      const { previous, next } = integerMotion.neighbours(optionsOf(arg));
      // SADs of a random stream: sads[j] stands for SAD(frame j - d, frame j).
      const segmentValues = (sads, s, e, p, q) => {
        const a = Math.max(0, s - p);
        const b = Math.min(sads.length, e + q);
        // Scored alone, the segment's first d frames have no SAD.
        const scores = [];
        for (let j = a; j < b; j++) scores.push(motionSadScore(j - a < d ? null : BigInt(sads[j]), 4, 4, o));
        return motionSeries(scores, o).slice(s - a, e - a);
      };
      let undercut = { previous: previous === 0, next: next === 0 };
      for (let trial = 0; trial < 300; trial++) {
        const n = 1 + Math.floor(rnd() * 12);
        const sads = Array.from({ length: n }, () => Math.floor(rnd() * 20000));
        const whole = segmentValues(sads, 0, n, 0, 0);
        const s = Math.floor(rnd() * n);
        const e = s + 1 + Math.floor(rnd() * (n - s));
        assert.deepEqual(segmentValues(sads, s, e, previous, next), whole.slice(s, e), `${arg}: segment [${s}, ${e}) of ${n}`);
        if (previous > 0 && !undercut.previous) undercut.previous = JSON.stringify(segmentValues(sads, s, e, previous - 1, next)) !== JSON.stringify(whole.slice(s, e));
        if (next > 0 && !undercut.next) undercut.next = JSON.stringify(segmentValues(sads, s, e, previous, next - 1)) !== JSON.stringify(whole.slice(s, e));
      }
      assert.deepEqual(undercut, { previous: true, next: true }, `${arg}: one neighbour fewer is wrong somewhere`);
    }
  });
});

describe('integer_motion: motion2 and motion3 against libvmaf', function () {
  it('reproduces every frame of the seven instances of the fixture from their SAD scores', function () {
    for (const [arg, suffix] of INSTANCES) {
      const o = motionOptions(optionsOf(arg));
      const scores = fixture.frames.map((m) => m[`VMAF_integer_feature_motion_sad_score${suffix}`]);
      const values = motionSeries(scores, o);
      assert.deepEqual(values.map((v) => v.motion2), fixture.frames.map((m) => m[`integer_motion2${suffix}`]), `integer_motion2${suffix}`);
      assert.deepEqual(values.map((v) => v.motion3), fixture.frames.map((m) => m[`integer_motion3${suffix}`]), `integer_motion3${suffix}`);
      // Every prefix is a stream of its own (libvmaf's values for shorter streams).
    }
  });

  it('derives each instance\'s SAD score from the default one (same SAD, other weight and clip)', function () {
    for (const [arg, suffix] of INSTANCES) {
      const o = motionOptions(optionsOf(arg));
      if (o.fiveFrameWindow) continue; // SADs two frames apart: not derivable from the default's
      for (const m of fixture.frames) {
        const sad = BigInt(Math.round(m.VMAF_integer_feature_motion_sad_score * 256 * 160 * 90));
        const expected = m[`VMAF_integer_feature_motion_sad_score${suffix}`];
        assert.equal(m.VMAF_integer_feature_motion_sad_score === 0 ? 0 : motionSadScore(sad, 160, 90, o), expected);
      }
    }
  });

  it('reproduces the golden logs\' motion keys of every clip from their SAD scores', function () {
    let compared = 0;
    // The carried clips, and ../shared/golden's others where it exists.
    for (const golden of goldenClips({ shared: true }).filter((c) => c.hasLog('libvmaf-extra'))) {
      const clip = golden.name;
      const main = golden.log('libvmaf').frames;
      const extra = golden.log('libvmaf-extra').frames;
      const frames = main.map((f, i) => ({ ...extra[i].metrics, ...f.metrics }));
      for (const [arg, suffix] of INSTANCES.slice(0, 3)) {
        if (!(`integer_motion3${suffix}` in frames[0])) continue;
        const values = motionSeries(frames.map((m) => m[`VMAF_integer_feature_motion_sad_score${suffix}`]), motionOptions(optionsOf(arg)));
        assert.deepEqual(values.map((v) => v.motion2), frames.map((m) => m[`integer_motion2${suffix}`]), `${clip}: integer_motion2${suffix}`);
        assert.deepEqual(values.map((v) => v.motion3), frames.map((m) => m[`integer_motion3${suffix}`]), `${clip}: integer_motion3${suffix}`);
        compared += 2 * frames.length;
      }
    }
    assert.ok(compared > 1000, `${compared} values compared`);
  });
});

describe('integer_motion: streaming', function () {
  const instances = INSTANCES.map(([arg]) => motionInstance(optionsOf(arg)));

  it('emits the whole-stream values, each frame once frame max(i + 1, d) is in (randomized)', function () {
    const rnd = random(11);
    for (let trial = 0; trial < 50; trial++) {
      const n = 1 + Math.floor(rnd() * 9);
      const scores = Array.from({ length: n }, () => instances.map(() => rnd() * 30));
      const input = new Subject();
      const out = [];
      input.pipe(withMotion(instances)).subscribe((f) => out.push(f));
      for (let i = 0; i < n; i++) {
        input.next({ index: i, features: {}, scores: scores[i] });
        // With the five-frame window among the instances, frame i waits for frame max(i + 1, 2).
        const expected = i < 2 ? 0 : i;
        assert.equal(out.length, expected, `after frame ${i} of ${n}`);
      }
      input.complete();
      assert.equal(out.length, n);
      instances.forEach((x, j) => {
        const values = motionSeries(scores.map((s) => s[j]), x.options);
        assert.deepEqual(out.map((f) => f.features[x.keys.motion2]), values.map((v) => v.motion2), x.keys.motion2);
        assert.deepEqual(out.map((f) => f.features[x.keys.motion3]), values.map((v) => v.motion3), x.keys.motion3);
      });
    }
  });

  it('without the five-frame window, waits one frame', function () {
    const input = new Subject();
    const seen = [];
    input.pipe(withMotion([instances[0], instances[1]])).subscribe((f) => seen.push(f.index));
    input.next({ index: 0, features: {}, scores: [0, 0] });
    assert.deepEqual(seen, []);
    input.next({ index: 1, features: {}, scores: [1, 1] });
    assert.deepEqual(seen, [0]);
  });

  it('keeps a bounded history however long the stream', function () {
    const h = new MotionHistory(instances[2].options);
    for (let i = 0; i < 1000; i++) {
      h.push(i % 7);
      if (i >= 2) {
        h.valuesAt(i - 1);
        h.forgetBefore(i);
      }
    }
    assert.ok(h.length === 1000);
    assert.throws(() => h.valuesAt(10), /no longer kept/);
  });

  it('a rendition that ends early gets the values of its own stream', async function () {
    const rnd = random(5);
    const n = 9;
    const scores = Array.from({ length: n }, () => instances.map(() => rnd() * 30));
    // Rendition 1 ends after frame 3; frame 5 is unscored for both (a neighbour only).
    const groups = scores.map((s, i) => ({ index: i, scores: s, renditions: [i === 5 ? null : { features: {} }, i <= 3 ? { features: {} } : undefined] }));
    const out = await lastValueFrom(from(groups).pipe(withGroupMotion(instances), toArray()));
    assert.equal(out.length, n);
    instances.forEach((x, j) => {
      const full = motionSeries(scores.map((s) => s[j]), x.options);
      const short = motionSeries(scores.slice(0, 4).map((s) => s[j]), x.options);
      for (let i = 0; i < n; i++) {
        if (i !== 5) assert.equal(out[i].renditions[0].features[x.keys.motion3], full[i].motion3);
        else assert.equal(out[i].renditions[0], undefined);
        if (i <= 3) assert.equal(out[i].renditions[1].features[x.keys.motion3], short[i].motion3, `${x.keys.motion3} frame ${i}`);
        else assert.equal(out[i].renditions[1], undefined);
      }
    });
  });
});

// End to end: every motion key of libvmaf's log, through decode, each backend and the plan.
for (const backend of backendsUnderTest()) {
  describe(`integer_motion end to end (${backend} backend)`, function () {
    this.timeout(300000);
    it('src01_160x90_8bit: the seven instances at once, every frame exactly libvmaf\'s', async function () {
      const { ref, dis } = goldenClip('src01_160x90_8bit');
      const results = await lastValueFrom(
        score(ref, dis, { backend, features: INSTANCES.map(([arg]) => arg), noPrediction: true, threads: 2 }).pipe(toArray()),
      );
      assert.equal(results.length, fixture.frames.length);
      let compared = 0;
      for (const [i, r] of results.entries()) {
        const expected = fixture.frames[i];
        // (score() also computes the default model's features, as libvmaf's API does.)
        assert.deepEqual(Object.keys(r.features).filter((k) => k.includes('motion')).sort(), Object.keys(expected).sort(), 'the same motion keys as libvmaf');
        for (const [key, value] of Object.entries(expected)) {
          assert.equal(r.features[key], value, `frame ${i}: ${key}`);
          compared++;
        }
      }
      assert.equal(compared, 48 * 21);
    });
  });
}

// The backends directly: with the five-frame window each reference is read two frames
// later too; --subsample's unscored frames still feed every instance.
describe('integer_motion: the core backends with several instances', function () {
  this.timeout(300000);
  const motion = INSTANCES.map(([arg]) => motionInstance(optionsOf(arg)));

  async function run(backend, name, keep) {
    const clip = goldenClip(name);
    const ref = readY4mLumas(clip.ref);
    const dis = readY4mLumas(clip.dis);
    const format = { width: ref.width, height: ref.height, bitDepth: 8, chroma: '420' };
    const releases = new Map();
    const frame = (luma, index) => {
      const f = { index, format, luma, release: () => releases.set(f, (releases.get(f) ?? 0) + 1) };
      return f;
    };
    const pairs = ref.lumas.map((luma, i) => ({ index: i, ref: frame(luma, i), dis: frame(dis.lumas[i], i), scored: keep(i) }));
    const results = await lastValueFrom(backend.extract(from(pairs)).pipe(toArray()));
    for (const p of pairs) {
      assert.equal(releases.get(p.ref), 1, `reference ${p.index} released once`);
      assert.equal(releases.get(p.dis), 1, `distorted ${p.index} released once`);
    }
    return results;
  }

  for (const kind of backendsUnderTest()) {
    it(`${kind}: every kept frame's motion values are libvmaf's, with and without --subsample`, async function () {
      const backend = kind === 'cpu' ? new CpuBackend({ threads: 3, motion }) : await (await import('../../dist/kernels/gpu/gpu-backend.js')).GpuBackend.open({ motion });
      try {
        for (const step of [1, 3]) {
          const results = await run(backend, 'src01_160x90_8bit', (i) => i % step === 0);
          assert.deepEqual(results.map((r) => r.index), fixture.frames.map((_, i) => i).filter((i) => i % step === 0));
          for (const r of results) {
            for (const [key, value] of Object.entries(fixture.frames[r.index])) assert.equal(r.features[key], value, `frame ${r.index}: ${key}`);
          }
        }
      } finally {
        await backend.close();
      }
    });
  }
});

// The cpu backend against libvmaf 3.2.0's golden logs, frame by frame and feature by
// feature; integer_motion2/3's one-frame-ahead semantics; in-order output whatever the
// thread count; frame ownership (every frame released exactly once).
import assert from 'node:assert/strict';
import { Subject, from, lastValueFrom, of, toArray, take, tap, delay, Observable, defer } from 'rxjs';
import { CpuBackend } from '../dist/kernels/cpu-backend.js';
import { loadNative } from '../dist/kernels/native.js';
import { FEATURE_KEYS, MOTION_SAD_KEY, MOTION2_KEY, MOTION3_KEY, motionScoreFromSad } from '../dist/kernels/native-features.js';
import { withMotion } from '../dist/pipeline/motion-finish.js';
import { motionSeries } from '../dist/pipeline/motion-series.js';
import { DEFAULT_MOTION_INSTANCE } from '../dist/extractors/integer_motion/motion-options.js';
import { orderedMergeMap } from '../dist/pipeline/ordered-merge-map.js';
import { openFrameSource } from '../dist/decode/open-source.js';
import { pairFrames } from '../dist/decode/pair-frames.js';
import { goldenClip } from './helpers/golden.mjs';
import { readY4mLumas } from './helpers/y4m-lumas.mjs';

const TOLERANCE = 1e-6;
const CLIPS = ['src01_160x90_8bit', 'negated_256x144_2f'];

/** Frames that count their releases. */
function makeFrames(clip, releases) {
  const format = { width: clip.width, height: clip.height, bitDepth: 8, chroma: '420' };
  return clip.lumas.map((luma, index) => {
    const frame = {
      index,
      format,
      luma,
      release() {
        releases.set(frame, (releases.get(frame) ?? 0) + 1);
      },
    };
    return frame;
  });
}

function pairsOf(ref, dis, releases) {
  const refs = makeFrames(ref, releases);
  const diss = makeFrames(dis, releases);
  return {
    frames: [...refs, ...diss],
    pairs: refs.map((r, i) => ({ index: i, ref: r, dis: diss[i] })),
  };
}

const clipCache = new Map();
function loadClip(name) {
  if (!clipCache.has(name)) {
    const clip = goldenClip(name);
    clipCache.set(name, { ref: readY4mLumas(clip.ref), dis: readY4mLumas(clip.dis), golden: clip.log() });
  }
  return clipCache.get(name);
}

async function runBackend(name, threads, pairsObservable) {
  const clip = loadClip(name);
  const releases = new Map();
  const { frames, pairs } = pairsOf(clip.ref, clip.dis, releases);
  const backend = new CpuBackend({ threads });
  const results = await lastValueFrom(backend.extract(pairsObservable ? pairsObservable(pairs) : from(pairs)).pipe(toArray()));
  await backend.close();
  return { clip, results, frames, releases };
}

function assertAllReleasedOnce(frames, releases) {
  for (const frame of frames) assert.equal(releases.get(frame), 1, `frame ${frame.index} released exactly once`);
}

// ---- golden parity ----------------------------------------------------------------------

describe('cpu backend: golden parity', function () {
  const totals = { compared: 0, exact: 0, motionCompared: 0, motionExact: 0 };
  const perKey = new Map();
  after(() => {
    console.log(`      ${totals.exact} of ${totals.compared} feature values exactly equal to libvmaf`);
    console.log(`      motion (sad score, motion2, motion3): ${totals.motionExact} of ${totals.motionCompared} exactly equal`);
    for (const [key, { exact, compared, worst }] of perKey) {
      console.log(`        ${key}: ${exact}/${compared} exact${worst > 0 ? `, max |diff| ${worst.toExponential(2)}` : ''}`);
    }
  });

  for (const name of CLIPS) {
    it(name, async function () {
      const { clip, results, frames, releases } = await runBackend(name, 2);
      const golden = clip.golden.frames;
      assert.equal(results.length, golden.length, 'one result per frame');
      assertAllReleasedOnce(frames, releases);
      const failures = [];
      for (const [i, frame] of golden.entries()) {
        const ours = results[i];
        assert.equal(ours.index, frame.frameNum, 'in frame order');
        assert.deepEqual(Object.keys(ours.features), FEATURE_KEYS, 'libvmaf key order');
        assert.deepEqual(
          Object.keys(ours.features),
          Object.keys(frame.metrics).filter((k) => FEATURE_KEYS.includes(k)),
          "the same order as libvmaf's log",
        );
        for (const key of FEATURE_KEYS) {
          const expected = frame.metrics[key];
          const actual = ours.features[key];
          const diff = Math.abs(actual - expected);
          const stat = perKey.get(key) ?? { exact: 0, compared: 0, worst: 0 };
          stat.compared++;
          totals.compared++;
          if (actual === expected) {
            stat.exact++;
            totals.exact++;
          }
          stat.worst = Math.max(stat.worst, diff);
          perKey.set(key, stat);
          if (key === MOTION_SAD_KEY || key === MOTION2_KEY || key === MOTION3_KEY) {
            totals.motionCompared++;
            if (actual === expected) totals.motionExact++;
            // Motion is pure integer arithmetic then one division: it must be exact.
            if (actual !== expected) failures.push(`frame ${i}: ${key} = ${actual}, libvmaf ${expected}`);
          } else if (!(diff <= TOLERANCE)) {
            failures.push(`frame ${i}: ${key} = ${actual}, libvmaf ${expected} (diff ${diff})`);
          }
        }
      }
      assert.deepEqual(failures.slice(0, 20), [], `${failures.length} values off`);
    });
  }
});

// The project's own decoder: the same comparison through
// openFrameSource + pairFrames (its frames, its pool, its release()).
describe('cpu backend: golden parity through the decoder', function () {
  for (const name of CLIPS) {
    it(name, async function () {
      const clip = goldenClip(name);
      const ref = openFrameSource(clip.ref);
      const dis = openFrameSource(clip.dis);
      try {
        const backend = new CpuBackend({ threads: 2 });
        const viaDecoder = await lastValueFrom(backend.extract(from(pairFrames(ref, dis))).pipe(toArray()));
        const { results } = await runBackend(name, 2);
        assert.deepEqual(viaDecoder.map((f) => ({ index: f.index, features: f.features })), results);
      } finally {
        await ref.close();
        await dis.close();
      }
    });
  }
});

// ---- integer_motion2 and integer_motion3 (default options) ------------------------------

describe('integer_motion2 and integer_motion3 through withMotion', function () {
  const DEFAULT = [DEFAULT_MOTION_INSTANCE];
  const frame = (index, score) => ({ index, features: { [MOTION_SAD_KEY]: score }, scores: [score] });
  const motion2Sequence = (scores) => motionSeries(scores, DEFAULT_MOTION_INSTANCE.options).map((v) => v.motion2);

  it('motion2 is 0, then min(this, next), then the last score as is; motion3 the first frame gets frame 1\'s score', async function () {
    const scores = [0, 3, 1, 2, 5, 4, 4.5];
    const out = await lastValueFrom(from(scores.map((s, i) => frame(i, s))).pipe(withMotion(DEFAULT), toArray()));
    assert.deepEqual(
      out.map((f) => f.features[MOTION2_KEY]),
      [0, 1, 1, 2, 4, 4, 4.5],
    );
    // Default blend (factor 1) and clip (10000): motion3 is motion2, but frame 0 takes frame 1's score.
    assert.deepEqual(
      out.map((f) => f.features[MOTION3_KEY]),
      [3, 1, 1, 2, 4, 4, 4.5],
    );
    assert.deepEqual(motion2Sequence(scores), [0, 1, 1, 2, 4, 4, 4.5]);
    assert.deepEqual(out.map((f) => f.index), [0, 1, 2, 3, 4, 5, 6]);
    assert.deepEqual(Object.keys(out[0].features), [MOTION_SAD_KEY, MOTION2_KEY, MOTION3_KEY], 'motion2 and motion3 appended last');
    assert.ok(!('scores' in out[0]), 'FrameFeatures only');
  });

  it('is 0 for a single frame, and motion2 is 0 for the first frame whatever its score', async function () {
    const single = await lastValueFrom(of(frame(0, 0)).pipe(withMotion(DEFAULT), toArray()));
    assert.deepEqual(single.map((f) => [f.features[MOTION2_KEY], f.features[MOTION3_KEY]]), [[0, 0]]);
    const odd = await lastValueFrom(of(frame(7, 9), frame(8, 2)).pipe(withMotion(DEFAULT), toArray()));
    assert.deepEqual(odd.map((f) => f.features[MOTION2_KEY]), [0, 2]);
  });

  it('emits frame N when N+1 arrives and the last on completion (one frame of latency)', function () {
    const input = new Subject();
    const seen = [];
    let completed = false;
    input.pipe(withMotion(DEFAULT)).subscribe({ next: (f) => seen.push(f.index), complete: () => (completed = true) });
    input.next(frame(0, 0));
    assert.deepEqual(seen, []);
    input.next(frame(1, 1));
    assert.deepEqual(seen, [0]);
    input.next(frame(2, 2));
    assert.deepEqual(seen, [0, 1]);
    input.complete();
    assert.deepEqual(seen, [0, 1, 2]);
    assert.ok(completed);
  });

  it('matches libvmaf over a whole clip (from the per-frame scores)', function () {
    const golden = loadClip(CLIPS[0]).golden.frames;
    const values = motionSeries(golden.map((f) => f.metrics[MOTION_SAD_KEY]), DEFAULT_MOTION_INSTANCE.options);
    assert.deepEqual(values.map((v) => v.motion2), golden.map((f) => f.metrics[MOTION2_KEY]));
    assert.deepEqual(values.map((v) => v.motion3), golden.map((f) => f.metrics[MOTION3_KEY]));
  });

  it('counts unscored frames as neighbours but does not emit them', async function () {
    const frames = [frame(0, 0), { ...frame(1, 3), scored: false }, frame(2, 1), { ...frame(3, 0.5), scored: false }];
    const out = await lastValueFrom(from(frames).pipe(withMotion(DEFAULT), toArray()));
    assert.deepEqual(out.map((f) => [f.index, f.features[MOTION2_KEY], f.features[MOTION3_KEY]]), [
      [0, 0, 3],
      [2, 0.5, 0.5],
    ]);
  });

  it('passes errors through', async function () {
    const failing = new Observable((s) => {
      s.next(frame(0, 0));
      s.error(new Error('boom'));
    });
    await assert.rejects(lastValueFrom(failing.pipe(withMotion(DEFAULT), toArray())), /boom/);
  });
});

// ---- orderedMergeMap --------------------------------------------------------------------

describe('orderedMergeMap', function () {
  it('emits in input order with at most `concurrency` projections at once', async function () {
    let running = 0;
    let peak = 0;
    const delays = [30, 5, 20, 1, 15, 2, 25, 3, 8, 12];
    const out = await lastValueFrom(
      from(delays).pipe(
        orderedMergeMap(
          (ms, i) =>
            defer(async () => {
              running++;
              peak = Math.max(peak, running);
              await new Promise((r) => setTimeout(r, ms));
              running--;
              return i;
            }),
          3,
        ),
        toArray(),
      ),
    );
    assert.deepEqual(out, delays.map((_, i) => i));
    assert.equal(peak, 3);
  });

  it('takes promise projections directly: in input order, at most `concurrency` at once, nothing after unsubscribing', async function () {
    let running = 0;
    let peak = 0;
    const delays = [20, 1, 12, 3, 8, 1, 15, 2];
    const project = async (ms, i) => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, ms));
      running--;
      return i;
    };
    const out = await lastValueFrom(from(delays).pipe(orderedMergeMap(project, 3), toArray()));
    assert.deepEqual(out, delays.map((_, i) => i));
    assert.equal(peak, 3);
    const seen = [];
    const sub = from([30, 1, 1]).pipe(orderedMergeMap(project, 3)).subscribe((v) => seen.push(v));
    await new Promise((r) => setTimeout(r, 5));
    sub.unsubscribe();
    await new Promise((r) => setTimeout(r, 40));
    assert.deepEqual(seen, []);
  });

  it('handles synchronous projections and multi-value inners in order', async function () {
    const out = await lastValueFrom(
      from([1, 2, 3, 4]).pipe(
        orderedMergeMap((n) => (n % 2 ? of(n, n * 10) : of(n, n * 10).pipe(delay(5))), 2),
        toArray(),
      ),
    );
    assert.deepEqual(out, [1, 10, 2, 20, 3, 30, 4, 40]);
  });

  it('raises a projection error in order: after every earlier value, before any later one', async function () {
    const seen = [];
    const slowFirst = (n) =>
      n === 3 ? Promise.reject(new Error('bad 3')) : new Promise((r) => setTimeout(() => r(n), n === 1 ? 30 : 1));
    await assert.rejects(
      lastValueFrom(from([1, 2, 3, 4, 5]).pipe(orderedMergeMap(slowFirst, 3), tap((n) => seen.push(n)))),
      /bad 3/,
    );
    assert.deepEqual(seen, [1, 2]);
  });

  it('raises a source error after the values received before it', async function () {
    const seen = [];
    const source = new Observable((s) => {
      s.next(1);
      s.next(2);
      s.error(new Error('source broke'));
    });
    await assert.rejects(
      lastValueFrom(source.pipe(orderedMergeMap((n) => new Promise((r) => setTimeout(() => r(n), 5)), 2), tap((n) => seen.push(n)))),
      /source broke/,
    );
    assert.deepEqual(seen, [1, 2]);
  });
});

// ---- the backend itself -------------------------------------------------------------------

describe('cpu backend: threads, ownership, errors', function () {
  it('gives identical results with 1 and 4 threads', async function () {
    const one = await runBackend(CLIPS[0], 1);
    const four = await runBackend(CLIPS[0], 4);
    assert.equal(one.results.length, one.clip.golden.frames.length);
    assert.deepEqual(four.results, one.results);
  });

  it('with --subsample, scores the kept frames exactly as a full run does (motion from every frame)', async function () {
    const full = await runBackend(CLIPS[0], 2);
    const sub = await runBackend(CLIPS[0], 2, (pairs) => from(pairs.map((p) => ({ ...p, scored: p.index % 3 === 0 }))));
    assert.deepEqual(
      sub.results,
      full.results.filter((f) => f.index % 3 === 0),
    );
    assertAllReleasedOnce(sub.frames, sub.releases);
  });

  it('keeps order when frames arrive slowly and unevenly', async function () {
    const base = await runBackend(CLIPS[1], 3);
    const slow = await runBackend(CLIPS[1], 3, (pairs) =>
      from(pairs).pipe(orderedMergeMap((p, i) => of(p).pipe(delay(i % 2 ? 1 : 10)), 1)),
    );
    assert.deepEqual(slow.results, base.results);
    assertAllReleasedOnce(slow.frames, slow.releases);
  });

  it('releases every frame once when the consumer stops early', async function () {
    const clip = loadClip(CLIPS[0]);
    const releases = new Map();
    const { frames, pairs } = pairsOf(clip.ref, clip.dis, releases);
    const backend = new CpuBackend({ threads: 4 });
    const got = await lastValueFrom(backend.extract(from(pairs)).pipe(take(3), toArray()));
    assert.equal(got.length, 3);
    // Jobs still on the pool release their frames when they finish.
    for (let i = 0; i < 100 && frames.some((f) => releases.get(f) !== 1); i++) await new Promise((r) => setTimeout(r, 10));
    assertAllReleasedOnce(frames, releases);
  });

  it('reports a bad frame as a VmafError naming the frame, and releases it', async function () {
    const releases = new Map();
    const format = { width: 64, height: 48, bitDepth: 8, chroma: '420' };
    const mk = (index, length) => {
      const f = { index, format, luma: new Uint8Array(length), release: () => releases.set(f, (releases.get(f) ?? 0) + 1) };
      return f;
    };
    const good = { index: 0, ref: mk(0, 64 * 48), dis: mk(0, 64 * 48) };
    const bad = { index: 1, ref: mk(1, 64 * 48), dis: mk(1, 100) };
    const backend = new CpuBackend({ threads: 2 });
    await assert.rejects(lastValueFrom(backend.extract(from([good, bad])).pipe(toArray())), (error) => {
      assert.equal(error.code, 'E_NATIVE');
      assert.match(error.message, /frame 1/);
      assert.match(error.message, /dis must be a Uint8Array of 3072 elements/);
      return true;
    });
    for (let i = 0; i < 100 && releases.size < 4; i++) await new Promise((r) => setTimeout(r, 10));
    for (const f of [good.ref, good.dis, bad.ref, bad.dis]) assert.equal(releases.get(f), 1);
  });

  it('exposes the stats layout and validates addon arguments', function () {
    const native = loadNative();
    const layout = native.statsLayout();
    assert.ok(Number.isInteger(layout.vif) && layout.vif > 0 && Number.isInteger(layout.adm) && layout.adm > 0);
    assert.throws(() => native.computeFrameStats(new Uint16Array(12), new Uint16Array(12), 4, 3, 8), TypeError);
    assert.throws(() => native.computeFrameStats(new Uint8Array(12), new Uint8Array(12), 4, 3, 8, new Uint8Array(11)), /prevRef/);
    assert.throws(() => native.computeFrameStats(new Uint8Array(12), new Uint8Array(12), 4, 3, 9), /bitDepth/);
    assert.throws(() => native.motionSad(new Uint8Array(12), new Uint8Array(11), 4, 3, 8), TypeError);
    assert.throws(() => native.finishFeatures(new BigInt64Array(1), 4, 3, 8), TypeError);
  });

  it('computes the same SAD in the job as motionSad does, and none without a previous frame', async function () {
    const native = loadNative();
    const w = 48;
    const h = 40;
    const a = new Uint16Array(w * h);
    const b = new Uint16Array(w * h);
    for (let i = 0; i < a.length; i++) {
      a[i] = (i * 37) % 1024;
      b[i] = (i * 37 + 5 * (i % w)) % 1024;
    }
    const first = await native.computeFrameStats(a, a, w, h, 10);
    assert.equal(first.sad, null);
    assert.ok(first.stats instanceof BigInt64Array);
    const second = await native.computeFrameStats(b, b, w, h, 10, a);
    assert.equal(second.sad, native.motionSad(a, b, w, h, 10));
    assert.ok(second.sad > 0n);
    assert.equal(native.motionSad(a, a, w, h, 10), 0n);
    assert.equal(motionScoreFromSad(second.sad, w, h), Number(second.sad) / 256 / (w * h));
    assert.equal(motionScoreFromSad(10n ** 15n, w, h), 10000, 'clipped at motion_max_val');
  });

  it("holds each reference frame until the next pair's job is done", async function () {
    const clip = loadClip(CLIPS[1]);
    const releases = new Map();
    const { pairs } = pairsOf(clip.ref, clip.dis, releases);
    const input = new Subject();
    const seen = [];
    const backend = new CpuBackend({ threads: 2 });
    const done = lastValueFrom(backend.extract(input).pipe(tap((f) => seen.push(f.index)), toArray()));
    input.next(pairs[0]);
    input.next(pairs[1]);
    const until = async (cond) => {
      for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
      assert.ok(cond());
    };
    // Frame 0 comes out once frame 1 is computed; by then both jobs are done.
    await until(() => seen.length === 1);
    assert.equal(releases.get(pairs[0].dis), 1, 'dis 0 released after its job');
    assert.equal(releases.get(pairs[0].ref), 1, 'ref 0 released after job 1 read it');
    assert.equal(releases.get(pairs[1].dis), 1, 'dis 1 released after its job');
    assert.equal(releases.get(pairs[1].ref), undefined, 'ref 1 held for the next pair');
    input.complete();
    const out = await done;
    assert.deepEqual(out.map((f) => f.index), [0, 1]);
    assert.equal(releases.get(pairs[1].ref), 1, 'ref 1 released at the end of the stream');
  });
});

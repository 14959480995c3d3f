// Rolling windows: window membership (frames, seconds by pts or index/fps), completeness
// and partial windows, hop cadence and flush, libvmaf's pooling and nearest-rank
// percentiles, renditions, errors, the NDJSON line, and windows on real scores.
import assert from 'node:assert/strict';
import { from, lastValueFrom, toArray } from 'rxjs';
import { rollingWindows, parseSpan, nearestRank, windowLine } from '../dist/pipeline/windows.js';
import { UsageError } from '../dist/errors.js';
import { goldenClip } from './helpers/golden.mjs';
import { windowReference } from './helpers/window-reference.mjs';

const frame = (index, vmaf, pts, extra = {}) => ({
  index,
  features: { integer_motion2: index * 2, ...extra },
  scores: { vmaf },
  ...(pts === undefined ? {} : { refPts: pts, disPts: pts }),
});
const frames = (values, pts) => values.map((v, i) => frame(i, v, pts?.(i)));
const run = (items, spec) => lastValueFrom(from(items).pipe(rollingWindows(spec), toArray()));
const spans = (windows) => windows.map((w) => [w.startIndex, w.endIndex]);


function assertStats(w, values, percentiles = [5]) {
  const expected = windowReference(values, percentiles);
  for (const [key, value] of Object.entries(expected)) assert.equal(w[key], value, `${key} of window ${w.startIndex}..${w.endIndex}`);
}

describe('rolling windows', function () {
  describe('lengths', () => {
    it('parses frames and seconds', () => {
      assert.deepEqual(parseSpan(60), { frames: 60 });
      assert.deepEqual(parseSpan('60'), { frames: 60 });
      assert.deepEqual(parseSpan('60f'), { frames: 60 });
      assert.deepEqual(parseSpan(' 48 frames '), { frames: 48 });
      assert.deepEqual(parseSpan('2s'), { seconds: 2 });
      assert.deepEqual(parseSpan('1.5 seconds'), { seconds: 1.5 });
      assert.deepEqual(parseSpan('500ms'), { seconds: 0.5 });
      assert.deepEqual(parseSpan({ seconds: 0.25 }), { seconds: 0.25 });
    });
    for (const bad of ['0', '0f', '2.5f', '2x', '-1s', '', 'abc', '0s', 'f', 1.5, 0]) {
      it(`rejects ${JSON.stringify(bad)}`, () => {
        assert.throws(() => parseSpan(bad, 'window'), (e) => e instanceof UsageError && e.code === 'E_USAGE' && /^bad window/.test(e.message));
      });
    }
    it('rejects a bad spec at once', () => {
      assert.throws(() => rollingWindows({ window: '2x' }), UsageError);
      assert.throws(() => rollingWindows({ window: 10, hop: '0f' }), /bad hop "0f"/);
      assert.throws(() => rollingWindows({ window: 10, percentiles: [101] }), /bad percentile 101/);
      assert.throws(() => rollingWindows({ window: 10, metrics: [] }), /at least one metric/);
      assert.throws(() => rollingWindows({ window: 10, fps: 0 }), /bad fps/);
    });
  });

  describe('nearest-rank percentiles', () => {
    it('picks sorted[ceil(p·n/100) − 1]', () => {
      const four = [10, 20, 30, 40];
      assert.deepEqual([0, 5, 25, 25.1, 50, 75, 99, 100].map((p) => nearestRank(four, p)), [10, 10, 10, 20, 20, 30, 40, 40]);
      const twenty = Array.from({ length: 20 }, (_, i) => i + 1);
      // p·n/100 exactly 1: rank 1 (0.05·20 would be 1.0000000000000002 in floating point).
      assert.equal(nearestRank(twenty, 5), 1);
      assert.equal(nearestRank(twenty, 5.1), 2);
      assert.equal(nearestRank(twenty, 10), 2);
      assert.equal(nearestRank(twenty, 50), 10);
      assert.equal(nearestRank(twenty, 95), 19);
      assert.equal(nearestRank([7], 5), 7);
      const thousand = Array.from({ length: 1000 }, (_, i) => i);
      assert.equal(nearestRank(thousand, 0.1), 0);
      assert.equal(nearestRank(thousand, 0.3), 2);
      assert.equal(nearestRank(thousand, 2.5), 24);
    });

    it('emits each requested percentile as p{p} over the unsorted window', async () => {
      const values = [50, 10, 40, 20, 30];
      const [w] = await run(frames(values), { window: 5, hop: 5, percentiles: [0, 5, 20, 21, 50, 2.5, 100] });
      assert.equal(w.p0, 10);
      assert.equal(w.p5, 10);
      assert.equal(w.p20, 10);
      assert.equal(w.p21, 20);
      assert.equal(w.p50, 30);
      assert.equal(w['p2.5'], 10);
      assert.equal(w.p100, 50);
      assertStats(w, values, [0, 5, 20, 21, 50, 2.5, 100]);
    });
  });

  describe('frame windows', () => {
    const values = [90, 80, 70, 60, 50, 65, 75, 85, 95, 100];

    it('default hop is half the window; complete windows only', async () => {
      const windows = await run(frames(values), { window: 4 });
      assert.deepEqual(spans(windows), [[0, 3], [2, 5], [4, 7], [6, 9]]);
      for (const w of windows) {
        assert.equal(w.metric, 'vmaf');
        assert.deepEqual(w.window, { frames: 4 });
        assert.equal(w.complete, true);
        assert.equal(w.startPts, undefined);
        assertStats(w, values.slice(w.startIndex, w.endIndex + 1));
      }
      assert.equal(windows[0].mean, 75);
      assert.equal(windows[0].min, 60);
      assert.equal(windows[0].max, 90);
      assert.equal(windows[0].harmonic_mean, 4 / (1 / 91 + 1 / 81 + 1 / 71 + 1 / 61) - 1);
      assert.equal(windows[0].p5, 60);
    });

    it('partial windows at the start, flagged', async () => {
      const windows = await run(frames(values), { window: 4, partial: true });
      assert.deepEqual(spans(windows), [[0, 1], [0, 3], [2, 5], [4, 7], [6, 9]]);
      assert.deepEqual(windows.map((w) => w.complete), [false, true, true, true, true]);
      assert.deepEqual(windows[0].window, { frames: 2 });
      assertStats(windows[0], [90, 80]);
    });

    it('hop 1 slides every frame', async () => {
      const windows = await run(frames(values), { window: 3, hop: 1 });
      assert.deepEqual(spans(windows), [[0, 2], [1, 3], [2, 4], [3, 5], [4, 6], [5, 7], [6, 8], [7, 9]]);
      assert.deepEqual(windows.map((w) => w.min), [70, 60, 50, 50, 50, 65, 75, 85]);
    });

    it('tumbling windows, and the flush of the tail', async () => {
      const tumbling = await run(frames(values), { window: 4, hop: 4 });
      assert.deepEqual(spans(tumbling), [[0, 3], [4, 7], [6, 9]]);
      assertStats(tumbling[2], [75, 85, 95, 100]);
      const noFlush = await run(frames(values), { window: 4, hop: '4f', flush: false });
      assert.deepEqual(spans(noFlush), [[0, 3], [4, 7]]);
      // A stream shorter than the window: nothing complete, nothing emitted, unless partial.
      assert.deepEqual(await run(frames([1, 2, 3]), { window: 4 }), []);
      assert.deepEqual(spans(await run(frames([1, 2, 3]), { window: 4, partial: true })), [[0, 1], [0, 2]]);
    });

    it('counts results, not indices (subsampled streams)', async () => {
      const items = [0, 5, 10, 15, 20, 25].map((index, i) => frame(index, 10 * i));
      const windows = await run(items, { window: 2, hop: 2 });
      assert.deepEqual(spans(windows), [[0, 5], [10, 15], [20, 25]]);
      assert.deepEqual(windows.map((w) => w.mean), [5, 25, 45]);
    });

    it('several metrics, features and scores, one window each in order', async () => {
      const windows = await run(frames(values), { window: 5, hop: 5, metrics: ['vmaf', 'integer_motion2'], percentiles: [50] });
      assert.deepEqual(windows.map((w) => `${w.metric} ${w.startIndex}-${w.endIndex}`), ['vmaf 0-4', 'integer_motion2 0-4', 'vmaf 5-9', 'integer_motion2 5-9']);
      assertStats(windows[1], [0, 2, 4, 6, 8], [50]);
      assert.equal(windows[1].p5, undefined);
      assertStats(windows[3], [10, 12, 14, 16, 18], [50]);
    });

    it('carries pts where the results have them', async () => {
      const windows = await run(frames(values, (i) => 10 + i / 4), { window: 4, hop: 4, flush: false });
      assert.deepEqual(windows.map((w) => [w.startPts, w.endPts]), [[10, 10.75], [11, 11.75]]);
    });
  });

  describe('seconds windows', () => {
    const values = Array.from({ length: 30 }, (_, i) => 50 + ((i * 37) % 23));

    it('1s at 10 fps by pts is 10f (pts i/10 and i·0.1)', async () => {
      const byFrames = await run(frames(values), { window: 10 });
      assert.deepEqual(spans(byFrames), [[0, 9], [5, 14], [10, 19], [15, 24], [20, 29]]);
      for (const pts of [(i) => i / 10, (i) => i * 0.1, (i) => 3600 + i * 0.1]) {
        const bySeconds = await run(frames(values, pts), { window: '1s' });
        assert.deepEqual(spans(bySeconds), spans(byFrames));
        bySeconds.forEach((w, i) => {
          assert.deepEqual(w.window, { frames: 10, seconds: 1 });
          assert.equal(w.startPts, pts(w.startIndex));
          assert.equal(w.endPts, pts(w.endIndex));
          for (const key of ['mean', 'min', 'max', 'harmonic_mean', 'p5']) assert.equal(w[key], byFrames[i][key]);
        });
      }
    });

    it('2s at 30 fps is 60f although i/30 is inexact; 500ms hop is 15f', async () => {
      const long = Array.from({ length: 200 }, (_, i) => (i * 7919) % 101);
      const byFrames = await run(frames(long), { window: 60, hop: 15 });
      const bySeconds = await run(frames(long, (i) => i / 30), { window: '2s', hop: '500ms' });
      assert.equal(byFrames.length, 11); // ends 59, 74, …, 194, and the flush at 199
      assert.deepEqual(spans(bySeconds), spans(byFrames));
      assert.deepEqual(bySeconds.map((w) => w.p5), byFrames.map((w) => w.p5));
    });

    it('times frames as index / fps without refPts', async () => {
      const byPts = await run(frames(values, (i) => i / 10), { window: '1s', hop: '1s' });
      const byFps = await run(frames(values), { window: '1s', hop: '1s', fps: 10 });
      assert.deepEqual(byFps, byPts);
      assert.deepEqual(spans(byFps), [[0, 9], [10, 19], [20, 29]]);
    });

    it('variable frame rate: frames that started less than D ago', async () => {
      const pts = [0, 0.1, 0.2, 0.5, 0.6, 1.0, 1.05, 1.1];
      const items = pts.map((t, i) => frame(i, 10 * (i + 1), t));
      const windows = await run(items, { window: '0.5s', hop: 1, partial: true });
      assert.deepEqual(spans(windows), [[0, 0], [0, 1], [0, 2], [1, 3], [2, 4], [4, 5], [4, 6], [5, 7]]);
      // Complete once t(k) − t(0) + (t(k) − t(k−1)) ≥ 0.5: frame 3 (0.5 + 0.3).
      assert.deepEqual(windows.map((w) => w.complete), [false, false, false, true, true, true, true, true]);
      assert.deepEqual(windows.map((w) => w.window.frames), [1, 2, 3, 3, 3, 2, 3, 3]);
      assertStats(windows[6], [50, 60, 70]);
      const completeOnly = await run(items, { window: '0.5s', hop: 1 });
      assert.deepEqual(spans(completeOnly), spans(windows.slice(3)));
    });

    it('hop in seconds: a grid from the first frame, one window per frame however many points it passes', async () => {
      const tenth = await run(frames([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], (i) => i / 10), { window: 4, hop: '0.3s' });
      // Frame k ends at (k+1)/10: grid points 0.3, 0.6, 0.9 fall on frames 2 (partial, skipped), 5, 8; flush adds 9.
      assert.deepEqual(spans(tenth), [[2, 5], [5, 8], [6, 9]]);
      const gap = [0, 0.1, 0.2, 1.0, 1.1].map((t, i) => frame(i, i, t));
      assert.deepEqual(spans(await run(gap, { window: 1, hop: '0.25s', flush: false })), [[2, 2], [3, 3]]);
      assert.deepEqual(spans(await run(gap, { window: 1, hop: '0.25s' })), [[2, 2], [3, 3], [4, 4]]);
    });

    it('errors when a frame has no time and no fps is given', async () => {
      await assert.rejects(run(frames([1, 2, 3]), { window: '1s' }), (e) => e instanceof UsageError && /no presentation time/.test(e.message) && /frame 0/.test(e.message));
      await assert.rejects(run(frames([1, 2, 3]), { window: 2, hop: '1s' }), UsageError);
    });
  });

  it('errors on a metric the results lack, listing what they have', async () => {
    await assert.rejects(run(frames([1, 2, 3]), { window: 2, metrics: ['vmaf_neg'] }), (e) => e instanceof UsageError && /"vmaf_neg" is not in the results/.test(e.message) && /vmaf, integer_motion2/.test(e.message));
  });

  it('keeps one set of windows per rendition', async () => {
    const items = [];
    for (let i = 0; i < 6; i++) {
      items.push({ rendition: '1080p', result: frame(i, 90 + i) });
      items.push({ rendition: '360p', result: frame(i, 40 + i) });
    }
    const windows = await run(items, { window: 3, hop: 3 });
    assert.deepEqual(windows.map((w) => [w.rendition, w.startIndex, w.endIndex, w.mean]), [
      ['1080p', 0, 2, 91], ['360p', 0, 2, 41], ['1080p', 3, 5, 94], ['360p', 3, 5, 44],
    ]);
    // A custom select.
    const custom = await lastValueFrom(from(items).pipe(rollingWindows({ window: 3, hop: 3, select: (x) => ({ result: x.result }) }), toArray()));
    assert.deepEqual(spans(custom), [[0, 1], [1, 2], [3, 4], [4, 5]]);
  });

  it('NaN makes the percentiles NaN', async () => {
    const [w] = await run(frames([1, NaN, 3]), { window: 3, hop: 3 });
    assert.ok(Number.isNaN(w.p5));
    assert.ok(Number.isNaN(w.mean));
  });

  it('is cold: each subscription starts afresh', async () => {
    const op = rollingWindows({ window: 2, hop: 2 });
    const source = from(frames([1, 2, 3, 4]));
    const a = await lastValueFrom(source.pipe(op, toArray()));
    const b = await lastValueFrom(source.pipe(op, toArray()));
    assert.deepEqual(a, b);
    assert.deepEqual(spans(a), [[0, 1], [2, 3]]);
  });

  it('windowLine: type first, fixed order, non-finite as null', () => {
    const w = { rendition: '720p', metric: 'vmaf', window: { frames: 3, seconds: 0.1 }, complete: true, startIndex: 4, endIndex: 6, startPts: 0.4, endPts: 0.6, mean: NaN, min: 1, max: Infinity, harmonic_mean: 2, p5: 1, 'p2.5': 1 };
    const line = windowLine(w);
    assert.deepEqual(Object.keys(line), ['type', 'rendition', 'metric', 'window', 'complete', 'startIndex', 'endIndex', 'startPts', 'endPts', 'mean', 'min', 'max', 'harmonic_mean', 'p5', 'p2.5']);
    assert.equal(line.type, 'window');
    assert.equal(line.mean, null);
    assert.equal(line.max, null);
    assert.equal(JSON.stringify(windowLine({ metric: 'vmaf', window: { frames: 2 }, complete: false, startIndex: 0, endIndex: 1, mean: 1.5, min: 1, max: 2, harmonic_mean: 1.4, p5: 1 })),
      '{"type":"window","metric":"vmaf","window":{"frames":2},"complete":false,"startIndex":0,"endIndex":1,"mean":1.5,"min":1,"max":2,"harmonic_mean":1.4,"p5":1}');
    assert.ok(Number.isNaN(w.mean), 'the input is left as it was');
  });

  describe('on real scores (ladder_320x180_300f, libvmaf 3.2.0, scene cut at frame 200)', function () {
    let golden;
    let vmaf;
    before(function () {
      golden = goldenClip('ladder_320x180_300f').log();
      vmaf = golden.frames.map((f) => f.metrics.vmaf);
    });
    const results = () => golden.frames.map((f) => ({ index: f.frameNum, features: {}, scores: { vmaf: f.metrics.vmaf } }));

    it('2s windows at 25 fps, every second, against a plain computation', async () => {
      const windows = await run(results(), { window: '2s', fps: 25, percentiles: [5, 50] });
      const ends = Array.from({ length: 11 }, (_, i) => 49 + 25 * i);
      assert.deepEqual(spans(windows), ends.map((e) => [e - 49, e]));
      windows.forEach((w, i) => {
        assert.equal(w.startPts, (ends[i] - 49) / 25);
        assert.equal(w.endPts, ends[i] / 25);
        assertStats(w, vmaf.slice(ends[i] - 49, ends[i] + 1), [5, 50]);
      });
      // Values read off the log: the dip before the cut, the flat stretch after it.
      assert.equal(windows[6].min, Math.min(...vmaf.slice(150, 200)));
      assert.ok(Math.abs(windows[6].min - 33.659) < 5e-4);
      assert.equal(windows[6].p5, [...vmaf.slice(150, 200)].sort((a, b) => a - b)[2]);
      assert.ok(Math.abs(windows[6].mean - 37.414) < 5e-4, String(windows[6].mean));
      assert.ok(Math.abs(windows[7].max - 70.97) < 5e-4 && windows[7].min === windows[6].min, 'the window across the cut spans both scenes');
      assert.ok(Math.abs(windows[10].p5 - 70.97) < 5e-4);
    });

    it('one window over the whole run is the pooled_metrics, bit for bit', async () => {
      const [w] = await run(results(), { window: 300, hop: 300 });
      for (const key of ['min', 'max', 'mean', 'harmonic_mean']) assert.equal(w[key], golden.pooled_metrics.vmaf[key], key);
    });
  });
});

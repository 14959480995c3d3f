// Threshold alerts: the grammar and its errors, start exactly when the duration is
// reached (frames, seconds by pts or index/fps), clear on the first frame that fails,
// repeated episodes, immediate alerts, windowed stats, renditions, the NDJSON line, and
// alerts on real scores.
import assert from 'node:assert/strict';
import { from, lastValueFrom, toArray } from 'rxjs';
import { alerts, parseAlertSpec, alertLine } from '../dist/pipeline/alerts.js';
import { UsageError } from '../dist/errors.js';
import { goldenClip } from './helpers/golden.mjs';

const frame = (index, vmaf, pts) => ({
  index,
  features: { integer_motion2: vmaf / 4 },
  scores: { vmaf },
  ...(pts === undefined ? {} : { refPts: pts }),
});
const frames = (values, pts) => values.map((v, i) => frame(i, v, pts?.(i)));
const run = (items, specs, options) => lastValueFrom(from(items).pipe(alerts(specs, options), toArray()));
/** Events as [state, index, since.index, value]. */
const brief = (events) => events.map((e) => [e.state, e.index, e.since.index, e.value]);

describe('alerts', function () {
  describe('grammar', () => {
    const cases = {
      'vmaf<70 for 2s': { metric: 'vmaf', comparator: '<', threshold: 70, for: { seconds: 2 } },
      'vmaf_neg < 60 for 48 frames': { metric: 'vmaf_neg', comparator: '<', threshold: 60, for: { frames: 48 } },
      'integer_motion2>20': { metric: 'integer_motion2', comparator: '>', threshold: 20 },
      '  720p:vmaf <= 70.5 for 500ms ': { rendition: '720p', metric: 'vmaf', comparator: '<=', threshold: 70.5, for: { seconds: 0.5 } },
      '1080p_hi.v2 : vmaf>=-1e1 for 1f': { rendition: '1080p_hi.v2', metric: 'vmaf', comparator: '>=', threshold: -10, for: { frames: 1 } },
      'p5(vmaf) < 50 over 5s': { stat: 'p5', metric: 'vmaf', comparator: '<', threshold: 50, over: { seconds: 5 } },
      'p2.5(vmaf)<50 over 120f': { stat: 'p2.5', metric: 'vmaf', comparator: '<', threshold: 50, over: { frames: 120 } },
      'mean( vmaf )>=.5 for 10 frame over 2 seconds': { stat: 'mean', metric: 'vmaf', comparator: '>=', threshold: 0.5, for: { frames: 10 }, over: { seconds: 2 } },
      'harmonic_mean(vmaf)<60 over 1sec': { stat: 'harmonic_mean', metric: 'vmaf', comparator: '<', threshold: 60, over: { seconds: 1 } },
    };
    for (const [text, expected] of Object.entries(cases)) {
      it(`parses ${JSON.stringify(text)}`, () => assert.deepEqual(parseAlertSpec(text), { text: text.trim(), ...expected }));
    }

    // [spec, where the error points, what it says]
    const errors = [
      ['', /bad alert "": it is empty/],
      ['vmaf', /at the end: expected a comparator/],
      ['vmaf==70', /at column 5 \("==70"\): expected a comparator/],
      ['vmaf =< 70', /at column 6 \("=< 70"\): expected a comparator/],
      ['vmaf<<70', /at column 5 \("<<70"\): unknown comparator/],
      ['vmaf<abc', /at column 6 \("abc"\): expected a number after "<"/],
      ['vmaf<70for 2s', /at column 6 \("70for 2s"\): expected a number after "<", then a space or the end, not "70for"/],
      ['vmaf<70 for', /at the end: expected a duration after "for"/],
      ['vmaf<70 for 2', /at column 13 \("2"\): "2" needs a unit/],
      ['vmaf<70 for 2x', /at column 13 \("2x"\): unknown unit "x"/],
      ['vmaf<70 for 1.5f', /at column 13 \("1.5f"\): a length in frames must be a whole number/],
      ['vmaf<70 for 0s', /at column 13 \("0s"\): a length in seconds must be more than/],
      ['vmaf<70 during 2s', /at column 9 \("during 2s"\): expected "for DURATION" or the end/],
      ['vmaf<70 for 2s for 3s', /at column 16 \("for 3s"\): "for" is given twice/],
      ['vmaf<70 for 2s)', /at column 15 \("\)"\): expected the end/],
      ['7vmaf<70', /at column 1 \("7vmaf<70"\): expected a metric name/],
      ['720p:<70', /at column 6 \("<70"\): expected a metric name/],
      ['p5(vmaf)<50', /at the end: p5\(vmaf\) needs a window: add "over DURATION"/],
      ['vmaf<50 over 5s', /at column 9 \("over 5s"\): "over" needs a statistic, e.g. mean\(vmaf\) < 50 over 5s/],
      ['p101(vmaf)<50 over 5s', /at column 1 .*: a percentile is from p0 to p100, not p101/],
      ['avg(vmaf)<50 over 1s', /at column 1 .*: unknown statistic "avg"/],
      ['p5(vmaf<50 over 1s', /at column 8 \("<50 over 1s"\): expected "\)" after p5\(vmaf/],
      ['p5()<50 over 1s', /at column 4 .*: expected a metric name inside p5/],
    ];
    for (const [text, message] of errors) {
      it(`rejects ${JSON.stringify(text)}`, () => {
        assert.throws(() => parseAlertSpec(text), (e) => {
          assert.ok(e instanceof UsageError, e);
          assert.equal(e.code, 'E_USAGE');
          assert.match(e.message, message);
          return true;
        });
      });
    }

    it('alerts() rejects a bad spec at once', () => {
      assert.throws(() => alerts(['vmaf<70', 'vmaf<']), /bad alert "vmaf<" at the end/);
      assert.throws(() => alerts(['vmaf<70'], { fps: -1 }), /bad fps/);
    });
  });

  describe('episodes', () => {
    it('an immediate alert starts on the first frame that holds, clears on the first that fails', async () => {
      const events = await run(frames([80, 60, 60, 80, 60, 80, 80]), ['vmaf<70']);
      assert.deepEqual(brief(events), [['start', 1, 1, 60], ['clear', 3, 1, 80], ['start', 4, 4, 60], ['clear', 5, 4, 80]]);
      assert.deepEqual(events[0], { spec: 'vmaf<70', state: 'start', metric: 'vmaf', comparator: '<', threshold: 70, index: 1, value: 60, since: { index: 1 } });
    });

    it('for N frames: starts on the Nth frame of an episode; shorter episodes say nothing', async () => {
      const values = [80, 60, 60, 80, 60, 60, 60, 60, 80, 60, 60, 60];
      const events = await run(frames(values), ['vmaf<70 for 3f']);
      // 1-2: too short. 4-7: start on 6, clear on 8. 9-11: start on 11, still active at the end (no clear).
      assert.deepEqual(brief(events), [['start', 6, 4, 60], ['clear', 8, 4, 80], ['start', 11, 9, 60]]);
    });

    it('for D seconds by pts: starts once t − t(since) + frame duration reaches D', async () => {
      const values = [80, 60, 60, 80, 60, 60, 60, 60, 80, 60, 60, 60];
      const byFrames = await run(frames(values), ['vmaf<70 for 3f']);
      const tenths = (i) => 100 + i / 10;
      // 0.3 s at 10 fps is 3 frames; 0.25 s too (first frame whose end passes 0.25 s); 0.2 s is 2.
      for (const spec of ['vmaf<70 for 0.3s', 'vmaf<70 for 300ms', 'vmaf<70 for 0.25s']) {
        const events = await run(frames(values, tenths), [spec]);
        assert.deepEqual(brief(events), brief(byFrames), spec);
        for (const e of events) {
          assert.equal(e.pts, tenths(e.index));
          assert.equal(e.since.pts, tenths(e.since.index));
        }
      }
      assert.deepEqual(brief(await run(frames(values, tenths), ['vmaf<70 for 0.2s'])), [['start', 2, 1, 60], ['clear', 3, 1, 80], ['start', 5, 4, 60], ['clear', 8, 4, 80], ['start', 10, 9, 60]]);
    });

    it('for D seconds by index / fps, and across a pts gap', async () => {
      const values = [80, 60, 60, 80, 60, 60, 60, 60, 80, 60, 60, 60];
      assert.deepEqual(brief(await run(frames(values), ['vmaf<70 for 0.3s'], { fps: 10 })), [['start', 6, 4, 60], ['clear', 8, 4, 80], ['start', 11, 9, 60]]);
      // pts 0, 1, 2, 2.04, 2.08: an episode from frame 1; at frame 2, 1 s has passed plus a 1 s frame.
      const gap = [0, 1, 2, 2.04, 2.08].map((t, i) => frame(i, i === 0 ? 80 : 60, t));
      assert.deepEqual(brief(await run(gap, ['vmaf<70 for 2s'])), [['start', 2, 1, 60]]);
      assert.deepEqual(brief(await run(gap, ['vmaf<70 for 2.5s'])), []);
    });

    it('comparators at the threshold', async () => {
      const items = frames([69, 70, 71]);
      const at = async (spec) => (await run(items, [spec])).map((e) => `${e.state}@${e.index}`).join(' ');
      assert.equal(await at('vmaf<70'), 'start@0 clear@1');
      assert.equal(await at('vmaf<=70'), 'start@0 clear@2');
      assert.equal(await at('vmaf>70'), 'start@2');
      assert.equal(await at('vmaf>=70'), 'start@1');
      assert.equal(await at('integer_motion2>17.5'), 'start@2'); // a feature: 69/4, 70/4, 71/4
    });

    it('NaN never holds: it clears an active alert', async () => {
      const events = await run(frames([60, 60, NaN, 60]), ['vmaf<70']);
      assert.deepEqual(events.map((e) => [e.state, e.index]), [['start', 0], ['clear', 2], ['start', 3]]);
      assert.ok(Number.isNaN(events[1].value));
      assert.equal(alertLine(events[1]).value, null);
    });

    it('several specs: events of a frame in spec order, each with its own state', async () => {
      const events = await run(frames([80, 60, 40, 40, 80]), ['vmaf<70 for 2f', 'vmaf<50', 'vmaf>75']);
      assert.deepEqual(events.map((e) => `${e.spec} ${e.state}@${e.index}`), [
        'vmaf>75 start@0', 'vmaf>75 clear@1', 'vmaf<70 for 2f start@2', 'vmaf<50 start@2', 'vmaf<70 for 2f clear@4', 'vmaf<50 clear@4', 'vmaf>75 start@4',
      ]);
    });
  });

  describe('windowed stats', () => {
    it('mean over 2f: holds only once the window is complete', async () => {
      const events = await run(frames([60, 80, 60, 80, 60, 60, 80]), ['mean(vmaf)<70 over 2f']);
      // means: -, 70, 70, 70, 70, 60, 70
      assert.deepEqual(brief(events), [['start', 5, 5, 60], ['clear', 6, 5, 70]]);
      assert.equal(events[0].stat, 'mean');
    });

    it('p50 and min over seconds, with a duration', async () => {
      const values = [90, 90, 50, 90, 50, 50, 90, 90, 90, 90];
      const tenths = (i) => i / 10;
      // Windows of 0.3 s = 3 frames. p50 (nearest rank: 2nd of 3): 90 (0-2), 90, 50 (2-4), 50 (3-5), 50 (4-6), 90 (5-7), 90…
      assert.deepEqual(brief(await run(frames(values, tenths), ['p50(vmaf)<60 over 0.3s'])), [['start', 4, 4, 50], ['clear', 7, 4, 90]]);
      assert.deepEqual(brief(await run(frames(values, tenths), ['p50(vmaf)<60 over 0.3s for 2f'])), [['start', 5, 4, 50], ['clear', 7, 4, 90]]);
      // min: 50 on the windows ending at 2..7 (5-7 holds 50, 90, 90), 90 from 8; held 0.5 s on frame 6.
      assert.deepEqual(brief(await run(frames(values, tenths), ['min(vmaf)<60 over 300ms for 0.5s'])), [['start', 6, 2, 50], ['clear', 8, 2, 90]]);
    });
  });

  describe('renditions', () => {
    const ladder = [];
    const scores = { '1080p': [90, 60, 60, 60, 90], '720p': [60, 60, 90, 60, 60] };
    for (let i = 0; i < 5; i++) for (const name of ['1080p', '720p']) ladder.push({ rendition: name, result: frame(i, scores[name][i]) });

    it('a spec without a prefix runs on each rendition on its own', async () => {
      const events = await run(ladder, ['vmaf<70 for 2f']);
      assert.deepEqual(events.map((e) => `${e.rendition} ${e.state}@${e.index} since ${e.since.index}`), ['720p start@1 since 0', '1080p start@2 since 1', '720p clear@2 since 0', '1080p clear@4 since 1', '720p start@4 since 3']);
    });

    it('a prefixed spec runs on its rendition only', async () => {
      const events = await run(ladder, ['720p:vmaf<70 for 2f']);
      assert.deepEqual(events.map((e) => `${e.rendition} ${e.state}@${e.index}`), ['720p start@1', '720p clear@2', '720p start@4']);
      assert.deepEqual(await run(frames([1, 2, 3]), ['720p:vmaf<70']), [], 'never matches a single stream');
    });
  });

  describe('errors in the stream', () => {
    it('a metric the results lack', async () => {
      await assert.rejects(run(frames([1, 2]), ['vmaf_neg<70']), (e) => e instanceof UsageError && /alert "vmaf_neg<70": metric "vmaf_neg" is not in the results/.test(e.message));
    });
    it('seconds without a time', async () => {
      await assert.rejects(run(frames([1, 2]), ['vmaf<70 for 2s']), (e) => e instanceof UsageError && /no presentation time/.test(e.message));
      await assert.rejects(run(frames([1, 2]), ['mean(vmaf)<70 over 1s']), UsageError);
      assert.equal((await run(frames([1, 2]), ['vmaf<70 for 2f'])).length, 1, 'frames need no time');
    });
  });

  it('alertLine: type first, fixed order', () => {
    const event = { spec: '720p:p5(vmaf)<50 over 5s for 1s', state: 'start', rendition: '720p', metric: 'vmaf', stat: 'p5', comparator: '<', threshold: 50, index: 250, pts: 10, value: 42.5, since: { index: 225, pts: 9 } };
    assert.equal(JSON.stringify(alertLine(event)),
      '{"type":"alert","spec":"720p:p5(vmaf)<50 over 5s for 1s","state":"start","rendition":"720p","metric":"vmaf","stat":"p5","comparator":"<","threshold":50,"index":250,"pts":10,"value":42.5,"since":{"index":225,"pts":9}}');
    assert.equal(JSON.stringify(alertLine({ spec: 'vmaf<70', state: 'clear', metric: 'vmaf', comparator: '<', threshold: 70, index: 3, value: 80, since: { index: 1 } })),
      '{"type":"alert","spec":"vmaf<70","state":"clear","metric":"vmaf","comparator":"<","threshold":70,"index":3,"value":80,"since":{"index":1}}');
  });

  describe('on real scores (ladder_320x180_300f, libvmaf 3.2.0, scene cut at frame 200)', function () {
    let vmaf;
    before(function () {
      vmaf = goldenClip('ladder_320x180_300f').log().frames.map((f) => f.metrics.vmaf);
    });
    const results = () => vmaf.map((v, i) => ({ index: i, features: {}, scores: { vmaf: v } }));

    /** A plain reading of the semantics: runs of frames where `holds`, start on the nth, clear on the first that fails. */
    function expected(holds, n) {
      const out = [];
      let since = -1;
      let active = false;
      for (let i = 0; i < vmaf.length; i++) {
        if (holds(i)) {
          if (since < 0) since = i;
          if (!active && i - since + 1 >= n) {
            active = true;
            out.push(['start', i, since]);
          }
        } else {
          if (active) out.push(['clear', i, since]);
          since = -1;
          active = false;
        }
      }
      return out;
    }
    const indices = (events) => events.map((e) => [e.state, e.index, e.since.index]);

    it('vmaf<50 for 1s at 25 fps: the low scene, cleared by the cut', async () => {
      const events = await run(results(), ['vmaf<50 for 1s'], { fps: 25 });
      assert.deepEqual(indices(events), expected((i) => vmaf[i] < 50, 25));
      assert.deepEqual(indices(events), [['start', 137, 113], ['clear', 200, 113]]);
      assert.equal(events[0].pts, 137 / 25);
      assert.equal(events[0].since.pts, 113 / 25);
      assert.equal(events[1].value, vmaf[200]);
    });

    it('repeated episodes: vmaf<40 for 3f', async () => {
      const events = await run(results(), ['vmaf<40 for 3f']);
      const want = expected((i) => vmaf[i] < 40, 3);
      assert.ok(want.length >= 6, 'several episodes');
      assert.deepEqual(indices(events), want);
    });

    it('vmaf>70 for 2s: after the cut, still active at the end', async () => {
      const events = await run(results(), ['vmaf>70 for 2s'], { fps: 25 });
      assert.deepEqual(indices(events), [['start', 249, 200]]);
    });

    it('mean(vmaf)<45 over 1s: the smoothed score crosses once', async () => {
      const events = await run(results(), ['mean(vmaf)<45 over 1s'], { fps: 25 });
      const mean = (i) => (i < 24 ? Infinity : vmaf.slice(i - 24, i + 1).reduce((a, b) => a + b, 0) / 25);
      assert.deepEqual(indices(events), expected((i) => mean(i) < 45, 1));
      assert.deepEqual(indices(events), [['start', 135, 135], ['clear', 206, 135]]);
    });
  });
});

// Alerts and rolling windows end to end: a clip made for it (good frames of src01, twelve
// frames with their luma inverted, good again) through the command line, with --alert and
// --window: the alert starts on the third bad frame and clears on the first good one, on
// stderr (even with -q) and as NDJSON lines right after their frame; the window lines hold
// exactly the statistics of the per-frame VMAF of the same log; in a ladder every line names
// its rendition; the library's `window` and `alert` events are the operators' output.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { lastValueFrom, toArray } from 'rxjs';
import { alerts, rollingWindows, score, scoreEvents, scoreLadder } from '../dist/index.js';
import { goldenClip } from './helpers/golden.mjs';
import { negateLuma, range, readY4m, writeY4m } from './helpers/y4m.mjs';
import { windowReference } from './helpers/window-reference.mjs';

const BIN = fileURLToPath(new URL('../bin/vmaf-stream', import.meta.url));
const clip = goldenClip('src01_160x90_8bit');
const REF = clip.ref;
const DIS = clip.dis;
const BASE = ['--backend', 'cpu', '--threads', '2', '--ndjson', '-o', '-', '--precision', '17', '-q'];
const BAD = range(16, 28); // frames whose luma is inverted

function cli(args, status = 0) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 120000 });
  assert.equal(r.status, status, `vmaf-stream ${args.join(' ')}: ${r.stderr}`);
  if (status !== 0) return r;
  const lines = r.stdout.trim().split('\n').map((line) => JSON.parse(line));
  return { stderr: r.stderr, lines, frames: lines.filter((l) => 'frameNum' in l), typed: (type) => lines.filter((l) => l.type === type) };
}


describe('alerts and windows end to end', function () {
  let tmp;
  let degraded;
  before(() => {
    tmp = mkdtempSync(join(tmpdir(), 'vmaf-alerts-e2e-'));
    const dis = readY4m(DIS);
    const negate = negateLuma(dis);
    degraded = writeY4m(join(tmp, 'degraded.y4m'), dis, range(0, 48), (planes, k) => (BAD.includes(k) ? negate(planes) : planes));
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('--alert: start on the third bad frame, clear on the first good one; stderr (even with -q) and NDJSON', () => {
    const run = cli(['-r', REF, '-d', degraded, '--alert', 'vmaf<50 for 3f', ...BASE]);
    const vmaf = run.frames.map((f) => f.metrics.vmaf);
    // The clip does what it was made for.
    assert.ok(BAD.every((i) => vmaf[i] < 50) && vmaf.every((v, i) => BAD.includes(i) || v > 85), vmaf.join(' '));

    const lines = run.typed('alert');
    assert.deepEqual(
      lines.map((a) => [a.state, a.index, a.since.index, a.spec, a.metric, a.comparator, a.threshold]),
      [
        ['start', 18, 16, 'vmaf<50 for 3f', 'vmaf', '<', 50],
        ['clear', 28, 16, 'vmaf<50 for 3f', 'vmaf', '<', 50],
      ],
    );
    assert.equal(lines[0].value, vmaf[18]);
    assert.equal(lines[1].value, vmaf[28]);
    assert.equal(lines[0].pts, 18 / 25);
    assert.equal(lines[0].rendition, undefined);
    // Each alert line comes right after the line of the frame it fires on.
    for (const line of lines) assert.equal(run.lines[run.lines.indexOf(line) - 1].frameNum, line.index);

    assert.match(run.stderr, /^vmaf-stream: alert: vmaf<50 for 3f: started at frame 18 \(0\.720 s\), vmaf \d+\.\d{3}, holding since frame 16 \(0\.640 s\)$/m);
    assert.match(run.stderr, /^vmaf-stream: alert: vmaf<50 for 3f: cleared at frame 28 \(1\.120 s\), vmaf 9\d\.\d{3}$/m);
  });

  it('--alert in seconds and on a windowed statistic', () => {
    // 25 fps: 0.2 s is 5 frames (start on frame 20); the mean over 4 frames first drops under
    // 50 at frame 17 (two good frames, two bad) and comes back at frame 30 (one bad, three good).
    const run = cli(['-r', REF, '-d', degraded, '--alert', 'vmaf<50 for 0.2s', '--alert', 'mean(vmaf) < 50 over 4f', ...BASE]);
    assert.deepEqual(
      run.typed('alert').map((a) => [a.spec, a.state, a.index, a.since.index, a.stat]),
      [
        ['mean(vmaf) < 50 over 4f', 'start', 17, 17, 'mean'],
        ['vmaf<50 for 0.2s', 'start', 20, 16, undefined],
        ['vmaf<50 for 0.2s', 'clear', 28, 16, undefined],
        ['mean(vmaf) < 50 over 4f', 'clear', 30, 17, 'mean'],
      ],
    );
  });

  it('--window: window lines with exactly the statistics of the per-frame VMAF in the same log', () => {
    const run = cli(['-r', REF, '-d', degraded, '--window', '8f', '--window-hop', '4f', '--window-percentile', '5,50', '--window-metrics', 'vmaf,integer_adm2', ...BASE]);
    const vmaf = run.frames.map((f) => f.metrics.vmaf);
    const adm2 = run.frames.map((f) => f.metrics.integer_adm2);
    const windows = run.typed('window');
    // A complete 8-frame window every 4 frames: ending at frames 7, 11, …, 47; vmaf then adm2.
    const ends = range(0, 11).map((k) => 7 + 4 * k);
    assert.deepEqual(windows.map((w) => [w.metric, w.endIndex]), ends.flatMap((end) => [['vmaf', end], ['integer_adm2', end]]));
    for (const w of windows) {
      const values = (w.metric === 'vmaf' ? vmaf : adm2).slice(w.endIndex - 7, w.endIndex + 1);
      assert.deepEqual(
        { ...w },
        {
          type: 'window',
          metric: w.metric,
          window: { frames: 8 },
          complete: true,
          startIndex: w.endIndex - 7,
          endIndex: w.endIndex,
          startPts: (w.endIndex - 7) / 25,
          endPts: w.endIndex / 25,
          ...windowReference(values, [5, 50]),
        },
      );
      // Right after the frame that completes it.
      const at = run.lines.indexOf(w);
      assert.ok(run.lines.slice(at - 2, at).some((l) => l.frameNum === w.endIndex));
    }
    // No window line on stderr.
    assert.doesNotMatch(run.stderr, /window/);
  });

  it('--window in seconds: 0.32 s at 25 fps is 8 frames, the same statistics', () => {
    const frames = cli(['-r', REF, '-d', degraded, '--window', '8f', ...BASE]).typed('window');
    const seconds = cli(['-r', REF, '-d', degraded, '--window', '320ms', ...BASE]).typed('window');
    assert.equal(frames.length, 11); // default hop: half the window
    assert.deepEqual(seconds.map((w) => ({ ...w, window: { frames: w.window.frames } })), frames);
    assert.deepEqual(seconds[0].window, { frames: 8, seconds: 0.32 });
  });

  it('a ladder: lines name their rendition; a rendition prefix limits an alert to it', () => {
    const run = cli([
      '-r', REF, '-d', `name=bad:path=${degraded}`, '-d', `name=good:path=${DIS}`,
      '--alert', 'vmaf<50 for 3f', '--alert', 'good:vmaf<99', '--window', '16f', ...BASE,
    ]);
    const lines = run.typed('alert');
    assert.deepEqual(
      lines.filter((a) => a.spec === 'vmaf<50 for 3f').map((a) => [a.rendition, a.state, a.index]),
      [['bad', 'start', 18], ['bad', 'clear', 28]],
    );
    const prefixed = lines.filter((a) => a.spec === 'good:vmaf<99');
    assert.deepEqual(prefixed.map((a) => [a.rendition, a.state, a.index]), [['good', 'start', 0]]);
    assert.match(run.stderr, /^vmaf-stream: alert: bad: vmaf<50 for 3f: started at frame 18/m);
    assert.match(run.stderr, /^vmaf-stream: alert: good:vmaf<99: started at frame 0/m);
    const windows = run.typed('window');
    for (const name of ['bad', 'good']) {
      const vmaf = run.frames.filter((f) => f.rendition === name).map((f) => f.metrics.vmaf);
      const mine = windows.filter((w) => w.rendition === name);
      assert.deepEqual(mine.map((w) => w.endIndex), [15, 23, 31, 39, 47]);
      for (const w of mine) assert.equal(w.mean, windowReference(vmaf.slice(w.startIndex, w.endIndex + 1), []).mean);
    }
    assert.ok(Object.keys(windows[0]).indexOf('rendition') === 1, 'type first, then rendition');
  });

  it('usage errors: bad specs, a window without an NDJSON log, an unknown rendition', () => {
    const cases = [
      [['--alert', 'vmaf<<50'], /bad alert "vmaf<<50"/],
      [['--alert', 'p5(vmaf)<50'], /needs a window/],
      [['--window', '2s'], /--window writes its windows into the NDJSON log/],
      [['--ndjson', '-o', '-', '--window', '2x'], /bad window "2x"/],
      [['--window-hop', '2s'], /--window-hop needs --window/],
      [['--ndjson', '-o', '-', '--window', '4f', '--window-percentile', '101'], /--window-percentile/],
      [['--alert', 'other:vmaf<50'], /no rendition named "other"/],
    ];
    for (const [args, pattern] of cases) {
      const r = cli(['-r', REF, '-d', DIS, ...args], 2);
      assert.match(r.stderr, pattern, args.join(' '));
    }
  });

  it('the library refuses a rendition prefix that names no rendition', async () => {
    const options = { backend: 'cpu', threads: 2, frameCnt: 4 };
    await assert.rejects(lastValueFrom(score(REF, DIS, { ...options, alerts: ['dis:vmaf<50'] })), /a rendition prefix needs a ladder/);
    await assert.rejects(lastValueFrom(scoreLadder(REF, [{ input: DIS, name: 'a' }], { ...options, alerts: ['b:vmaf<50'] })), /no rendition named "b"/);
    await assert.rejects(lastValueFrom(score(REF, DIS, { ...options, windows: { window: '4f', metrics: ['nope'] } })), /metric "nope" is not in the results/);
  });

  it('the library: `window` and `alert` events are what the operators give on score()', async () => {
    const options = { backend: 'cpu', threads: 2, models: ['version=vmaf_v0.6.1:name=vmaf'] };
    const windowSpec = { window: '8f', hop: '4f', percentiles: [5] };
    const alertSpecs = ['vmaf<50 for 3f'];
    const seen = { window: [], alert: [], frames: 0, order: [] };
    const summary = await new Promise((resolve, reject) =>
      scoreEvents(REF, degraded, { ...options, windows: windowSpec, alerts: alertSpecs })
        .on('frame', () => {
          seen.frames++;
          seen.order.push('frame');
        })
        .on('window', (w) => {
          seen.window.push(w);
          seen.order.push('window');
        })
        .on('alert', (a) => {
          seen.alert.push(a);
          seen.order.push('alert');
        })
        .on('end', resolve)
        .on('error', reject),
    );
    assert.equal(summary.frameCount, 48);
    // Composed by hand on the Observable API: the same values.
    const composedWindows = await lastValueFrom(score(REF, degraded, options).pipe(rollingWindows({ ...windowSpec, metrics: ['vmaf'] }), toArray()));
    const composedAlerts = await lastValueFrom(score(REF, degraded, options).pipe(alerts(alertSpecs), toArray()));
    assert.deepEqual(seen.window, composedWindows);
    assert.deepEqual(seen.alert, composedAlerts);
    assert.deepEqual(seen.alert.map((a) => [a.state, a.index]), [['start', 18], ['clear', 28]]);
    // Each event right after the frame that caused it: the alert on frame 18 after 19 frames.
    assert.equal(seen.order.slice(0, seen.order.indexOf('alert')).filter((e) => e === 'frame').length, 19);
    assert.equal(seen.order[seen.order.indexOf('alert') - 1], 'frame');

    // And the callbacks work on the Observable view too.
    const called = [];
    await lastValueFrom(score(REF, degraded, { ...options, alerts: alertSpecs, onAlert: (a) => called.push(a) }).pipe(toArray()));
    assert.deepEqual(called, composedAlerts);
  });
});

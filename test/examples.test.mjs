// The examples in examples/ run as a user runs them (from the checkout's root, importing
// 'vmaf-stream'), and do what they say: the live transcoder QC script (ffmpeg → named
// pipes → vmaf-stream, with windows, an alert and a report), the HTTP QC service's
// self-test, the batch comparison, and the earlier examples.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function run(command, args, options = {}) {
  const r = spawnSync(command, args, { cwd: ROOT, encoding: 'utf8', timeout: 120000, ...options });
  assert.equal(r.status, 0, `${command} ${args.join(' ')}:\n${r.stdout}\n${r.stderr}`);
  return r;
}

describe('examples', function () {
  let tmp;
  before(() => (tmp = mkdtempSync(join(tmpdir(), 'vmaf-examples-'))));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('live-transcoder-qc.sh: a 3-rung ladder through named pipes, NDJSON with windows and an alert, a report; pipes removed', () => {
    const out = join(tmp, 'live');
    // Its temporary directory (the pipes, the source) goes under TMPDIR: it must be gone after.
    const scratch = mkdtempSync(join(tmp, 'scratch-'));
    const r = run('bash', ['examples/live-transcoder-qc.sh', out], { env: { ...process.env, TMPDIR: scratch } });
    assert.deepEqual(readdirSync(scratch), [], 'the script left its pipes behind');
    assert.deepEqual(readdirSync(out).sort(), ['high.ts', 'low.ts', 'mid.ts', 'qc.ndjson', 'report.html']);
    for (const rung of ['high', 'mid', 'low']) assert.ok(statSync(join(out, `${rung}.ts`)).size > 1000, `${rung}.ts archived`);

    const lines = readFileSync(join(out, 'qc.ndjson'), 'utf8').trim().split('\n').map((line) => JSON.parse(line));
    const names = ['high', 'mid', 'low'];
    const frames = Object.fromEntries(names.map((n) => [n, lines.filter((l) => 'frameNum' in l && l.rendition === n)]));
    for (const n of names) assert.deepEqual(frames[n].map((f) => f.frameNum), [...Array(100).keys()], `${n}: 4 s at 25 fps`);
    // Rolling 1 s windows (25 frames) of both models, every half second, per rung.
    const windows = lines.filter((l) => l.type === 'window');
    for (const n of names) {
      const mine = windows.filter((w) => w.rendition === n && w.metric === 'vmaf');
      assert.ok(mine.length >= 6, `${n}: ${mine.length} windows`);
      assert.ok(mine.every((w) => w.window.seconds === 1 && w.window.frames === 25 && w.complete));
      assert.ok(windows.some((w) => w.rendition === n && w.metric === 'vmaf_neg'));
    }
    // The rungs are ordered, and the starved low rung raises the alert (and only it).
    const pooled = Object.fromEntries(lines.filter((l) => l.pooled_metrics).map((l) => [l.rendition, l.pooled_metrics.vmaf.mean]));
    assert.ok(pooled.high > pooled.mid && pooled.mid > pooled.low, JSON.stringify(pooled));
    const alerts = lines.filter((l) => l.type === 'alert');
    assert.ok(alerts.length > 0 && alerts.every((a) => a.rendition === 'low' && a.spec === 'vmaf<60 for 0.5s'), JSON.stringify(alerts));
    assert.equal(alerts[0].state, 'start');
    assert.match(r.stderr, /^vmaf-stream: alert: low: vmaf<60 for 0\.5s: started at frame \d+/m);
    assert.match(r.stderr, /^low: vmaf: \d+\.\d{6}$/m);

    const html = readFileSync(join(out, 'report.html'), 'utf8');
    assert.match(html, /^<!DOCTYPE html>/);
    for (const n of names) assert.ok(html.includes(`<div class="tile-name" title="${n}">${n}</div>`), n);
    assert.match(html, /vmaf&lt;60 for 0\.5s/);
  });

  it('qc-service.mjs --self-test: the HTTP service streams frame, window, alert and end events', () => {
    const r = run(process.execPath, ['examples/qc-service.mjs', '--self-test']);
    assert.match(r.stdout, /self-test passed/);
    const events = JSON.parse(/events: (\{.*\})/.exec(r.stdout)[1]);
    assert.equal(events.frame, 24, 'two renditions of 12 frames');
    assert.ok(events.window > 0 && events.alert > 0 && events.end === 1, JSON.stringify(events));
    assert.match(r.stdout, /^alert: dis dis:vmaf<99 for 2f start at frame \d+$/m);
    assert.match(r.stdout, /^dis: 12 frames, VMAF \d+\.\d{3}, VMAF NEG \d+\.\d{3}$/m);
  });

  it('batch-compare.mjs: encodes made at three CRFs, ranked by pooled VMAF; a table or JSON', () => {
    const rows = JSON.parse(run(process.execPath, ['examples/batch-compare.mjs', '--json']).stdout);
    assert.deepEqual(rows.map((r) => [r.name, r.frames]), [['x264 crf 18', 12], ['x264 crf 30', 12], ['x264 crf 42', 12]]);
    for (const row of rows) {
      for (const key of ['vmaf', 'vmaf_neg', 'vmaf_hmean']) assert.ok(row[key] > 0 && row[key] <= 100, `${row.name} ${key}`);
      assert.ok(row.vmaf_hmean <= row.vmaf);
    }
    assert.ok(rows[0].vmaf > rows[1].vmaf && rows[1].vmaf > rows[2].vmaf);

    const table = run(process.execPath, ['examples/batch-compare.mjs', 'examples/media/ref.y4m', 'distorted=examples/media/dis.y4m', 'examples/media/ref.y4m']).stdout.trim().split('\n');
    assert.match(table[0], /^encode\s+frames\s+VMAF\s+VMAF NEG\s+harmonic$/);
    assert.deepEqual(table.slice(1).map((line) => line.split(/\s+/)[0]), ['ref', 'distorted'], 'the source against itself first');
    assert.match(table[2], /^distorted\s+12\s+\d+\.\d{3}\s+\d+\.\d{3}\s+\d+\.\d{3}$/);
  });

  it('fluent-ladder.mjs: three fluent-ffmpeg commands encode a ladder, scored as they encode; the encodes are written', () => {
    const out = join(tmp, 'fluent');
    const r = run(process.execPath, ['examples/fluent-ladder.mjs', 'examples/media/ref.y4m', out]);
    assert.deepEqual(readdirSync(out).sort(), ['high.mp4', 'low.mkv', 'mid.mp4']);
    for (const rung of ['high', 'mid', 'low']) {
      assert.equal((r.stdout.match(new RegExp(`^${rung} frame \\d+: vmaf \\d+\\.\\d\\d$`, 'gm')) ?? []).length, 12, rung);
    }
    const pooled = Object.fromEntries([...r.stdout.matchAll(/^(\w+): 12 frames, pooled VMAF (\d+\.\d{3})$/gm)].map((m) => [m[1], Number(m[2])]));
    assert.ok(pooled.high > pooled.mid && pooled.high > pooled.low, JSON.stringify(pooled));
  });

  it('the earlier examples still run', () => {
    assert.match(run(process.execPath, ['examples/score-files.mjs']).stdout, /frame 11: vmaf \d+\.\d{3}\nmean \d+\.\d{3}, harmonic mean/);
    assert.match(run(process.execPath, ['examples/events.mjs']).stdout, /^12 frames, pooled VMAF \d+\.\d{4}$/m);
    assert.match(run(process.execPath, ['examples/ladder.mjs', 'examples/media/ref.y4m', 'a=examples/media/dis.y4m']).stdout, /^a: worst frame \d+ \(\d\.\d{3} s\), VMAF \d+\.\d{2}$/m);
    assert.match(run(process.execPath, ['examples/quality-gate.mjs']).stdout, /^PASS/);
    assert.equal(run(process.execPath, ['examples/stream-to-ndjson.mjs']).stdout.trim().split('\n').length, 12);
  });
});

// --report end to end: the command line writes one self-contained HTML page for a
// 2-rendition ladder, with both renditions, their pooled scores (the very numbers of the
// NDJSON summary lines), the alerts, the inputs and the backend; and it writes the page on
// Ctrl-C (SIGINT) too, with what was scored so far. (How the page looks is report.test.mjs'.)
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { goldenClip } from './helpers/golden.mjs';
import { negateLuma, range, readY4m, writeY4m } from './helpers/y4m.mjs';

const BIN = fileURLToPath(new URL('../bin/vmaf-stream', import.meta.url));
const WRITER = fileURLToPath(new URL('./helpers/fifo-writer.mjs', import.meta.url));
const clip = goldenClip('src01_160x90_8bit');
const REF = clip.ref;
const DIS = clip.dis;
const MODELS = ['-m', 'version=vmaf_v0.6.1:name=vmaf', '-m', 'version=vmaf_v0.6.1neg:name=vmaf_neg'];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The numbers of a page's pooled table: every title="…" of a cell, as numbers. */
const titles = (html) => [...html.matchAll(/<td class="num" title="([^"]+)">/g)].map((m) => Number(m[1]));

function assertSelfContained(html) {
  assert.match(html, /^<!DOCTYPE html>\n<html lang="en">/);
  assert.match(html, /<\/html>\n$/);
  assert.doesNotMatch(html, /<script|<link|<img|<iframe|@import|url\(/i);
  assert.doesNotMatch(html, /(src|href)="/i, 'nothing loaded from elsewhere');
}

describe('--report end to end', function () {
  let tmp;
  let degraded;
  before(() => {
    tmp = mkdtempSync(join(tmpdir(), 'vmaf-report-e2e-'));
    const dis = readY4m(DIS);
    const negate = negateLuma(dis);
    degraded = writeY4m(join(tmp, 'degraded.y4m'), dis, range(0, 48), (planes, k) => (k >= 16 && k < 28 ? negate(planes) : planes));
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('a 2-rendition ladder: both names, the pooled numbers, the alerts, inputs and backend', () => {
    const report = join(tmp, 'ladder.html');
    const log = join(tmp, 'ladder.ndjson');
    const r = spawnSync(
      process.execPath,
      [BIN, '-r', REF, '-d', `name=clean <main>:path=${DIS}`, '-d', `name=degraded:path=${degraded}`, ...MODELS, '--backend', 'cpu', '--threads', '2',
        '--ndjson', '-o', log, '--precision', '17', '--alert', 'vmaf<50 for 3f', '--report', report, '-q'],
      { encoding: 'utf8', timeout: 120000 },
    );
    assert.equal(r.status, 0, r.stderr);
    const html = readFileSync(report, 'utf8');
    assertSelfContained(html);
    const summaries = Object.fromEntries(
      readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l)).filter((l) => l.pooled_metrics).map((l) => [l.rendition, l]),
    );
    assert.deepEqual(Object.keys(summaries), ['clean <main>', 'degraded']);

    // Both renditions, escaped; an overview tile each, with the pooled VMAF.
    assert.equal(html.match(/<div class="tile-name" title="[^"]*">([^<]*)<\/div>/g).length, 2);
    assert.ok(html.includes('clean &lt;main&gt;') && !html.includes('clean <main>'));
    assert.ok(html.includes('>degraded<'));
    for (const { pooled_metrics: pooled } of Object.values(summaries)) {
      assert.ok(html.includes(`<div class="tile-score">${pooled.vmaf.mean.toFixed(2)}<span>vmaf mean</span>`), `tile of ${pooled.vmaf.mean}`);
    }
    // The pooled table: per rendition and model, mean, harmonic mean, min, max: the log's numbers exactly.
    const expected = Object.values(summaries).flatMap(({ pooled_metrics: p }) =>
      ['vmaf', 'vmaf_neg'].flatMap((m) => [p[m].mean, p[m].harmonic_mean, p[m].min, p[m].max]),
    );
    assert.deepEqual(titles(html), expected);
    assert.match(html, /<th scope="rowgroup" rowspan="2" class="rendition">.*?clean &lt;main&gt;.*?<\/th><td class="num" rowspan="2">48<\/td>/);

    // The alert: one start, one clear, on the degraded rendition, with its duration.
    assert.match(html, /<span class="badge bad">1 alert<\/span>/);
    const rows = [...html.matchAll(/<tr><td class="rendition">(.*?)<\/td><td><code>(.*?)<\/code><\/td><td>(.*?)<\/td><td class="num">(\d+)<\/td>/g)].map((m) => [
      m[1].replace(/<[^>]+>/g, ''), m[2], m[3].replace(/<[^>]+>/g, ''), Number(m[4]),
    ]);
    assert.deepEqual(rows, [['degraded', 'vmaf&lt;50 for 3f', 'start', 18], ['degraded', 'vmaf&lt;50 for 3f', 'clear', 28]]);
    assert.match(html, /10 frames \(0\.40 s\)/);
    // A band on the vmaf chart where the alert was on.
    assert.match(html, /<g class="band"><title>degraded · vmaf&lt;50 for 3f · frames 18–28<\/title>/);
    // Inputs and backend.
    assert.ok(html.includes(`<span class="path">${REF}</span>`));
    assert.ok(html.includes(`<li class="path">${degraded}</li>`));
    assert.match(html, /<dt>Backend<\/dt><dd>cpu, 2 threads<\/dd>/);
    assert.match(html, /<dd>2 · 48 frames<\/dd>/);
  });

  it('a report that cannot be written is an error at once (exit 1), before any scoring', () => {
    const r = spawnSync(process.execPath, [BIN, '-r', REF, '-d', DIS, '--backend', 'cpu', '--report', join(tmp, 'missing', 'r.html')], { encoding: 'utf8' });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /^vmaf-stream: cannot write the report .*missing\/r\.html: ENOENT/m);
    assert.doesNotMatch(r.stderr, /vmaf: \d/);
  });

  it('a single pair, and the report of a run stopped with Ctrl-C (SIGINT)', async function () {
    const fifo = join(tmp, 'live-ref');
    assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
    const report = join(tmp, 'stopped.html');
    const log = join(tmp, 'stopped.ndjson');
    const cli = spawn(process.execPath, [BIN, '-r', fifo, '-d', DIS, '--backend', 'cpu', '--threads', '2', '--ndjson', '-o', log, '--precision', '17', '--report', report, '-q'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    cli.stderr.on('data', (chunk) => (stderr += chunk));
    const exited = new Promise((resolve) => cli.on('exit', (code, signal) => resolve({ code, signal })));
    // A live reference: 48 frames, 100 ms apart; stopped after some have been scored.
    const writer = spawn(process.execPath, [WRITER, fifo, 'file', REF, '48', '100'], { stdio: ['ignore', 'ignore', 'ignore'] });
    const frames = () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter((l) => l.includes('"frameNum"')).length : 0);
    for (let waited = 0; frames() < 5; waited += 50) {
      assert.ok(waited < 30000, 'no frame was scored');
      await sleep(50);
    }
    cli.kill('SIGINT');
    const { code } = await exited;
    writer.kill();
    // 128 + SIGINT's number: a script can tell a stopped run from a finished one.
    assert.equal(code, 130, stderr);
    const scored = frames();
    assert.ok(scored >= 5 && scored < 48, `${scored} frames scored`);
    const html = readFileSync(report, 'utf8');
    assertSelfContained(html);
    // The single pair's rendition is named after its file; the page counts what was scored.
    assert.ok(html.includes('<div class="tile-name" title="dis">dis</div>'));
    assert.match(html, new RegExp(`<dd>1 · ${scored} frames</dd>`));
    const summary = JSON.parse(readFileSync(log, 'utf8').trim().split('\n').at(-1));
    assert.equal(summary.frameCount, scored);
    assert.deepEqual(titles(html).slice(0, 4), ['mean', 'harmonic_mean', 'min', 'max'].map((m) => summary.pooled_metrics.vmaf[m]));
  });
});

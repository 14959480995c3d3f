// The HTML report (--report out.html): pure SVG helpers, bounded-memory series, the page's
// structure from real per-frame scores, and the page as headless Chromium draws it.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ReportBuilder,
  MinMaxSeries,
  alertBands,
  alertMetric,
  escapeHtml,
  formatTime,
  linePath,
  linearScale,
  niceTicks,
  timeAt,
} from '../dist/report/index.js';
import { goldenClip } from './helpers/golden.mjs';
import { CHROMIUM_APT, findChromium, screenshot } from './helpers/chromium.mjs';
import { decodePng, pixelStats } from './helpers/png.mjs';

const MODELS = ['vmaf', 'vmaf_neg'];

/** A rendition from a golden libvmaf log: frames with vmaf/vmaf_neg as scores (pts at `fps`), and its summary. */
function renditionFromLog(clip, fps) {
  const log = goldenClip(clip).log();
  const frames = log.frames.map((frame) => {
    const features = {};
    const scores = {};
    for (const [name, value] of Object.entries(frame.metrics)) {
      if (MODELS.includes(name)) scores[name] = value;
      else if (name.startsWith('integer_')) features[name] = value;
    }
    return { index: frame.frameNum, features, scores, refPts: frame.frameNum / fps, disPts: frame.frameNum / fps };
  });
  return { frames, summary: { version: log.version, fps: log.fps, frameCount: frames.length, pooled: log.pooled_metrics } };
}

/** Alerts as a threshold watcher would raise them on a series: start below `low`, clear at or above `high`. */
function watch(name, frames, metric, low, high, spec) {
  const alerts = [];
  let on = false;
  for (const frame of frames) {
    const value = frame.scores[metric];
    if (!on && value < low) {
      on = true;
      alerts.push({ rendition: name, spec, state: 'start', index: frame.index, pts: frame.refPts, value });
    } else if (on && value >= high) {
      on = false;
      alerts.push({ rendition: name, spec, state: 'clear', index: frame.index, pts: frame.refPts, value });
    }
  }
  return alerts;
}

const LADDER = 'ladder_320x180 <crf 35> & "low"';
const TESTSRC = "testsrc_640x360 x264 'main'";

function sampleReport() {
  const ladder = renditionFromLog('ladder_320x180_300f', 30);
  const testsrc = renditionFromLog('testsrc_640x360_x264_12f', 30);
  const builder = new ReportBuilder();
  const alerts = [
    ...watch(LADDER, ladder.frames, 'vmaf', 45, 50, 'vmaf<45 until >=50'),
    ...watch(TESTSRC, testsrc.frames, 'vmaf_neg', 58, 62, 'vmaf_neg<58 until >=62'),
  ].sort((a, b) => a.index - b.index);
  // Frames arrive interleaved, as from a live ladder; alerts as they happen.
  const n = Math.max(ladder.frames.length, testsrc.frames.length);
  let next = 0;
  for (let i = 0; i < n; i++) {
    if (i < ladder.frames.length) builder.addFrame(LADDER, ladder.frames[i]);
    if (i < testsrc.frames.length) builder.addFrame(TESTSRC, testsrc.frames[i]);
    while (next < alerts.length && alerts[next].index <= i) builder.addAlert(alerts[next++]);
  }
  const html = builder.render({
    title: 'Live transcoder QC <ladder>',
    generatedAt: new Date(Date.UTC(2025, 0, 31, 14, 5, 9)),
    inputs: { reference: 'srt://ingest/ref <main>.ts', distorted: ['/out/ladder & low.m3u8', '/out/testsrc.m3u8'] },
    backend: 'cpu (native)',
    renditions: [
      { name: LADDER, summary: ladder.summary },
      { name: TESTSRC, summary: testsrc.summary },
    ],
  });
  return { html, ladder, testsrc, alerts };
}

/** The `d` of each line path in each chart, by chart. */
function chartPaths(html) {
  return [...html.matchAll(/<svg class="plot"[\s\S]*?<\/svg>/g)].map(([svg]) => [...svg.matchAll(/<path class="line"[^>]* d="([^"]*)"/g)].map((m) => m[1]));
}

const pointCount = (d) => (d.match(/[ML]/g) ?? []).length;

describe('HTML report: SVG helpers', () => {
  it('escapes HTML', () => {
    assert.equal(escapeHtml(`a<b>&"c'`), 'a&lt;b&gt;&amp;&quot;c&#39;');
  });

  it('makes round ticks', () => {
    assert.deepEqual(niceTicks(0, 100, 5), [0, 20, 40, 60, 80, 100]);
    assert.deepEqual(niceTicks(0, 299, 10, { integer: true }), [0, 50, 100, 150, 200, 250]);
    assert.deepEqual(niceTicks(0.1, 0.7, 3), [0.2, 0.4, 0.6]);
    assert.deepEqual(niceTicks(0, 3, 10, { integer: true }), [0, 1, 2, 3]);
  });

  it('draws line paths, breaking at non-finite values', () => {
    const x = linearScale(0, 10, 0, 100);
    const y = linearScale(0, 100, 50, 0);
    assert.equal(linePath([{ index: 0, value: 0 }, { index: 5, value: 50 }, { index: 10, value: 100 }], x, y), 'M0,50L50,25L100,0');
    assert.equal(linePath([{ index: 0, value: 0 }, { index: 1, value: NaN }, { index: 2, value: 10 }, { index: 3, value: 20 }], x, y), 'M0,50L0,50M20,45L30,40');
    assert.equal(linePath([{ index: 1.234, value: 33.3 }], x, y, 2), 'M12.34,33.35L12.34,33.35');
    assert.equal(linePath([], x, y), '');
  });

  it('maps frames to times and formats them', () => {
    const samples = [[0, 10], [100, 14], [200, 18]];
    assert.equal(timeAt(samples, 50), 12);
    assert.equal(timeAt(samples, 300), 22);
    assert.equal(timeAt([], 3), undefined);
    assert.equal(formatTime(0), '0:00.0');
    assert.equal(formatTime(83.456, 2), '1:23.46');
    assert.equal(formatTime(3725.5, 0), '1:02:06');
    assert.equal(formatTime(59.96, 1), '1:00.0');
  });

  it('pairs alert starts with their clears', () => {
    const bands = alertBands([
      { rendition: 'a', spec: 's', state: 'start', index: 3, value: 1 },
      { rendition: 'b', spec: 's', state: 'start', index: 5, value: 1 },
      { rendition: 'a', spec: 's', state: 'clear', index: 9, value: 1 },
      { rendition: 'c', spec: 's', state: 'clear', index: 9, value: 1 },
    ], 20);
    assert.deepEqual(bands, [
      { rendition: 'a', spec: 's', from: 3, to: 9, open: false },
      { rendition: 'b', spec: 's', from: 5, to: 20, open: true },
    ]);
    // An alert never cleared ends with its rendition.
    assert.equal(alertBands([{ rendition: 'b', spec: 's', state: 'start', index: 5, value: 1 }], 20, (r) => (r === 'b' ? 12 : undefined))[0].to, 12);
  });

  it('finds the metric an alert is about', () => {
    const metrics = ['vmaf', 'vmaf_neg'];
    assert.equal(alertMetric('vmaf<60 for 3', metrics), 'vmaf');
    assert.equal(alertMetric('vmaf_neg < 60', metrics), 'vmaf_neg');
    assert.equal(alertMetric({ label: 'vmaf.mean<70' }, metrics), 'vmaf');
    assert.equal(alertMetric('vmafx<3', metrics), undefined);
    assert.equal(alertMetric('frames dropped', metrics), undefined);
  });
});

describe('HTML report: bounded series', () => {
  it('keeps every frame up to maxPoints', () => {
    const series = new MinMaxSeries(100);
    for (let i = 0; i < 100; i++) series.add(i, i % 7);
    assert.equal(series.decimated, false);
    assert.deepEqual(series.points(), Array.from({ length: 100 }, (_, i) => ({ index: i, value: i % 7 })));
  });

  it('decimates long runs to min/max per bucket, keeping spikes and drops', () => {
    const series = new MinMaxSeries(1000);
    const frames = 1_000_000;
    for (let i = 0; i < frames; i++) {
      const value = i === 123_457 ? 2 : i === 765_431 ? 99.5 : 80 + 5 * Math.sin(i / 5000);
      series.add(i, value, i / 50);
    }
    const points = series.points();
    assert.equal(series.frameCount, frames);
    assert.ok(series.decimated);
    assert.ok(points.length <= 1000, `${points.length} points`);
    assert.ok(points.length >= 250, `${points.length} points`);
    assert.ok(points.some((p) => p.index === 123_457 && p.value === 2), 'the one-frame drop is kept');
    assert.ok(points.some((p) => p.index === 765_431 && p.value === 99.5), 'the one-frame spike is kept');
    for (let i = 1; i < points.length; i++) assert.ok(points[i].index > points[i - 1].index, 'points in frame order');
    const extent = series.extent();
    assert.deepEqual([extent.min, extent.max, extent.first, extent.last], [2, 99.5, 0, frames - 1]);
    const times = series.timeSamples();
    assert.equal(times.at(-1)[0], frames - 1);
    assert.equal(timeAt(times, 500_000), 10_000);
  });

  it('keeps the report bounded however long the run', () => {
    const builder = new ReportBuilder({ maxPoints: 2000, maxAlerts: 10 });
    for (let i = 0; i < 200_000; i++) {
      builder.addFrame('r', { index: i, features: {}, scores: { vmaf: i === 150_001 ? 0 : 90 + (i % 10) } });
      if (i % 1000 === 0) builder.addAlert({ rendition: 'r', spec: 'x', state: i % 2000 ? 'clear' : 'start', index: i, value: 1 });
    }
    const html = builder.render({ renditions: [], generatedAt: 'now' });
    const [[d]] = chartPaths(html);
    assert.ok(pointCount(d) <= 2000, `${pointCount(d)} points drawn`);
    assert.match(d, /L[\d.]+,300L/, 'the drop to 0 is drawn'); // y of 0 is the plot's bottom (300)
    assert.equal((html.match(/<span class="badge (bad|good)">(start|clear)</g) ?? []).length, 10);
    assert.match(html, /190 later alert transitions not listed/);
  });
});

describe('HTML report: edge cases', () => {
  it('renders a run with no frames, and renditions known only by their summary or their frames', () => {
    const empty = new ReportBuilder().render({ renditions: [], generatedAt: 'now' });
    assert.match(empty, /No frames were scored\./);
    assert.match(empty, /No alerts were raised\./);
    const builder = new ReportBuilder();
    builder.addFrame('only frames', { index: 0, features: {}, scores: { vmaf: 50 } });
    builder.addAlert({ spec: { label: 'decoder stalled' }, state: 'start', index: 0, value: 0 });
    const pooled = { vmaf: { min: 1, max: 2, mean: 1.5, harmonic_mean: 1.4 } };
    const html = builder.render({ renditions: [{ name: 'only summary', summary: { version: 'v', fps: 1, frameCount: 7, pooled } }], generatedAt: 'now' });
    assert.doesNotMatch(html, /NaN|undefined|\[object Object\]/);
    assert.match(html, />only summary<\/span>[\s\S]*>only frames<\/span>/);
    assert.match(html, /<code>decoder stalled<\/code>/);
    assert.equal(chartPaths(html)[0].length, 1);
    assert.match(chartPaths(html)[0][0], /^M[\d.]+,[\d.]+L[\d.]+,[\d.]+$/, 'a one-frame series is a dot');
    assert.throws(() => new ReportBuilder({ maxPoints: 2 }), RangeError);
  });
});

describe('HTML report: page', () => {
  let sample;
  before(() => {
    sample = sampleReport();
  });

  it('is one self-contained page', () => {
    const { html } = sample;
    assert.ok(html.startsWith('<!DOCTYPE html>'));
    assert.doesNotMatch(html, /https?:\/\//i, 'no absolute URL');
    assert.doesNotMatch(html, /<script[^>]*\ssrc\s*=/i, 'no external script');
    assert.doesNotMatch(html, /<link\b/i, 'no linked resource');
    assert.doesNotMatch(html, /@import|url\(|<img\b|<iframe\b|<object\b|<embed\b/i, 'no other loads');
    assert.doesNotMatch(html, /\ssrc\s*=|\shref\s*=\s*"(?!#)/i, 'no src/href attribute');
  });

  it('escapes every name that comes from outside', () => {
    const { html } = sample;
    assert.ok(html.includes('ladder_320x180 &lt;crf 35&gt; &amp; &quot;low&quot;'));
    assert.ok(html.includes('testsrc_640x360 x264 &#39;main&#39;'));
    assert.ok(html.includes('<title>Live transcoder QC &lt;ladder&gt;</title>'));
    assert.ok(html.includes('srt://ingest/ref &lt;main&gt;.ts'));
    assert.ok(html.includes('/out/ladder &amp; low.m3u8'));
    assert.ok(html.includes('vmaf&lt;45 until &gt;=50'));
    assert.ok(!html.includes('<crf 35>') && !html.includes('<ladder>') && !html.includes('ref <main>') && !html.includes('vmaf<45'));
  });

  it('tabulates the pooled scores of each rendition and model', () => {
    const { html, ladder, testsrc } = sample;
    const table = html.match(/<table class="pooled">[\s\S]*?<\/table>/)[0];
    const rows = [...table.matchAll(/<tr[^>]*>([\s\S]*?)<\/tr>/g)].map((m) => m[1]).slice(1);
    assert.equal(rows.length, 4);
    for (const [r, run] of [[0, ladder], [1, testsrc]]) {
      assert.ok(rows[2 * r].includes(`rowspan="2">${run.summary.frameCount}</td>`));
      for (const [k, model] of MODELS.entries()) {
        const row = rows[2 * r + k];
        const p = run.summary.pooled[model];
        const cells = [...row.matchAll(/<td class="num" title="[^"]*">([^<]*)<\/td>/g)].map((m) => m[1]);
        assert.ok(row.includes(`<td>${model}</td>`), row);
        assert.deepEqual(cells, [p.mean, p.harmonic_mean, p.min, p.max].map((v) => v.toFixed(3)));
      }
    }
    assert.ok(table.includes('>57.919<') && table.includes('>63.166<') && table.includes('>61.528<'));
  });

  it('plots every frame of every rendition, one chart per model, with a time axis', () => {
    const { html, ladder, testsrc } = sample;
    const charts = chartPaths(html);
    assert.equal(charts.length, 2);
    for (const paths of charts) assert.deepEqual(paths.map(pointCount), [ladder.frames.length, testsrc.frames.length]);
    assert.match(html, /<h2>vmaf <span class="muted">per frame<\/span><\/h2>[\s\S]*<h2>vmaf_neg <span class="muted">per frame<\/span><\/h2>/);
    assert.match(html, />time<\/text>/);
    assert.match(html, />0:05\.0<\/text>/, 'frame 150 at 30 fps');
    assert.match(html, /<text class="tick" [^>]*>100<\/text>/);
  });

  it('lists the alerts with frame, time, value and duration', () => {
    const { html, alerts } = sample;
    assert.ok(alerts.length >= 3, 'the sample raises alerts');
    const table = html.match(/<table class="alerts">[\s\S]*?<\/table>/)[0];
    const rows = [...table.matchAll(/<tbody>([\s\S]*)<\/tbody>/g)][0][1].trim().split('\n');
    assert.equal(rows.length, alerts.length);
    alerts.forEach((alert, i) => {
      assert.ok(rows[i].includes(`>${alert.state}</span>`));
      assert.ok(rows[i].includes(`<td class="num">${alert.index}</td>`));
      assert.ok(rows[i].includes(`<td class="num">${formatTime(alert.pts, 3)}</td>`));
      assert.ok(rows[i].includes(`<td class="num">${alert.value.toFixed(3)}</td>`));
    });
    assert.match(table, /\d+ frames \(\d+\.\d\d s\)/);
    assert.match(html, /<g class="band"><title>/);
  });

  it('renders in headless Chromium to a non-blank page', function () {
    this.timeout(180_000);
    const chromium = findChromium();
    if (!chromium) {
      assert.fail(`Chromium is needed for this test and was not found (looked for $CHROMIUM, chromium, chromium-browser). On Debian: ${CHROMIUM_APT}`);
    }
    // VMAF_REPORT_OUT=dir keeps the page and its screenshots there.
    const keep = process.env.VMAF_REPORT_OUT;
    const dir = keep ?? mkdtempSync(join(tmpdir(), 'vmaf-report-'));
    mkdirSync(dir, { recursive: true });
    try {
      const page = join(dir, 'report.html');
      writeFileSync(page, sample.html);
      for (const dark of [false, true]) {
        const png = join(dir, dark ? 'report-dark.png' : 'report.png');
        rmSync(png, { force: true });
        const run = screenshot(chromium, page, png, { width: 1280, height: 1600, dark });
        assert.ok(existsSync(png), `Chromium wrote no screenshot (status ${run.status}, ${run.error ?? ''}):\n${run.output}`);
        assert.ok(statSync(png).size > 20_000, `screenshot is only ${statSync(png).size} bytes`);
        const image = decodePng(readFileSync(png));
        assert.deepEqual([image.width, image.height], [1280, 1600]);
        const all = pixelStats(image);
        assert.ok(all.stddev > 10, `page looks blank: luma σ ${all.stddev.toFixed(1)}`);
        assert.ok(all.colours > 200, `only ${all.colours} colours`);
        assert.ok(all.saturated > 3000, `only ${all.saturated} coloured pixels: are the plot lines drawn?`);
        assert.ok(dark ? all.mean < 90 : all.mean > 180, `${dark ? 'dark' : 'light'} page has mean luma ${all.mean.toFixed(0)}`);
        // The plots' band (below the header and tiles): lines in the renditions' colours.
        const plots = pixelStats(image, { x: 0, y: 300, width: 1280, height: 800 });
        assert.ok(plots.saturated > 2000, `only ${plots.saturated} coloured pixels in the plots`);
      }
    } finally {
      if (!keep) rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * `--report out.html`: one self-contained HTML page (inline CSS and SVG, no script, no
 * external URL) with per-frame plots of every rendition, the pooled scores and the alerts
 * of a run. ReportBuilder collects as the frames go by, in bounded memory (MinMaxSeries:
 * every frame up to `maxPoints` per series, then min/max per bucket), and render() turns
 * what it holds and the runs' summaries into the page.
 */

import type { FrameResult, RunSummary } from '../pipeline/writers/types.js';
import { DEFAULT_MAX_POINTS, MinMaxSeries } from './series.js';
import {
  escapeHtml,
  formatScore,
  formatTime,
  linePath,
  linearScale,
  niceExtent,
  niceTicks,
  timeAt,
} from './svg.js';

/** An alert going on (`start`) or off (`clear`) at a frame. */
export interface ReportAlert {
  /** The rendition it concerns; absent for an alert on the run as a whole. */
  rendition?: string;
  /** What fired, as the user wrote it (e.g. "vmaf<60 for 3"); an object is shown as JSON. */
  spec: string | Record<string, unknown>;
  state: 'start' | 'clear';
  /** Frame index. */
  index: number;
  /** Presentation time in seconds, if known. */
  pts?: number;
  /** The value that crossed the threshold (or came back). */
  value: number;
}

export interface ReportRendition {
  name: string;
  summary: RunSummary;
}

export interface ReportSummary {
  renditions: ReportRendition[];
  /** The page's title (default "VMAF report"). */
  title?: string;
  /** When the report was made (default: now). A string is shown as it is. */
  generatedAt?: Date | string;
  inputs?: { reference: string; distorted: string[] };
  /** The feature backend, e.g. "gpu (WebGPU)" or "cpu (native)". */
  backend?: string;
}

export interface ReportBuilderOptions {
  /** Points kept per rendition per metric (default 10,000): see MinMaxSeries. */
  maxPoints?: number;
  /** Alerts kept (default 1,000); later ones are counted, not listed. */
  maxAlerts?: number;
  /** Features to plot and tabulate besides the models (e.g. ["integer_motion2"]). */
  features?: readonly string[];
  /** Decimals of scores in the tables (default 3). */
  decimals?: number;
}

/** Palette slots; a rendition past the last reuses the colours with a dashed line. */
const PALETTE_SIZE = 10;
const DASHES = ['', '6 3', '2 3', '8 3 2 3'];

interface MetricInfo {
  name: string;
  kind: 'model' | 'feature';
}

class RenditionData {
  readonly series = new Map<string, MinMaxSeries>();
  constructor(readonly name: string) {}
}

interface RenditionView {
  name: string;
  slot: number;
  data?: RenditionData;
  summary?: RunSummary;
}

export class ReportBuilder {
  private readonly maxPoints: number;
  private readonly maxAlerts: number;
  private readonly features: readonly string[];
  private readonly decimals: number;
  private readonly renditions = new Map<string, RenditionData>();
  private readonly metrics = new Map<string, MetricInfo>();
  private readonly alerts: ReportAlert[] = [];
  private alertsDropped = 0;

  constructor(options: ReportBuilderOptions = {}) {
    this.maxPoints = options.maxPoints ?? DEFAULT_MAX_POINTS;
    this.maxAlerts = options.maxAlerts ?? 1000;
    this.features = options.features ?? [];
    this.decimals = options.decimals ?? 3;
    new MinMaxSeries(this.maxPoints); // validates maxPoints now rather than at the first frame
  }

  /** Adds one scored frame of a rendition. Keeps only the series the page draws. */
  addFrame(rendition: string, result: FrameResult): void {
    let data = this.renditions.get(rendition);
    if (!data) {
      data = new RenditionData(rendition);
      this.renditions.set(rendition, data);
    }
    const pts = result.refPts ?? result.disPts;
    for (const [name, value] of Object.entries(result.scores)) this.seriesFor(data, name, 'model').add(result.index, value, pts);
    for (const name of this.features) {
      const value = result.features[name];
      if (value !== undefined) this.seriesFor(data, name, 'feature').add(result.index, value, pts);
    }
  }

  /** Records an alert transition. */
  addAlert(alert: ReportAlert): void {
    if (this.alerts.length >= this.maxAlerts) {
      this.alertsDropped++;
      return;
    }
    this.alerts.push({ ...alert });
  }

  /** The whole page. */
  render(summary: ReportSummary): string {
    const views = this.views(summary);
    const metrics = this.metricList(views);
    const title = summary.title ?? 'VMAF report';
    const charted = metrics.filter((metric) => views.some((view) => view.data?.series.get(metric.name)?.extent()));
    const alertsByChart = new Map<string, ReportAlert[]>();
    for (const alert of this.alerts) {
      const metric = alertMetric(alert.spec, charted.map((m) => m.name)) ?? charted[0]?.name;
      if (metric === undefined) continue;
      let list = alertsByChart.get(metric);
      if (!list) alertsByChart.set(metric, (list = []));
      list.push(alert);
    }
    const charts = charted.map((metric) => this.chart(metric, views, alertsByChart.get(metric.name) ?? [])).join('\n');
    const version = summary.renditions.find((r) => r.summary.version)?.summary.version;
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="generator" content="vmaf-stream${version ? ` ${escapeHtml(version)}` : ''}">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${this.header(summary, title, views)}
${this.overview(views, metrics)}
${charts || '<section class="card"><h2>Per-frame scores</h2><p class="empty">No frames were scored.</p></section>'}
${this.pooledTable(views, metrics)}
${this.alertTable(views)}
<footer>Generated by vmaf-stream${version ? ` (${escapeHtml(version)})` : ''}. Plots show every frame up to ${this.maxPoints.toLocaleString('en-US')} frames per series; longer series show the lowest and highest score of each group of frames, so drops and spikes stay visible.</footer>
</main>
</body>
</html>
`;
  }

  private seriesFor(data: RenditionData, name: string, kind: MetricInfo['kind']): MinMaxSeries {
    let series = data.series.get(name);
    if (!series) {
      series = new MinMaxSeries(this.maxPoints);
      data.series.set(name, series);
      if (!this.metrics.has(name)) this.metrics.set(name, { name, kind });
    }
    return series;
  }

  /** Renditions in the summary's order, then any that only sent frames; each with its colour slot. */
  private views(summary: ReportSummary): RenditionView[] {
    const views: RenditionView[] = [];
    const seen = new Set<string>();
    for (const { name, summary: run } of summary.renditions) {
      if (seen.has(name)) continue;
      seen.add(name);
      views.push({ name, slot: views.length, data: this.renditions.get(name), summary: run });
    }
    for (const [name, data] of this.renditions) if (!seen.has(name)) views.push({ name, slot: views.length, data });
    return views;
  }

  /** Models (`vmaf` first, then as first seen), then the requested features. */
  private metricList(views: RenditionView[]): MetricInfo[] {
    const known = [...this.metrics.values()];
    if (!known.some((m) => m.kind === 'model')) {
      // No frames: the summaries' model scores (features are named integer_*/VMAF_*).
      for (const view of views) {
        for (const name of Object.keys(view.summary?.pooled ?? {})) {
          if (!name.startsWith('integer_') && !name.startsWith('VMAF_') && !known.some((m) => m.name === name) && /vmaf/i.test(name)) {
            known.push({ name, kind: 'model' });
          }
        }
      }
    }
    for (const name of this.features) {
      if (!known.some((m) => m.name === name) && views.some((v) => v.summary?.pooled[name])) known.push({ name, kind: 'feature' });
    }
    const rank = (m: MetricInfo) => (m.kind === 'feature' ? 2 : m.name === 'vmaf' ? 0 : 1);
    return known.map((m, i) => ({ m, i })).sort((a, b) => rank(a.m) - rank(b.m) || a.i - b.i).map(({ m }) => m);
  }

  private header(summary: ReportSummary, title: string, views: RenditionView[]): string {
    const generated = summary.generatedAt ?? new Date();
    const when = typeof generated === 'string' ? generated : formatDate(generated);
    const rows: Array<[string, string, string?]> = [];
    if (summary.inputs) {
      rows.push(['Reference', `<span class="path">${escapeHtml(summary.inputs.reference)}</span>`]);
      const distorted = summary.inputs.distorted;
      rows.push([
        distorted.length === 1 ? 'Distorted' : `Distorted (${distorted.length})`,
        distorted.length === 1
          ? `<span class="path">${escapeHtml(distorted[0])}</span>`
          : `<ul class="paths">${distorted.map((d) => `<li class="path">${escapeHtml(d)}</li>`).join('')}</ul>`,
        distorted.length > 3 ? 'wide' : undefined,
      ]);
    }
    if (summary.backend) rows.splice(1, 0, ['Backend', escapeHtml(summary.backend)]);
    rows.push(['Generated', `<time>${escapeHtml(when)}</time>`]);
    const frames = views.map((v) => v.summary?.frameCount ?? v.data?.series.values().next().value?.frameCount ?? 0);
    const frameText = frames.length && frames.every((f) => f === frames[0]) ? count(frames[0]!) : frames.length ? `${count(Math.min(...frames))}–${count(Math.max(...frames))}` : '0';
    rows.push(['Renditions', `${views.length} · ${frameText} frames`]);
    const raised = this.alerts.filter((a) => a.state === 'start').length;
    const status = raised > 0 || this.alertsDropped > 0
      ? `<span class="badge bad">${raised}${this.alertsDropped ? '+' : ''} alert${raised === 1 ? '' : 's'}</span>`
      : `<span class="badge good">no alerts</span>`;
    return `<header>
<div class="title"><h1>${escapeHtml(title)}</h1>${status}</div>
<dl class="meta">${rows.map(([k, v, c]) => `<div${c ? ` class="${c}"` : ''}><dt>${k}</dt><dd>${v}</dd></div>`).join('')}</dl>
</header>`;
  }

  /** A tile per rendition: the first model's mean, with its harmonic mean, min and alerts. */
  private overview(views: RenditionView[], metrics: MetricInfo[]): string {
    const primary = metrics.find((m) => m.kind === 'model');
    if (!primary || views.length === 0) return '';
    const tiles = views.map((view) => {
      const pooled = view.summary?.pooled[primary.name];
      const extent = view.data?.series.get(primary.name)?.extent();
      const mean = pooled?.mean;
      const min = pooled?.min ?? extent?.min;
      const alerts = this.alerts.filter((a) => a.rendition === view.name && a.state === 'start').length;
      const frames = view.summary?.frameCount ?? view.data?.series.get(primary.name)?.frameCount;
      return `<div class="tile" style="--c: var(--c${view.slot % PALETTE_SIZE})">
<div class="tile-name" title="${escapeHtml(view.name)}">${escapeHtml(view.name)}</div>
<div class="tile-score">${formatScore(mean, 2)}<span>${escapeHtml(primary.name)} mean</span></div>
<div class="tile-detail">hmean ${formatScore(pooled?.harmonic_mean, 2)} · min ${formatScore(min, 2)}${frames !== undefined ? ` · ${count(frames)} frames` : ''}</div>
${alerts ? `<div class="tile-alerts bad">${alerts} alert${alerts === 1 ? '' : 's'}</div>` : ''}
</div>`;
    });
    return `<section class="tiles" aria-label="Overview">${tiles.join('\n')}</section>`;
  }

  private chart(metric: MetricInfo, views: RenditionView[], alerts: readonly ReportAlert[]): string {
    const W = 1000;
    const series = views
      .map((view) => ({ view, s: view.data?.series.get(metric.name) }))
      .filter((e): e is { view: RenditionView; s: MinMaxSeries } => e.s?.extent() !== undefined);
    const extents = series.map((e) => e.s.extent()!);
    const x0 = Math.min(...extents.map((e) => e.first));
    let x1 = Math.max(...extents.map((e) => e.last));
    if (x1 === x0) x1 = x0 + 1;
    const vMin = Math.min(...extents.map((e) => e.min));
    const vMax = Math.max(...extents.map((e) => e.max));
    const [y0, y1] = metric.kind === 'model' && vMin >= 0 && vMax <= 100 ? [0, 100] : metric.kind === 'model' ? niceExtent(Math.min(0, vMin), Math.max(100, vMax)) : niceExtent(vMin, vMax);
    const samples = series.map((e) => e.s.timeSamples()).find((t) => t.length >= 2);
    const hasTime = samples !== undefined;
    const m = { left: 72, right: 14, top: 14, bottom: hasTime ? 50 : 32 };
    const H = 300 + m.bottom;
    const sx = linearScale(x0, x1, m.left, W - m.right);
    const sy = linearScale(y0, y1, H - m.bottom, m.top);
    const yTicks = niceTicks(y0, y1, metric.kind === 'model' ? 5 : 6);
    const xTicks = niceTicks(x0, x1, 10, { integer: true });
    const tickStep = xTicks.length > 1 ? xTicks[1]! - xTicks[0]! : 1;
    const secondsStep = hasTime ? Math.abs((timeAt(samples, x0 + tickStep) ?? 0) - (timeAt(samples, x0) ?? 0)) : 0;
    const timeDecimals = secondsStep >= 10 ? 0 : secondsStep >= 0.5 ? 1 : 2;
    const parts: string[] = [];
    const fmtY = (v: number) => (Math.abs(y1 - y0) < 5 ? String(Number(v.toPrecision(4))) : String(v));
    for (const t of yTicks) {
      const y = sy(t).toFixed(1);
      parts.push(`<line class="grid" x1="${m.left}" x2="${W - m.right}" y1="${y}" y2="${y}"/><text class="tick" x="${m.left - 8}" y="${y}" dy="0.32em" text-anchor="end">${fmtY(t)}</text>`);
    }
    const bottom = H - m.bottom;
    for (const t of xTicks) {
      const x = sx(t).toFixed(1);
      parts.push(`<line class="tickmark" x1="${x}" x2="${x}" y1="${bottom}" y2="${bottom + 5}"/><text class="tick" x="${x}" y="${bottom + 18}" text-anchor="middle">${t}</text>`);
      if (hasTime) {
        const time = timeAt(samples, t);
        if (time !== undefined) parts.push(`<text class="tick time" x="${x}" y="${bottom + 36}" text-anchor="middle">${formatTime(time, timeDecimals)}</text>`);
      }
    }
    parts.push(`<text class="axis-label" x="${m.left - 30}" y="${bottom + 18}" text-anchor="end">frame</text>`);
    if (hasTime) parts.push(`<text class="axis-label" x="${m.left - 30}" y="${bottom + 36}" text-anchor="end">time</text>`);
    parts.push(`<text class="axis-label" transform="translate(16 ${((m.top + bottom) / 2).toFixed(1)}) rotate(-90)" text-anchor="middle">${escapeHtml(metric.name)}</text>`);
    let bands = '';
    let bandCount = 0;
    if (alerts.length) {
      const slots = new Map(views.map((v) => [v.name, v.slot]));
      const ends = new Map(series.map((e) => [e.view.name, e.s.extent()!.last]));
      for (const band of alertBands(alerts, x1, (name) => ends.get(name))) {
        const a = Math.max(m.left, sx(Math.max(x0, band.from)));
        const b = Math.min(W - m.right, Math.max(a + 2, sx(Math.min(x1, band.to))));
        if (b <= a) continue;
        bandCount++;
        const slot = band.rendition !== undefined ? slots.get(band.rendition) : undefined;
        const marker = slot !== undefined ? `var(--c${slot % PALETTE_SIZE})` : 'var(--bad)';
        const label = `${band.rendition !== undefined ? `${band.rendition} · ` : ''}${band.spec} · frames ${band.from}–${band.open ? '…' : band.to}`;
        bands += `<g class="band"><title>${escapeHtml(label)}</title><rect x="${a.toFixed(1)}" y="${m.top}" width="${(b - a).toFixed(1)}" height="${bottom - m.top}"/><rect class="band-marker" style="fill:${marker}" x="${a.toFixed(1)}" y="${m.top}" width="${(b - a).toFixed(1)}" height="4"/></g>`;
      }
    }
    const lines = series.map(({ view, s }) => {
      const dash = DASHES[Math.floor(view.slot / PALETTE_SIZE) % DASHES.length];
      return `<path class="line" style="stroke:var(--c${view.slot % PALETTE_SIZE})"${dash ? ` stroke-dasharray="${dash}"` : ''} d="${linePath(s.points(), sx, sy)}"><title>${escapeHtml(view.name)}</title></path>`;
    });
    const decimated = series.filter((e) => e.s.decimated);
    const note = decimated.length
      ? `Long series are drawn as the lowest and highest value of each group of up to ${Math.max(...decimated.map((e) => e.s.framesPerBucket))} frames.`
      : 'Every frame is drawn.';
    const legend = series.map(({ view }) => {
      const mean = view.summary?.pooled[metric.name]?.mean;
      const dash = DASHES[Math.floor(view.slot / PALETTE_SIZE) % DASHES.length];
      return `<li><svg class="swatch" width="22" height="10" aria-hidden="true"><line x1="1" x2="21" y1="5" y2="5" style="stroke:var(--c${view.slot % PALETTE_SIZE})"${dash ? ` stroke-dasharray="${dash}"` : ''}/></svg><span class="name" title="${escapeHtml(view.name)}">${escapeHtml(view.name)}</span>${mean !== undefined ? `<span class="muted">${formatScore(mean, 2)}</span>` : ''}</li>`;
    });
    if (bandCount) legend.push('<li><span class="band-swatch" aria-hidden="true"></span><span class="name">alert active</span></li>');
    const id = `chart-${escapeHtml(metric.name.replace(/[^A-Za-z0-9_-]/g, '_'))}`;
    return `<section class="card chart" id="${id}">
<div class="card-head"><h2>${escapeHtml(metric.name)} <span class="muted">per frame</span></h2><ul class="legend">${legend.join('')}</ul></div>
<svg class="plot" viewBox="0 0 ${W} ${H}" role="img" aria-label="${escapeHtml(`${metric.name} per frame for ${series.map((e) => e.view.name).join(', ')}`)}">
${parts.join('\n')}
${bands}
<line class="axis" x1="${m.left}" x2="${W - m.right}" y1="${bottom}" y2="${bottom}"/>
${lines.join('\n')}
</svg>
<p class="note">${note}</p>
</section>`;
  }

  private pooledTable(views: RenditionView[], metrics: MetricInfo[]): string {
    if (views.length === 0 || metrics.length === 0) return '';
    const d = this.decimals;
    const rows: string[] = [];
    for (const view of views) {
      const frames = view.summary?.frameCount ?? view.data?.series.values().next().value?.frameCount;
      metrics.forEach((metric, i) => {
        const p = view.summary?.pooled[metric.name];
        const cell = (v: number | undefined) => `<td class="num"${v !== undefined && Number.isFinite(v) ? ` title="${v}"` : ''}>${formatScore(v, d)}</td>`;
        const head = i === 0
          ? `<th scope="rowgroup" rowspan="${metrics.length}" class="rendition"><div class="named"><span class="dot" style="background:var(--c${view.slot % PALETTE_SIZE})"></span><span>${escapeHtml(view.name)}</span></div></th><td class="num" rowspan="${metrics.length}">${frames !== undefined ? count(frames) : '–'}</td>`
          : '';
        rows.push(`<tr${i === 0 ? ' class="group"' : ''}>${head}<td>${escapeHtml(metric.name)}</td>${cell(p?.mean)}${cell(p?.harmonic_mean)}${cell(p?.min)}${cell(p?.max)}</tr>`);
      });
    }
    return `<section class="card">
<h2>Pooled scores</h2>
<div class="scroll"><table class="pooled">
<thead><tr><th scope="col">Rendition</th><th scope="col" class="num">Frames</th><th scope="col">Metric</th><th scope="col" class="num">Mean</th><th scope="col" class="num">Harmonic mean</th><th scope="col" class="num">Min</th><th scope="col" class="num">Max</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table></div>
</section>`;
  }

  private alertTable(views: RenditionView[]): string {
    const slots = new Map(views.map((v) => [v.name, v.slot]));
    if (this.alerts.length === 0) {
      return `<section class="card"><h2>Alerts</h2><p class="empty">No alerts were raised.</p></section>`;
    }
    // Starts that no clear follows: still on when the run ended.
    const stillOn = new Set<ReportAlert>();
    const latest = new Map<string, ReportAlert>();
    for (const alert of this.alerts) {
      if (alert.state === 'start') latest.set(alertKey(alert), alert);
      else latest.delete(alertKey(alert));
    }
    for (const alert of latest.values()) stillOn.add(alert);
    const open = new Map<string, ReportAlert>();
    const rows = this.alerts.map((alert) => {
      const key = alertKey(alert);
      let duration = '';
      if (alert.state === 'start') open.set(key, alert);
      else {
        const start = open.get(key);
        open.delete(key);
        if (start) {
          const frames = alert.index - start.index;
          const seconds = start.pts !== undefined && alert.pts !== undefined ? alert.pts - start.pts : undefined;
          duration = `${frames} frame${frames === 1 ? '' : 's'}${seconds !== undefined ? ` (${seconds.toFixed(2)} s)` : ''}`;
        }
      }
      const slot = alert.rendition !== undefined ? slots.get(alert.rendition) : undefined;
      const name = alert.rendition === undefined
        ? '<span class="muted">all</span>'
        : `<div class="named">${slot !== undefined ? `<span class="dot" style="background:var(--c${slot % PALETTE_SIZE})"></span>` : ''}<span>${escapeHtml(alert.rendition)}</span></div>`;
      const state = alert.state === 'start' ? '<span class="badge bad">start</span>' : '<span class="badge good">clear</span>';
      return `<tr><td class="rendition">${name}</td><td><code>${escapeHtml(specText(alert.spec))}</code></td><td>${state}</td><td class="num">${alert.index}</td><td class="num">${alert.pts !== undefined ? formatTime(alert.pts, 3) : '–'}</td><td class="num">${formatScore(alert.value, this.decimals)}</td><td class="num">${duration || (stillOn.has(alert) ? '<span class="muted">on at end</span>' : alert.state === 'start' ? '' : '–')}</td></tr>`;
    });
    const dropped = this.alertsDropped ? `<p class="note">${this.alertsDropped} later alert transition${this.alertsDropped === 1 ? '' : 's'} not listed (the first ${this.maxAlerts} are kept).</p>` : '';
    return `<section class="card">
<h2>Alerts</h2>
<div class="scroll"><table class="alerts">
<thead><tr><th scope="col">Rendition</th><th scope="col">Alert</th><th scope="col">State</th><th scope="col" class="num">Frame</th><th scope="col" class="num">Time</th><th scope="col" class="num">Value</th><th scope="col" class="num">Duration</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table></div>
${dropped}
</section>`;
  }
}

/** An alert's spec as text. */
export function specText(spec: ReportAlert['spec']): string {
  if (typeof spec === 'string') return spec;
  for (const key of ['label', 'text', 'source', 'spec']) if (typeof spec[key] === 'string') return spec[key] as string;
  return JSON.stringify(spec);
}

/**
 * The metric an alert is about: the name its spec starts with ("vmaf_neg<60 for 3" is
 * about vmaf_neg), if that is one of `metrics`; undefined otherwise.
 */
export function alertMetric(spec: ReportAlert['spec'], metrics: readonly string[]): string | undefined {
  const name = /^\s*([A-Za-z_][\w.-]*)/.exec(specText(spec))?.[1];
  if (name === undefined) return undefined;
  // The longest metric name the identifier starts with and ends at ("vmaf" in "vmaf<60", not in "vmafx").
  return metrics.filter((m) => name === m || (name.startsWith(m) && /[.-]/.test(name[m.length]!))).sort((a, b) => b.length - a.length)[0];
}

function alertKey(alert: ReportAlert): string {
  return `${alert.rendition ?? ''}\u0000${specText(alert.spec)}`;
}

/** One span an alert was on: from its start to its clear (or to `end` when never cleared). */
export interface AlertBand {
  rendition?: string;
  spec: string;
  from: number;
  to: number;
  /** True when no clear came (the band runs to `end`). */
  open: boolean;
}

/**
 * Pairs each alert's start with its next clear (same rendition and spec). A start with no
 * clear runs to its rendition's last frame (`endOf`), or else to `end`.
 */
export function alertBands(alerts: readonly ReportAlert[], end: number, endOf?: (rendition: string) => number | undefined): AlertBand[] {
  const bands: AlertBand[] = [];
  const open = new Map<string, ReportAlert>();
  for (const alert of alerts) {
    const key = alertKey(alert);
    if (alert.state === 'start') {
      if (!open.has(key)) open.set(key, alert);
    } else {
      const start = open.get(key);
      if (!start) continue;
      open.delete(key);
      bands.push({ rendition: start.rendition, spec: specText(start.spec), from: start.index, to: alert.index, open: false });
    }
  }
  for (const start of open.values()) {
    const last = (start.rendition !== undefined ? endOf?.(start.rendition) : undefined) ?? end;
    bands.push({ rendition: start.rendition, spec: specText(start.spec), from: start.index, to: Math.max(start.index, last), open: true });
  }
  return bands.sort((a, b) => a.from - b.from);
}

/** A frame count with thousands separators: 12,345. */
function count(n: number): string {
  return n.toLocaleString('en-US');
}

/** "2025-01-31 14:05:09 UTC" */
function formatDate(date: Date): string {
  return `${date.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

const STYLE = `
:root{color-scheme:light dark;--bg:#f5f6f8;--card:#fff;--fg:#1c2128;--muted:#5f6b7a;--border:#dde1e6;--grid:#e9ecef;--axis:#9aa4af;--head:#f0f2f5;
--good:#1a7f37;--good-bg:#dcf5e3;--bad:#c9302c;--bad-bg:#fde2e1;--band:rgba(201,48,44,.10);
--c0:#2563eb;--c1:#e8590c;--c2:#2b8a3e;--c3:#9c36b5;--c4:#0c8599;--c5:#d6336c;--c6:#b08800;--c7:#495057;--c8:#5c940d;--c9:#7048e8}
@media (prefers-color-scheme:dark){:root{--bg:#0f1318;--card:#171c23;--fg:#e3e8ee;--muted:#97a3b1;--border:#2b333d;--grid:#232a33;--axis:#5b6673;--head:#1d232b;
--good:#4ac26b;--good-bg:#12301c;--bad:#ff7b72;--bad-bg:#3b1618;--band:rgba(255,123,114,.13);
--c0:#6ea8fe;--c1:#ff922b;--c2:#51cf66;--c3:#da77f2;--c4:#3bc9db;--c5:#f783ac;--c6:#fcc419;--c7:#ced4da;--c8:#a9e34b;--c9:#9775fa}}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue","Liberation Sans",Arial,sans-serif}
main{max-width:1200px;margin:0 auto;padding:28px 24px 40px}
h1{font-size:24px;font-weight:650;margin:0;letter-spacing:-.01em}
h2{font-size:16px;font-weight:600;margin:0 0 12px}
.muted{color:var(--muted);font-weight:400}
header{margin-bottom:20px}
.title{display:flex;align-items:center;gap:12px;flex-wrap:wrap;margin-bottom:12px}
.meta{display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:6px 24px;margin:0}
.meta div{min-width:0}
.meta dt{font-size:11px;text-transform:uppercase;letter-spacing:.06em;color:var(--muted)}
.meta dd{margin:0;overflow-wrap:anywhere}
.path{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;font-size:12.5px}
.paths{margin:0;padding:0;list-style:none}
.meta .wide{grid-column:1/-1;order:1}
.wide .paths{display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:0 24px}
.badge{display:inline-block;padding:1px 9px;border-radius:999px;font-size:12px;font-weight:600;line-height:20px}
.badge.good{color:var(--good);background:var(--good-bg)}
.badge.bad{color:var(--bad);background:var(--bad-bg)}
.tiles{display:grid;grid-template-columns:repeat(auto-fill,minmax(250px,1fr));gap:12px;margin-bottom:16px}
.tile{background:var(--card);border:1px solid var(--border);border-top:4px solid var(--c);border-radius:8px;padding:10px 14px 12px;min-width:0}
.tile-name{font-weight:600;overflow-wrap:anywhere;display:-webkit-box;-webkit-box-orient:vertical;-webkit-line-clamp:2;overflow:hidden}
.tile-score{font-size:28px;font-weight:650;font-variant-numeric:tabular-nums;line-height:1.2;margin-top:2px}
.tile-score span{font-size:12px;font-weight:400;color:var(--muted);margin-left:6px}
.tile-detail{font-size:12px;color:var(--muted);font-variant-numeric:tabular-nums}
.tile-alerts{font-size:12px;font-weight:600;margin-top:4px}
.bad{color:var(--bad)}
.card{background:var(--card);border:1px solid var(--border);border-radius:8px;padding:16px 18px;margin-bottom:16px}
.card-head{display:flex;justify-content:space-between;align-items:baseline;gap:16px;flex-wrap:wrap}
.legend{list-style:none;margin:0 0 8px;padding:0;display:flex;flex-wrap:wrap;gap:4px 16px;font-size:13px}
.legend li{display:flex;align-items:center;gap:6px;min-width:0}
.legend .name{max-width:260px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.swatch line{stroke-width:3;stroke-linecap:round}
.band-swatch{display:inline-block;width:22px;height:10px;background:var(--band);border-top:3px solid var(--bad)}
.plot{display:block;width:100%;height:auto;overflow:visible}
.plot .grid{stroke:var(--grid);stroke-width:1}
.plot .axis{stroke:var(--axis);stroke-width:1}
.plot .tickmark{stroke:var(--axis)}
.plot .tick{fill:var(--muted);font-size:12px;font-variant-numeric:tabular-nums}
.plot .time{font-size:11.5px}
.plot .axis-label{fill:var(--muted);font-size:12px;font-style:italic}
.plot .line{fill:none;stroke-width:1.6;stroke-linejoin:round;stroke-linecap:round;vector-effect:non-scaling-stroke}
.plot .band rect{fill:var(--band)}
.plot .band .band-marker{opacity:.9}
.note{margin:6px 0 0;font-size:12px;color:var(--muted)}
.empty{margin:0;color:var(--muted)}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
th,td{padding:6px 10px;text-align:left;border-bottom:1px solid var(--border);vertical-align:top}
thead th{background:var(--head);font-size:12px;font-weight:600;color:var(--muted);text-transform:uppercase;letter-spacing:.04em;border-bottom:1px solid var(--border);white-space:nowrap}
th.rendition,td.rendition{font-weight:600;overflow-wrap:anywhere;min-width:140px}
.num{text-align:right;white-space:nowrap}
tbody tr.group>*{border-top:2px solid var(--border)}
tbody tr:hover td{background:var(--head)}
.dot{display:inline-block;flex:none;width:10px;height:10px;border-radius:50%;margin-right:8px}
.named{display:flex;align-items:baseline}
.named>span:last-child{min-width:0;overflow-wrap:anywhere}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;font-size:12.5px}
footer{font-size:12px;color:var(--muted);margin-top:8px}
@media print{
:root{color-scheme:light;--bg:#fff;--card:#fff;--fg:#000;--muted:#555;--border:#ccc;--grid:#e5e5e5;--axis:#888;--head:#f2f2f2;--good:#1a7f37;--good-bg:#dcf5e3;--bad:#b42318;--bad-bg:#fde2e1;--band:rgba(201,48,44,.12);
--c0:#2563eb;--c1:#e8590c;--c2:#2b8a3e;--c3:#9c36b5;--c4:#0c8599;--c5:#d6336c;--c6:#b08800;--c7:#495057;--c8:#5c940d;--c9:#7048e8}
body{font-size:11px;-webkit-print-color-adjust:exact;print-color-adjust:exact}
main{max-width:none;padding:0}
.card,.tile{break-inside:avoid}.card{border-color:#ccc}.tile{border-right-color:#ccc;border-bottom-color:#ccc;border-left-color:#ccc}
.scroll{overflow:visible}
tbody tr:hover td{background:none}
}
@page{margin:12mm}
`.replace(/\n/g, '');

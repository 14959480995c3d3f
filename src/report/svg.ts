/**
 * Pure helpers for the HTML report: escaping, scales, ticks, SVG path data, time labels.
 * No DOM, no state: each is a function of its arguments (and unit-tested as such).
 */

import type { SeriesPoint } from './series.js';

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for HTML/SVG element content and quoted attribute values. */
export function escapeHtml(text: unknown): string {
  return String(text).replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

/** Maps [d0, d1] linearly onto [r0, r1] (a zero-width domain maps to the middle of the range). */
export function linearScale(d0: number, d1: number, r0: number, r1: number): (value: number) => number {
  if (d1 === d0) return () => (r0 + r1) / 2;
  const k = (r1 - r0) / (d1 - d0);
  return (value) => r0 + (value - d0) * k;
}

/** A round step (1, 2, 2.5 or 5 × 10^k) giving about `count` intervals over `span`. */
export function niceStep(span: number, count: number): number {
  if (!(span > 0) || !Number.isFinite(span)) return 1;
  const raw = span / Math.max(1, count);
  const power = 10 ** Math.floor(Math.log10(raw));
  const f = raw / power;
  const nice = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
  return nice * power;
}

/** Round tick values within [min, max] (inclusive), about `count` intervals apart. */
export function niceTicks(min: number, max: number, count: number, options: { integer?: boolean } = {}): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [];
  if (max < min) [min, max] = [max, min];
  let step = niceStep(max - min, count);
  if (options.integer) step = Math.max(1, Math.round(step));
  if (max === min) return [min];
  const ticks: number[] = [];
  const start = Math.ceil(min / step - 1e-9);
  const end = Math.floor(max / step + 1e-9);
  for (let i = start; i <= end; i++) ticks.push(cleanNumber(i * step));
  return ticks;
}

/** Rounds away floating-point noise such as 0.30000000000000004. */
function cleanNumber(value: number): number {
  return Number.parseFloat(value.toPrecision(12));
}

/** [min, max] widened to round numbers (for a value axis that is not 0..100). */
export function niceExtent(min: number, max: number, count = 5): [number, number] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [0, 1];
  if (min === max) {
    const pad = Math.abs(min) > 0 ? Math.abs(min) * 0.05 : 1;
    return [min - pad, max + pad];
  }
  const step = niceStep(max - min, count);
  return [cleanNumber(Math.floor(min / step) * step), cleanNumber(Math.ceil(max / step) * step)];
}

/** A coordinate with at most `digits` decimals and no trailing zeros. */
export function formatCoordinate(value: number, digits = 1): string {
  const text = value.toFixed(digits);
  return text.includes('.') ? text.replace(/\.?0+$/, '') : text;
}

/**
 * SVG path data for a polyline through the points ("M x,y L x,y …"), coordinates rounded
 * to `digits` decimals. A non-finite value breaks the line (the next point starts a new
 * "M"); a lone point becomes a zero-length segment, which a round line cap draws as a dot.
 * Consecutive points that round to the same coordinates are written once.
 */
export function linePath(
  points: readonly SeriesPoint[],
  x: (index: number) => number,
  y: (value: number) => number,
  digits = 1,
): string {
  let path = '';
  let run: string[] = [];
  const flush = () => {
    if (run.length === 0) return;
    path += `M${run[0]}` + (run.length === 1 ? `L${run[0]}` : run.slice(1).map((xy) => `L${xy}`).join(''));
    run = [];
  };
  for (const point of points) {
    if (!Number.isFinite(point.value) || !Number.isFinite(point.index)) {
      flush();
      continue;
    }
    const xy = `${formatCoordinate(x(point.index), digits)},${formatCoordinate(y(point.value), digits)}`;
    if (run[run.length - 1] !== xy) run.push(xy);
  }
  flush();
  return path;
}

/**
 * The time at frame `index` from (index, seconds) samples sorted by index: linear
 * interpolation between the samples around it, extrapolation from the two nearest
 * samples outside them. Undefined with no samples; a single sample gives its own time
 * only at its own index.
 */
export function timeAt(samples: ReadonlyArray<readonly [number, number]>, index: number): number | undefined {
  const n = samples.length;
  if (n === 0) return undefined;
  if (n === 1) return samples[0]![0] === index ? samples[0]![1] : undefined;
  let lo = 0;
  let hi = n - 1;
  if (index <= samples[0]![0]) hi = 1;
  else if (index >= samples[n - 1]![0]) lo = n - 2;
  else {
    // Binary search for samples[lo].index <= index < samples[hi].index.
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if (samples[mid]![0] <= index) lo = mid;
      else hi = mid;
    }
  }
  const [i0, t0] = samples[lo]!;
  const [i1, t1] = samples[hi]!;
  if (i1 === i0) return t0;
  return t0 + ((index - i0) * (t1 - t0)) / (i1 - i0);
}

/**
 * Seconds as a clock: "m:ss.d", or "h:mm:ss.d" from an hour on. `decimals` digits of
 * seconds (default 1); negative times get a leading "−".
 */
export function formatTime(seconds: number, decimals = 1): string {
  if (!Number.isFinite(seconds)) return '';
  const sign = seconds < 0 ? '−' : '';
  const scale = 10 ** decimals;
  let rest = Math.round(Math.abs(seconds) * scale);
  const fraction = rest % scale;
  rest = (rest - fraction) / scale;
  const s = rest % 60;
  rest = (rest - s) / 60;
  const m = rest % 60;
  const h = (rest - m) / 60;
  const secondsText = String(s).padStart(2, '0') + (decimals > 0 ? `.${String(fraction).padStart(decimals, '0')}` : '');
  return h > 0 ? `${sign}${h}:${String(m).padStart(2, '0')}:${secondsText}` : `${sign}${m}:${secondsText}`;
}

/** A score with `decimals` fixed digits, or an en dash for a non-finite value. */
export function formatScore(value: number | undefined, decimals = 3): string {
  return value !== undefined && Number.isFinite(value) ? value.toFixed(decimals) : '–';
}

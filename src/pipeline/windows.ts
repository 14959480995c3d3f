/**
 * Rolling statistics over a stream of frame results, for live QC dashboards: the mean,
 * min, max, harmonic mean and low percentiles of one or more metrics over the last N
 * frames or the last D seconds, emitted every `hop` frames or seconds.
 *
 *   results.pipe(rollingWindows({ window: '2s', hop: '1s', metrics: ['vmaf'], percentiles: [5] }))
 *
 * Lengths (window, hop) are written `60` or `60f` (frames: results, not frame indices, so
 * with --subsample a 60f window holds 60 scored frames), or `2s`, `1.5s`, `500ms` (seconds).
 *
 * Time. A frame's time is its `refPts` where it has one, else `index / fps` where the
 * `fps` option is given; a time-based window or hop over a frame with neither is an error
 * (UsageError). A frame's duration is the interval since the previous frame of the same
 * stream (1/fps, or 0, for the first). Times are compared with a tolerance of 1 µs
 * (TIME_EPSILON), so that 60 frames at 30 fps make 2 s although 60/30 is not exact.
 *
 * Windows. The window ending at frame k holds:
 *   N frames:   the last N frames, k included;
 *   D seconds:  the frames j with t(k) − t(j) < D (the frames that started in the D
 *               seconds up to and including frame k), so that at a constant frame rate f a
 *               window of D seconds holds D·f frames: `2s` at 25 fps is `50f`.
 * A window is complete once the stream has covered its length: N frames have come, or
 * t(k) − t(first) + duration(k) ≥ D (at 25 fps: from the 50th frame on, as `50f`).
 * Before that a window is partial; partial windows are emitted only with `partial: true`
 * (default false: they pool fewer frames than asked for and read noisier than the rest).
 *
 * Cadence. Windows are emitted on a grid anchored at the first frame: with a hop of H
 * frames, at every frame after which a multiple of H frames have come (frames H−1, 2H−1,
 * …); with a hop of H seconds, at the first frame k whose end, t(k) + duration(k), reaches
 * t(first) + m·H for the next m (several grid points passed at once give one window).
 * Grid points whose window is still partial are skipped (unless `partial`). `hop: 1`
 * emits every frame (a sliding window); `hop` = `window` tiles the stream (tumbling).
 * The default hop is half the window (⌊N/2⌋ frames, or D/2 seconds): every stretch of the
 * stream up to half a window long lies whole inside some emitted window, so a dip is
 * never split between two windows and halved, at two windows per window length (a 2 s
 * window is updated every second). With `flush` (default true), when the stream ends on a
 * frame that no emitted window ended at, one more window, ending at the last frame, is
 * emitted (if complete, or with `partial`), so that the tail is not left out.
 *
 * Statistics, per metric, over the window's values oldest first: min, max, mean and
 * harmonic_mean exactly as PooledStats (libvmaf's pooling: harmonic_mean is
 * n / Σ 1/(v+1) − 1), so a window holding the whole run has the run's pooled values bit
 * for bit; and, per requested percentile p (default [5]), `p{p}` (`p5`, `p2.5`): the
 * nearest-rank percentile, the smallest value v of the window such that at least p % of
 * its values are ≤ v, i.e. sorted[⌈p·n/100⌉ − 1] (sorted[0] for p = 0; p100 is the max).
 * It is always a value of the window, never an interpolation. A NaN in the window makes
 * its percentiles NaN (and the other four as PooledStats makes them).
 *
 * Ladder mode. The operator takes plain FrameResults or `{ rendition, result }` pairs
 * (or anything, with a `select` function); each rendition has its own windows, clock and
 * cadence, and its WindowStats carry `rendition`.
 *
 * Memory: O(window) per stream (a ring buffer of the window's frames, all metrics side by
 * side); O(window log window) work per emitted window and metric.
 */
import { Observable, type OperatorFunction, type Subscriber, type Subscription } from '../rx.js';
import { UsageError } from '../errors.js';
import { PooledStats } from './pooling.js';
import type { FrameResult } from './writers/types.js';

/** A length in frames or in seconds. */
export type Span = { frames: number } | { seconds: number };

/** How a length may be given: `60`, `'60f'`, `'2s'`, `'500ms'`, or a Span. */
export type SpanInput = number | string | Span;

/** Tolerance of time comparisons, in seconds. */
export const TIME_EPSILON = 1e-6;

/** One rendition's result in ladder mode. */
export interface RenditionResult {
  rendition: string;
  result: FrameResult;
}

/** What the operators read from each item: the result, and the stream (rendition) it belongs to. */
export interface Keyed {
  /** The rendition; undefined for a single stream. */
  key?: string;
  result: FrameResult;
}

/** The default `select`: a FrameResult as is, a `{ rendition, result }` as that rendition's. */
export function selectKeyed(item: FrameResult | RenditionResult): Keyed {
  if (isRenditionResult(item)) return { key: item.rendition, result: item.result };
  return { result: item };
}

function isRenditionResult(item: FrameResult | RenditionResult): item is RenditionResult {
  return typeof (item as RenditionResult).rendition === 'string' && typeof (item as RenditionResult).result === 'object';
}

const FRAME_UNITS = new Set(['f', 'frame', 'frames']);
const SECOND_UNITS = new Set(['s', 'sec', 'secs', 'second', 'seconds']);
const SPAN_PATTERN = /^((?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)$/;
export const SPAN_HELP = 'write frames as 60 or 60f, time as 2s or 500ms';

/**
 * A length from its number and unit text: '' (when `bare` allows it) or f/frame/frames
 * for frames (a positive integer), s/sec/secs/second/seconds or ms for seconds (> 0).
 * Returns the reason as a string when they make no length.
 */
export function spanOf(numberText: string, unit: string, bare: 'frames' | 'error'): Span | string {
  const value = Number(numberText);
  if (!Number.isFinite(value)) return `"${numberText}" is not a number`;
  if (unit === '') {
    if (bare === 'error') return `"${numberText}" needs a unit (f, s or ms)`;
    unit = 'f';
  }
  if (FRAME_UNITS.has(unit)) {
    if (!Number.isInteger(value) || value < 1) return `a length in frames must be a whole number ≥ 1, not ${numberText}`;
    return { frames: value };
  }
  const seconds = SECOND_UNITS.has(unit) ? value : unit === 'ms' ? value / 1000 : undefined;
  if (seconds === undefined) return `unknown unit "${unit}" (f, s or ms)`;
  if (!(seconds > TIME_EPSILON)) return `a length in seconds must be more than ${TIME_EPSILON} s, not ${numberText}${unit}`;
  return { seconds };
}

/** Parses a window or hop length; `what` names it in the UsageError (e.g. 'window'). */
export function parseSpan(input: SpanInput, what = 'length'): Span {
  if (typeof input === 'number') {
    if (!Number.isInteger(input) || input < 1) throw new UsageError(`bad ${what} ${input}: a length in frames must be a whole number ≥ 1; ${SPAN_HELP}`);
    return { frames: input };
  }
  if (typeof input === 'object' && input !== null) {
    if ('frames' in input && typeof input.frames === 'number') return checked(spanOf(String(input.frames), 'f', 'frames'));
    if ('seconds' in input && typeof input.seconds === 'number') return checked(spanOf(String(input.seconds), 's', 'frames'));
    throw new UsageError(`bad ${what}: expected { frames } or { seconds }`);
  }
  const text = String(input).trim();
  const match = SPAN_PATTERN.exec(text);
  if (!match) throw new UsageError(`bad ${what} "${input}": ${SPAN_HELP}`);
  return checked(spanOf(match[1]!, match[2]!, 'frames'));

  function checked(span: Span | string): Span {
    if (typeof span === 'string') throw new UsageError(`bad ${what} "${typeof input === 'object' ? JSON.stringify(input) : input}": ${span}`);
    return span;
  }
}

/** Writes a length back as text: `60f`, `2s`. */
export function spanText(span: Span): string {
  return 'frames' in span ? `${span.frames}f` : `${span.seconds}s`;
}

/** A frame's time in seconds: refPts, else index / fps when fps is given, else undefined. */
export function frameTime(result: FrameResult, fps?: number): number | undefined {
  if (typeof result.refPts === 'number' && Number.isFinite(result.refPts)) return result.refPts;
  if (fps !== undefined) return result.index / fps;
  return undefined;
}

/** A metric's value in a result: its features first, then its scores (as the logs list them). */
export function metricValue(result: FrameResult, name: string): number | undefined {
  if (Object.hasOwn(result.features, name)) return result.features[name];
  if (Object.hasOwn(result.scores, name)) return result.scores[name];
  return undefined;
}

/** The UsageError for a metric that a result lacks, listing what it has. */
export function missingMetric(context: string, name: string, result: FrameResult): UsageError {
  const have = [...Object.keys(result.scores), ...Object.keys(result.features).filter((n) => !Object.hasOwn(result.scores, n))];
  return new UsageError(`${context}: metric "${name}" is not in the results (frame ${result.index} has ${have.join(', ') || 'none'})`);
}

export function checkFps(fps: number | undefined): void {
  if (fps !== undefined && !(Number.isFinite(fps) && fps > 0)) throw new UsageError(`bad fps ${fps}: expected a number > 0`);
}

/**
 * Where one stream (rendition) stands in time: how many frames have come, the first
 * frame's time, and the current frame's time and duration.
 */
export class StreamClock {
  /** Frames so far, the current one included. */
  count = 0;
  /** The current frame. */
  index = 0;
  time: number | undefined;
  /** Interval since the previous frame (1/fps, or 0, for the first). */
  duration = 0;
  first: number | undefined;
  private readonly fps: number | undefined;

  constructor(fps?: number) {
    this.fps = fps;
  }

  advance(result: FrameResult): void {
    const time = frameTime(result, this.fps);
    if (this.count === 0) {
      this.first = time;
      this.duration = this.fps !== undefined ? 1 / this.fps : 0;
    } else {
      this.duration = time !== undefined && this.time !== undefined ? Math.max(0, time - this.time) : 0;
    }
    this.count++;
    this.index = result.index;
    this.time = time;
  }

  /** Seconds covered from the first frame's start to the current frame's end. */
  elapsed(): number {
    return (this.time as number) - (this.first as number) + this.duration;
  }

  /** The current time, or a UsageError naming `context` (what needed it). */
  requireTime(context: string): number {
    if (this.time === undefined || this.first === undefined) {
      throw new UsageError(`${context} is measured in seconds, but frame ${this.index} has no presentation time (refPts): give an fps to time frames as index / fps`);
    }
    return this.time;
  }
}

/**
 * The frames of a window: their indices, times and one value per column, oldest first,
 * in a ring buffer that grows (doubling) only when a time window needs more room.
 */
/** Frames a window's ring is made for at first (it grows past them). */
const INITIAL_RING_FRAMES = 1024;

export class FrameRing {
  private capacity: number;
  private head = 0;
  size = 0;
  private indices: Float64Array;
  private times: Float64Array;
  private columns: Float64Array[];

  constructor(columns: number, capacity = 16) {
    this.capacity = Math.max(1, capacity);
    this.indices = new Float64Array(this.capacity);
    this.times = new Float64Array(this.capacity);
    this.columns = Array.from({ length: columns }, () => new Float64Array(this.capacity));
  }

  push(index: number, time: number | undefined, values: ArrayLike<number>): void {
    if (this.size === this.capacity) this.grow();
    const at = (this.head + this.size) % this.capacity;
    this.indices[at] = index;
    this.times[at] = time ?? NaN;
    for (let c = 0; c < this.columns.length; c++) this.columns[c]![at] = values[c]!;
    this.size++;
  }

  shift(): void {
    if (this.size === 0) return;
    this.head = (this.head + 1) % this.capacity;
    this.size--;
  }

  /** The i-th oldest frame's index, time (NaN when unknown), value in column c. */
  indexAt(i: number): number {
    return this.indices[(this.head + i) % this.capacity]!;
  }
  timeAt(i: number): number {
    return this.times[(this.head + i) % this.capacity]!;
  }
  valueAt(c: number, i: number): number {
    return this.columns[c]![(this.head + i) % this.capacity]!;
  }

  /**
   * Adds the newest frame to a window of `span`: a frame window drops its oldest frame
   * first (its ring's capacity is N), a time window, once the new frame's time is known.
   */
  slide(span: Span, index: number, time: number | undefined, values: ArrayLike<number>): void {
    if ('frames' in span) while (this.size >= span.frames) this.shift();
    this.push(index, time, values);
    this.trim(span, time);
  }

  /**
   * Drops the oldest frames that fall out of a window of `span` ending at the newest
   * frame (time `now`); the newest frame always stays.
   */
  trim(span: Span, now: number | undefined): void {
    if ('frames' in span) {
      while (this.size > span.frames) this.shift();
    } else {
      const limit = span.seconds - TIME_EPSILON;
      while (this.size > 1 && (now as number) - this.timeAt(0) >= limit) this.shift();
    }
  }

  private grow(): void {
    const capacity = this.capacity * 2;
    const remap = (old: Float64Array): Float64Array => {
      const next = new Float64Array(capacity);
      for (let i = 0; i < this.size; i++) next[i] = old[(this.head + i) % this.capacity]!;
      return next;
    };
    this.indices = remap(this.indices);
    this.times = remap(this.times);
    this.columns = this.columns.map(remap);
    this.head = 0;
    this.capacity = capacity;
  }
}

/**
 * The subscription of an operator that keeps a state per stream (rendition): rollingWindows,
 * alerts. Each item's result goes to `next` with its stream's key and state, made by
 * `create` at the stream's first frame, the state's clock already advanced to the result;
 * an error thrown by `next` errors the output. When the source completes, `complete` (if
 * any) runs before the output completes.
 */
export function subscribePerStream<T, S extends { clock: StreamClock }, R>(
  source: Observable<T>,
  subscriber: Subscriber<R>,
  select: (item: T) => Keyed,
  create: () => S,
  next: (key: string | undefined, stream: S, result: FrameResult) => void,
  complete?: (streams: ReadonlyMap<string | undefined, S>) => void,
): Subscription {
  const streams = new Map<string | undefined, S>();
  return source.subscribe({
    next: (item) => {
      try {
        const { key, result } = select(item);
        let stream = streams.get(key);
        if (!stream) {
          stream = create();
          streams.set(key, stream);
        }
        stream.clock.advance(result);
        next(key, stream, result);
      } catch (error) {
        subscriber.error(error);
      }
    },
    error: (error) => subscriber.error(error),
    complete: () => {
      complete?.(streams);
      subscriber.complete();
    },
  });
}

/** Whether the stream so far covers a window of `span` (see the module comment). */
export function spanCovered(span: Span, clock: StreamClock): boolean {
  if ('frames' in span) return clock.count >= span.frames;
  return clock.elapsed() >= span.seconds - TIME_EPSILON;
}

/** The percentile key of p: `p5`, `p2.5`. */
export function percentileKey(p: number): `p${number}` {
  return `p${p}` as `p${number}`;
}

/** Nearest-rank percentile of ascending `sorted` values (n ≥ 1): sorted[⌈p·n/100⌉ − 1]. */
export function nearestRank(sorted: ArrayLike<number>, p: number): number {
  const n = sorted.length;
  // p·n first: exact for the usual p and n; the guard keeps 1.0000000000000002 at rank 1.
  const rank = Math.max(1, Math.min(n, Math.ceil((p * n) / 100 - 1e-9)));
  return sorted[rank - 1]!;
}

export function checkPercentiles(percentiles: readonly number[]): void {
  for (const p of percentiles) {
    if (typeof p !== 'number' || !(p >= 0 && p <= 100)) throw new UsageError(`bad percentile ${p}: expected a number from 0 to 100`);
  }
}

/** The pooled values and percentiles of one column of a ring. */
export interface ColumnStats {
  mean: number;
  min: number;
  max: number;
  harmonic_mean: number;
  percentiles: number[];
}

export function columnStats(ring: FrameRing, column: number, percentiles: readonly number[], scratch: { buffer: Float64Array }): ColumnStats {
  const n = ring.size;
  const pooled = new PooledStats();
  if (scratch.buffer.length < n) scratch.buffer = new Float64Array(Math.max(n, scratch.buffer.length * 2));
  const values = scratch.buffer.subarray(0, n);
  let nan = false;
  for (let i = 0; i < n; i++) {
    const value = ring.valueAt(column, i);
    pooled.add(value);
    values[i] = value;
    if (Number.isNaN(value)) nan = true;
  }
  const { mean, min, max, harmonic_mean } = pooled.result();
  let result: number[];
  if (percentiles.length === 0) result = [];
  else if (nan) result = percentiles.map(() => NaN);
  else {
    values.sort();
    result = percentiles.map((p) => nearestRank(values, p));
  }
  return { mean, min, max, harmonic_mean, percentiles: result };
}

export interface RollingWindowSpec<T = FrameResult | RenditionResult> {
  /** The window's length: `60` or `'60f'` frames, `'2s'` or `'500ms'`. */
  window: SpanInput;
  /** How often a window is emitted. Default: half the window (⌊N/2⌋ frames, D/2 s). */
  hop?: SpanInput;
  /** Metrics (features or model scores). Default ['vmaf']. */
  metrics?: readonly string[];
  /** Percentiles, 0 to 100, each emitted as `p{p}`. Default [5]. */
  percentiles?: readonly number[];
  /** Frames per second, to time frames without refPts as index / fps. */
  fps?: number;
  /** Emit windows before the stream covers the window's length. Default false. */
  partial?: boolean;
  /** At the end, emit a window ending at the last frame if none did. Default true. */
  flush?: boolean;
  /** Maps an item to its result and rendition. Default: selectKeyed. */
  select?: (item: T) => Keyed;
}

/** One window's statistics of one metric. */
export interface WindowStatsBase {
  /** The rendition, in ladder mode. */
  rendition?: string;
  metric: string;
  /** Frames in this window; `seconds`: the window's length, for a window given in seconds. */
  window: { frames: number; seconds?: number };
  /** Whether the stream covered the window's length (false only for partial windows). */
  complete: boolean;
  /** The first and last frame of the window (result indices, inclusive). */
  startIndex: number;
  endIndex: number;
  /** Their times (refPts, or index / fps), where known. */
  startPts?: number;
  endPts?: number;
  mean: number;
  min: number;
  max: number;
  harmonic_mean: number;
}

/** WindowStatsBase plus one `p{p}` per requested percentile (`p5`). */
export type WindowStats = WindowStatsBase & { [percentile: `p${number}`]: number };

interface WindowStream {
  clock: StreamClock;
  ring: FrameRing;
  /** clock.count when the last window was emitted. */
  emittedAt: number;
  /** The next grid point of a hop in seconds, relative to the first frame's time. */
  nextMark: number;
}

/**
 * The operator: emits WindowStats (one per metric, in `metrics` order) at the cadence of
 * `hop`. Throws a UsageError at once for a bad spec; errors the stream with a UsageError
 * for a metric a result lacks or a frame with no time where seconds are needed.
 */
export function rollingWindows<T = FrameResult | RenditionResult>(spec: RollingWindowSpec<T>): OperatorFunction<T, WindowStats> {
  const window = parseSpan(spec.window, 'window');
  const hop: Span = spec.hop !== undefined
    ? parseSpan(spec.hop, 'hop')
    : 'frames' in window ? { frames: Math.max(1, Math.floor(window.frames / 2)) } : { seconds: window.seconds / 2 };
  const metrics = [...(spec.metrics ?? ['vmaf'])];
  if (metrics.length === 0) throw new UsageError('rolling windows need at least one metric');
  const percentiles = [...(spec.percentiles ?? [5])];
  checkPercentiles(percentiles);
  checkFps(spec.fps);
  const partial = spec.partial ?? false;
  const flush = spec.flush ?? true;
  const select = spec.select ?? (selectKeyed as unknown as (item: T) => Keyed);
  const timed = 'seconds' in window || 'seconds' in hop;
  const context = `window ${spanText(window)} hop ${spanText(hop)}`;
  const keys = percentiles.map(percentileKey);

  return (source) =>
    new Observable<WindowStats>((subscriber) => {
      const scratch = { buffer: new Float64Array(64) };
      const values = new Float64Array(metrics.length);

      const emit = (key: string | undefined, stream: WindowStream): void => {
        stream.emittedAt = stream.clock.count;
        const { ring } = stream;
        const complete = spanCovered(window, stream.clock);
        const startTime = ring.timeAt(0);
        const endTime = ring.timeAt(ring.size - 1);
        for (let m = 0; m < metrics.length; m++) {
          const stats = columnStats(ring, m, percentiles, scratch);
          const out: WindowStatsBase = {
            ...(key !== undefined ? { rendition: key } : {}),
            metric: metrics[m]!,
            window: 'seconds' in window ? { frames: ring.size, seconds: window.seconds } : { frames: ring.size },
            complete,
            startIndex: ring.indexAt(0),
            endIndex: ring.indexAt(ring.size - 1),
            ...(Number.isNaN(startTime) ? {} : { startPts: startTime }),
            ...(Number.isNaN(endTime) ? {} : { endPts: endTime }),
            mean: stats.mean,
            min: stats.min,
            max: stats.max,
            harmonic_mean: stats.harmonic_mean,
          };
          const full = out as WindowStats;
          for (let p = 0; p < keys.length; p++) full[keys[p]!] = stats.percentiles[p]!;
          subscriber.next(full);
        }
      };

      return subscribePerStream(
        source,
        subscriber,
        select,
        (): WindowStream => ({
          clock: new StreamClock(spec.fps),
          // Sized for the window where it is small; a longer one grows with the frames it holds.
          ring: new FrameRing(metrics.length, 'frames' in window ? Math.min(window.frames, INITIAL_RING_FRAMES) : 16),
          emittedAt: 0,
          nextMark: 'seconds' in hop ? hop.seconds : 0,
        }),
        (key, stream, result) => {
          const { clock, ring } = stream;
          if (timed) clock.requireTime(`${key === undefined ? '' : `${key}: `}${context}`);
          for (let m = 0; m < metrics.length; m++) {
            const value = metricValue(result, metrics[m]!);
            if (value === undefined) throw missingMetric(`rolling ${context}${key === undefined ? '' : ` (${key})`}`, metrics[m]!, result);
            values[m] = value;
          }
          ring.slide(window, result.index, clock.time, values);

          let due: boolean;
          if ('frames' in hop) due = clock.count % hop.frames === 0;
          else {
            const end = clock.elapsed();
            due = end >= stream.nextMark - TIME_EPSILON;
            while (stream.nextMark - TIME_EPSILON <= end) stream.nextMark += hop.seconds;
          }
          if (due && (partial || spanCovered(window, clock))) emit(key, stream);
        },
        (streams) => {
          if (!flush) return;
          for (const [key, stream] of streams) {
            if (stream.emittedAt !== stream.clock.count && (partial || spanCovered(window, stream.clock))) emit(key, stream);
          }
        },
      );
    });
}

/** The NDJSON line of a window: `{"type":"window",…}` with non-finite numbers as null. */
export interface WindowLine {
  type: 'window';
  rendition?: string;
  metric: string;
  window: { frames: number; seconds?: number };
  complete: boolean;
  startIndex: number;
  endIndex: number;
  startPts?: number | null;
  endPts?: number | null;
  mean: number | null;
  min: number | null;
  max: number | null;
  harmonic_mean: number | null;
  [percentile: `p${number}`]: number | null;
}

/** The object to write as a window's NDJSON line, fields in a fixed order. Pure. */
export function windowLine(w: WindowStats): WindowLine {
  const line: Record<string, unknown> = { type: 'window' };
  if (w.rendition !== undefined) line.rendition = w.rendition;
  line.metric = w.metric;
  line.window = w.window.seconds !== undefined ? { frames: w.window.frames, seconds: w.window.seconds } : { frames: w.window.frames };
  line.complete = w.complete;
  line.startIndex = w.startIndex;
  line.endIndex = w.endIndex;
  if (w.startPts !== undefined) line.startPts = finite(w.startPts);
  if (w.endPts !== undefined) line.endPts = finite(w.endPts);
  line.mean = finite(w.mean);
  line.min = finite(w.min);
  line.max = finite(w.max);
  line.harmonic_mean = finite(w.harmonic_mean);
  for (const key of Object.keys(w)) {
    if (/^p\d/.test(key)) line[key] = finite(w[key as `p${number}`]);
  }
  return line as unknown as WindowLine;
}

export function finite(value: number): number | null {
  return Number.isFinite(value) ? value : null;
}

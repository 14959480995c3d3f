/**
 * Threshold alerts over a stream of frame results, for live transcoder QC:
 *
 *   results.pipe(alerts(['vmaf<70 for 2s', '720p:vmaf_neg < 60 for 48 frames', 'p5(vmaf) < 50 over 5s']))
 *
 * Grammar (whitespace is allowed between any two tokens, and required nowhere else;
 * keywords and units are lower case):
 *
 *   alert      = [ rendition ":" ] subject comparator number [ "over" span ] [ "for" span ]
 *   subject    = metric | stat "(" metric ")"
 *   stat       = "mean" | "min" | "max" | "harmonic_mean" | "p" digits [ "." digits ]
 *   metric     = [A-Za-z_][A-Za-z0-9_]*           a feature or model score of the results
 *   rendition  = one or more characters other than whitespace : < > = ( )
 *   comparator = "<" | "<=" | ">" | ">="
 *   number     = [ "+" | "-" ] ( digits [ "." [ digits ] ] | "." digits ) [ ("e"|"E") [ "+"|"-" ] digits ]
 *   span       = positive-number unit             (a unit is required)
 *   unit       = "f" | "frame" | "frames" | "s" | "sec" | "secs" | "second" | "seconds" | "ms"
 *
 * `over` and `for` may come in either order, each at most once. A stat needs `over` and
 * `over` needs a stat. A span in frames is a whole number ≥ 1.
 *
 * Semantics, per stream (each rendition in ladder mode on its own):
 *  - The condition is evaluated on every frame: the metric's value (features first, then
 *    scores), or with `stat(metric) … over W` the stat over the sliding window W ending
 *    at this frame, as rollingWindows computes it (nearest-rank percentiles, libvmaf's
 *    harmonic mean); while the stream has not yet covered W the condition does not hold.
 *    A NaN value never holds.
 *  - An episode is a run of consecutive frames on which the condition holds; `since` is
 *    its first frame.
 *  - 'start' is emitted on the frame where the episode reaches the `for` duration:
 *    without `for`, on its first frame; `for N f`, on its Nth frame; `for D s`, on the
 *    first frame k with t(k) − t(since) + duration(k) ≥ D (times and frame durations as
 *    in rollingWindows: refPts, else index / fps; at 25 fps `for 2s` is `for 50f`).
 *    Shorter episodes emit nothing.
 *  - 'clear' is emitted on the first frame where the condition no longer holds, after a
 *    'start' (no hysteresis beyond the `for` delay: an alert re-arms only after holding
 *    for its whole duration again, which already bounds flapping to one start per
 *    duration; to smooth a noisy metric, alert on a windowed stat instead). Its `value`
 *    is that frame's value, `since` still the episode's first frame.
 *  - An alert still active when the stream ends gets no 'clear'.
 *  - A spec with a rendition prefix applies only to results of that rendition; one
 *    without applies to every stream, single or per rendition.
 * Events of one frame come in spec order.
 */
import { Observable, type OperatorFunction } from '../rx.js';
import { UsageError } from '../errors.js';
import type { FrameResult } from './writers/types.js';
import {
  FrameRing,
  StreamClock,
  TIME_EPSILON,
  checkFps,
  columnStats,
  finite,
  metricValue,
  missingMetric,
  selectKeyed,
  spanCovered,
  spanOf,
  spanText,
  subscribePerStream,
  type Keyed,
  type RenditionResult,
  type Span,
} from './windows.js';

export type Comparator = '<' | '<=' | '>' | '>=';
export type AlertStat = 'mean' | 'min' | 'max' | 'harmonic_mean' | `p${number}`;

/** A parsed alert. */
export interface AlertSpec {
  /** The spec as written (trimmed); AlertEvent.spec. */
  text: string;
  rendition?: string;
  metric: string;
  /** With `over`: the windowed statistic compared instead of the frame's value. */
  stat?: AlertStat;
  over?: Span;
  comparator: Comparator;
  threshold: number;
  /** How long the condition must hold before 'start'; absent: at once. */
  for?: Span;
}

export interface AlertEvent {
  spec: string;
  state: 'start' | 'clear';
  rendition?: string;
  metric: string;
  stat?: AlertStat;
  comparator: Comparator;
  threshold: number;
  /** The frame the event fires on, and its time (refPts, or index / fps) where known. */
  index: number;
  pts?: number;
  /** The compared value on that frame (the metric's, or the windowed stat's). */
  value: number;
  /** The episode's first frame. */
  since: { index: number; pts?: number };
}

export interface AlertOptions<T = FrameResult | RenditionResult> {
  /** Frames per second, to time frames without refPts as index / fps. */
  fps?: number;
  /** Maps an item to its result and rendition. Default: FrameResult or { rendition, result }. */
  select?: (item: T) => Keyed;
}

const STAT_PATTERN = /(mean|min|max|harmonic_mean|p(\d+(?:\.\d+)?))\s*\(/y;
const NAME_PATTERN = /[A-Za-z_][A-Za-z0-9_]*/y;
const RENDITION_PATTERN = /([^\s:<>=()]+)\s*:/y;
const COMPARATOR_PATTERN = /<=|>=|<|>/y;
const NUMBER_PATTERN = /[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?/y;
const KEYWORD_PATTERN = /(over|for)(?![A-Za-z0-9_])/y;
const SPAN_PATTERN = /((?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)/y;
const HELP = 'e.g. "vmaf<70 for 2s", "720p:vmaf_neg <= 60 for 48f", "p5(vmaf) < 50 over 5s"';

/** Parses one alert spec; a UsageError names the column and the text where it goes wrong. */
export function parseAlertSpec(input: string): AlertSpec {
  const text = String(input).trim();
  let pos = 0;

  const fail = (at: number, message: string): never => {
    const where = at >= text.length ? 'at the end' : `at column ${at + 1} ("${text.slice(at)}")`;
    throw new UsageError(`bad alert "${text}" ${where}: ${message}; ${HELP}`);
  };
  const skip = (): void => {
    while (pos < text.length && /\s/.test(text[pos]!)) pos++;
  };
  const match = (pattern: RegExp): RegExpExecArray | null => {
    pattern.lastIndex = pos;
    const m = pattern.exec(text);
    if (m) pos = pattern.lastIndex;
    return m;
  };

  if (text === '') throw new UsageError(`bad alert "": it is empty; ${HELP}`);
  const spec: Partial<AlertSpec> & { text: string } = { text };

  const rendition = match(RENDITION_PATTERN);
  if (rendition) spec.rendition = rendition[1]!;
  skip();

  const statAt = pos;
  const stat = match(STAT_PATTERN);
  if (stat) {
    if (stat[2] !== undefined && !(Number(stat[2]) <= 100)) fail(statAt, `a percentile is from p0 to p100, not ${stat[1]}`);
    spec.stat = stat[1] as AlertStat;
    skip();
  }
  const nameAt = pos;
  const name = match(NAME_PATTERN);
  if (!name) fail(pos, stat ? `expected a metric name inside ${stat[1]}(…)` : 'expected a metric name (e.g. vmaf)');
  spec.metric = name![0];
  skip();
  if (stat) {
    if (text[pos] !== ')') fail(pos, `expected ")" after ${stat[1]}(${spec.metric}`);
    pos++;
    skip();
  } else if (text[pos] === '(') {
    fail(nameAt, `unknown statistic "${spec.metric}": expected mean, min, max, harmonic_mean or pN (e.g. p5)`);
  }

  const comparatorAt = pos;
  const comparator = match(COMPARATOR_PATTERN);
  if (!comparator) fail(pos, 'expected a comparator <, <=, > or >=');
  spec.comparator = comparator![0] as Comparator;
  skip();
  if (text[pos] === '=' || text[pos] === '<' || text[pos] === '>') fail(comparatorAt, `unknown comparator: expected <, <=, > or >=`);

  const numberAt = pos;
  const number = match(NUMBER_PATTERN);
  if (!number) fail(numberAt, `expected a number after "${spec.comparator}"`);
  if (/[A-Za-z0-9_.]/.test(text[pos] ?? '')) fail(numberAt, `expected a number after "${spec.comparator}", then a space or the end, not "${/^\S*/.exec(text.slice(numberAt))![0]}"`);
  spec.threshold = Number(number![0]);
  if (!Number.isFinite(spec.threshold)) fail(numberAt, `the threshold must be finite`);

  let overAt = -1;
  for (;;) {
    skip();
    if (pos >= text.length) break;
    const keywordAt = pos;
    const keyword = match(KEYWORD_PATTERN);
    if (!keyword) {
      const expected = [spec.for === undefined ? '"for DURATION"' : '', spec.stat !== undefined && spec.over === undefined ? '"over DURATION"' : '', 'the end'];
      fail(pos, `expected ${expected.filter(Boolean).join(' or ')}`);
    }
    const which = keyword![1] as 'over' | 'for';
    if (spec[which] !== undefined) fail(keywordAt, `"${which}" is given twice`);
    skip();
    const spanAt = pos;
    const span = match(SPAN_PATTERN);
    if (!span) fail(spanAt, `expected a duration after "${which}" (e.g. 2s, 500ms, 48f)`);
    if (/[A-Za-z0-9_.]/.test(text[pos] ?? '')) fail(spanAt, `expected a duration after "${which}" (e.g. 2s, 500ms, 48f)`);
    const parsed = spanOf(span![1]!, span![2]!, 'error');
    if (typeof parsed === 'string') fail(spanAt, parsed);
    spec[which] = parsed as Span;
    if (which === 'over') overAt = keywordAt;
  }

  if (spec.stat !== undefined && spec.over === undefined) fail(text.length, `${spec.stat}(${spec.metric}) needs a window: add "over DURATION" (e.g. over 5s)`);
  if (spec.stat === undefined && spec.over !== undefined) fail(overAt, `"over" needs a statistic, e.g. mean(${spec.metric}) ${spec.comparator} ${number![0]} over ${spanText(spec.over)}`);
  return spec as AlertSpec;
}

function compare(value: number, comparator: Comparator, threshold: number): boolean {
  switch (comparator) {
    case '<':
      return value < threshold;
    case '<=':
      return value <= threshold;
    case '>':
      return value > threshold;
    case '>=':
      return value >= threshold;
  }
}

/** One alert's state on one stream. */
interface AlertState {
  /** The window of a windowed stat. */
  ring?: FrameRing;
  holding: boolean;
  active: boolean;
  /** Frames in the current episode. */
  frames: number;
  since: { index: number; pts?: number; time?: number };
}

interface AlertStream {
  clock: StreamClock;
  states: AlertState[];
}

/**
 * The operator: emits an AlertEvent when an alert starts or clears. Throws a UsageError
 * at once for a bad spec; errors the stream with a UsageError for a metric a result lacks
 * or a frame with no time where seconds are needed.
 */
export function alerts<T = FrameResult | RenditionResult>(specs: ReadonlyArray<string | AlertSpec>, options: AlertOptions<T> = {}): OperatorFunction<T, AlertEvent> {
  const parsed = specs.map((spec) => (typeof spec === 'string' ? parseAlertSpec(spec) : spec));
  checkFps(options.fps);
  const select = options.select ?? (selectKeyed as unknown as (item: T) => Keyed);
  const percentile = parsed.map((spec) => (spec.stat !== undefined && spec.stat.startsWith('p') ? [Number(spec.stat.slice(1))] : []));

  return (source) =>
    new Observable<AlertEvent>((subscriber) => {
      const scratch = { buffer: new Float64Array(64) };
      const one = new Float64Array(1);

      return subscribePerStream(
        source,
        subscriber,
        select,
        (): AlertStream => ({
          clock: new StreamClock(options.fps),
          states: parsed.map((spec) => ({
            ring: spec.over ? new FrameRing(1, 'frames' in spec.over ? spec.over.frames : 16) : undefined,
            holding: false,
            active: false,
            frames: 0,
            since: { index: 0 },
          })),
        }),
        (key, stream, result) => {
          const { clock } = stream;
          for (let s = 0; s < parsed.length; s++) {
            const spec = parsed[s]!;
            if (spec.rendition !== undefined && spec.rendition !== key) continue;
            const state = stream.states[s]!;
            const context = `alert "${spec.text}"${key === undefined ? '' : ` (${key})`}`;
            if ((spec.over && 'seconds' in spec.over) || (spec.for && 'seconds' in spec.for)) clock.requireTime(context);
            const raw = metricValue(result, spec.metric);
            if (raw === undefined) throw missingMetric(context, spec.metric, result);

            let value: number | undefined = raw;
            if (spec.over && state.ring) {
              const ring = state.ring;
              one[0] = raw;
              ring.slide(spec.over, result.index, clock.time, one);
              if (!spanCovered(spec.over, clock)) value = undefined;
              else {
                const stats = columnStats(ring, 0, percentile[s]!, scratch);
                value = spec.stat!.startsWith('p') ? stats.percentiles[0]! : stats[spec.stat as 'mean' | 'min' | 'max' | 'harmonic_mean'];
              }
            }

            const holds = value !== undefined && compare(value, spec.comparator, spec.threshold);
            if (holds) {
              if (!state.holding) {
                state.holding = true;
                state.frames = 0;
                state.since = clock.time === undefined ? { index: result.index } : { index: result.index, pts: clock.time, time: clock.time };
              }
              state.frames++;
              if (!state.active && reached(spec.for, state, clock)) {
                state.active = true;
                subscriber.next(event(spec, 'start', key, result.index, clock.time, value!, state));
              }
            } else {
              if (state.active) subscriber.next(event(spec, 'clear', key, result.index, clock.time, value ?? NaN, state));
              state.holding = false;
              state.active = false;
            }
          }
        },
      );
    });
}

function reached(duration: Span | undefined, state: AlertState, clock: StreamClock): boolean {
  if (duration === undefined) return true;
  if ('frames' in duration) return state.frames >= duration.frames;
  return (clock.time as number) - (state.since.time as number) + clock.duration >= duration.seconds - TIME_EPSILON;
}

function event(spec: AlertSpec, state: 'start' | 'clear', key: string | undefined, index: number, pts: number | undefined, value: number, alert: AlertState): AlertEvent {
  return {
    spec: spec.text,
    state,
    ...(key !== undefined ? { rendition: key } : {}),
    metric: spec.metric,
    ...(spec.stat !== undefined ? { stat: spec.stat } : {}),
    comparator: spec.comparator,
    threshold: spec.threshold,
    index,
    ...(pts !== undefined ? { pts } : {}),
    value,
    since: alert.since.pts !== undefined ? { index: alert.since.index, pts: alert.since.pts } : { index: alert.since.index },
  };
}

/** The NDJSON line of an alert event: `{"type":"alert",…}` with a non-finite value as null. */
export interface AlertLine extends Omit<AlertEvent, 'value'> {
  type: 'alert';
  value: number | null;
}

/** The object to write as an alert's NDJSON line, fields in a fixed order. Pure. */
export function alertLine(a: AlertEvent): AlertLine {
  return {
    type: 'alert',
    spec: a.spec,
    state: a.state,
    ...(a.rendition !== undefined ? { rendition: a.rendition } : {}),
    metric: a.metric,
    ...(a.stat !== undefined ? { stat: a.stat } : {}),
    comparator: a.comparator,
    threshold: a.threshold,
    index: a.index,
    ...(a.pts !== undefined ? { pts: a.pts } : {}),
    value: finite(a.value),
    since: a.since.pts !== undefined ? { index: a.since.index, pts: a.since.pts } : { index: a.since.index },
  };
}

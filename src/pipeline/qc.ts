/**
 * Live QC on top of the scoring engine (issue "Live transcoder QC"): rolling windows,
 * threshold alerts, frame alignment and drift reports, as options of a run.
 *
 *   score(ref, dis, { windows: { window: '2s' }, alerts: ['vmaf<60 for 1s'], onWindow, onAlert })
 *   scoreLadderEvents(ref, renditions, { align: 'auto', alerts: ['vmaf<60 for 1s'] })
 *     .on('alert', (a) => …).on('window', (w) => …).on('alignment', (a) => …).on('drift', (d) => …)
 *
 * The engine feeds each result, once it has been handed on (the frame's own `next` or
 * `frame` event first), to rollingWindows() and alerts(), and calls onWindow / onAlert with
 * what they emit, so a window or an alert always comes right after the frame that
 * completes it (with the async iterator and the Readable, "handed on" is "queued for the
 * consumer": the callback may run before the consumer has taken the frame). A drift report
 * comes right after the frame whose result lets its search run (DriftMonitor: a frame in
 * terms of the search's window, never how far decoding had run ahead), so a single run and a
 * queued one (src/queue) place it alike. At the end of the run the last window (the flush) and the drift monitors'
 * pending reports come before completion (before `end`). In a ladder each rendition has
 * its own windows, alerts and monitor, and every notice names its rendition; a single pair
 * (score()) gives notices without `rendition`.
 *
 * This module holds the types and NDJSON lines of the notices and the operator that
 * attaches windows, alerts and drift monitoring to a run's deliveries.
 */
import { Observable, Subject, Subscription } from '../rx.js';
import type { AlignMode, AlignmentReport } from '../align/align-pairs.js';
import type { DriftEvent, DriftMonitorOptions } from '../align/drift-monitor.js';
import { DriftMonitor } from '../align/drift-monitor.js';
import { UsageError } from '../errors.js';
import type { FrameGroup } from '../types.js';
import { alerts, parseAlertSpec, type AlertEvent, type AlertSpec } from './alerts.js';
import { finite, rollingWindows, type RollingWindowSpec, type WindowStats } from './windows.js';
import type { FrameResult } from './writers/types.js';

export type { AlignMode, AlignmentReport } from '../align/align-pairs.js';
export type { DriftEvent, DriftEventKind, DriftMonitorOptions } from '../align/drift-monitor.js';

/** The windows of a run: rollingWindows' spec without `select` (the engine knows its items). */
export type WindowOptions = Omit<RollingWindowSpec, 'select'>;

/** An alignment as found (or given) for one input: AlignmentReport, with its rendition in a ladder. */
export interface AlignmentNotice extends AlignmentReport {
  rendition?: string;
}

/** A drift report of the distorted stream (dropped, repeated frame…): DriftEvent, with its rendition in a ladder. */
export interface DriftNotice extends DriftEvent {
  rendition?: string;
}

/** The live QC options of a run (part of ScoreOptions and LadderOptions). */
export interface QcOptions {
  /**
   * Rolling windows over the results, passed to onWindow (and the `window` event). Default
   * metrics: every model's score.
   */
  windows?: WindowOptions;
  /** Threshold alerts (the grammar of parseAlertSpec), passed to onAlert (and the `alert` event). */
  alerts?: ReadonlyArray<string | AlertSpec>;
  /**
   * Align each distorted input on the reference before scoring: 'auto' searches the offset
   * in ±alignRange frames from the first frames, a whole number o applies it (distorted
   * frame i is scored against reference frame i + o). Reported to onAlignment (and the
   * `alignment` event). Default: no alignment. A ladder's Rendition.align overrides it.
   */
  align?: AlignMode;
  /** N for align: 'auto': offsets from −N to N are searched (default 10). */
  alignRange?: number;
  /**
   * Watch the distorted stream for dropped and repeated frames (DriftMonitor): on (true),
   * off (false), or the monitor's options (on). Default: on for the renditions aligned
   * (`align`, or a rendition's own), off for the others, which then pay nothing for it (the
   * monitor copies a thumbnail of every frame). Reports go to onDrift (and the `drift`
   * event); the monitor only reports, it does not re-pair.
   */
  drift?: boolean | Omit<DriftMonitorOptions, 'onEvent'>;
  onWindow?: (window: WindowStats) => void;
  onAlert?: (alert: AlertEvent) => void;
  onAlignment?: (alignment: AlignmentNotice) => void;
  onDrift?: (drift: DriftNotice) => void;
}

/** The NDJSON line of an alignment: `{"type":"alignment",…}` (the search's candidates left out). */
export interface AlignmentLine {
  type: 'alignment';
  rendition?: string;
  mode: 'fixed' | 'auto';
  offset: number;
  psnr?: number | null;
  confidence: number;
  confident: boolean;
  static: boolean;
  runnerUp?: { offset: number; psnr: number | null; frames: number };
  frameSkipRef: number;
  frameSkipDist: number;
  framesSearched?: { ref: number; dis: number };
}

export function alignmentLine(a: AlignmentNotice): AlignmentLine {
  return {
    type: 'alignment',
    ...(a.rendition !== undefined ? { rendition: a.rendition } : {}),
    mode: a.mode,
    offset: a.offset,
    ...(a.psnr !== undefined ? { psnr: finite(a.psnr) } : {}),
    confidence: a.confidence,
    confident: a.confident,
    static: a.static,
    ...(a.runnerUp ? { runnerUp: { offset: a.runnerUp.offset, psnr: finite(a.runnerUp.psnr), frames: a.runnerUp.frames } } : {}),
    frameSkipRef: a.frameSkipRef,
    frameSkipDist: a.frameSkipDist,
    ...(a.framesSearched ? { framesSearched: { ...a.framesSearched } } : {}),
  };
}

/** The NDJSON line of a drift report: `{"type":"drift",…}`. */
export interface DriftLine extends Omit<DriftNotice, 'baseline' | 'gain'> {
  type: 'drift';
  baseline: number | null;
  gain: number | null;
}

export function driftLine(d: DriftNotice): DriftLine {
  return {
    type: 'drift',
    ...(d.rendition !== undefined ? { rendition: d.rendition } : {}),
    kind: d.kind,
    atIndex: d.atIndex,
    offset: d.offset,
    previousOffset: d.previousOffset,
    trigger: d.trigger,
    triggerIndex: d.triggerIndex,
    baseline: finite(d.baseline),
    gain: finite(d.gain),
    analysed: d.analysed,
  };
}

/** An offset with its sign: +3, -2, 0. */
export function signed(offset: number): string {
  return offset > 0 ? `+${offset}` : String(offset);
}

/** One line of text for an alignment (what the CLI prints). */
export function alignmentText(a: AlignmentNotice, range?: number): string {
  const what = `offset ${signed(a.offset)}: distorted frame i is scored against reference frame i${a.offset === 0 ? '' : signed(a.offset)}`;
  const skips = `(skipping ${a.frameSkipRef} reference frame${a.frameSkipRef === 1 ? '' : 's'} and ${a.frameSkipDist} distorted)`;
  if (a.mode === 'fixed') return `aligned at ${what} ${skips}, as given`;
  let text = `aligned at ${what} ${skips}, found by luma PSNR over ${range !== undefined ? `±${range} frames` : 'the first frames'}`;
  if (a.psnr !== undefined && Number.isFinite(a.psnr)) text += `: ${a.psnr.toFixed(2)} dB`;
  if (a.static) text += '; the pictures barely change, so there is nothing to align on: the offset is 0 by default';
  else if (a.runnerUp) text += `, ${a.confident ? '' : 'LOW '}confidence ${a.confidence.toFixed(2)} (next best ${signed(a.runnerUp.offset)} at ${a.runnerUp.psnr.toFixed(2)} dB)`;
  return text;
}

/** One line of text for a drift report; undefined for a 'collapse' (alerts speak for the scores). */
export function driftText(d: DriftNotice): string | undefined {
  switch (d.kind) {
    case 'dropped':
      return `the distorted stream dropped a frame at frame ${d.atIndex}: from there it shows the reference one frame later (offset ${signed(d.offset)})`;
    case 'repeated':
      return `the distorted stream repeated a frame at frame ${d.atIndex}: from there it shows the reference one frame earlier (offset ${signed(d.offset)})`;
    case 'offset':
      return `the distorted stream's offset changed from ${signed(d.previousOffset)} to ${signed(d.offset)} at frame ${d.atIndex}`;
    case 'collapse':
      return undefined;
  }
}

/** What one rendition's results are keyed by; undefined for a single pair. */
export interface QcItem {
  rendition: string;
  result: FrameResult;
}

/**
 * Windows, alerts and drift monitors of one run. Create once the models are known (their
 * names are the default window metrics); `observeGroup` on the decode side, `attach` on the
 * results.
 */
export interface RunQcSetup {
  /** The renditions' names, in order. */
  names: readonly string[];
  /** A single pair: notices carry no rendition. */
  single: boolean;
  /** The models' score names: the default window metrics; the first is what the drift monitors watch (none: luma PSNR). */
  modelNames: readonly string[];
  /** Groups that may be in flight between decoding and delivery (sizes the monitors' rings). */
  inFlight: number;
  /** Per rendition: aligned (an `align` applies to it), which turns its drift monitor on by default. */
  aligned: readonly boolean[];
}

export class RunQc {
  private readonly monitors: Array<DriftMonitor | undefined>;
  private readonly windowSpec: WindowOptions | undefined;
  private readonly names: readonly string[];
  private readonly single: boolean;
  /** The score the drift monitors are fed; undefined when they score luma PSNR themselves. */
  private readonly driftMetric: string | undefined;
  private live = true;
  /** Monitors running: none means the decode side skips them altogether. */
  private readonly watching: number;
  /** While the decode side calls the monitors: the group it observes (Infinity: the groups ended). */
  private decodingAt: number | undefined;
  /**
   * Reports made on the decode side (metric 'psnr': a search runs at a pair), held until
   * their rendition's result of that frame has gone on: so they land after the same frame
   * whatever the read-ahead, as the score-side reports do.
   */
  private readonly held: Array<{ k: number; at: number; notice: DriftNotice }> = [];

  constructor(private readonly options: QcOptions, setup: RunQcSetup) {
    this.names = setup.names;
    this.single = setup.single;
    const drift = options.drift;
    const settings = typeof drift === 'object' ? drift : {};
    const metric = setup.modelNames.length === 0 ? 'psnr' : (settings.metric ?? 'score');
    this.driftMetric = metric === 'score' ? setup.modelNames[0] : undefined;
    this.monitors = this.names.map((name, k) =>
      drift === false || (drift === undefined && !setup.aligned[k])
        ? undefined
        : new DriftMonitor({
            maxLag: Math.max(64, setup.inFlight + 8),
            ...settings,
            metric,
            onEvent: (event) => {
              const notice: DriftNotice = this.single ? { ...event } : { ...event, rendition: name };
              if (this.decodingAt !== undefined) this.held.push({ k, at: this.decodingAt, notice });
              else if (this.live) options.onDrift?.(notice);
            },
          }),
    );
    this.watching = this.monitors.filter((m) => m !== undefined).length;
    this.windowSpec = options.windows ? { ...options.windows, metrics: options.windows.metrics ?? setup.modelNames } : undefined;
    if (this.windowSpec && this.windowSpec.metrics!.length === 0) {
      throw new UsageError('rolling windows need a metric: there is no model (--no_prediction), so name the features to pool (--window-metrics)');
    }
    // Bad specs fail now, before any frame.
    if (this.windowSpec) rollingWindows(this.windowSpec);
    if (options.alerts?.length) {
      alerts(options.alerts);
      for (const spec of options.alerts) {
        const rendition = typeof spec === 'string' ? parseAlertSpec(spec).rendition : spec.rendition;
        if (rendition === undefined) continue;
        if (this.single) throw new UsageError(`alert "${typeof spec === 'string' ? spec : spec.text}": a rendition prefix needs a ladder (scoreLadder); a single pair's alerts have none`);
        if (!this.names.includes(rendition)) {
          throw new UsageError(`alert "${typeof spec === 'string' ? spec : spec.text}": there is no rendition named "${rendition}" (the renditions are ${this.names.map((n) => `"${n}"`).join(', ')})`);
        }
      }
    }
  }

  /** Drift monitors running (one per rendition watched). */
  get driftMonitors(): number {
    return this.monitors.filter((m) => m !== undefined).length;
  }

  /** Thumbnails the drift monitors have taken so far (two per pair watched). */
  get thumbnailsTaken(): number {
    let n = 0;
    for (const m of this.monitors) n += m?.thumbnailsTaken ?? 0;
    return n;
  }

  /** A notice of alignment, with the rendition where it belongs. */
  alignment(k: number, report: AlignmentReport): void {
    if (this.live) this.options.onAlignment?.(this.single ? { ...report } : { ...report, rendition: this.names[k]! });
  }

  /** Before the backend: each rendition's pair of the group, to the drift monitors (thumbnails only). */
  /** Whether observeGroup reads the frames' samples (a drift monitor runs): then they cannot come located. */
  get readsSamples(): boolean {
    return this.watching > 0;
  }

  observeGroup(group: FrameGroup): void {
    if (this.watching === 0) return;
    this.decodingAt = group.index;
    try {
      for (let k = 0; k < this.monitors.length; k++) {
        const dis = group.dis[k];
        if (dis) this.monitors[k]?.observePair({ index: group.index, ref: group.ref, dis });
      }
    } finally {
      this.decodingAt = undefined;
    }
  }

  /** The groups have ended (metric 'psnr': searches waiting for later pairs run now, their reports held). */
  endGroups(): void {
    this.decodingAt = Infinity;
    try {
      for (const monitor of this.monitors) monitor?.endPairs();
    } finally {
      this.decodingAt = undefined;
    }
  }

  /** Hands on the held reports of rendition k up to frame `index` (every rendition's, in order, with k undefined). */
  private releaseHeld(k: number | undefined, index: number): void {
    for (let i = 0; i < this.held.length; ) {
      const h = this.held[i]!;
      if ((k === undefined || h.k === k) && h.at <= index) {
        this.held.splice(i, 1);
        if (this.live) this.options.onDrift?.(h.notice);
      } else i++;
    }
  }

  /**
   * Passes the deliveries through, and feeds each result, after it has gone on, to the
   * windows, the alerts and the drift monitor of its rendition. On completion: the drift
   * monitors' last reports, the windows' flush, then completion. An error of the windows
   * or alerts (a metric the results lack, a frame with no time) errors the run.
   */
  attach<D extends { result: QcItem }>(source: Observable<D>): Observable<D> {
    const { options } = this;
    const windowSpec = this.windowSpec;
    const alertSpecs = options.alerts?.length ? options.alerts : undefined;
    const index = new Map(this.names.map((name, k) => [name, k]));
    return new Observable<D>((subscriber) => {
      const subscription = new Subscription();
      const feed = new Subject<QcItem | FrameResult>();
      const fail = (error: unknown) => {
        subscription.unsubscribe();
        subscriber.error(error);
      };
      if (windowSpec) subscription.add(feed.pipe(rollingWindows(windowSpec)).subscribe({ next: (w) => this.live && options.onWindow?.(w), error: fail }));
      if (alertSpecs) subscription.add(feed.pipe(alerts(alertSpecs)).subscribe({ next: (a) => this.live && options.onAlert?.(a), error: fail }));
      const feeding = windowSpec !== undefined || alertSpecs !== undefined;
      subscription.add(
        source.subscribe({
          next: (delivery) => {
            subscriber.next(delivery);
            if (subscriber.closed) return;
            const { rendition, result } = delivery.result;
            const k = index.get(rendition)!;
            if (this.held.length > 0) this.releaseHeld(k, result.index);
            if (this.driftMetric !== undefined) {
              const value = result.scores[this.driftMetric];
              if (value !== undefined) this.monitors[k]?.observeScore(result.index, value);
            }
            if (feeding) feed.next(this.single ? result : delivery.result);
          },
          error: (error) => {
            this.live = false;
            subscriber.error(error);
          },
          complete: () => {
            try {
              this.releaseHeld(undefined, Infinity);
              for (const monitor of this.monitors) monitor?.end();
              feed.complete();
            } catch (error) {
              this.live = false;
              subscriber.error(error);
              return;
            }
            this.live = false;
            subscriber.complete();
          },
        }),
      );
      return () => {
        this.live = false;
        subscription.unsubscribe();
      };
    });
  }
}

import { EventEmitter } from 'node:events';
import { Readable } from 'node:stream';
import type { Observable, Subscription } from 'rxjs';
import type { FrameResult, RunSummary } from './writers/types.js';
import type { Delivery, LadderResult } from './ladder-types.js';
import { RunPooling } from './summary.js';
import { VERSION } from '../version.js';
import type { WindowStats } from './windows.js';
import type { AlertEvent } from './alerts.js';
import type { AlignmentNotice, DriftNotice, QcOptions } from './qc.js';

/**
 * The live QC events of a run, as given to QcOptions' callbacks: `window` (rolling window
 * statistics, with `windows`), `alert` (an alert starting or clearing, with `alerts`),
 * `alignment` (the offset found or given, with `align`), `drift` (a dropped or repeated
 * frame). Each comes right after the `frame` event that caused it (`alignment` before the
 * first frame), and all of them before `end`. In a ladder each carries `rendition`.
 */
export interface QcEventMap {
  window: [window: WindowStats];
  alert: [alert: AlertEvent];
  alignment: [alignment: AlignmentNotice];
  drift: [drift: DriftNotice];
}

/** The typed events of a scoring run. */
export interface ScoreEventMap extends QcEventMap {
  frame: [result: FrameResult];
  end: [summary: RunSummary];
  error: [error: Error];
}

/**
 * `options` with its QC callbacks also emitting the matching events on `emitter` (which
 * the caller assigns before the run is subscribed: the emitters subscribe on a microtask).
 */
export function withQcEvents<O extends QcOptions>(options: O | undefined, emit: QcEmit): O {
  const o = (options ?? {}) as O;
  return {
    ...o,
    onWindow: (w: WindowStats) => {
      o.onWindow?.(w);
      emit('window', w);
    },
    onAlert: (a: AlertEvent) => {
      o.onAlert?.(a);
      emit('alert', a);
    },
    onAlignment: (a: AlignmentNotice) => {
      o.onAlignment?.(a);
      emit('alignment', a);
    },
    onDrift: (d: DriftNotice) => {
      o.onDrift?.(d);
      emit('drift', d);
    },
  };
}

/** Emits one QC event (on a ScoreEmitter or a LadderEmitter). */
export type QcEmit = <K extends keyof QcEventMap>(event: K, ...args: QcEventMap[K]) => void;

/** A QcEmit on the emitter `get()` returns (both event maps extend QcEventMap). */
export function emitOn(get: () => ScoreEmitter | LadderEmitter): QcEmit {
  return (event, ...args) => void (get() as EventEmitter).emit(event, ...args);
}

/** An emitter of `frame`, `end` and `error` events (and the QC events, see QcEventMap); `stop()` ends the run early. */
export class ScoreEmitter extends EventEmitter<ScoreEventMap> {
  private subscription: Subscription | undefined;
  private readonly pooling = new RunPooling();

  /** @internal The run's aggregate metrics, for the `end` summary. */
  aggregate(_rendition: string, metrics: Record<string, number>): void {
    this.pooling.setAggregate(metrics);
  }

  constructor(results: Observable<FrameResult>) {
    super();
    const pooling = this.pooling;
    // Subscribe on the next tick so listeners attached right after construction see every event.
    queueMicrotask(() => {
      this.subscription = results.subscribe({
        next: (result) => {
          pooling.add(result);
          this.emit('frame', result);
        },
        error: (error: Error) => this.emit('error', error),
        complete: () => this.emit('end', pooling.summary(VERSION)),
      });
    });
  }

  stop(): void {
    this.subscription?.unsubscribe();
  }
}

/** The typed events of a ladder run. `end` has each rendition's summary, by name, in order. */
export interface LadderEventMap extends QcEventMap {
  frame: [result: LadderResult];
  end: [summaries: Record<string, RunSummary>];
  error: [error: Error];
}

/** ScoreEmitter for a ladder: `frame` events carry the rendition's name; `stop()` ends the run early. */
export class LadderEmitter extends EventEmitter<LadderEventMap> {
  private subscription: Subscription | undefined;
  private readonly pooling = new Map<string, RunPooling>();

  /** @internal A rendition's aggregate metrics, for the `end` summaries. */
  aggregate(rendition: string, metrics: Record<string, number>): void {
    let pool = this.pooling.get(rendition);
    if (!pool) this.pooling.set(rendition, (pool = new RunPooling()));
    pool.setAggregate(metrics);
  }

  constructor(results: Observable<LadderResult>) {
    super();
    const pooling = this.pooling;
    queueMicrotask(() => {
      this.subscription = results.subscribe({
        next: (frame) => {
          let pool = pooling.get(frame.rendition);
          if (!pool) pooling.set(frame.rendition, (pool = new RunPooling()));
          pool.add(frame.result);
          this.emit('frame', frame);
        },
        error: (error: Error) => this.emit('error', error),
        complete: () => {
          const summaries: Record<string, RunSummary> = {};
          for (const [name, pool] of pooling) summaries[name] = pool.summary(VERSION);
          this.emit('end', summaries);
        },
      });
    });
  }

  stop(): void {
    this.subscription?.unsubscribe();
  }
}

/**
 * An async iterator over the run's results. A result's credit goes back when the consumer
 * takes it, so the queue holds at most the run's credit limit and decoding waits for a
 * slow consumer.
 */
export function toAsyncIterator<T = FrameResult>(results: Observable<Delivery<T>>): AsyncIterableIterator<T> {
  const queue: Delivery<T>[] = [];
  let failure: unknown;
  let done = false;
  let wake: (() => void) | undefined;
  let subscription: Subscription | undefined;

  const start = () => {
    subscription ??= results.subscribe({
      next: (value) => {
        queue.push(value);
        wake?.();
      },
      error: (error) => {
        failure = error;
        done = true;
        wake?.();
      },
      complete: () => {
        done = true;
        wake?.();
      },
    });
  };

  const iterator: AsyncIterableIterator<T> = {
    async next() {
      start();
      while (queue.length === 0 && !done) await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
      const delivery = queue.shift();
      if (delivery) {
        delivery.delivered();
        return { value: delivery.result, done: false };
      }
      if (failure !== undefined) throw failure;
      return { value: undefined, done: true };
    },
    async return() {
      subscription?.unsubscribe();
      done = true;
      return { value: undefined, done: true };
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return iterator;
}

/** A Readable in object mode, one result per chunk, honouring the reader's pace. */
export function toReadable<T = FrameResult>(results: Observable<Delivery<T>>): Readable {
  return Readable.from(toAsyncIterator(results), { objectMode: true });
}

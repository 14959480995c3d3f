import { EventEmitter } from 'node:events';
import { Readable } from 'node:stream';
import type { Observable, Subscription } from 'rxjs';
import type { FrameResult, RunSummary } from './writers/types.js';
import type { Delivery, LadderResult } from './ladder.js';
import { RunPooling } from './summary.js';
import { VERSION } from '../version.js';

/** The typed events of a scoring run. */
export interface ScoreEventMap {
  frame: [result: FrameResult];
  end: [summary: RunSummary];
  error: [error: Error];
}

/** An emitter of `frame`, `end` and `error` events; `stop()` ends the run early. */
export class ScoreEmitter extends EventEmitter<ScoreEventMap> {
  private subscription: Subscription | undefined;

  constructor(results: Observable<FrameResult>) {
    super();
    const pooling = new RunPooling();
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
export interface LadderEventMap {
  frame: [result: LadderResult];
  end: [summaries: Record<string, RunSummary>];
  error: [error: Error];
}

/** ScoreEmitter for a ladder: `frame` events carry the rendition's name; `stop()` ends the run early. */
export class LadderEmitter extends EventEmitter<LadderEventMap> {
  private subscription: Subscription | undefined;

  constructor(results: Observable<LadderResult>) {
    super();
    const pooling = new Map<string, RunPooling>();
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

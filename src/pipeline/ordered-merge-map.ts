/**
 * orderedMergeMap: like mergeMap with a concurrency limit, but the results come out in
 * input order. Up to `concurrency` projections run at once; a projection that finishes
 * before an earlier one keeps its values until every earlier one has completed.
 *
 * Bounded: at most `concurrency` projections exist at any time, running or finished but
 * waiting for an earlier one (so at most `concurrency` results are buffered); a new one
 * starts only when the oldest has completed and been emitted. Source values that arrive
 * while all slots are taken wait in a queue, as with mergeMap: bound the source itself
 * (the pipeline does, with credits) when that matters.
 *
 * Errors are ordered too: a projection's error is raised once every earlier projection has
 * completed and emitted, and a source error once every value received before it has been
 * projected and emitted; so what comes out before an error does not depend on timing.
 */
import { Observable, from, type ObservableInput, type OperatorFunction, type Subscription } from '../rx.js';

interface Slot<R> {
  buffered: R[];
  done: boolean;
  failed: boolean;
  error?: unknown;
  subscription?: Subscription;
}

export function orderedMergeMap<T, R>(
  project: (value: T, index: number) => ObservableInput<R>,
  concurrency: number,
): OperatorFunction<T, R> {
  if (!(Number.isInteger(concurrency) && concurrency >= 1)) {
    throw new RangeError(`orderedMergeMap: concurrency must be a positive integer, got ${concurrency}`);
  }
  return (source) =>
    new Observable<R>((subscriber) => {
      const waiting: T[] = [];
      const slots: Slot<R>[] = []; // oldest first
      let nextIndex = 0;
      let sourceDone = false;
      let sourceFailed = false;
      let sourceError: unknown;
      let pumping = false;
      let again = false;

      const start = (value: T): void => {
        const slot: Slot<R> = { buffered: [], done: false, failed: false };
        slots.push(slot);
        const fail = (error: unknown): void => {
          slot.failed = true;
          slot.error = error;
          pump();
        };
        let input: ObservableInput<R>;
        try {
          input = project(value, nextIndex++);
        } catch (error) {
          fail(error);
          return;
        }
        if (isPromise(input)) {
          // A promise (the backends' projections, one per frame): its value and completion
          // at once, as from(promise) delivers them, without an Observable and subscriber
          // per frame.
          let cancelled = false;
          slot.subscription = { unsubscribe: () => void (cancelled = true) } as Subscription;
          input.then(
            (result) => {
              if (cancelled) return;
              slot.buffered.push(result);
              slot.done = true;
              pump();
            },
            (error: unknown) => {
              if (!cancelled) fail(error);
            },
          );
          return;
        }
        slot.subscription = from(input).subscribe({
          next: (result) => {
            slot.buffered.push(result);
            pump();
          },
          error: fail,
          complete: () => {
            slot.done = true;
            pump();
          },
        });
      };

      // Emits what the oldest slots have, retires completed ones, starts new projections.
      // Re-entrant calls (a projection that completes synchronously, a synchronous
      // consumer) only ask the running pump to go round once more.
      const pump = (): void => {
        if (pumping) {
          again = true;
          return;
        }
        pumping = true;
        try {
          do {
            again = false;
            while (slots.length > 0 && !subscriber.closed) {
              const head = slots[0]!;
              while (head.buffered.length > 0 && !subscriber.closed) subscriber.next(head.buffered.shift()!);
              if (head.failed) {
                subscriber.error(head.error);
                return;
              }
              if (!head.done) break;
              slots.shift();
            }
            // No new projections once one has failed: its error is coming.
            const failing = slots.some((slot) => slot.failed);
            while (!failing && !subscriber.closed && slots.length < concurrency && waiting.length > 0) start(waiting.shift()!);
            if (!subscriber.closed && sourceDone && slots.length === 0 && waiting.length === 0) {
              if (sourceFailed) subscriber.error(sourceError);
              else subscriber.complete();
            }
          } while (again && !subscriber.closed);
        } finally {
          pumping = false;
        }
      };

      const sourceSubscription = source.subscribe({
        next: (value) => {
          waiting.push(value);
          pump();
        },
        error: (error) => {
          sourceDone = true;
          sourceFailed = true;
          sourceError = error;
          pump();
        },
        complete: () => {
          sourceDone = true;
          pump();
        },
      });

      return () => {
        sourceSubscription.unsubscribe();
        for (const slot of slots) slot.subscription?.unsubscribe();
        slots.length = 0;
        waiting.length = 0;
      };
    });
}

/** A native Promise (what async projections return); other inputs go through from(). */
function isPromise<R>(input: ObservableInput<R>): input is Promise<R> {
  return input instanceof Promise;
}

/**
 * flatMapSync: mergeMap for a projection that returns an array, without an inner
 * Observable and subscription per value (mergeMap subscribes to from(array) for each):
 * each value's items are emitted at once, in order, as mergeMap emits a synchronous inner.
 * A projection that throws errors the output, as in mergeMap. Used per frame.
 */
import { Observable, type OperatorFunction } from '../rx.js';

export function flatMapSync<T, R>(project: (value: T) => readonly R[]): OperatorFunction<T, R> {
  return (source) =>
    new Observable<R>((subscriber) =>
      source.subscribe({
        next: (value) => {
          let items: readonly R[];
          try {
            items = project(value);
          } catch (error) {
            subscriber.error(error);
            return;
          }
          for (const item of items) {
            if (subscriber.closed) return;
            subscriber.next(item);
          }
        },
        error: (error: unknown) => subscriber.error(error),
        complete: () => subscriber.complete(),
      }),
    );
}

import { Observable } from '../rx.js';
import type { Credits } from './credits.js';

/**
 * An Observable over an async iterable that pulls the next item only after taking a
 * credit. RxJS's own `from(asyncIterable)` pulls as fast as the source yields; this is
 * what bounds the pipeline. Unsubscribing stops the pull and returns the iterator.
 */
export function pullWithCredits<T>(source: AsyncIterable<T>, credits: Credits): Observable<T> {
  return new Observable<T>((subscriber) => {
    const iterator = source[Symbol.asyncIterator]();
    let stopped = false;
    (async () => {
      try {
        for (;;) {
          await credits.acquire();
          if (stopped) return;
          const step = await iterator.next();
          if (stopped) return;
          if (step.done) {
            subscriber.complete();
            return;
          }
          subscriber.next(step.value);
        }
      } catch (error) {
        if (!stopped) subscriber.error(error);
      }
    })();
    return () => {
      stopped = true;
      void iterator.return?.()?.catch(() => undefined);
    };
  });
}

import { Observable, map } from '../rx.js';
import type { FrameInput } from '../decode/open-source.js';
import type { FrameResult } from './writers/types.js';
import { labelOf, runLadder } from './ladder.js';
import type { Delivery, ResolvedRendition } from './ladder-types.js';
import type { ScoreOptions } from './score-options.js';

export type { FrameResult } from './writers/types.js';
export type { ScoreOptions } from './score-options.js';

export { DEFAULT_MODEL, resolveModelSpecs } from './ladder.js';
export type { Delivery } from './ladder-types.js';

/**
 * Scores `distorted` against `reference` frame by frame. Cold: each subscription decodes
 * and scores anew. Each frame's result is emitted as soon as it is known (one frame after
 * it is decoded, because motion2 looks one frame ahead). Memory stays bounded however
 * long the inputs are: at most `maxFramesInFlight` frames exist at once.
 */
export function score(reference: FrameInput, distorted: FrameInput, options: ScoreOptions = {}): Observable<FrameResult> {
  return scoreDeliveries(reference, distorted, options).pipe(
    map((delivery) => {
      delivery.delivered();
      return delivery.result;
    }),
  );
}

/**
 * score() for consumers that take results at their own pace (async iterator, Readable):
 * a frame's credit comes back only when `delivered()` is called, so a slow consumer
 * pauses decoding instead of queueing results. The ladder engine with one rendition.
 */
export function scoreDeliveries(reference: FrameInput, distorted: FrameInput, options: ScoreOptions = {}): Observable<Delivery> {
  const rendition: ResolvedRendition = { input: distorted, name: 'distorted', label: labelOf(distorted, 'distorted') };
  return runLadder(reference, [rendition], { ...options, scale: options.scale === true }, true).pipe(
    map((delivery): Delivery => ({ result: delivery.result.result, delivered: delivery.delivered })),
  );
}

/**
 * Scoring past one machine: a title cut into segments, scored by `vmaf-stream worker`s on a
 * BullMQ queue in Redis, merged into exactly the results (and so the logs) of a single run.
 *
 *   neighbour-frames  what a segment must decode around its own frames
 *   input-index       where decoding can start in each input (byte offsets, keyframes)
 *   segment-plan      the cut points
 *   title-plan        a title indexed and planned, ready for the queue
 *   jobs              what travels on the queue (payloads, ids, names)
 *   result-codec      per-frame results across Redis, lossless
 *   open-at           an input opened at a frame
 *   segment-scorer    one segment scored on this machine
 *   worker            the queue's consumer
 *   title-run         the coordinator: enqueue, collect, merge in order
 *   catalogue         many titles at once (submit)
 *   queue-status      what is waiting, running, done, failed
 */
import { defer, mergeMap, type Observable } from 'rxjs';
import type { Delivery, LadderOptions, LadderResult, ResolvedRendition } from '../pipeline/ladder.js';
import { openFrameSource, type FrameInput } from '../decode/open-source.js';
import { parseSegmentLength } from './segment-plan.js';
import { planTitle } from './title-plan.js';
import { runTitleOnQueue } from './title-run.js';
import type { QueueOptions } from './queue-options.js';
import { checkQueueUrl } from './redis-connection.js';

export type { QueueOptions } from './queue-options.js';
export { startWorker, type WorkerOptions, type RunningWorker } from './worker.js';
export { parseAllow } from './allow-list.js';

/** A ladder (or one pair) scored on the queue: the same Deliveries, in the same order, as runLadder. */
export function runLadderOnQueue(reference: FrameInput, renditions: readonly ResolvedRendition[], options: LadderOptions, queue: QueueOptions | string): Observable<Delivery<LadderResult>> {
  const q: QueueOptions = typeof queue === 'string' ? { url: queue } : queue;
  return defer(async () => {
    checkQueueUrl(q.url);
    const segment = q.segment === undefined ? undefined : parseSegmentLength(String(q.segment));
    const title = await planTitle(reference, renditions, { ...options, segment });
    q.onPlan?.({ titleId: title.id, frames: title.spec.frames, segments: title.segments.length });
    if (options.onFormat) {
      // The reference's format as the single run reports it (the logs' frame size).
      const ref = openFrameSource(reference, {
        label: title.spec.reference.label,
        ...(options.width !== undefined ? { width: options.width } : {}),
        ...(options.height !== undefined ? { height: options.height } : {}),
        ...(options.pixelFormat !== undefined ? { pixelFormat: options.pixelFormat } : {}),
        ...(options.bitDepth !== undefined ? { bitDepth: options.bitDepth } : {}),
        ...(options.ffmpegPath !== undefined ? { ffmpegPath: options.ffmpegPath } : {}),
      });
      try {
        options.onFormat(await ref.format());
      } finally {
        await ref.close().catch(() => undefined);
      }
    }
    return title;
  }).pipe(
    mergeMap((title) =>
      runTitleOnQueue(title, {
        queue: q.url,
        ...(q.attempts !== undefined ? { attempts: q.attempts } : {}),
        ...(q.redisTimeoutMs !== undefined ? { redisTimeoutMs: q.redisTimeoutMs } : {}),
        ...(q.onSegment ? { onSegment: q.onSegment } : {}),
      }),
    ),
  );
}

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
import { defer, mergeMap, type Observable } from '../rx.js';
import type { Delivery, LadderOptions, LadderResult, ResolvedRendition } from '../pipeline/ladder-types.js';
import { openFrameSource, type FrameInput } from '../decode/open-source.js';
import { parseSegmentLength } from './segment-plan.js';
import { planTitle } from './title-plan.js';
import { runTitleOnQueue } from './title-run.js';
import type { QueueOptions } from './queue-options.js';
import { checkQueueUrl } from './redis-connection.js';
import { UsageError } from '../errors.js';
import { availableParallelism } from 'node:os';
import { RunQc, type DriftNotice } from '../pipeline/qc.js';
import { resolveRun } from '../pipeline/run-plan.js';
import { alignTitle, DriftFeed, type AlignedTitle } from './title-qc.js';

export type { QueueOptions } from './queue-options.js';
export { startWorker, type WorkerOptions, type RunningWorker } from './worker.js';
export { parseAllow } from './allow-list.js';

/**
 * A ladder (or one pair) scored on the queue: the same Deliveries, in the same order, as
 * runLadder, and the same live QC notices (title-qc.ts). `single`: one pair, whose notices
 * carry no rendition.
 */
export function runLadderOnQueue(reference: FrameInput, renditions: readonly ResolvedRendition[], options: LadderOptions, queue: QueueOptions | string, single = false): Observable<Delivery<LadderResult>> {
  const q: QueueOptions = typeof queue === 'string' ? { url: queue } : queue;
  const names = renditions.map((r) => r.name);
  // The single run's frames in flight (ladder.ts): how far its decoding runs ahead of its results.
  const threads = options.threads ?? defaultThreads();
  const inFlight = options.maxFramesInFlight ?? Math.max(4, threads * 2 + 2);
  return defer(() => {
    let feed: DriftFeed | undefined;
    return defer(async () => {
      checkQueueUrl(q.url);
      const segment = q.segment === undefined ? undefined : parseSegmentLength(String(q.segment));
      const { models } = await resolveRun(options);
      const modelNames = models.map((m) => m.name);
      // Bad window and alert specs fail before anything is queued; notices wait for the frames.
      // The drift feed follows the monitors' offsets through their notices.
      const onDrift = (d: DriftNotice): void => {
        feed?.noticeDrift(d.rendition, d.kind, d.offset);
        options.onDrift?.(d);
      };
      const aligned = renditions.map((r) => (r.align ?? options.align) !== undefined);
      const qc = new RunQc({ ...options, onDrift }, { names, single, modelNames, inFlight, aligned });
      let planned = { renditions, options };
      let reports: AlignedTitle['reports'] = [];
      if (renditions.some((r) => (r.align ?? options.align) !== undefined)) {
        if (typeof reference !== 'string' || reference === '-') throw new UsageError('the reference: a queued title needs a path or URL the workers can read, not standard input or a stream');
        // Once, here, on the first frames: every segment is cut from the aligned inputs.
        const aligned = await alignTitle(reference, renditions, options);
        const { align: _align, ...rest } = options;
        planned = { renditions: aligned.renditions, options: { ...rest, frameSkipRef: aligned.frameSkipRef } };
        reports = aligned.reports;
      }
      const title = await planTitle(reference, planned.renditions, { ...planned.options, segment });
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
      reports.forEach((report, k) => report && qc.alignment(k, report));
      return { title, qc, modelNames };
    }).pipe(
      mergeMap(({ title, qc, modelNames }) => {
        const drift = options.drift ?? true;
        const settings = typeof drift === 'object' ? drift : {};
        const metric = drift === false || modelNames.length === 0 || (settings.metric ?? 'score') !== 'score' ? undefined : modelNames[0];
        feed = new DriftFeed({ spec: title.spec, names, metric, options, qc, ffmpegPath: options.ffmpegPath });
        return runTitleOnQueue(title, {
          queue: q.url,
          ...(q.attempts !== undefined ? { attempts: q.attempts } : {}),
          ...(q.redisTimeoutMs !== undefined ? { redisTimeoutMs: q.redisTimeoutMs } : {}),
          ...(q.onSegment ? { onSegment: q.onSegment } : {}),
        }).pipe(feed.operator(), (deliveries) => qc.attach(deliveries));
      }),
    );
  });
}

/** The single run's default thread count (ladder.ts): VMAF_THREADS, else every core. */
function defaultThreads(): number {
  const fromEnv = Number(process.env.VMAF_THREADS);
  return Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : availableParallelism();
}

/**
 * The coordinator of a queued title: adds it as a BullMQ flow (a parent job, one child per
 * segment), collects each segment's results as workers finish them, and hands them on in
 * frame order, each frame's renditions in order: exactly the sequence of results a single
 * run gives, so the same writers and the same pooling (RunPooling, over all frames, in
 * order, once) write the same log byte for byte.
 *
 * - A segment is taken once, however often it was finished (a stalled job retried after a
 *   slow worker completed it): results are keyed by segment, and each is checked to cover its
 *   frames exactly before anything of it is handed on.
 * - A segment that fails for good fails the title with the worker's message (which names the
 *   input and frame); the title is marked cancelled (workers skip its other segments) and its
 *   waiting segments are removed.
 * - Redis restarted: ioredis reconnects and the run goes on where the queue's data survived
 *   (Redis with persistence); a segment that has vanished (a Redis without persistence) fails
 *   the run with a message that says so; no Redis for `redisTimeoutMs` fails it too.
 * - Done: the flow is removed, so the queue keeps only titles in progress.
 */
import { FlowProducer, Job, Queue, QueueEvents } from 'bullmq';
import { Observable } from '../rx.js';
import { InputError, VmafError, type VmafErrorCode } from '../errors.js';
import type { Delivery, LadderResult } from '../pipeline/ladder-types.js';
import type { FrameResult } from '../pipeline/writers/types.js';
import { SEGMENT_JOB, SEGMENT_QUEUE, TITLE_JOB, TITLE_QUEUE, cancelKey, segmentJobId, type SegmentJobData, type SegmentJobResult } from './jobs.js';
import { connectRedis, displayUrl } from './redis-connection.js';
import { decodeFrames } from './result-codec.js';
import type { PlannedTitle } from './title-plan.js';
import { QUEUE_PREFIX } from './worker.js';

export interface TitleRunOptions {
  /** Redis URL. */
  queue: string;
  /** Attempts per segment (a retried segment: a worker died or a GPU was lost). Default 3. */
  attempts?: number;
  /** How long the run waits for an unreachable Redis before it fails (default 60 s). */
  redisTimeoutMs?: number;
  /** How often outstanding segments are checked besides the events (default 1000 ms). */
  pollMs?: number;
  /** Called for each segment merged: its frames, and where the title stands. */
  onSegment?: (info: { position: number; frames: number; worker: string; extraFrames: number }) => void;
}

const ERROR_CODE = /^\[(E_[A-Z_]+)\] /;

/** The error a failed segment's message describes, as the VmafError the single run would raise. */
function segmentError(message: string, label: string, position: number): VmafError {
  const code = ERROR_CODE.exec(message)?.[1] as VmafErrorCode | undefined;
  const text = code ? message.slice(code.length + 3) : `segment ${position} of ${label}: ${message}`;
  return new VmafError(code ?? 'E_INPUT_FORMAT', text);
}

export function runTitleOnQueue(title: PlannedTitle, options: TitleRunOptions): Observable<Delivery<LadderResult>> {
  return new Observable<Delivery<LadderResult>>((subscriber) => {
    const url = options.queue;
    const connection = connectRedis(url);
    const flows = new FlowProducer({ connection, prefix: QUEUE_PREFIX });
    const segmentsQueue = new Queue<SegmentJobData, SegmentJobResult>(SEGMENT_QUEUE, { connection, prefix: QUEUE_PREFIX });
    const titlesQueue = new Queue(TITLE_QUEUE, { connection, prefix: QUEUE_PREFIX });
    const eventsConnection = connectRedis(url);
    const events = new QueueEvents(SEGMENT_QUEUE, { connection: eventsConnection, prefix: QUEUE_PREFIX });
    const ignore = (): void => undefined; // connection trouble: ioredis reconnects; the poll watches
    flows.on('error', ignore);
    segmentsQueue.on('error', ignore);
    titlesQueue.on('error', ignore);
    events.on('error', ignore);
    const names = title.spec.renditions.map((r) => r.name);
    const label = title.spec.reference.label;
    const ids = title.segments.map((_, position) => segmentJobId(title.id, position));
    const byId = new Map(ids.map((id, position) => [id, position]));
    const arrived = new Map<number, FrameResult[][]>();
    let nextPosition = 0;
    let stopped = false;
    let lastContact = Date.now();
    let poll: NodeJS.Timeout | undefined;

    const stop = async (): Promise<void> => {
      if (stopped) return;
      stopped = true;
      if (poll) clearInterval(poll);
      await Promise.allSettled([events.close(), flows.close(), segmentsQueue.close(), titlesQueue.close()]);
      // Connections we made are ours to end (BullMQ leaves a connection it was given open).
      connection.disconnect();
      eventsConnection.disconnect();
    };
    const fail = async (error: VmafError, cancel: boolean): Promise<void> => {
      if (stopped) return;
      if (cancel) {
        await connection.set(cancelKey(QUEUE_PREFIX, title.id), '1', 'EX', 24 * 3600).catch(() => undefined);
        // Waiting segments go; running ones see the mark at their start or finish harmlessly.
        await Promise.allSettled(ids.map(async (id) => {
          const job = await Job.fromId(segmentsQueue, id);
          if (job && ['waiting', 'delayed', 'prioritized'].includes(await job.getState())) await job.remove();
        }));
      }
      await stop();
      subscriber.error(error);
    };

    /** Checks a segment's frames and keeps them; false if they do not cover it exactly. */
    const accept = (position: number, result: SegmentJobResult): void => {
      if (arrived.has(position) || position < nextPosition) return; // finished twice: once is enough
      const segment = title.segments[position]!;
      const last = position === title.segments.length - 1;
      const frames = result.renditions.map(decodeFrames);
      const step = title.spec.subsample > 1 ? title.spec.subsample : 1;
      const expected = new Set<number>();
      for (let i = segment.start; i < segment.end; i++) if (i % step === 0) expected.add(i);
      const seen = new Set<number>();
      for (const list of frames) {
        let previous = -1;
        for (const f of list) {
          if (f.index <= previous || f.index < segment.start || (!last && f.index >= segment.end)) {
            throw new VmafError('E_QUEUE', `segment ${position} of ${label} came back with frame ${f.index} out of place (frames ${segment.start}-${segment.end - 1})`);
          }
          previous = f.index;
          seen.add(f.index);
        }
      }
      for (const i of expected) {
        if (!seen.has(i) && !last) {
          throw new InputError('E_INPUT_TRUNCATED', label, `segment ${position} came back without this frame: the input ended earlier than its index said`, i);
        }
      }
      arrived.set(position, frames);
      options.onSegment?.({ position, frames: seen.size, worker: result.worker, extraFrames: result.extraFrames });
    };

    /** Hands on every segment that is next in order. */
    const flush = async (): Promise<void> => {
      while (!stopped && arrived.has(nextPosition)) {
        const frames = arrived.get(nextPosition)!;
        arrived.delete(nextPosition);
        nextPosition++;
        // Frame-major, renditions in order: the single run's order.
        const cursors = frames.map(() => 0);
        for (;;) {
          let index = Infinity;
          frames.forEach((list, k) => {
            const f = list[cursors[k]!];
            if (f && f.index < index) index = f.index;
          });
          if (index === Infinity) break;
          frames.forEach((list, k) => {
            const f = list[cursors[k]!];
            if (f && f.index === index) {
              cursors[k]!++;
              subscriber.next({ result: { rendition: names[k]!, result: f }, delivered: () => undefined });
            }
          });
        }
      }
      if (!stopped && nextPosition === title.segments.length) {
        // Merged: the flow's results are no longer needed.
        await removeTitle().catch(() => undefined);
        await stop();
        subscriber.complete();
      }
    };

    const removeTitle = async (): Promise<void> => {
      const parent = await Job.fromId(titlesQueue, title.id);
      if (parent) await parent.remove({ removeChildren: true });
      // Round trips at once, not one after another: a long title has many segments.
      await Promise.all(ids.map(async (id) => {
        const job = await Job.fromId(segmentsQueue, id);
        if (job) await job.remove().catch(() => undefined);
      }));
    };

    const lost = (position: number): VmafError =>
      new VmafError('E_QUEUE', `the queue at ${displayUrl(url)} lost segment ${position} of ${label} (was Redis restarted without persistence?); run the command again`);

    /**
     * Looks at one segment: takes its result, or fails the run if it failed for good or
     * vanished. Its state first (a small reply): the job itself, whose data carries the
     * title's index, is read only once it has finished.
     */
    const check = async (position: number): Promise<void> => {
      if (arrived.has(position) || position < nextPosition || stopped) return;
      const state = await segmentsQueue.getJobState(ids[position]!);
      lastContact = Date.now();
      if (state === 'unknown') throw lost(position);
      if (state !== 'completed' && state !== 'failed') return;
      const job = await Job.fromId<SegmentJobData, SegmentJobResult>(segmentsQueue, ids[position]!);
      if (!job) throw lost(position);
      if (state === 'completed' && job.returnvalue) accept(position, job.returnvalue);
      else if (state === 'failed') throw segmentError(job.failedReason || 'failed', label, position);
    };

    const checkAll = async (): Promise<void> => {
      for (let position = nextPosition; position < title.segments.length && !stopped; position++) await check(position);
      await flush();
    };

    let checking: Promise<void> = Promise.resolve();
    const schedule = (work: () => Promise<void>): void => {
      checking = checking.then(work).catch((error: unknown) => {
        void fail(error instanceof VmafError ? error : new VmafError('E_QUEUE', String((error as Error)?.message ?? error)), error instanceof VmafError);
      });
    };

    (async () => {
      await events.waitUntilReady();
      events.on('completed', ({ jobId }) => {
        const position = byId.get(jobId);
        if (position !== undefined) schedule(async () => {
          await check(position);
          await flush();
        });
      });
      events.on('failed', ({ jobId }) => {
        const position = byId.get(jobId);
        if (position !== undefined) schedule(() => check(position));
      });
      // A previous run of the same title that failed: start it afresh.
      const existing = await Job.fromId(titlesQueue, title.id);
      if (existing && (await existing.getState()) === 'failed') await existing.remove({ removeChildren: true });
      await connection.del(cancelKey(QUEUE_PREFIX, title.id));
      await Promise.all(ids.map(async (id) => {
        if ((await segmentsQueue.getJobState(id)) === 'failed') await (await Job.fromId(segmentsQueue, id))?.remove();
      }));
      await flows.add({
        name: TITLE_JOB,
        queueName: TITLE_QUEUE,
        data: { titleId: title.id, reference: label, renditions: names, frames: title.spec.frames, segments: title.segments.length },
        opts: { jobId: title.id },
        children: title.segments.map((segment, position) => ({
          name: SEGMENT_JOB,
          queueName: SEGMENT_QUEUE,
          data: { titleId: title.id, title: title.spec, start: segment.start, end: segment.end, position, last: position === title.segments.length - 1 } satisfies SegmentJobData,
          opts: { jobId: ids[position]!, attempts: options.attempts ?? 3, backoff: { type: 'fixed', delay: 200 }, removeOnComplete: false, removeOnFail: false },
        })),
      });
      lastContact = Date.now();
      schedule(checkAll);
      poll = setInterval(() => {
        if (Date.now() - lastContact > (options.redisTimeoutMs ?? 60_000)) {
          void fail(new VmafError('E_QUEUE', `lost the queue: no answer from Redis at ${displayUrl(url)} for ${Math.round((options.redisTimeoutMs ?? 60_000) / 1000)} s`), false);
          return;
        }
        schedule(checkAll);
      }, options.pollMs ?? 1000);
    })().catch((error: unknown) => {
      void fail(new VmafError('E_QUEUE', `cannot use the queue at ${displayUrl(url)}: ${(error as Error)?.message ?? String(error)}`, { cause: error }), false);
    });

    return () => {
      void stop();
    };
  });
}

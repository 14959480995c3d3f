/**
 * A segment worker: takes segment jobs from the queue and scores them on this machine's
 * backend (scoreSegment). Any number of workers, on any machines, cpu or gpu, may serve one
 * queue; each job's result (the segment's per-frame results, lossless) is its BullMQ return
 * value, kept in Redis until the title's coordinator has merged it.
 *
 * Failures: a job whose input is refused (--allow) or broken (a corrupt frame) fails at once
 * (UnrecoverableError: retrying cannot help) with the message naming input and frame, which
 * fails the title; anything else (a lost GPU) is retried up to the job's attempts. A worker
 * that dies mid-job stops renewing its lock, and BullMQ's stalled-job check gives the job to
 * another worker. A segment of a title that has failed meanwhile is skipped.
 *
 * Pipelined: a worker takes its next segment as soon as a running one has decoded its last
 * frame, not once it has finished (SegmentWorker). The frames still in the backend then
 * finish beside the next segment's first ones, so the threads do not idle at every segment
 * edge while a segment drains, its result is stored and the next one opens its inputs. At
 * most `concurrency` segments decode at once; a worker never holds a segment it has not
 * started (the others stay in the queue for other workers).
 */
import { hostname } from 'node:os';
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import { InputError, VmafError } from '../errors.js';
import type { BackendKind } from '../kernels/backend.js';
import { refusal, type AllowList } from './allow-list.js';
import { SEGMENT_QUEUE, cancelKey, type SegmentJobData, type SegmentJobResult } from './jobs.js';
import { connectRedis } from './redis-connection.js';
import { encodeFrames } from './result-codec.js';
import { scoreSegment } from './segment-scorer.js';
import { BackendCache } from './backend-cache.js';
import { Credits } from '../pipeline/credits.js';

export interface WorkerOptions {
  queue: string;
  /** Segments scored at once by this process (default 1). */
  concurrency?: number;
  backend?: BackendKind | 'auto';
  threads?: number;
  ffmpegPath?: string;
  gpuAdapter?: string;
  allow?: AllowList;
  /**
   * How long a job's lock lasts without renewal, in ms (BullMQ's lockDuration; default 30000).
   * A dead worker's job is handed on after about this long; the stall check runs as often.
   */
  lockMs?: number;
  /**
   * How long a backend waits for the next segment of the same plan and frame size before it
   * is closed, in ms (default 30000; 0: a backend per segment). See backend-cache.ts.
   */
  backendIdleMs?: number;
  /** Called as segments start, finish and fail, and backends open and close (the CLI prints them). */
  onEvent?: (text: string) => void;
}

/** The BullMQ key prefix (its default). */
export const QUEUE_PREFIX = 'bull';

/** A failure that names its VmafError code, so the coordinator can raise the same kind. */
export function jobFailureMessage(error: unknown): string {
  if (error instanceof VmafError) return `[${error.code}] ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

/**
 * BullMQ's Worker with its fetch loop replaced: a segment's decoding slot (one of
 * `concurrency`) comes back when the segment has decoded its last frame (decoded()) or
 * ended, and the loop then takes the next job. Jobs are processed by BullMQ's own
 * processJob (lock renewal, completion, retries, events), fetched with getNextJob, and the
 * stalled-job check runs as in run(); close() waits for the loop, which waits for the
 * segments in progress.
 */
class SegmentWorker extends Worker<SegmentJobData, SegmentJobResult> {
  private readonly slots: Credits;
  private readonly slotOf = new Map<string, () => void>();

  constructor(processor: (job: Job<SegmentJobData, SegmentJobResult>, token?: string) => Promise<SegmentJobResult>, options: ConstructorParameters<typeof Worker<SegmentJobData, SegmentJobResult>>[2] & { concurrency: number }) {
    super(SEGMENT_QUEUE, processor, { ...options, autorun: false });
    this.slots = new Credits(options.concurrency);
  }

  /** Starts taking segments (instead of run()). */
  start(): void {
    this.running = true;
    void this.startStalledCheckTimer().catch((error: unknown) => this.emit('error', error as Error));
    if (!this.opts.skipLockRenewal) this.lockManager.start();
    this.mainLoopRunning = this.takeSegments();
  }

  /** The segment that holds `token` has decoded its last frame: the next one may start. */
  decoded(token: string | undefined): void {
    if (token !== undefined) this.slotOf.get(token)?.();
  }

  private async takeSegments(): Promise<void> {
    const inProgress = new Set<Promise<unknown>>();
    let count = 0;
    while (!this.closing) {
      await this.slots.acquire();
      if (this.closing) {
        this.slots.release();
        break;
      }
      const token = `${this.id}:${count++}`;
      let job: Job<SegmentJobData, SegmentJobResult> | undefined;
      try {
        // Blocks until a job comes (BullMQ's marker) or drainDelay passes.
        job = await this.getNextJob(token);
      } catch (error) {
        if (!this.closing) {
          this.emit('error', error as Error);
          await new Promise((resolve) => setTimeout(resolve, 500)); // Redis away: ioredis reconnects
        }
      }
      if (!job) {
        this.slots.release();
        continue;
      }
      let held = true;
      const release = (): void => {
        if (!held) return;
        held = false;
        this.slots.release();
      };
      this.slotOf.set(token, release);
      const processing: Promise<unknown> = this.processJob(job, token, () => false)
        .catch((error: unknown) => this.emit('error', error as Error))
        .finally(() => {
          this.slotOf.delete(token);
          release();
          inProgress.delete(processing);
        });
      inProgress.add(processing);
    }
    await Promise.allSettled([...inProgress]);
  }
}

export interface RunningWorker {
  worker: Worker<SegmentJobData, SegmentJobResult>;
  /** The backends it keeps between segments. */
  backends: BackendCache;
  close(): Promise<void>;
}

export async function startWorker(options: WorkerOptions): Promise<RunningWorker> {
  const connection = connectRedis(options.queue);
  const control = connectRedis(options.queue);
  const name = `${hostname()}:${process.pid}`;
  const lockDuration = options.lockMs ?? 30_000;
  const backends = new BackendCache({
    ...(options.backendIdleMs !== undefined ? { idleMs: options.backendIdleMs } : {}),
    ...(options.onEvent ? { onEvent: options.onEvent } : {}),
  });
  let worker: SegmentWorker | undefined;
  const processor = async (job: Job<SegmentJobData, SegmentJobResult>, token?: string): Promise<SegmentJobResult> => {
    const data = job.data;
    if (await control.exists(cancelKey(QUEUE_PREFIX, data.titleId))) {
      throw new UnrecoverableError(`segment ${data.position} skipped: its title has failed`);
    }
    for (const input of [data.title.reference, ...data.title.renditions]) {
      const why = await refusal(options.allow ?? { dirs: [], protocols: [] }, input.input);
      if (why !== undefined) throw new UnrecoverableError(`[E_INPUT_NOT_FOUND] ${name} refuses ${why}`);
    }
    for (const model of data.title.models) {
      if (model.path === undefined || model.version !== undefined) continue;
      const why = await refusal(options.allow ?? { dirs: [], protocols: [] }, model.path);
      if (why !== undefined) throw new UnrecoverableError(`[E_MODEL] ${name} refuses the model ${why}`);
    }
    options.onEvent?.(`segment ${data.position} (frames ${data.start}-${data.end - 1}) of ${data.titleId}: started`);
    const startedAt = performance.now();
    try {
      const scored = await scoreSegment(data, {
        ...(options.backend !== undefined ? { backend: options.backend } : {}),
        ...(options.threads !== undefined ? { threads: options.threads } : {}),
        ...(options.ffmpegPath !== undefined ? { ffmpegPath: options.ffmpegPath } : {}),
        ...(options.gpuAdapter !== undefined ? { gpuAdapter: options.gpuAdapter } : {}),
        backends,
        onDecoded: () => worker?.decoded(token),
      });
      const seconds = (performance.now() - startedAt) / 1000;
      options.onEvent?.(`segment ${data.position} of ${data.titleId}: done in ${seconds.toFixed(2)} s`);
      return { start: data.start, end: data.end, renditions: scored.renditions.map(encodeFrames), worker: name, seconds, extraFrames: scored.extraFrames };
    } catch (error) {
      options.onEvent?.(`segment ${data.position} of ${data.titleId}: failed: ${(error as Error).message}`);
      // A broken input stays broken: fail the title now rather than after every retry.
      if (error instanceof InputError || (error instanceof VmafError && ['E_INPUT_FORMAT', 'E_INPUT_TRUNCATED', 'E_INPUT_MISMATCH', 'E_INPUT_EMPTY', 'E_INPUT_NOT_FOUND', 'E_FRAME_TOO_SMALL', 'E_FRAME_TOO_LARGE', 'E_MODEL', 'E_USAGE'].includes(error.code))) {
        throw new UnrecoverableError(jobFailureMessage(error));
      }
      throw new Error(jobFailureMessage(error), { cause: error });
    }
  };
  worker = new SegmentWorker(processor, {
    connection,
    prefix: QUEUE_PREFIX,
    concurrency: options.concurrency ?? 1,
    lockDuration,
    stalledInterval: lockDuration,
    maxStalledCount: 2,
  });
  worker.on('error', () => undefined); // connection trouble: ioredis reconnects
  await worker.waitUntilReady();
  worker.start();
  const started = worker;
  return {
    worker: started,
    backends,
    async close() {
      await started.close();
      await backends.close();
      await Promise.all([connection.quit().catch(() => undefined), control.quit().catch(() => undefined)]);
    },
  };
}

/**
 * The cpu backend: VIF, ADM and motion in C++ (src/kernels/cpu/, the vmaf_native addon),
 * several frames at once on the libuv threadpool.
 *
 * Each frame pair is one threadpool job computing VIF and ADM statistics and the motion
 * SAD of its reference against the previous pair's reference (libvmaf 3.2.0 filters the
 * difference of the two raw frames, so the job needs both). Up to `threads` jobs run at
 * once; results come out in frame order, each frame's integer_motion2 one frame later.
 *
 * Pairs with `scored: false` (left out by --subsample) still feed motion, as in libvmaf:
 * their job computes only the SAD, their distorted frame is released on arrival, and they
 * produce no output but count as neighbours for integer_motion2.
 *
 * Frame ownership: a pair's distorted frame is released as soon as its job is done; its
 * reference frame once its own job and the next pair's job (which reads it as the
 * previous frame) are both done, or when the stream ends. Pairs not yet started when the
 * subscriber unsubscribes or an error occurs are released then; frames a running job
 * reads are released when that job finishes.
 *
 * Threads: libuv's pool has UV_THREADPOOL_SIZE threads, 4 unless the environment says
 * otherwise, and reads it once, the first time anything in the process uses the pool (fs,
 * dns, zlib, crypto, an addon). More than 4 threads help only if UV_THREADPOOL_SIZE is set
 * before that: the CLI (bin/) sets it from --threads before importing anything; a library
 * user who wants more than 4 should start Node with it (`UV_THREADPOOL_SIZE=16 node
 * app.js`) or assign process.env.UV_THREADPOOL_SIZE at the very top of the entry module,
 * before any import that may touch the pool.
 */
import { availableParallelism } from 'node:os';
import { Observable, map, tap } from 'rxjs';
import type { FeatureBackend } from './backend.js';
import type { Frame, FrameFeatures, FramePair } from '../types.js';
import { BackendError, VmafError } from '../errors.js';
import { loadNative } from './native.js';
import { featureValues, motionScoreFromSad } from './native-features.js';
import { orderedMergeMap } from '../pipeline/ordered-merge-map.js';
import { withMotion2, type MotionFrame } from '../pipeline/motion2.js';

export interface CpuBackendOptions {
  /** Frame pairs computed at once. Default: the number of cores. */
  threads?: number;
}

/** A frame shared by several users; released when the last lets go. */
class Held {
  private users = 1;
  constructor(readonly frame: Frame) {}
  retain(): this {
    this.users++;
    return this;
  }
  drop(): void {
    if (--this.users === 0) {
      try {
        this.frame.release();
      } catch {
        // a release that throws must not hide the real outcome
      }
    }
  }
}

/** One pair and the frames its job reads. */
interface Job {
  pair: FramePair;
  ref: Held;
  /** Undefined once let go of (a pair that is not scored). */
  dis: Held | undefined;
  /** The previous pair's reference frame; absent for the first pair. */
  prev: Held | undefined;
  scored: boolean;
}

interface JobResult {
  index: number;
  refPts: number | undefined;
  disPts: number | undefined;
  width: number;
  height: number;
  bitDepth: number;
  /** Null for a pair that is not scored. */
  stats: BigInt64Array | null;
  sad: bigint | null;
}

export class CpuBackend implements FeatureBackend {
  readonly kind = 'cpu' as const;
  readonly description: string;
  readonly threads: number;
  private closed = false;

  constructor(options: CpuBackendOptions = {}) {
    const threads = options.threads ?? availableParallelism();
    if (!Number.isInteger(threads) || threads < 1) {
      throw new BackendError('E_NATIVE', `the cpu backend needs a positive whole number of threads, got ${threads}`);
    }
    this.threads = threads;
    this.description = `cpu, ${threads} thread${threads === 1 ? '' : 's'}`;
    // Fail now, not at the first frame, when the addon is missing.
    loadNative();
  }

  extract(pairs: Observable<FramePair>): Observable<FrameFeatures> {
    return new Observable<FrameFeatures>((subscriber) => {
      if (this.closed) {
        subscriber.error(new BackendError('E_NATIVE', 'the cpu backend is closed'));
        return;
      }
      const native = loadNative();
      const waiting = new Set<Job>(); // received, not started
      let lastRef: Held | undefined; // the latest reference, held for the next pair's job

      const toJob = (pair: FramePair): Job => {
        const ref = new Held(pair.ref);
        const dis = pair.dis === pair.ref ? ref.retain() : new Held(pair.dis);
        const scored = pair.scored !== false;
        const job: Job = { pair, ref, dis, prev: lastRef, scored }; // takes over lastRef's hold
        lastRef = ref.retain();
        if (!scored) {
          // Read for motion only: the distorted frame is not needed.
          dis.drop();
          job.dis = undefined;
        }
        waiting.add(job);
        return job;
      };

      const dropJob = (job: Job): void => {
        job.ref.drop();
        job.dis?.drop();
        job.prev?.drop();
      };

      const run = async (job: Job): Promise<JobResult> => {
        waiting.delete(job);
        const { pair } = job;
        try {
          const { ref, dis } = pair;
          const { width, height, bitDepth } = ref.format;
          const prev = job.prev?.frame;
          if (prev) assertSameGeometry(prev, ref, pair.index, 'previous reference');
          const base = { index: pair.index, refPts: ref.pts, width, height, bitDepth };
          if (!job.scored) {
            // `dis` is already released: not even its pts is read.
            const sad = prev ? await native.computeMotionSad(prev.luma, ref.luma, width, height, bitDepth) : null;
            return { ...base, disPts: undefined, stats: null, sad };
          }
          assertSameGeometry(dis, ref, pair.index, 'distorted');
          const disPts = dis.pts;
          const { stats, sad } = await native.computeFrameStats(ref.luma, dis.luma, width, height, bitDepth, prev?.luma);
          return { ...base, disPts, stats, sad };
        } catch (error) {
          throw asBackendError(error, pair.index);
        } finally {
          dropJob(job);
        }
      };

      const finish = (r: JobResult): MotionFrame => {
        try {
          const motionScore = r.sad === null ? 0 : motionScoreFromSad(r.sad, r.width, r.height);
          if (r.stats === null) return { index: r.index, features: {}, motionScore, scored: false };
          const finished = native.finishFeatures(r.stats, r.width, r.height, r.bitDepth);
          const frame: MotionFrame = { index: r.index, features: featureValues(finished, motionScore), motionScore };
          if (r.refPts !== undefined) frame.refPts = r.refPts;
          if (r.disPts !== undefined) frame.disPts = r.disPts;
          return frame;
        } catch (error) {
          throw asBackendError(error, r.index);
        }
      };

      const releaseLastRef = (): void => {
        lastRef?.drop();
        lastRef = undefined;
      };

      const subscription = pairs
        .pipe(
          map(toJob),
          // The last pair has no successor to read its reference.
          tap({ complete: releaseLastRef }),
          orderedMergeMap(run, this.threads),
          map(finish),
          withMotion2(),
        )
        .subscribe(subscriber);

      return () => {
        subscription.unsubscribe();
        for (const job of waiting) dropJob(job);
        waiting.clear();
        releaseLastRef();
      };
    });
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

function assertSameGeometry(frame: Frame, ref: Frame, index: number, what: string): void {
  const a = frame.format;
  const b = ref.format;
  if (a.width !== b.width || a.height !== b.height || a.bitDepth !== b.bitDepth) {
    throw new VmafError(
      'E_INPUT_MISMATCH',
      `frame ${index}: the ${what} frame is ${a.width}x${a.height} ${a.bitDepth}-bit, the reference ${b.width}x${b.height} ${b.bitDepth}-bit`,
    );
  }
}

function asBackendError(error: unknown, index: number): Error {
  if (error instanceof VmafError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new BackendError('E_NATIVE', `cpu backend, frame ${index}: ${message}`, { cause: error });
}

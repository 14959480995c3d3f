/**
 * The cpu backend: VIF, ADM and motion in C++ (src/kernels/cpu/, the vmaf_native addon),
 * several frames at once on the addon's own worker pool (src/kernels/cpu/thread-pool.h).
 *
 * Each frame pair is one pool job computing VIF and ADM statistics and the motion
 * SAD of its reference against the previous pair's reference (libvmaf 3.2.0 filters the
 * difference of the two raw frames, so the job needs both). Up to `threads` jobs run at
 * once; results come out in frame order, each frame's integer_motion2 one frame later.
 *
 * Pairs with `scored: false` (left out by --subsample) still feed motion, as in libvmaf:
 * their job computes only the SAD, their distorted frame is released on arrival, and they
 * produce no output but count as neighbours for integer_motion2.
 *
 * A ladder (extractMany: one reference, several distorted inputs) computes each group's
 * renditions as separate pool jobs, the motion SAD once per group (in the first
 * rendition's job); at most `threads` jobs run at once whatever the number of renditions.
 * extract() is extractMany with groups of one.
 *
 * Frame ownership: a pair's distorted frame is released as soon as its job is done; its
 * reference frame once its own job and the next pair's job (which reads it as the
 * previous frame) are both done, or when the stream ends. Pairs not yet started when the
 * subscriber unsubscribes or an error occurs are released then; frames a running job
 * reads are released when that job finishes.
 *
 * Threads: the constructor grows the addon's worker pool to `threads` threads (a pool of
 * its own, not libuv's, so its size does not depend on what ran first in the process); the
 * pool is shared by every backend in the process and sized for the largest, and each
 * backend keeps at most its own `threads` jobs in flight. The pool's threads hold the
 * event loop open only while jobs are outstanding and are joined when Node exits.
 */
import { availableParallelism } from 'node:os';
import { Observable, map, tap } from 'rxjs';
import { extractPairs, type FeatureBackend } from './backend.js';
import type { Frame, FrameFeatures, FrameGroup, FramePair, GroupFeatures } from '../types.js';
import { BackendError, VmafError } from '../errors.js';
import { loadNative, type FrameStatsResult } from './native.js';
import { finishGroup, type GroupStats } from './native-features.js';
import { orderedMergeMap } from '../pipeline/ordered-merge-map.js';
import { withGroupMotion2, type MotionGroup } from '../pipeline/motion2.js';
import { Credits } from '../pipeline/credits.js';

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

/** One group and the frames its jobs read. */
interface Job {
  group: FrameGroup;
  ref: Held;
  /** Per rendition: its frame, for a scored group; undefined where absent or not needed. */
  dis: Array<Held | undefined>;
  /** Per rendition: whether it has a frame in this group (scored or not). */
  present: boolean[];
  /** The previous group's reference frame; absent for the first group. */
  prev: Held | undefined;
  scored: boolean;
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
    loadNative().reservePoolThreads(threads);
  }

  extract(pairs: Observable<FramePair>): Observable<FrameFeatures> {
    return extractPairs(this, pairs);
  }

  extractMany(groups: Observable<FrameGroup>): Observable<GroupFeatures> {
    return new Observable<GroupFeatures>((subscriber) => {
      if (this.closed) {
        subscriber.error(new BackendError('E_NATIVE', 'the cpu backend is closed'));
        return;
      }
      const native = loadNative();
      // Pool jobs at once, over all groups and renditions.
      const slots = new Credits(this.threads);
      const waiting = new Set<Job>(); // received, not started
      let lastRef: Held | undefined; // the latest reference, held for the next group's job
      let width: number | undefined; // renditions per group

      const toJob = (group: FrameGroup): Job => {
        // One hold per use; a frame given twice (ref === dis) is held twice, released once.
        const held = new Map<Frame, Held>();
        const hold = (frame: Frame): Held => {
          const h = held.get(frame);
          if (h) return h.retain();
          const fresh = new Held(frame);
          held.set(frame, fresh);
          return fresh;
        };
        const ref = hold(group.ref);
        const dis = group.dis.map((frame) => (frame ? hold(frame) : undefined));
        const scored = group.scored !== false;
        const job: Job = { group, ref, dis, present: group.dis.map((frame) => frame !== undefined), prev: lastRef, scored }; // takes over lastRef's hold
        lastRef = ref.retain();
        if (!scored) {
          // Read for motion only: the distorted frames are not needed.
          for (const h of dis) h?.drop();
          job.dis = dis.map(() => undefined);
        }
        waiting.add(job);
        width ??= group.dis.length;
        if (group.dis.length !== width) {
          throw new BackendError('E_NATIVE', `cpu backend, frame ${group.index}: a group of ${group.dis.length} distorted frames in a stream of ${width}`);
        }
        return job;
      };

      const dropJob = (job: Job): void => {
        job.ref.drop();
        for (const h of job.dis) h?.drop();
        job.prev?.drop();
      };

      /** A pool job, started once a slot is free. */
      const limited = async <T>(start: () => Promise<T>): Promise<T> => {
        await slots.acquire();
        try {
          return await start();
        } finally {
          slots.release();
        }
      };

      const run = async (job: Job): Promise<GroupStats> => {
        waiting.delete(job);
        const { group } = job;
        try {
          const ref = group.ref;
          const { width, height, bitDepth } = ref.format;
          const prev = job.prev?.frame;
          if (prev) assertSameGeometry(prev, ref, group.index, 'previous reference');
          const base = { index: group.index, refPts: ref.pts, geometry: { width, height, bitDepth } };
          if (!job.scored) {
            // The distorted frames are already released: not even their pts are read.
            const sad = prev ? await limited(() => native.computeMotionSad(prev.luma, ref.luma, width, height, bitDepth)) : null;
            return { ...base, renditions: job.present.map((p) => (p ? null : undefined)), sad };
          }
          for (const h of job.dis) if (h) assertSameGeometry(h.frame, ref, group.index, 'distorted');
          // Motion reads the reference only: its SAD comes with the first rendition's job.
          const first = job.dis.findIndex((h) => h !== undefined);
          const settled = await Promise.allSettled(
            job.dis.map((h, k) =>
              h ? limited(() => native.computeFrameStats(ref.luma, h.frame.luma, width, height, bitDepth, k === first ? prev?.luma : undefined)) : undefined,
            ),
          );
          // Every job has finished (none reads the frames any more) before an error goes out.
          const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
          if (failed) throw failed.reason;
          const results = settled.map((s) => (s as PromiseFulfilledResult<FrameStatsResult | undefined>).value);
          const renditions = job.dis.map((h, k): GroupStats['renditions'][number] => (h ? { stats: results[k]!.stats, disPts: h.frame.pts } : undefined));
          const sad = first >= 0 ? results[first]!.sad : null;
          return { ...base, renditions, sad };
        } catch (error) {
          throw asBackendError(error, group.index);
        } finally {
          dropJob(job);
        }
      };

      const finish = (r: GroupStats): MotionGroup => {
        try {
          return finishGroup(native, r);
        } catch (error) {
          throw asBackendError(error, r.index);
        }
      };

      const releaseLastRef = (): void => {
        lastRef?.drop();
        lastRef = undefined;
      };

      const subscription = groups
        .pipe(
          map(toJob),
          // The last group has no successor to read its reference.
          tap({ complete: releaseLastRef }),
          orderedMergeMap(run, this.threads),
          map(finish),
          withGroupMotion2(),
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

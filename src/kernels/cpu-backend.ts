/**
 * The cpu backend: VIF, ADM and motion in C++ (src/kernels/cpu/, the vmaf_native addon),
 * several frames at once on the addon's own worker pool (src/kernels/cpu/thread-pool.h).
 *
 * Each frame pair is one pool job computing VIF and ADM statistics and the motion
 * SAD of its reference against the previous pair's reference (libvmaf 3.2.0 filters the
 * difference of the two raw frames, so the job needs both), and, when a motion instance
 * uses the five-frame window, a second threadpool job for the SAD against the reference two
 * pairs back. Up to `threads` jobs run at once; results come out in frame order, each
 * frame's motion2 and motion3 (pipeline/motion-finish.ts, per planned motion instance) one
 * frame later (the five-frame window's first two frames: once frame 2 is in).
 *
 * Only the core parts the run needs are computed (options.parts, core-parts.ts): the addon
 * leaves VIF or ADM out of the job, and a run with neither (VMAF v1's: motion alone) computes
 * only the SADs, as for unscored pairs; without motion no SAD is computed.
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
 * previous frame) are both done (and the one after, with the five-frame window), or when
 * the stream ends. Pairs not yet started when the
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
import { Observable, map, tap } from '../rx.js';
import { extractPairs, type FeatureBackend } from './backend.js';
import type { Frame, FrameFeatures, FrameGroup, FramePair, GroupFeatures } from '../types.js';
import { BackendError, VmafError } from '../errors.js';
import { loadNative, type FrameStatsResult } from './native.js';
import { finishGroup, needsSad2, type GroupStats } from './native-features.js';
import { orderedMergeMap } from '../pipeline/ordered-merge-map.js';
import { withGroupMotion, type MotionGroup } from '../pipeline/motion-finish.js';
import { DEFAULT_MOTION_INSTANCE, type MotionInstance } from '../extractors/integer_motion/motion-options.js';
import { Credits } from '../pipeline/credits.js';
import { ALL_CORE_PARTS, hasStatsParts, statsPartsMask, type CoreParts, type CoreRuns } from './core-parts.js';

export interface CpuBackendOptions {
  /** Frame pairs computed at once. Default: the number of cores. */
  threads?: number;
  /**
   * The motion instances whose values each frame gets (their SADs are computed once for
   * all of them). Default: libvmaf's default instance alone.
   */
  motion?: readonly MotionInstance[];
  /** The core parts computed (default all); without motion, `motion` is ignored and no SAD computed. */
  parts?: CoreParts;
}

/** A scored pair's stats when neither VIF nor ADM is computed. */
const NO_STATS = new BigInt64Array(0);

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
  /** The reference two groups back, where the five-frame window needs it; else absent. */
  prev2: Held | undefined;
  scored: boolean;
}

export class CpuBackend implements FeatureBackend {
  readonly kind = 'cpu' as const;
  readonly description: string;
  readonly threads: number;
  readonly motion: readonly MotionInstance[];
  readonly parts: CoreParts;
  private readonly sad2: boolean;
  private readonly runs: CoreRuns = { vif: 0, adm: 0, motion: 0 };
  private closed = false;

  constructor(options: CpuBackendOptions = {}) {
    const threads = options.threads ?? availableParallelism();
    if (!Number.isInteger(threads) || threads < 1) {
      throw new BackendError('E_NATIVE', `the cpu backend needs a positive whole number of threads, got ${threads}`);
    }
    this.threads = threads;
    this.parts = options.parts ?? ALL_CORE_PARTS;
    this.motion = this.parts.motion ? (options.motion ?? [DEFAULT_MOTION_INSTANCE]) : [];
    this.sad2 = needsSad2(this.motion);
    this.description = `cpu, ${threads} thread${threads === 1 ? '' : 's'}`;
    // Fail now, not at the first frame, when the addon is missing.
    loadNative().reservePoolThreads(threads);
  }

  extract(pairs: Observable<FramePair>): Observable<FrameFeatures> {
    return extractPairs(this, pairs);
  }

  /** How many frame pairs' VIF and ADM stats and how many SADs were computed: a diagnostic. */
  coreRuns(): CoreRuns {
    return { ...this.runs };
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
      let lastRef2: Held | undefined; // the one before, held for the next group's job (five-frame window)
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
        // The job takes over lastRef2's hold, and holds lastRef a second time for the next job.
        const job: Job = { group, ref, dis, present: group.dis.map((frame) => frame !== undefined), prev: lastRef, prev2: lastRef2, scored };
        if (this.sad2) {
          lastRef2 = lastRef?.retain();
        } else {
          lastRef2 = undefined;
        }
        // Only motion reads the previous reference.
        if (this.parts.motion) lastRef = ref.retain();
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
        job.prev2?.drop();
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
          const prev2 = job.prev2?.frame;
          const base = { index: group.index, refPts: ref.pts, geometry: { width, height, bitDepth } };
          const motionSad = (from: Frame): Promise<bigint> => {
            this.runs.motion++;
            return limited(() => native.computeMotionSad(from.luma, ref.luma, width, height, bitDepth));
          };
          // The SAD two frames apart: its own job, beside the others.
          const sad2Job = this.sad2 && prev2 ? motionSad(prev2) : undefined;
          sad2Job?.catch(() => undefined); // awaited below
          const sad2 = async (): Promise<{ sad2?: bigint | null }> => (this.sad2 ? { sad2: sad2Job ? await sad2Job : null } : {});
          if (!job.scored) {
            // The distorted frames are already released: not even their pts are read.
            const [sad, far] = await Promise.all([prev ? motionSad(prev) : null, sad2()]);
            return { ...base, renditions: job.present.map((p) => (p ? null : undefined)), sad, ...far };
          }
          for (const h of job.dis) if (h) assertSameGeometry(h.frame, ref, group.index, 'distorted');
          if (!hasStatsParts(this.parts)) {
            // Neither VIF nor ADM (a VMAF v1 run): the SADs alone, the renditions' stats empty.
            const [sad, far] = await Promise.all([prev ? motionSad(prev) : null, sad2()]);
            const renditions = job.dis.map((h): GroupStats['renditions'][number] => (h ? { stats: NO_STATS, disPts: h.frame.pts } : undefined));
            return { ...base, renditions, sad, ...far };
          }
          const mask = statsPartsMask(this.parts);
          // Motion reads the reference only: its SAD comes with the first rendition's job.
          const first = job.dis.findIndex((h) => h !== undefined);
          const settled = await Promise.allSettled([
            ...job.dis.map((h, k) =>
              h ? this.frameStats(limited, ref, h.frame, k === first ? prev : undefined, mask) : undefined,
            ),
            sad2Job,
          ]);
          // Every job has finished (none reads the frames any more) before an error goes out.
          const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
          if (failed) throw failed.reason;
          const results = settled.slice(0, job.dis.length).map((s) => (s as PromiseFulfilledResult<FrameStatsResult | undefined>).value);
          const renditions = job.dis.map((h, k): GroupStats['renditions'][number] => (h ? { stats: results[k]!.stats, disPts: h.frame.pts } : undefined));
          const sad = first >= 0 ? results[first]!.sad : null;
          return { ...base, renditions, sad, ...(await sad2()) };
        } catch (error) {
          throw asBackendError(error, group.index);
        } finally {
          dropJob(job);
        }
      };

      const finish = (r: GroupStats): MotionGroup => {
        try {
          return finishGroup(native, r, this.motion, this.parts);
        } catch (error) {
          throw asBackendError(error, r.index);
        }
      };

      const releaseLastRef = (): void => {
        lastRef?.drop();
        lastRef = undefined;
        lastRef2?.drop();
        lastRef2 = undefined;
      };

      const subscription = groups
        .pipe(
          map(toJob),
          // The last group has no successor to read its reference.
          tap({ complete: releaseLastRef }),
          orderedMergeMap(run, this.threads),
          map(finish),
          withGroupMotion(this.motion),
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

  /** One pool job: a pair's stats of the parts in `mask` and, given `prev`, the SAD (counted). */
  private frameStats(limited: <T>(start: () => Promise<T>) => Promise<T>, ref: Frame, dis: Frame, prev: Frame | undefined, mask: number): Promise<FrameStatsResult> {
    if (this.parts.vif) this.runs.vif++;
    if (this.parts.adm) this.runs.adm++;
    if (prev) this.runs.motion++;
    const { width, height, bitDepth } = ref.format;
    return limited(() => loadNative().computeFrameStats(ref.luma, dis.luma, width, height, bitDepth, prev?.luma, mask));
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

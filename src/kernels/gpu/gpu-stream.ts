/**
 * One subscription of the gpu backend (GpuBackend.extractMany): its staging pool, its
 * reference chain and its submission chain, from the frames it is given to their stats.
 *
 * Per frame pair, in frame order:
 *   1. take the group's upload slot (src/pool/staging-ring.ts: the reference's and every
 *      rendition's pictures side by side, so one map, unmap and fence per group; several
 *      slots only where one would pass maxBufferSize), waiting on its fence when
 *      all are in flight;
 *   2. copy the reference (and, for a scored pair or where an extractor reads the previous
 *      distorted picture, the distorted) picture into the mapped
 *      staging slots and release the host frames at once: the GPU reads the staging copy,
 *      so the caller may reuse its buffers as soon as they are released. A picture is its
 *      luma plane, or Y, Cb and Cr when a gpu extractor reads chroma (picture-planes.ts:
 *      luma first, so the core kernels read it as before; a luma-only run's uploads are
 *      unchanged);
 *   3. record the pair's commands: the staging -> device-local copies, VifKernel, AdmKernel,
 *      MotionKernel (frame N's reference against frame N-1's, still resident in the
 *      reference ring; and against frame N-2's, also resident, when a motion instance
 *      uses the five-frame window), each only where its core part runs (core-parts.ts: a
 *      VMAF v1 run encodes motion alone), the registered extractors' passes, and the copy
 *      of the frame's stats into its stride of a readback slot;
 *   4. submit, then arm the fences: mapAsync(WRITE) on the staging slots, mapAsync(READ) on
 *      the readback slot.
 *      Steps 3-4 are batched: the pairs whose copies are done by the time the submit runs
 *      (one event-loop turn after the first of them is ready) share one command buffer,
 *      each pair's commands in frame order as its own would have been, one submit, one
 *      error scope and one readback slot (one map for all their stats), at most depth / 2
 *      of them (maxBatch: the next batch stays queued behind the running one). Only what is
 *      already queued is batched, nothing waits for a batch to fill: pairs that arrive
 *      slowly go one per submit, as before, and when the host is the bottleneck (a fast
 *      GPU) the submits, maps and their polling are shared by several frames;
 *   5. (without holding up the next frame's steps 1-4) await the readback: [vif 20, adm 60]
 *      int64 (the parts computed) -> finishFeatures, the motion SADs -> each motion instance's score -> features;
 *      then each instance's motion2 and motion3 (pipeline/motion-finish.ts) in frame order,
 *      and the registered extractors' values that wait for the next frame
 *      (extractor-lookahead.ts: float_motion's motion2 and motion3).
 * Pairs with `scored: false` (--subsample) upload only the reference and run only motion
 * and the registered extractors of the reference alone (referenceOnly: float_motion); where a
 * registered extractor reads the previous distorted picture (previousDis: speed_temporal),
 * they upload every rendition's distorted picture too, into its history ring
 * (StagingPool.distortedHistory), which that extractor's next scored frame reads.
 *
 * A ladder (extractMany: one reference, several distorted inputs per frame) is the same
 * steps per group: the reference is uploaded once per frame, into the one reference ring
 * that every rendition reads, and motion (which reads only the reference) runs once; each
 * rendition present in the group gets its own region of the group's upload slot and device plane, its
 * own VIF and ADM passes in the same command buffer, writing its own block of the group's
 * stats buffer ([rendition 0: vif, adm][rendition 1: vif, adm]...[motion SADs]), which comes
 * back in one readback. extract() is extractMany with groups of one.
 *
 * Ordering model
 * --------------
 * WebGPU has a single queue per device. Everything submitted to it (buffer copies, compute
 * passes, query resolves) behaves as if executed in submission order, each command seeing
 * the results of all earlier ones; so within a frame the upload copies, the kernels and the
 * stats copy need no synchronisation, and across frames no device-local buffer needs a
 * fence either: frame N+k's copy into a ring buffer cannot overtake frame N's reads of it.
 * That is why frame N's reference plane can serve as frame N+1's previous reference without
 * a copy, and why steps 3-4 run strictly in frame order (one chain of promises): the
 * reference chain is the submission order. Steps 1-2 run on a second chain, also in frame
 * order (slots are taken FIFO), up to `depth` groups ahead of it: a group's copies into its
 * mapped staging slots (on the libuv pool for frames of 256 KiB and more: native copyBytes)
 * start as soon as it has its slots, so they overlap each other and the main thread's
 * encode/submit work; its step 3 waits for them. A slot is unmapped only after its copy has
 * finished, and a pool is destroyed only once no copy is in flight.
 * The host, however, is not on the queue. The only host/GPU synchronisation points are:
 *   - an upload slot's mapAsync(WRITE), requested right after the submit that reads it: it
 *     resolves once the GPU is done with that submit, and only then is the slot written again;
 *   - a readback slot's mapAsync(READ), requested right after the submit that fills it: it
 *     resolves once the stats (of every frame of the batch) are there; they are copied out,
 *     the slot unmapped and freed;
 *   - the validation error scope pushed around each batch's encode/submit, popped right
 *     after it and awaited with the readback (a batch whose commands failed validation yields
 *     an error for each of its frames, never stale stats). One scope, not three: a frame allocates no GPU memory
 *     (the rings and kernels own every buffer), so out-of-memory cannot come from it, and an
 *     internal error is a device failure, which GpuDevice turns into an error of the stream
 *     (uncapturederror, device.lost, a rejected map); each popped scope is one more promise
 *     for Dawn to settle per frame.
 * onSubmittedWorkDone is not needed: the map fences are per buffer and cover it.
 * At most `depth` frames are in flight (submitted, not yet read back); each ring has
 * `depth` slots (the reference ring depth + 1; a readback slot holds a batch's stats), so step 1 waits only when the GPU is
 * `depth` frames behind.
 *
 * Dawn in Node: dawn.node pumps its own events (an AsyncRunner polls the instance while a
 * mapAsync or other promise is pending), so the fences resolve without help from us. A lost
 * device rejects pending mapAsync calls (AbortError) and resolves device.lost; GpuDevice
 * turns both, and uncaptured errors, into BackendError('E_GPU'). Every fence is also raced
 * against that failure and a timeout, and a failure errors the stream at once even when no
 * frame is in flight, so a stream never hangs on a dead device.
 *
 * Frame ownership: as the cpu backend, the backend releases every frame it receives exactly
 * once: right after its staging copy, on arrival (the distorted frame of an unscored pair),
 * or at teardown (pairs not yet staged).
 */
import type { FeatureValues, Frame, FrameFormat, FrameGroup } from '../../types.js';
import { BackendError, VmafError } from '../../errors.js';
import type { NativeAddon } from '../native.js';
import { finishGroup, needsSad2, type GroupStats } from '../native-features.js';
import type { MotionEntry, MotionGroup } from '../../pipeline/motion-finish.js';
import type { MotionInstance } from '../../extractors/integer_motion/motion-options.js';
import { StagingPool, type ReadbackSlot, type StagedPlane, type UploadSlot } from '../../pool/staging-ring.js';
import type { GpuDevice } from './device.js';
import type { FrameGeometry, FrameKernel, LumaPlanes, StatsSlot } from './frame-kernel.js';
import { statsLayout, type StatsLayout } from './stats-layout.js';
import type { GpuExtractorSet } from './gpu-extractors.js';
import type { GpuExtractorInputs } from './gpu-extractor.js';
import type { GroupOwnValues } from './extractor-lookahead.js';
import { pictureLayout, stagedPlanesOf, type PictureLayout } from './picture-planes.js';
import { LocatedFileReader } from '../../decode/located-frames.js';
import type { CoreParts, CoreRuns } from '../core-parts.js';
import { mark, tracing } from '../../trace.js';

/** The kernels of the core parts that run (the others absent). */
export interface CoreKernels {
  vif?: FrameKernel;
  adm?: FrameKernel;
  motion?: FrameKernel;
}

export interface KernelSet {
  geometry: FrameGeometry;
  /** Undefined when no core part runs. */
  core: CoreKernels | undefined;
}

/** Timestamps per frame: before the uploads, after them, after the kernels, after the stats copy. */
const TIMESTAMPS = 4;

/** What a stream needs of its backend (GpuBackend): its settings, its kernels, its counters. */
export interface StreamBackend {
  readonly depth: number;
  readonly batch: number;
  readonly fenceTimeoutMs: number;
  readonly maxUploadBytes: number;
  readonly timing: boolean;
  readonly motion: readonly MotionInstance[];
  readonly parts: CoreParts;
  kernels(geometry: FrameGeometry): Promise<KernelSet>;
  countSubmit(groups: number): void;
  countRuns(part: keyof CoreRuns): void;
  recordTiming(ns: BigUint64Array, hostWrite: number, hostWait: number): void;
}

/** One group on its way through the backend. */
interface Job {
  group: FrameGroup;
  scored: boolean;
  /** Frames not yet released (one entry per frame object, however often it appears). */
  held: Set<Frame>;
}

/** Per rendition: whether it has a frame in the group, and its pts (scored groups). */
interface Presence {
  present: boolean;
  disPts: number | undefined;
}

interface Submitted {
  index: number;
  geometry: FrameGeometry;
  scored: boolean;
  hasPrev: boolean;
  /** Whether the reference two frames back was there (five-frame window). */
  hasPrev2: boolean;
  refPts: number | undefined;
  renditions: Presence[];
  /** The batch's readback (each group's bytes, in batch order) and its error scope. */
  done: Promise<[ArrayBuffer[], GPUError | null]>;
  /** This group's place in its batch. */
  at: number;
  hostWrite: number;
  submittedAt: number;
}

/** A group whose copies are done, queued for the next batch (#flush). */
interface ReadyGroup {
  job: Job;
  st: Staged;
  hostWrite: number;
  resolve(s: Submitted): void;
  reject(error: unknown): void;
}

/** A group whose slots are taken and whose copies are under way (#stage). */
interface Staged {
  geometry: FrameGeometry;
  kernels: KernelSet;
  /** The group's upload slots (StagingPool.uploadPlace): its reference and distorted pictures, one slot for most runs. */
  slots: Array<UploadSlot | undefined>;
  refPts: number | undefined;
  renditions: Presence[];
  /**
   * The distorted frames uploaded: those present, in a scored group; in every group where an
   * extractor reads the previous distorted picture (GpuExtractorSet.previousDis).
   */
  uploaded: Array<Frame | undefined>;
  /** Settles once every copy has; resolves with the host's copy time in ms. */
  copied: Promise<number>;
}

/** One group's readback: the core's stats, and the words (for the registered extractors' blocks). */
interface StreamStats {
  stats: GroupStats;
  words: Uint32Array;
  /** Per rendition, the registered extractors' values (scored renditions present; none without extractors). */
  extracted: Array<FeatureValues | undefined> | undefined;
}

/** A group read back, its registered extractors' values still being finished on the worker pool. */
interface ReadGroup extends Omit<StreamStats, 'extracted'> {
  extracted: Promise<StreamStats['extracted']>;
}

const CANCELLED = Symbol('cancelled');

/** One subscription's state: its staging pool, its reference chain, its submission chain. */
export class GpuStream {
  readonly #backend: StreamBackend;
  readonly #gpu: GpuDevice;
  readonly #native: NativeAddon;
  /** The registered extractors this stream computes (asked for at its first group). */
  readonly #extractorSource: (() => GpuExtractorSet | undefined) | undefined;
  #extractors: GpuExtractorSet | undefined;
  /** Whether #extractorSource was asked (#resolveExtractors). */
  #extractorsResolved = false;
  /** Per group index, until taken: the lookahead extractors' own values (extractor-lookahead.ts). */
  readonly #ownValues = new Map<number, GroupOwnValues>();
  /** Set by the first group: the planes uploaded per picture. */
  #picture: PictureLayout | undefined;
  /** Set by the first group: how many renditions every group of this stream has. */
  #layout: StatsLayout | undefined;
  readonly #waiting = new Set<Job>(); // admitted, not yet staged
  readonly #reads = new Set<Promise<unknown>>();
  #pool: StagingPool | undefined;
  #geometry: FrameGeometry | undefined;
  /** The kernels of #geometry, once compiled (with the extractors'). */
  #kernelSet: KernelSet | undefined;
  #queries: { set: GPUQuerySet; resolve: GPUBuffer }[] = [];
  #chain: Promise<unknown> = Promise.resolve();
  /** Groups whose copies are done, in frame order, waiting for the next submit. */
  #ready: ReadyGroup[] = [];
  #flushScheduled = false;
  /** Whether a batch was submitted (the trace's first submit). */
  #submitted = false;
  #flushing = false;
  /** The flush loop under way (end() waits for it). */
  #flushed: Promise<void> = Promise.resolve();
  /** Steps 1-2 (slots, copies started), in frame order, ahead of #chain. */
  #stageChain: Promise<unknown> = Promise.resolve();
  /** Staging copies in flight: the pool must not be destroyed (nor slots unmapped) under them. */
  readonly #copies = new Set<Promise<unknown>>();
  /** Reads located frames' planes from their files (made by the first one). */
  #located: LocatedFileReader | undefined;
  #broken: unknown = undefined;
  #cancelled = false;
  #ended: Promise<void> | undefined;

  /** The native off-thread copy (undefined with an addon that lacks it: copies stay synchronous). */
  readonly #copyBytes: ((dst: Uint8Array, src: Uint8Array) => Promise<void>) | undefined;
  /** The same for several (dst, src) pairs in one call, where the addon takes them (one pool hop per group). */
  readonly #copyPairs: ((pairs: Uint8Array[]) => Promise<void>) | undefined;

  constructor(backend: StreamBackend, gpu: GpuDevice, native: NativeAddon, extractors?: () => GpuExtractorSet | undefined) {
    this.#backend = backend;
    this.#extractorSource = extractors;
    this.#gpu = gpu;
    this.#native = native;
    const copyBytes = native.copyBytes;
    this.#copyBytes = copyBytes ? (dst, src) => copyBytes.call(native, dst, src) : undefined;
    this.#copyPairs = copyBytes && native.copyBytesPairs === true ? (pairs) => copyBytes.apply(native, pairs as [Uint8Array, Uint8Array]) : undefined;
  }

  admit(group: FrameGroup): Job {
    const scored = group.scored !== false;
    const job: Job = { group, scored, held: new Set([group.ref]) };
    for (const frame of group.dis) if (frame) job.held.add(frame);
    if (this.#cancelled) {
      releaseAll(job);
      return job;
    }
    // A group read for motion only: its distorted frames are not needed, unless an extractor
    // reads them as the next frame's previous distorted pictures.
    if (!scored && this.#resolveExtractors()?.previousDis !== true) for (const frame of group.dis) if (frame && frame !== group.ref) release(job, frame);
    this.#waiting.add(job);
    return job;
  }

  async run(job: Job): Promise<ReadGroup> {
    this.#waiting.delete(job);
    if (job.group.index === 0) mark('first group in');
    else if (job.group.index % 10 === 0) mark(`group ${job.group.index} in`);
    // Slots and copies (steps 1-2) start as soon as the previous group has its slots, so the
    // copies of several groups overlap; encode and submit (steps 3-4) stay in frame order.
    const staged = this.#stageChain.then(() => this.#stage(job));
    this.#stageChain = staged.catch(() => undefined);
    // Queued in frame order; submitted with the groups queued beside it (#flush).
    const queued = this.#chain.then(() => this.#enqueue(job, staged));
    this.#chain = queued.catch(() => undefined);
    let s: Submitted;
    try {
      s = await (await queued).submitted;
    } catch (error) {
      throw asBackendError(error, job.group.index);
    }
    const { done } = s;
    this.#reads.add(done);
    try {
      const [frames, gpuError] = await done;
      if (s.index === 0) mark('first readback');
      else if (s.index % 10 === 0) mark(`group ${s.index} read`);
      const bytes = frames[s.at]!;
      if (gpuError) {
        throw new BackendError('E_GPU', `${this.#gpu.adapterName}: frame ${s.index}: ${gpuError.constructor?.name ?? 'GPUError'}: ${gpuError.message}`);
      }
      this.#gpu.throwIfFailed();
      const { motionOffset, motion2Offset, blockBytes, finishLength, bytes: statsBytes } = this.#layout!;
      const words = new Uint32Array(bytes, 0, statsBytes / 4);
      const u64 = (offset: number): bigint => (BigInt(words[offset / 4 + 1]!) << 32n) | BigInt(words[offset / 4]!);
      const sad = motionOffset !== undefined && s.hasPrev ? u64(motionOffset) : null;
      const far = motion2Offset === undefined ? {} : { sad2: s.hasPrev2 ? u64(motion2Offset) : null };
      const renditions = s.renditions.map((r, k): GroupStats['renditions'][number] => {
        if (!r.present) return undefined;
        if (!s.scored) return null;
        // The readback is already the host's own copy: a view where it is aligned.
        const at = k * blockBytes;
        const stats = at % 8 === 0 ? new BigInt64Array(bytes, at, finishLength) : new BigInt64Array(bytes.slice(at, at + finishLength * 8));
        return { stats, disPts: r.disPts };
      });
      if (this.#backend.timing && s.scored && bytes.byteLength >= statsBytes + TIMESTAMPS * 8) {
        this.#backend.recordTiming(new BigUint64Array(bytes, statsBytes, TIMESTAMPS), s.hostWrite, performance.now() - s.submittedAt);
      }
      // The registered extractors' values of each scored rendition, finished on the worker
      // pool while later groups are still in flight (extracted() waits for them, finish()
      // merges them).
      const set = this.#extractors;
      const firstAt = this.#layout!.extractorsInBlock / 4;
      const extracted = set
        ? Promise.all(s.renditions.map((r, k) => (r.present && s.scored ? set.finish(k, words, (k * blockBytes + this.#layout!.extractorsInBlock) / 4, firstAt) : undefined)))
        : Promise.resolve(undefined);
      // Raised in order by extracted(), or dropped with the stream; held in #reads until it
      // settles, so the stream's end waits for it (CAMBI's host pooling reads the GPU).
      this.#reads.add(extracted);
      void extracted.then(() => this.#reads.delete(extracted), () => this.#reads.delete(extracted));
      return { stats: { index: s.index, refPts: s.refPts, geometry: s.geometry, renditions, sad, ...far }, words, extracted };
    } catch (error) {
      this.#broken ??= error;
      throw asBackendError(error, s.index);
    } finally {
      this.#reads.delete(done);
    }
  }

  /**
   * The registered extractors this stream computes, asked for once, when its first group is
   * admitted (the plan backend has made them for the input's format by then).
   */
  #resolveExtractors(): GpuExtractorSet | undefined {
    if (!this.#extractorsResolved) {
      this.#extractorsResolved = true;
      const set = this.#extractorSource?.();
      this.#extractors = set && set.size > 0 ? set : undefined;
    }
    return this.#extractors;
  }

  /** The registered extractors this stream computes (known from its first group on). */
  get extractors(): GpuExtractorSet | undefined {
    return this.#extractors;
  }

  /** A group's lookahead extractor values (finish() keeps them for every group), once. */
  takeOwnValues(index: number): GroupOwnValues | undefined {
    const own = this.#ownValues.get(index);
    this.#ownValues.delete(index);
    return own;
  }

  /** A read group with its registered extractors' values finished. */
  async extracted(r: ReadGroup): Promise<StreamStats> {
    try {
      return { stats: r.stats, words: r.words, extracted: await r.extracted };
    } catch (error) {
      this.#broken ??= error;
      throw asBackendError(error, r.stats.index);
    }
  }

  finish({ stats: r, words, extracted }: StreamStats): MotionGroup {
    try {
      const L = this.#layout!;
      const group: MotionGroup = L.core ? finishGroup(this.#native, r, this.#backend.motion, this.#backend.parts) : withoutCore(r);
      const set = this.#extractors;
      if (!set) return group;
      const firstAt = L.extractorsInBlock / 4;
      // Every group's, scored or not: the frames before and after it read them.
      if (set.lookahead) this.#ownValues.set(r.index, { own: set.ownValues(words, firstAt), present: group.renditions.map((entry) => entry !== undefined) });
      // The registered extractors' values join each scored frame's core features.
      const renditions = group.renditions.map((entry, k) => {
        if (!entry) return entry;
        const values = extracted?.[k];
        if (!values) throw new BackendError('E_GPU', `frame ${r.index}: rendition ${k} has no extractor values`);
        return { ...entry, features: { ...entry.features, ...values } };
      });
      return { ...group, renditions };
    } catch (error) {
      throw asBackendError(error, r.index);
    }
  }

  /**
   * Steps 1-2 of the header comment for one group: takes its slots and starts the copies of
   * its frames into them (off the main thread for large frames). Runs in frame order (the
   * slots are taken FIFO) but does not wait for the copies; `copied` settles once every
   * copy has, and the frames are released then.
   */
  /** Gives back what a failed stage or submit holds, marks the reference chain broken, rethrows. */
  #fail(job: Job, slots: Array<UploadSlot | undefined>, error: unknown): never {
    releaseAll(job);
    if (this.#pool && !this.#pool.destroyed) {
      for (const slot of slots) if (slot) this.#pool.upload.release(slot);
    }
    // The reference chain is broken: no later frame may be computed.
    if (error !== CANCELLED) this.#broken ??= error;
    throw error === CANCELLED ? new BackendError('E_GPU', 'cancelled') : error;
  }

  async #stage(job: Job): Promise<Staged> {
    const { group, scored } = job;
    const slots: Array<UploadSlot | undefined> = [];
    const pool = (): StagingPool => this.#pool!;
    try {
      this.#check();
      const { ref } = group;
      const width = group.dis.length;
      if (!this.#layout) {
        this.#resolveExtractors();
        // Without the core and with no extractor the format allows (a 16-bit float_psnr-only
        // run), the groups still pass through, with no values of their own.
        this.#picture = this.#extractors?.layout ?? pictureLayout({ ...ref.format, chroma: '400' }, false);
        const { parts } = this.#backend;
        const counts = parts.vif || parts.adm ? this.#native.statsLayout() : { vif: 0, adm: 0 };
        const core = { vif: parts.vif ? counts.vif : 0, adm: parts.adm ? counts.adm : 0, motion: parts.motion };
        this.#layout = statsLayout(core, width, needsSad2(this.#backend.motion), this.#extractors?.blockWords ?? 0);
      }
      const L = this.#layout;
      const picture = this.#picture!;
      if (width !== L.renditions) {
        throw new BackendError('E_GPU', `frame ${group.index}: a group of ${width} distorted frames in a stream of ${L.renditions}`);
      }
      // The distorted frames uploaded: those of the renditions present, in a scored group (in
      // every group where an extractor reads the previous distorted picture).
      const uploaded = group.dis.map((dis) => (scored || this.#extractors?.previousDis === true ? dis : undefined));
      const geometry: FrameGeometry = { width: ref.format.width, height: ref.format.height, bitDepth: ref.format.bitDepth };
      if (this.#geometry) assertSameGeometry(ref.format, this.#geometry, group.index, 'previous reference');
      for (const dis of uploaded) if (dis) assertSameGeometry(dis.format, geometry, group.index, 'distorted');
      if (this.#extractors && !sameFormat(ref.format, this.#extractors.format)) {
        throw new VmafError('E_INPUT_MISMATCH', `frame ${group.index}: the reference frame's format changed within the stream`);
      }
      if (!this.#pool) assertFitsDevice(this.#gpu, geometry, picture.bytes);
      const located = (): LocatedFileReader => (this.#located ??= new LocatedFileReader());
      const refPlanes = stagedPlanesOf(ref, picture, group.index, 'reference', located);
      const disPlanes = uploaded.map((dis) => (dis ? stagedPlanesOf(dis, picture, group.index, 'distorted', located) : undefined));

      // The stream's geometry is fixed by its first group (asserted above): its kernels and
      // compiled extractors are looked up once, not per group (a key string and two awaits).
      // The first group's compile (the core's kernels, begun by prepare() where it was called,
      // and the extractors', side by side) goes on while the pool is made and the frames are
      // copied; only the encode needs them.
      let kernels = this.#kernelSet;
      let compiling: Promise<KernelSet> | undefined;
      if (!kernels) {
        const extractors = this.#extractors;
        compiling = Promise.all([this.#backend.kernels(geometry), extractors?.compile(this.#gpu)]).then(([set]) => set);
        compiling.catch(() => undefined);
      }
      try {
        if (!this.#pool) {
          this.#geometry = geometry;
          // Under error scopes: a device out of memory for a frame this large says so here.
          this.#pool = await this.#gpu.withErrorScopes(`allocating the buffers for ${geometry.width}x${geometry.height} frames`, () => this.#makePool(geometry, L));
          this.#check();
          mark('staging pool');
        }
        // The slots holding the pictures uploaded (in one-slot runs: the one), in order.
        const uses = new Array<boolean>(pool().slotsPerGroup).fill(false);
        uses[0] = true;
        for (let k = 0; k < uploaded.length; k++) if (uploaded[k]) uses[pool().uploadPlace(k + 1).slot] = true;
        for (let i = 0; i < uses.length; i++) {
          if (!uses[i]) continue;
          slots[i] = await pool().upload.acquire();
          this.#check();
        }
      } catch (error) {
        // A compile that failed is the error to report: a device that stops answering while
        // the kernels compile times out the pool's error scope too, a moment later.
        if (compiling && error !== CANCELLED) await compiling;
        throw error;
      }
      const P = pool();

      // Step 2: the host's part. The frames are released as soon as they are copied: the
      // reference once for every rendition.
      const t0 = performance.now();
      const refPts = ref.pts;
      const renditions = group.dis.map((dis): Presence => ({ present: dis !== undefined, disPts: scored ? dis?.pts : undefined }));
      const copy = this.#copyBytes;
      // Each slot's pictures in one write: one map, one unmap and one fence for them all.
      type Region = { offset: number; bytes: number; planes: Array<{ bytes: StagedPlane; offset: number }> };
      const regions: Region[][] = slots.map(() => []);
      const place = (j: number, planes: StagedPlane[]): void => {
        const { slot, offset } = P.uploadPlace(j);
        regions[slot]!.push({ offset, bytes: picture.bytes, planes: planes.map((bytes, p) => ({ bytes, offset: picture.planes[p]!.offset })) });
      };
      place(0, refPlanes);
      for (let k = 0; k < disPlanes.length; k++) if (disPlanes[k]) place(k + 1, disPlanes[k]!);
      const writes: Promise<void>[] = [];
      for (let i = 0; i < slots.length; i++) {
        const slot = slots[i];
        if (!slot) continue;
        try {
          writes.push(slot.writeRegionsAsync(regions[i]!, copy, this.#copyPairs));
        } catch (error) {
          writes.push(Promise.reject(error));
        }
      }
      // Settles once every copy has (a failed one does not cut the others short): only then
      // may the frames be released and the slots given back.
      const copied = Promise.allSettled(writes).then((results) => {
        releaseAll(job);
        const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
        if (failed) throw failed.reason;
        return performance.now() - t0;
      });
      copied.catch(() => undefined);
      this.#copies.add(copied);
      void copied.finally(() => this.#copies.delete(copied)).catch(() => undefined);
      if (compiling) {
        try {
          kernels = await compiling;
          mark('kernels ready');
          this.#check();
        } catch (error) {
          // The slots go back only once their copies are over.
          await copied.catch(() => undefined);
          throw error;
        }
        this.#kernelSet = kernels;
      }
      const staged: Staged = { geometry, kernels: kernels!, slots: [...slots], refPts, renditions, uploaded, copied };
      slots.length = 0;
      return staged;
    } catch (error) {
      this.#fail(job, slots, error);
    }
  }

  /**
   * Steps 3-4 of the header comment, first half, strictly in frame order: once a group's
   * copies are done, queues it for the next submit (#flush) and resolves, so the next group
   * may join the same batch; `submitted` settles once its batch is submitted.
   */
  async #enqueue(job: Job, staging: Promise<Staged>): Promise<{ submitted: Promise<Submitted> }> {
    // #stage cleans up after itself when it fails.
    const st = await staging;
    let hostWrite: number;
    try {
      // Every copy has settled once this returns or throws: the slots may be given back.
      hostWrite = await st.copied;
      this.#check();
    } catch (error) {
      this.#fail(job, st.slots, error);
    }
    const submitted = new Promise<Submitted>((resolve, reject) => {
      this.#ready.push({ job, st, hostWrite, resolve, reject });
    });
    submitted.catch(() => undefined);
    this.#scheduleFlush();
    return { submitted };
  }

  /**
   * Submits what is queued after the callbacks of this event-loop turn have run (so every
   * group whose copies finished meanwhile joins the batch), never waiting for more: a lone
   * group is submitted alone, one turn after its copies.
   */
  #scheduleFlush(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(() => {
      this.#flushScheduled = false;
      if (!this.#flushing) this.#flushed = this.#flush();
    });
  }

  /** Submits the queued groups in batches, in frame order; one batch at a time. */
  async #flush(): Promise<void> {
    if (this.#flushing) return; // the running loop takes what was queued meanwhile
    this.#flushing = true;
    try {
      while (this.#ready.length > 0) {
        const batch = this.#ready.splice(0, this.#pool?.readbackFrames ?? 1);
        await this.#submitBatch(batch);
      }
    } finally {
      this.#flushing = false;
    }
  }

  /**
   * Steps 3-4 for a batch of groups in frame order: one readback slot, one command buffer
   * (each group's commands in turn, as its own submit would have recorded them, its stats
   * into its own stride of the readback slot), one error scope, one submit; then each
   * group's upload fences and the batch's readback fence. Never rejects: a failure fails
   * every group of the batch.
   */
  async #submitBatch(batch: ReadyGroup[]): Promise<void> {
    let rb: ReadbackSlot | undefined;
    const pool = (): StagingPool => this.#pool!;
    try {
      this.#check();
      rb = await pool().readback.acquire();
      this.#check();
      const L = this.#layout!;
      const stride = pool().readbackStride;
      const timing = this.#backend.timing;
      const frameBytes = L.bytes + (timing ? TIMESTAMPS * 8 : 0);
      const d = this.#gpu.device;
      const core = batch[0]!.st.kernels.core;
      const picture = this.#picture!;
      const extractors = this.#extractors;
      const refs: Array<{ prevRef: boolean; prevRef2: boolean }> = [];
      d.pushErrorScope('validation');
      let scope: Promise<GPUError | null>;
      try {
        const enc = d.createCommandEncoder({ label: batch.length === 1 ? `frame ${batch[0]!.job.group.index}` : `frames ${batch[0]!.job.group.index}-${batch[batch.length - 1]!.job.group.index}` });
        for (const [i, { job, st }] of batch.entries()) {
          const { uploaded, slots } = st;
          const { ref: refBuf, prevRef, prevRef2 } = pool().references.advance();
          refs.push({ prevRef: prevRef !== undefined, prevRef2: prevRef2 !== undefined });
          // Each uploaded picture's device buffer (and, with a distorted history, the rendition's
          // previous one); a rendition without a picture here has no previous one next time.
          const disPlaced = uploaded.map((dis, k) => {
            if (dis) return pool().nextDistorted(k);
            pool().forgetDistorted(k);
            return undefined;
          });
          // The pictures the frame computes: the scored group's.
          const disBufs = disPlaced.map((placed) => (job.scored ? placed?.dis : undefined));
          const stats = pool().stats.next();
          // Timestamps for scored groups; the query sets are reused within a command buffer in queue order.
          const queries = timing && job.scored ? this.#queries[i] : undefined;
          if (queries) marker(enc, queries.set, 0);
          const P = pool();
          const size = P.pictureStride;
          // Each picture from its place in the group's upload slots (StagingPool.uploadPlace).
          const copyPicture = (j: number, dst: GPUBuffer): void => {
            const { slot, offset } = P.uploadPlace(j);
            slots[slot]!.encodeRegionCopy(enc, offset, size, dst);
          };
          copyPicture(0, refBuf);
          for (let k = 0; k < disPlaced.length; k++) if (disPlaced[k]) copyPicture(k + 1, disPlaced[k]!.dis);
          if (queries) marker(enc, queries.set, 1);
          const runs: CoreRun[] = [];
          for (let k = 0; k < disBufs.length; k++) {
            const disBuf = disBufs[k];
            if (!disBuf) continue;
            const planes: LumaPlanes = prevRef ? { ref: refBuf, dis: disBuf, prevRef } : { ref: refBuf, dis: disBuf };
            if (core?.vif) runs.push({ part: 'vif', kernel: core.vif, planes, out: { buffer: stats, offset: k * L.blockBytes } });
            if (core?.adm) runs.push({ part: 'adm', kernel: core.adm, planes, out: { buffer: stats, offset: k * L.blockBytes + L.admInBlock } });
          }
          if (core?.motion && L.motionOffset !== undefined) {
            // Motion reads the reference planes only: once per group.
            const planes: LumaPlanes = prevRef ? { ref: refBuf, dis: refBuf, prevRef } : { ref: refBuf, dis: refBuf };
            runs.push({ part: 'motion', kernel: core.motion, planes, out: { buffer: stats, offset: L.motionOffset } });
            if (L.motion2Offset !== undefined) {
              // The five-frame window's SAD: the same kernel against the reference two frames back.
              const planes2: LumaPlanes = prevRef2 ? { ref: refBuf, dis: refBuf, prevRef: prevRef2 } : { ref: refBuf, dis: refBuf };
              runs.push({ part: 'motion', kernel: core.motion, planes: planes2, out: { buffer: stats, offset: L.motion2Offset } });
            }
          }
          encodeCore(enc, runs);
          for (const run of runs) this.#backend.countRuns(run.part);
          // The registered extractors write their own blocks, in passes of their own.
          if (extractors) {
            for (let k = 0; k < disBufs.length; k++) {
              const disBuf = disBufs[k];
              if (!disBuf) continue;
              const inputs: GpuExtractorInputs = { ref: { buffer: refBuf, layout: picture }, dis: { buffer: disBuf, layout: picture } };
              if (prevRef) inputs.previousRef = { buffer: prevRef, layout: picture };
              const prevDis = disPlaced[k]!.previousDis;
              if (prevDis) inputs.previousDis = { buffer: prevDis, layout: picture };
              extractors.encode(enc, inputs, { buffer: stats, offset: k * L.blockBytes + L.extractorsInBlock });
            }
            if (extractors.referenceOnly) {
              // Extractors of the reference alone (float_motion): once per group, scored or not, into the first block.
              const previousRef = prevRef ? { buffer: prevRef, layout: picture } : undefined;
              extractors.encodeReference(enc, { ref: { buffer: refBuf, layout: picture }, previousRef }, { buffer: stats, offset: L.extractorsInBlock });
            }
          }
          if (queries) marker(enc, queries.set, 2);
          rb.encodeCopy(enc, stats, 0, L.bytes, i * stride);
          if (queries) {
            marker(enc, queries.set, 3);
            enc.resolveQuerySet(queries.set, 0, TIMESTAMPS, queries.resolve, 0);
            rb.encodeCopy(enc, queries.resolve, 0, TIMESTAMPS * 8, i * stride + L.bytes);
          }
        }
        d.queue.submit([enc.finish()]);
        if (!this.#submitted) mark('first submit');
        else if (tracing()) for (const { job } of batch) if (job.group.index % 10 === 0) mark(`group ${job.group.index} submitted (batch of ${batch.length})`);
        this.#submitted = true;
        this.#backend.countSubmit(batch.length);
      } finally {
        scope = d.popErrorScope();
        scope.catch(() => undefined);
      }
      const submittedAt = performance.now();

      // Step 4: the fences, each group's staging slots, then the batch's readback and error scope.
      for (const { st } of batch) {
        for (let i = 0; i < st.slots.length; i++) {
          const slot = st.slots[i];
          if (!slot) continue;
          pool().upload.submitted(slot);
          st.slots[i] = undefined;
        }
      }
      const read = pool().readback.readFrames(rb, batch.length, stride, frameBytes);
      rb = undefined;
      const done = Promise.all([read, this.#gpu.guard(scope, 'error scope', this.#backend.fenceTimeoutMs)]);
      done.catch(() => undefined);
      for (const [i, { job, st, hostWrite, resolve }] of batch.entries()) {
        const { group, scored } = job;
        resolve({ index: group.index, geometry: st.geometry, scored, hasPrev: refs[i]!.prevRef, hasPrev2: refs[i]!.prevRef2, refPts: st.refPts, renditions: st.renditions, done, at: i, hostWrite, submittedAt });
      }
    } catch (error) {
      // Nothing of the batch was submitted: every group gives back what it holds and fails.
      if (rb && this.#pool && !this.#pool.destroyed) this.#pool.readback.release(rb);
      for (const { job, st, reject } of batch) {
        try {
          this.#fail(job, st.slots, error);
        } catch (e) {
          reject(e);
        }
      }
    }
  }

  #check(): void {
    if (this.#cancelled) throw CANCELLED;
    if (this.#broken !== undefined) throw this.#broken;
    this.#gpu.throwIfFailed();
  }

  #makePool(g: FrameGeometry, layout: StatsLayout): StagingPool {
    const backend = this.#backend;
    // The upload slots and device planes hold the whole picture the run reads (luma alone, or Y Cb Cr).
    const lumaBytes = this.#picture!.bytes;
    const pool = new StagingPool({
      gpu: this.#gpu,
      depth: backend.depth,
      renditions: layout.renditions,
      lumaBytes,
      statsBytes: layout.bytes,
      extraReadbackBytes: backend.timing ? TIMESTAMPS * 8 : 0,
      readbackFrames: backend.batch,
      distortedHistory: this.#extractors?.previousDis === true,
      maxUploadBytes: backend.maxUploadBytes,
      fenceTimeoutMs: backend.fenceTimeoutMs,
      label: `${g.width}x${g.height}`,
    });
    if (backend.timing) {
      const d = this.#gpu.device;
      for (let i = 0; i < backend.depth; i++) {
        this.#queries.push({
          set: d.createQuerySet({ type: 'timestamp', count: TIMESTAMPS, label: `stage timestamps ${i}` }),
          resolve: d.createBuffer({ size: TIMESTAMPS * 8, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC, label: `stage timestamps ${i}` }),
        });
      }
    }
    return pool;
  }

  /**
   * The subscription is over (completed, errored or unsubscribed): releases the frames of
   * pairs not yet staged, and frees the pool once the frames in flight have settled.
   */
  end(): Promise<void> {
    if (this.#ended) return this.#ended;
    this.#cancelled = true;
    for (const job of this.#waiting) releaseAll(job);
    this.#waiting.clear();
    this.#ended = Promise.allSettled([this.#stageChain, this.#chain, this.#flushed, ...this.#reads, ...this.#copies]).then(() => this.#free());
    return this.#ended;
  }

  /**
   * The backend is closing: frees everything as soon as no staging copy is in flight (a
   * copy writes into a mapped slot; they are bounded memcpys), pending fences reject.
   * Resolves once freed; never rejects.
   */
  abandon(): Promise<void> {
    this.#cancelled = true;
    for (const job of this.#waiting) releaseAll(job);
    this.#waiting.clear();
    if (this.#copies.size === 0) {
      this.#free();
      return Promise.resolve();
    }
    return Promise.allSettled([...this.#copies]).then(() => this.#free());
  }

  #free(): void {
    void this.#located?.close();
    this.#located = undefined;
    this.#pool?.destroy();
    this.#extractors?.destroy();
    this.#extractors = undefined;
    for (const q of this.#queries) {
      q.set.destroy();
      q.resolve.destroy();
    }
    this.#queries = [];
  }
}

/** One core kernel's work for a group: which part it counts as, its planes and its stats slot. */
interface CoreRun {
  part: 'vif' | 'adm' | 'motion';
  kernel: FrameKernel;
  planes: LumaPlanes;
  out: StatsSlot;
}

/**
 * Records a group's core runs. The kernels that can (encodeInPass) share one compute pass,
 * their encodeBefore steps (motion's clears) recorded before it: fewer native calls per
 * frame than a pass each. A kernel without it (the tests' stand-ins) records its own
 * encode(). The runs write separate stats and read only the uploaded planes, so their
 * order does not matter.
 */
function encodeCore(enc: GPUCommandEncoder, runs: readonly CoreRun[]): void {
  let shared = false;
  for (const { kernel, planes, out } of runs) {
    if (kernel.encodeInPass) {
      kernel.encodeBefore?.(enc, planes, out);
      shared = true;
    } else {
      kernel.encode(enc, planes, out);
    }
  }
  if (!shared) return;
  const pass = enc.beginComputePass({ label: 'core' });
  for (const { kernel, planes, out } of runs) kernel.encodeInPass?.(pass, planes, out);
  pass.end();
}

/** An empty compute pass that only writes a timestamp. */
function marker(enc: GPUCommandEncoder, querySet: GPUQuerySet, index: number): void {
  enc.beginComputePass({ label: `timestamp ${index}`, timestampWrites: { querySet, beginningOfPassWriteIndex: index } }).end();
}

function release(job: Job, frame: Frame): void {
  if (!job.held.delete(frame)) return;
  try {
    frame.release();
  } catch {
    // a release that throws must not hide the real outcome
  }
}

function releaseAll(job: Job): void {
  for (const frame of [...job.held]) release(job, frame);
}

function assertSameGeometry(a: { width: number; height: number; bitDepth: number }, b: FrameGeometry, index: number, what: string): void {
  if (a.width !== b.width || a.height !== b.height || a.bitDepth !== b.bitDepth) {
    throw new VmafError(
      'E_INPUT_MISMATCH',
      what === 'distorted'
        ? `frame ${index}: the distorted frame is ${a.width}x${a.height} ${a.bitDepth}-bit, the reference ${b.width}x${b.height} ${b.bitDepth}-bit`
        : `frame ${index}: the reference frame is ${a.width}x${a.height} ${a.bitDepth}-bit, the ${what} ${b.width}x${b.height} ${b.bitDepth}-bit`,
    );
  }
}

/**
 * A picture's device-local planes are one storage buffer each, bound whole by the kernels:
 * a frame whose planes exceed the adapter's buffer or binding limits is refused here, with
 * the sizes, before anything is allocated (Dawn's own validation error says it less plainly).
 */
function assertFitsDevice(gpu: GpuDevice, geometry: FrameGeometry, bytes: number): void {
  const limits: Array<[string, number]> = [['maxBufferSize', gpu.limits.maxBufferSize], ['maxStorageBufferBindingSize', gpu.limits.maxStorageBufferBindingSize]];
  for (const [name, max] of limits) {
    if (bytes > max) {
      throw new BackendError('E_GPU', `a ${geometry.width}x${geometry.height} ${geometry.bitDepth}-bit frame's planes take ${bytes} bytes, over this adapter's ${name} (${max}): too large for ${gpu.adapterName} (--backend cpu has no such limit)`);
    }
  }
}

function sameFormat(a: FrameFormat, b: FrameFormat): boolean {
  return a.width === b.width && a.height === b.height && a.bitDepth === b.bitDepth && a.chroma === b.chroma;
}

/** A group's entries when only registered extractors run: no core features, no motion. */
function withoutCore(r: GroupStats): MotionGroup {
  const renditions = r.renditions.map((x): MotionEntry | null | undefined => {
    if (!x) return x;
    return x.disPts === undefined ? { features: {} } : { features: {}, disPts: x.disPts };
  });
  const group: MotionGroup = { index: r.index, scores: [], renditions };
  if (r.refPts !== undefined) group.refPts = r.refPts;
  return group;
}

function asBackendError(error: unknown, index: number): Error {
  if (error instanceof VmafError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new BackendError('E_GPU', `gpu backend, frame ${index}: ${message}`, { cause: error });
}

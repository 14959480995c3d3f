/**
 * The gpu backend: VIF, ADM and motion as WGSL kernels through WebGPU (Dawn, npm `webgpu`),
 * producing the very same int64 accumulators as the cpu backend, finished by the same native
 * step (finishFeatures), so the two agree bit for bit. Registered extractors with gpu
 * kernels (gpu-extractors.ts: psnr, float_psnr, float_moment, float_ansnr, float_motion, ...) run in the same command
 * buffers, their accumulators in each rendition's block of the stats (stats-layout.ts),
 * finished by their C++ extractors; a run whose plan has no core instance runs only them.
 *
 * GpuBackend owns the device and the kernels compiled for each frame size and bit depth;
 * each extract / extractMany subscription is a GpuStream (gpu-stream.ts), which stages,
 * submits and reads back its frames.
 */
import { Observable, map } from '../../rx.js';
import { extractPairs, type FeatureBackend } from '../backend.js';
import type { FrameFeatures, FrameFormat, FrameGroup, FramePair, GroupFeatures } from '../../types.js';
import { BackendError } from '../../errors.js';
import { loadNative, type NativeAddon } from '../native.js';
import { orderedMergeMap } from '../../pipeline/ordered-merge-map.js';
import { withGroupMotion } from '../../pipeline/motion-finish.js';
import { DEFAULT_MOTION_INSTANCE, type MotionInstance } from '../../extractors/integer_motion/motion-options.js';
import { DEFAULT_FENCE_TIMEOUT_MS, DEFAULT_STAGING_DEPTH } from '../../pool/staging-ring.js';
import { openGpuDevice, preopenGpuDevice, type GpuDevice, type OpenGpuOptions } from './device.js';
import type { FrameGeometry, FrameKernel } from './frame-kernel.js';
import type { GpuExtractorSet } from './gpu-extractors.js';
import { withExtractorLookahead } from './extractor-lookahead.js';
import { MotionKernel } from './motion/motion-kernel.js';
import { VifKernel } from './vif/vif-kernel.js';
import { AdmKernel } from './adm/adm-kernel.js';
import { ALL_CORE_PARTS, anyCorePart, type CoreParts, type CoreRuns } from '../core-parts.js';
import { mark, tracing } from '../../trace.js';
import { GpuStream, type CoreKernels, type KernelSet, type StreamBackend } from './gpu-stream.js';

export interface GpuBackendOptions {
  /** WebGPU adapter: a substring of its name (--gpu-adapter). Default: hardware first, else software. */
  adapter?: string;
  /** Refuse software adapters (unless named by `adapter`). Default false. */
  requireHardware?: boolean;
  /** Non-fatal conditions, e.g. a software adapter (the CLI prints them on stderr). */
  onWarning?: (message: string) => void;
  /** Frames in flight, and slots per ring. Default 6 (DEFAULT_STAGING_DEPTH), at least 2. */
  depth?: number;
  /**
   * The most groups one submit (and one readback map) carries when several are queued.
   * Default depth / 2 (maxBatch); 1 submits every group on its own.
   */
  batch?: number;
  /** Record per-stage GPU timestamps (where 'timestamp-query' exists); see stageTimings(). */
  timing?: boolean;
  /**
   * Longest wait on a frame's fences (staging, readback, its error scope) before it counts
   * as a hang, in ms (0: none). Default 300000. The same bound applies to opening the adapter
   * and the device and to each kernel's compilation (E_GPU naming the stage).
   */
  fenceTimeoutMs?: number;
  /** Extra Dawn options (create()). */
  dawnFlags?: readonly string[];
  /**
   * Largest upload slot in bytes (default and cap: the adapter's maxBufferSize). A group's
   * pictures share one slot where they fit; tests set it low to split them over several.
   */
  maxUploadBytes?: number;
  /**
   * The motion instances whose values each frame gets (their SADs are computed once for
   * all of them). Default: libvmaf's default instance alone.
   */
  motion?: readonly MotionInstance[];
  /**
   * The core parts (integer VIF, ADM, motion) that run: only their kernels are compiled and
   * encoded, only their stats read back and finished. Default all; none for a run whose
   * plan has only registered extractors with gpu kernels (extractMany's `extractors`).
   */
  parts?: CoreParts;
  /**
   * @internal Replaces kernel constructors (tests: stand-ins while a kernel is developed,
   * kernels that fail on purpose). Default: VifKernel.create, AdmKernel.create (createWithoutEgl1 under parts.admEgl1 false), MotionKernel.create.
   */
  kernelFactories?: Partial<KernelFactories>;
}

/** Creates a kernel for one frame geometry. */
export type KernelFactory<K extends FrameKernel = FrameKernel> = (gpu: GpuDevice, geometry: FrameGeometry) => Promise<K>;

export interface KernelFactories {
  vif: KernelFactory;
  adm: KernelFactory;
  motion: KernelFactory;
}

/** The kernels of the parts: ADM without its egl_1 variant where no instance reads it (core-parts.ts admEgl1). */
function defaultFactories(parts: CoreParts): KernelFactories {
  return {
    vif: (gpu, g) => VifKernel.create(gpu, g),
    adm: parts.admEgl1 === false ? (gpu, g) => AdmKernel.createWithoutEgl1(gpu, g) : (gpu, g) => AdmKernel.create(gpu, g),
    motion: (gpu, g) => MotionKernel.create(gpu, g),
  };
}

/** Mean milliseconds per frame and stage (scored frames only). */
export interface GpuStageTimings {
  /** Frames measured. */
  frames: number;
  /** GPU: copying the staged luma planes into device-local buffers. */
  upload: number;
  /** GPU: the VIF, ADM and motion passes. */
  compute: number;
  /** GPU: copying the stats into the readback slot. */
  readback: number;
  /** Host: writing the luma planes into the mapped staging slots. */
  hostWrite: number;
  /** Host: from the submit to the stats being on the host (queueing included). */
  hostWait: number;
}

// Frames in flight between the host and the GPU. Measured on an H100 at 1080p from host
// memory: depth 3 gave 970 fps, depth 6 gave 1060 (the host's staging copies of frame N+k
// overlap more GPU work); each level costs one staging slot per input and one readback slot.
// (In staging-ring.ts, where the run's memory check reads it without loading the backend.)
const DEFAULT_DEPTH = DEFAULT_STAGING_DEPTH;
/**
 * Groups whose registered extractors' values are being finished on the worker pool, per unit
 * of depth. v1 at 1080p on the H100 (its speed_chroma and CAMBI finish there) ran 9% faster with
 * twice the depth; this window gives that overlap without more rings and staging slots. At most
 * 3 x 6 + 6 groups in all: CAMBI keeps a values buffer per group until it is finished (64 at
 * least, cambi-gpu.ts).
 */
const FINISH_WINDOW = 3;

export class GpuBackend implements FeatureBackend, StreamBackend {
  readonly kind = 'gpu' as const;
  readonly description: string;
  /** The device (for tests and diagnostics). */
  readonly gpu: GpuDevice;
  readonly depth: number;
  /** The most groups per submit (GpuBackendOptions.batch). */
  readonly batch: number;
  readonly fenceTimeoutMs: number;
  /** GpuBackendOptions.maxUploadBytes, capped by the adapter's maxBufferSize. */
  readonly maxUploadBytes: number;
  /** Whether stage timestamps are recorded (asked for and supported). */
  readonly timing: boolean;
  /** The motion instances computed (see GpuBackendOptions.motion). */
  readonly motion: readonly MotionInstance[];
  /** The core parts that run (see GpuBackendOptions.parts). */
  readonly parts: CoreParts;
  /** Whether any core part runs. */
  readonly core: boolean;
  readonly #native: NativeAddon;
  readonly #factories: KernelFactories;
  readonly #kernels = new Map<string, Promise<KernelSet>>();
  readonly #streams = new Set<GpuStream>();
  readonly #timings = { frames: 0, upload: 0, compute: 0, readback: 0, hostWrite: 0, hostWait: 0 };
  readonly #runs: CoreRuns = { vif: 0, adm: 0, motion: 0 };
  readonly #submits = { submits: 0, groups: 0 };
  #closed = false;

  private constructor(gpu: GpuDevice, native: NativeAddon, options: GpuBackendOptions) {
    this.gpu = gpu;
    this.#native = native;
    const depth = options.depth ?? DEFAULT_DEPTH;
    if (!Number.isInteger(depth) || depth < 2) throw new BackendError('E_GPU', `the gpu backend needs a depth of at least 2 frames, got ${depth}`);
    this.depth = depth;
    const batch = options.batch ?? maxBatch(depth);
    if (!Number.isInteger(batch) || batch < 1 || batch > depth) throw new BackendError('E_GPU', `the gpu backend's batch must be an integer from 1 to its depth (${depth}), got ${batch}`);
    this.batch = batch;
    this.fenceTimeoutMs = options.fenceTimeoutMs ?? DEFAULT_FENCE_TIMEOUT_MS;
    this.maxUploadBytes = Math.min(options.maxUploadBytes ?? Infinity, gpu.limits.maxBufferSize);
    this.timing = options.timing === true && gpu.features.has('timestamp-query');
    this.parts = options.parts ?? ALL_CORE_PARTS;
    this.#factories = { ...defaultFactories(this.parts), ...options.kernelFactories };
    this.core = anyCorePart(this.parts);
    this.motion = this.parts.motion ? (options.motion ?? [DEFAULT_MOTION_INSTANCE]) : [];
    this.description = `gpu, ${gpu.adapterName}${gpu.isSoftware ? ' (software)' : ''}`;
    // How well the submits batched (VMAF_STREAM_TRACE): the CLI may exit without closing.
    if (tracing()) process.once('exit', () => mark(`submits: ${this.#submits.submits} for ${this.#submits.groups} groups`));
  }

  /** The device open() asks for with these options (preopen starts opening the same one early). */
  static deviceOptions(options: GpuBackendOptions): OpenGpuOptions {
    // VMAF_STREAM_DAWN_FLAGS: extra Dawn options for measurements (space-separated, as dawnFlags takes them).
    const fromEnv = (process.env.VMAF_STREAM_DAWN_FLAGS ?? '').split(/\s+/).filter((f) => f !== '');
    const dawnFlags = [...(options.dawnFlags ?? []), ...fromEnv];
    // Dawn rounds timestamps to 100 us unless told otherwise: too coarse for per-stage times.
    if (options.timing) dawnFlags.push('disable-dawn-features=timestamp_quantization');
    return {
      adapter: options.adapter,
      requireHardware: options.requireHardware,
      dawnFlags,
      label: 'vmaf-stream gpu backend',
      // --gpu-timeout bounds opening the device and compiling the kernels too, not only the fences.
      ...(options.fenceTimeoutMs !== undefined ? { timeoutMs: options.fenceTimeoutMs } : {}),
    };
  }

  /** Starts opening the device a later open() with these options takes (device.ts preopenGpuDevice). */
  static preopen(options: GpuBackendOptions = {}): void {
    preopenGpuDevice(GpuBackend.deviceOptions(options));
  }

  /** Opens the device (and checks the native addon, whose finish step the features need). */
  static async open(options: GpuBackendOptions = {}): Promise<GpuBackend> {
    const native = loadNative();
    const gpu = await openGpuDevice(GpuBackend.deviceOptions(options));
    try {
      const backend = new GpuBackend(gpu, native, options);
      if (gpu.isSoftware) {
        options.onWarning?.(
          `the gpu backend runs on a software adapter (${gpu.adapterName}): the scores are exact, but it is much slower than --backend cpu`,
        );
      }
      return backend;
    } catch (e) {
      gpu.destroy();
      throw e;
    }
  }

  extract(pairs: Observable<FramePair>): Observable<FrameFeatures> {
    return extractPairs(this, pairs);
  }

  gpuDevice(): GpuDevice {
    return this.gpu;
  }

  /**
   * `extractors`: the registered extractors with gpu kernels this stream computes beside the
   * core (gpu-extractors.ts), asked for when the first group is staged (the plan backend
   * makes them for the input's format as the group passes it); their values join each
   * scored frame's features.
   */
  extractMany(groups: Observable<FrameGroup>, extractors?: () => GpuExtractorSet | undefined): Observable<GroupFeatures> {
    return new Observable<GroupFeatures>((subscriber) => {
      if (this.#closed) {
        subscriber.error(new BackendError('E_GPU', 'the gpu backend is closed'));
        return;
      }
      const stream = new GpuStream(this, this.gpu, this.#native, extractors);
      this.#streams.add(stream);

      // A device failure errors the stream at once, even while no frame is in flight.
      const source = new Observable<FrameGroup>((s) => {
        const sub = groups.subscribe(s);
        const off = this.gpu.onFailure((e) => s.error(e));
        return () => {
          off();
          sub.unsubscribe();
        };
      });

      const subscription = source
        .pipe(
          map((group) => stream.admit(group)),
          // Depth bounds the groups holding the GPU's rings and slots (up to their readback);
          // the finishing of the registered extractors' values on the worker pool, which holds
          // none, overlaps later groups' GPU work in a window of its own.
          orderedMergeMap((job) => stream.run(job), this.depth),
          orderedMergeMap((r) => stream.extracted(r), FINISH_WINDOW * this.depth),
          map((r) => stream.finish(r)),
          withGroupMotion(this.motion),
          withExtractorLookahead(() => stream.extractors, (index) => stream.takeOwnValues(index)),
        )
        .subscribe(subscriber);

      return () => {
        subscription.unsubscribe();
        void stream.end().finally(() => this.#streams.delete(stream));
      };
    });
  }

  /**
   * Mean per-stage times over the frames scored so far (GPU timestamps, plus host-side
   * times), or null where timing was not asked for (open({ timing: true })) or the adapter
   * lacks 'timestamp-query'.
   */
  stageTimings(): GpuStageTimings | null {
    if (!this.timing) return null;
    const t = this.#timings;
    const n = t.frames;
    const mean = (x: number): number => (n === 0 ? 0 : x / n);
    return { frames: n, upload: mean(t.upload), compute: mean(t.compute), readback: mean(t.readback), hostWrite: mean(t.hostWrite), hostWait: mean(t.hostWait) };
  }

  /** How many VIF and ADM passes (one per rendition frame) and motion passes (one per SAD) were encoded: a diagnostic. */
  coreRuns(): CoreRuns {
    return { ...this.#runs };
  }

  /**
   * How many command buffers were submitted and how many groups they carried, over every
   * stream so far: a diagnostic (queued groups share a submit, see #flush).
   */
  submits(): { submits: number; groups: number } {
    return { ...this.#submits };
  }

  /** @internal Counts a submit of `groups` groups (submits). */
  countSubmit(groups: number): void {
    this.#submits.submits++;
    this.#submits.groups += groups;
  }

  /** @internal Counts encoded core passes (coreRuns). */
  countRuns(part: keyof CoreRuns): void {
    this.#runs[part]++;
  }

  /** Starts the stage timing averages afresh. */
  resetStageTimings(): void {
    const t = this.#timings;
    t.frames = t.upload = t.compute = t.readback = t.hostWrite = t.hostWait = 0;
  }

  /** @internal */
  recordTiming(ns: BigUint64Array, hostWrite: number, hostWait: number): void {
    const [t0, t1, t2, t3] = [ns[0]!, ns[1]!, ns[2]!, ns[3]!];
    if (!(t0 > 0n && t1 >= t0 && t2 >= t1 && t3 >= t2)) return; // not written, or wrapped
    const t = this.#timings;
    t.frames++;
    t.upload += Number(t1 - t0) / 1e6;
    t.compute += Number(t2 - t1) / 1e6;
    t.readback += Number(t3 - t2) / 1e6;
    t.hostWrite += hostWrite;
    t.hostWait += hostWait;
  }

  /** Its uploads read located frames from their files (GpuStream): any format. */
  async readsLocatedFrames(): Promise<boolean> {
    return true;
  }

  /** Starts compiling the kernels for frames of this format (FeatureBackend.prepare). */
  prepare(format: FrameFormat): void {
    if (this.#closed) return;
    // A failure is the first frame's to report (kernels() forgets a failed set).
    this.kernels({ width: format.width, height: format.height, bitDepth: format.bitDepth }).catch(() => undefined);
  }

  /** @internal The kernels for one frame size and bit depth, compiled once per backend. */
  kernels(geometry: FrameGeometry): Promise<KernelSet> {
    if (this.#closed) return Promise.reject(new BackendError('E_GPU', 'the gpu backend is closed'));
    const key = `${geometry.width}x${geometry.height}x${geometry.bitDepth}`;
    let set = this.#kernels.get(key);
    if (!set) {
      const g: FrameGeometry = { width: geometry.width, height: geometry.height, bitDepth: geometry.bitDepth };
      set = (async (): Promise<KernelSet> => {
        if (!this.core) return { geometry: g, core: undefined };
        const f = this.#factories;
        // Only the parts that run are compiled.
        const parts = (['vif', 'adm', 'motion'] as const).filter((part) => this.parts[part]);
        mark('kernels: compiling');
        const made = await Promise.allSettled(parts.map((part) => f[part](this.gpu, g).finally(() => mark(`kernels: ${part} compiled`))));
        const kernels = made.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
        try {
          const failed = made.find((r): r is PromiseRejectedResult => r.status === 'rejected');
          if (failed) throw failed.reason;
          const core: CoreKernels = {};
          for (const [i, part] of parts.entries()) core[part] = kernels[i]!;
          const want = { ...this.#native.statsLayout(), motion: 1 };
          for (const part of parts) {
            if (core[part]!.statsLength !== want[part]) {
              throw new BackendError('E_GPU', `the gpu ${part} kernel writes ${core[part]!.statsLength} values; the native finish step takes ${want[part]}`);
            }
          }
          return { geometry: g, core };
        } catch (e) {
          for (const k of kernels) k.destroy();
          throw e;
        }
      })();
      this.#kernels.set(key, set);
      set.catch(() => this.#kernels.delete(key));
    }
    return set;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const abandoned = [...this.#streams].map((stream) => stream.abandon());
    this.#streams.clear();
    await Promise.all(abandoned);
    const sets = await Promise.allSettled(this.#kernels.values());
    this.#kernels.clear();
    for (const s of sets) {
      if (s.status === 'fulfilled' && s.value.core) {
        s.value.core.vif?.destroy();
        s.value.core.adm?.destroy();
        s.value.core.motion?.destroy();
      }
    }
    mark('backend close: destroying the device');
    this.gpu.destroy();
    mark('backend close: device destroyed');
  }
}

/**
 * The most groups one submit carries by default: half the groups in flight, so that while one batch
 * runs on the GPU the next is already queued behind it (a batch of every group in flight
 * frees all its slots at once, and the GPU would idle while the host stages the next).
 */
function maxBatch(depth: number): number {
  return Math.max(1, Math.floor(depth / 2));
}

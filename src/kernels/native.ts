/**
 * Loads the cpu backend's native addon (build/Release/vmaf_native.node, built by
 * node-gyp from src/kernels/cpu/ when the package is installed) and types its surface.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BackendError } from '../errors.js';
import { chromaSize } from '../decode/frame-layout.js';
import type { FrameFormat } from '../types.js';

export interface FrameStatsResult {
  /**
   * VIF's `statsLayout().vif` accumulators, then ADM's `statsLayout().adm`: those of the
   * parts asked for (core-parts.ts statsPartsMask), a part left out taking no room.
   */
  stats: BigInt64Array;
  /** The motion SAD against `prevRef` (see src/kernels/cpu/motion.h); null without one. */
  sad: bigint | null;
}

export interface StatsLayout {
  vif: number;
  adm: number;
}

/** Number of values finishFeatures returns for every part; see FINISHED_FEATURE_KEYS in native-features.ts. */
export const FINISHED_FEATURE_COUNT = 22;

export type Luma = Uint8Array | Uint16Array;

/** libvmaf's integer_adm options (adm_csf_mode, ...), camelCase; absent ones keep defaults. */
export interface NativeAdmOptions {
  /** adm_csf_mode: 0 Watson (1997), 1 Barten, 2 Barten-Watson blend, 3 the blend fitted on MAE. Default 0. */
  csfMode?: number;
  /** adm_csf_scale, [0, 50]: Barten mode only. Default 1. */
  csfScale?: number;
  /** adm_csf_diag_scale, [0, 50]: Barten mode only. Default 1. */
  csfDiagScale?: number;
  /** adm_norm_view_dist: viewing distance / display height, [0.75, 24]. Default 3. */
  normViewDist?: number;
  /** adm_ref_display_height in lines, [1, 4320]. Default 1080. nvd * rdh must be >= 3240. */
  refDisplayHeight?: number;
  /** adm_noise_weight, [0, 1500]. Default 0.03125. */
  noiseWeight?: number;
  /** adm_dlm_weight: adm3's weight of adm2 against 1 - aim, [0, 1]. Default 0.5. */
  dlmWeight?: number;
  /** adm_min_val: adm3's lower clip, [0, 1]. Default 0. */
  minVal?: number;
  /** adm_enhn_gain_limit, [1, 100]. Default 100. */
  enhnGainLimit?: number;
  /** adm_skip_aim: aim is then 0 (and adm3 follows). Default false. */
  skipAim?: boolean;
  /** adm_skip_scale0: scale 0 is not scored (scale0 = 0). Default false. */
  skipScale0?: boolean;
}

/** See AdmKernelParams in src/kernels/cpu/adm.h. */
export interface AdmKernelParams {
  /** Scale 0 CSF weights h, v (Q21), d (Q23). */
  baseWeight: number[];
  /** Scales 1..3 CSF weights in Q32, [3 * (scale - 1) + band]. */
  detailWeight: number[];
  /** The binary32 CSF factors, [3 * scale + band]. */
  factor: number[];
  gainLimit: number;
  aim: boolean;
  scale0: boolean;
}

/** The addon's worker pool (src/kernels/cpu/thread-pool.h), as poolStats() reports it. */
export interface PoolStats {
  /** Pool threads started: the largest reservePoolThreads asked for. */
  threads: number;
  /** Jobs running now. */
  running: number;
  /** Most jobs running at once since the pool started or resetPoolPeak(). */
  peakRunning: number;
  /** Jobs run to the end. */
  completed: number;
}

/** The kernels' instruction-set levels (src/kernels/cpu/cpu_features.h). */
export type IsaLevel = 'scalar' | 'baseline' | 'avx2' | 'avx512' | 'avx512vnni';

export interface NativeAddon {
  /**
   * VIF and ADM statistics for one frame pair (those `parts` asks for: a mask of 1 VIF and
   * 2 ADM, default both; core-parts.ts) and, given the previous frame's reference luma, the
   * motion SAD, computed on the addon's own worker pool (as many jobs at once as
   * reservePoolThreads asked for; libuv's threadpool is not used). Lumas are Uint8Array at 8 bits, Uint16Array above,
   * width * height samples each; none may be written to or transferred until the promise
   * settles. Bad arguments throw a TypeError synchronously.
   */
  computeFrameStats(
    ref: Luma,
    dis: Luma,
    width: number,
    height: number,
    bitDepth: number,
    prevRef?: Luma | null,
    parts?: number,
  ): Promise<FrameStatsResult>;
  /**
   * The motion SAD alone, on the worker pool: for frames that --subsample leaves unscored,
   * which libvmaf still reads for motion.
   */
  computeMotionSad(prevRef: Luma, ref: Luma, width: number, height: number, bitDepth: number): Promise<bigint>;
  /** The motion SAD between two reference lumas, on the calling thread. */
  motionSad(prevRef: Luma, ref: Luma, width: number, height: number, bitDepth: number): bigint;
  /**
   * Float64Array(22): vif scale0..3, vif scale0..3 egl_1, adm2, aim, adm3, adm scale0..3,
   * then adm2, aim, adm3, adm scale0..3 at egl_1 (synchronous); less the part `parts` (as
   * computeFrameStats took it, its stats) leaves out: the VIF 8, or the ADM 14.
   */
  finishFeatures(stats: BigInt64Array, width: number, height: number, bitDepth: number, parts?: number): Float64Array;
  statsLayout(): StatsLayout;
  /**
   * ADM alone at `options` (one instance, see src/kernels/adm-options.ts), on the
   * threadpool: `statsLayout().adm` accumulators. Options out of range throw a RangeError
   * synchronously.
   */
  computeAdmStats(ref: Luma, dis: Luma, width: number, height: number, bitDepth: number, options?: NativeAdmOptions): Promise<BigInt64Array>;
  /** [adm2, aim, adm3, scale0..3] from computeAdmStats' stats at the same options. */
  finishAdm(stats: BigInt64Array, width: number, height: number, options?: NativeAdmOptions): Float64Array;
  /** The fixed-point weights and switches the ADM pixel loops use at `options`. */
  admKernelParams(options?: NativeAdmOptions): AdmKernelParams;
  /**
   * Grows the worker pool to at least `threads` threads (it never shrinks; at most 1024).
   * Without a call, the first job starts one thread per core.
   */
  reservePoolThreads(threads: number): void;
  poolStats(): PoolStats;
  resetPoolPeak(): void;
  /**
   * A test hook: `jobs` pool jobs that each wait until all of them run at once (or
   * `timeoutMs` passes); each promise resolves with the most probe jobs it saw running
   * together, `jobs` when the pool ran them all at once.
   */
  probePoolConcurrency(jobs: number, timeoutMs: number): Array<Promise<number>>;
  /**
   * A test hook: caps the kernels' instruction set (no argument: no cap) for the jobs started
   * afterwards; every level gives the same results. Returns the CPU's level and the one in use.
   */
  limitIsa(level?: IsaLevel): { detected: IsaLevel; active: IsaLevel };
  /**
   * Copies src's bytes into dst on the libuv threadpool (the gpu backend's staging writes:
   * short memory-bound copies that must not queue behind frame jobs on the worker pool).
   * Neither array may be written, transferred or detached (a mapped range unmapped) until
   * the promise settles. A src larger than dst, or the wrong types, throw a TypeError
   * synchronously. Optional: an addon built before it existed lacks it.
   */
  copyBytes?(dst: Uint8Array, src: Uint8Array | Uint16Array, ...more: Array<Uint8Array | Uint16Array>): Promise<void>;
  /** True where copyBytes takes several (dst, src) pairs in one call (one pool hop for them all). */
  copyBytesPairs?: boolean;
  /**
   * Loads the GPU driver (a Vulkan instance, kept for the process's life) on a thread of its
   * own, so that Dawn's first adapter finds it loaded (cli/early-gpu-thread.ts). Does nothing
   * where there is no Vulkan loader. Optional, as copyBytes.
   */
  prewarmVulkan?(): void;
  /** Waits (at most 2 s) for prewarmVulkan's thread to finish: before the process exits. */
  awaitVulkanPrewarm?(): void;
  /** Ends the process with this status at once (_exit): no exit handlers, no thread joined. Optional, as copyBytes. */
  exitNow?(code: number): never;
  /** The exp table of pipeline/model/exp.ts (expTableWords, flattened), for rbfSum. */
  setExpTable?(words: Uint32Array): void;
  /** The SVM's RBF sum (pipeline/model/svm.ts): model [-gamma, dim, count, coefs, vectors], x of dim values. */
  rbfSum?(model: Float64Array, x: Float64Array): number;
  /**
   * An instance of a registered C++ extractor (src/kernels/cpu/extractor.h) for one run's
   * options (every option, defaults filled in) and geometry. Throws a TypeError for an
   * unknown name, an Error for what the extractor refuses.
   */
  createExtractor(name: string, options: Readonly<Record<string, boolean | number | string>>, geometry: NativeGeometry): NativeExtractorHandle;
  /**
   * One frame's values (the extractor definition's outputs, in order), on a worker thread.
   * Pictures are arrays of planes (Y, or Y Cb Cr), previous pictures nearest first; none
   * may be written to until the promise settles. `index`: the frame's index in the run, for
   * what an extractor writes per frame (cambi's heatmaps need it).
   */
  runExtractor(handle: NativeExtractorHandle, ref: readonly Luma[], dis: readonly Luma[], previousRef: ReadonlyArray<readonly Luma[]>, previousDis: ReadonlyArray<readonly Luma[]>, index?: number): Promise<Float64Array>;
  /** libvmaf's cpumask, process-wide: bit 3 (AVX2) leaves the kernels' baseline paths, bit 4 (AVX-512) at most AVX2. */
  setCpuMask(mask: number): void;
  /** The run's aggregate metrics (libvmaf's aggregate_metrics) of an instance, once its jobs are done. */
  aggregateExtractor(handle: NativeExtractorHandle): Array<[string, number]>;
  /** How many 64-bit accumulators the extractor's GPU kernel gives per frame (0: it has none). */
  extractorStatsCount(handle: NativeExtractorHandle): number;
  /**
   * One frame's values (outputs() order) from the accumulators its GPU kernel computed,
   * through the C++ extractor's own final arithmetic (so both backends give the same bits);
   * feeds the instance's aggregates as runExtractor does. Synchronous.
   */
  finishExtractor(handle: NativeExtractorHandle, stats: BigUint64Array): Float64Array;
  /** finishExtractor on the addon's worker pool (stats is held, and must not change, until it settles). */
  finishExtractorAsync(handle: NativeExtractorHandle, stats: BigUint64Array): Promise<Float64Array>;
  /** Constants an extractor's GPU kernel takes from its C++ (empty when none). */
  extractorGpuParams(handle: NativeExtractorHandle): Float64Array;
  /** The names of the registered C++ extractors. */
  nativeExtractors(): string[];
  /**
   * Calls fn() synchronously with file descriptor 2 captured, and returns its value and
   * what native code wrote to stderr meanwhile (the gpu backend keeps Dawn's own lines out
   * of the CLI's messages). With keepPrefix, the lines that do not start with it (another
   * thread's, written meanwhile) are written back to fd 2 before it returns. Optional: an
   * addon built before it existed lacks it.
   */
  captureStderr?<T>(fn: () => T, keepPrefix?: string): { value: T; text: string };
}

/** The geometry a native extractor instance is built for; chroma 0 x 0 for gray input. */
export interface NativeGeometry {
  width: number;
  height: number;
  bitDepth: number;
  chromaWidth: number;
  chromaHeight: number;
}

/** The geometry of `format`'s frames, as createExtractor takes it. */
export function nativeGeometry(format: FrameFormat): NativeGeometry {
  const chroma = chromaSize(format) ?? { width: 0, height: 0 };
  return { width: format.width, height: format.height, bitDepth: format.bitDepth, chromaWidth: chroma.width, chromaHeight: chroma.height };
}

/** An opaque native extractor instance (freed by the garbage collector). */
export type NativeExtractorHandle = { readonly __nativeExtractor: unique symbol };

const ADDON_FILE = join('build', 'Release', 'vmaf_native.node');
const REQUIRED_FUNCTIONS = [
  'computeFrameStats',
  'computeMotionSad',
  'motionSad',
  'finishFeatures',
  'statsLayout',
  'computeAdmStats',
  'finishAdm',
  'admKernelParams',
  'createExtractor',
  'runExtractor',
  'finishExtractorAsync',
  'nativeExtractors',
  'setCpuMask',
  'aggregateExtractor',
  'reservePoolThreads',
  'poolStats',
  'resetPoolPeak',
  'probePoolConcurrency',
  'limitIsa',
] as const;

let cached: NativeAddon | undefined;

/** The package root: the nearest folder above this module with vmaf-stream's package.json. */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name === 'vmaf-stream') return dir;
      } catch {
        // not ours (or unreadable): keep looking
      }
    }
    const parent = dirname(dir);
    if (parent === dir) throw new BackendError('E_NATIVE', 'cannot find the vmaf-stream package root (no package.json above the module)');
    dir = parent;
  }
}

/** Loads the addon once; throws BackendError('E_NATIVE') when it is missing or unusable. */
export function loadNative(): NativeAddon {
  if (cached) return cached;
  // VMAF_STREAM_NATIVE_ADDON: another build of the addon (the sanitizer build of
  // `npm run build:native:sanitize`, see docs/sanitizers.md); relative to the package root.
  const root = packageRoot();
  const file = resolve(root, process.env.VMAF_STREAM_NATIVE_ADDON || ADDON_FILE);
  const fix =
    'Build it with `npm rebuild vmaf-stream` (or `npm run build:native` in a checkout); that needs a C++17 compiler, ' +
    'make and python3 (on Debian/Ubuntu: apt-get install g++ make python3). Or use --backend gpu.';
  if (!existsSync(file)) {
    throw new BackendError('E_NATIVE', `the cpu backend's native addon is not built (${file} is missing). ${fix}`);
  }
  let addon: Partial<NativeAddon>;
  try {
    addon = createRequire(import.meta.url)(file) as Partial<NativeAddon>;
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new BackendError('E_NATIVE', `the cpu backend's native addon ${file} failed to load: ${reason}. ${fix}`, { cause });
  }
  const missing = REQUIRED_FUNCTIONS.filter((name) => typeof addon[name] !== 'function');
  if (missing.length > 0) {
    throw new BackendError(
      'E_NATIVE',
      `the cpu backend's native addon ${file} is out of date (it lacks ${missing.join(', ')}). ${fix}`,
    );
  }
  cached = addon as NativeAddon;
  return cached;
}

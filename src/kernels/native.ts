/**
 * Loads the cpu backend's native addon (build/Release/vmaf_native.node, built by
 * node-gyp from src/kernels/cpu/ when the package is installed) and types its surface.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BackendError } from '../errors.js';

export interface FrameStatsResult {
  /** VIF's `statsLayout().vif` accumulators, then ADM's `statsLayout().adm`. */
  stats: BigInt64Array;
  /** The motion SAD against `prevRef` (see src/kernels/cpu/motion.h); null without one. */
  sad: bigint | null;
}

export interface StatsLayout {
  vif: number;
  adm: number;
}

/** Number of values finishFeatures returns; see FINISHED_FEATURE_KEYS in native-features.ts. */
export const FINISHED_FEATURE_COUNT = 18;

export type Luma = Uint8Array | Uint16Array;

export interface NativeAddon {
  /**
   * VIF and ADM statistics for one frame pair and, given the previous frame's reference
   * luma, the motion SAD, computed on the libuv threadpool (at most UV_THREADPOOL_SIZE
   * jobs at once, 4 by default). Lumas are Uint8Array at 8 bits, Uint16Array above,
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
  ): Promise<FrameStatsResult>;
  /**
   * The motion SAD alone, on the threadpool: for frames that --subsample leaves unscored,
   * which libvmaf still reads for motion.
   */
  computeMotionSad(prevRef: Luma, ref: Luma, width: number, height: number, bitDepth: number): Promise<bigint>;
  /** The motion SAD between two reference lumas, on the calling thread. */
  motionSad(prevRef: Luma, ref: Luma, width: number, height: number, bitDepth: number): bigint;
  /**
   * Float64Array(18): vif scale0..3, vif scale0..3 egl_1, adm2, adm scale0..3, adm2 egl_1,
   * adm scale0..3 egl_1 (synchronous).
   */
  finishFeatures(stats: BigInt64Array, width: number, height: number, bitDepth: number): Float64Array;
  statsLayout(): StatsLayout;
  /**
   * Copies src's bytes into dst on the libuv threadpool (the gpu backend's staging writes).
   * Neither array may be written, transferred or detached (a mapped range unmapped) until
   * the promise settles. A src larger than dst, or the wrong types, throw a TypeError
   * synchronously. Optional: an addon built before it existed lacks it.
   */
  copyBytes?(dst: Uint8Array, src: Uint8Array | Uint16Array): Promise<void>;
  /**
   * Calls fn() synchronously with file descriptor 2 captured, and returns its value and
   * what native code wrote to stderr meanwhile (the gpu backend keeps Dawn's own lines out
   * of the CLI's messages). Optional: an addon built before it existed lacks it.
   */
  captureStderr?<T>(fn: () => T): { value: T; text: string };
}

const ADDON_FILE = join('build', 'Release', 'vmaf_native.node');
const REQUIRED_FUNCTIONS = ['computeFrameStats', 'computeMotionSad', 'motionSad', 'finishFeatures', 'statsLayout'] as const;

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
  const root = packageRoot();
  const file = join(root, ADDON_FILE);
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

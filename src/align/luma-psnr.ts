/**
 * Luma PSNR between two pictures of the same size and bit depth: pure functions, no
 * allocation on the hot path.
 *
 * - SSE is the exact integer sum of squared differences while it stays below 2^53 (every
 *   row sum does at any size and depth; the running total does for any 8-bit picture and
 *   for 16-bit pictures up to ~2 million samples at full-scale error, far beyond any real
 *   difference). PSNR = 10·log10(peak² / MSE), peak = 2^bitDepth − 1.
 * - Identical pictures (MSE 0) and anything above it are capped at 6·bitDepth + 12 dB
 *   (60 dB at 8 bits, 72 at 10), the default psnr_max of libvmaf's integer psnr, so means
 *   over frames stay finite.
 * - `step` > 1 measures on a subsampled grid: the samples at (x, y) with x % step === 0
 *   and y % step === 0 (point sampling, no filtering). It estimates the full-picture MSE
 *   without bias and is step² times cheaper; step 1 is the exact full-picture value.
 *   `thumbnail(luma, w, h, step)` copies exactly that grid, so the PSNR of two thumbnails
 *   at step 1 equals the PSNR of the full pictures at that step, bit for bit.
 */
import type { BitDepth, Frame, FrameFormat } from '../types.js';

export type Luma = Uint8Array | Uint16Array;

/** Width, height and bit depth: what the PSNR of two luma planes needs to know. */
export interface LumaGeometry {
  width: number;
  height: number;
  bitDepth: BitDepth | number;
}

/** Samples a grid of this step keeps along an axis of `n` samples. */
export function gridSize(n: number, step: number): number {
  return Math.ceil(n / step);
}

/** The highest PSNR reported, in dB: 6·bitDepth + 12 (60 dB at 8 bits). */
export function psnrCap(bitDepth: number): number {
  return 6 * bitDepth + 12;
}

/** The largest sample value at this bit depth. */
export function peakValue(bitDepth: number): number {
  return 2 ** bitDepth - 1;
}

/** The smallest grid step (>= 1) whose grid has at most `maxSamples` samples. */
export function gridStep(width: number, height: number, maxSamples: number): number {
  if (!(maxSamples >= 1)) throw new RangeError(`gridStep: maxSamples must be >= 1, got ${maxSamples}`);
  let step = Math.max(1, Math.floor(Math.sqrt((width * height) / maxSamples)));
  while (gridSize(width, step) * gridSize(height, step) > maxSamples) step++;
  return step;
}

function checkStep(step: number): void {
  if (!Number.isInteger(step) || step < 1) throw new RangeError(`luma PSNR: step must be a whole number >= 1, got ${step}`);
}

/**
 * Sum of squared differences of two luma planes (row-major, stride = width) over the grid
 * of this step, and how many samples it covers.
 */
export function lumaSse(a: Luma, b: Luma, width: number, height: number, step = 1): { sse: number; samples: number } {
  checkStep(step);
  const n = width * height;
  if (a.length < n || b.length < n) {
    throw new RangeError(`luma PSNR: planes of ${a.length} and ${b.length} samples, ${width}x${height} needs ${n}`);
  }
  let sse = 0;
  for (let y = 0; y < height; y += step) {
    const row = y * width;
    let rowSse = 0;
    for (let x = row, end = row + width; x < end; x += step) {
      const d = a[x]! - b[x]!;
      rowSse += d * d;
    }
    sse += rowSse;
  }
  return { sse, samples: gridSize(width, step) * gridSize(height, step) };
}

/** PSNR in dB from a mean squared error, capped at psnrCap(bitDepth). */
export function psnrFromMse(mse: number, bitDepth: number): number {
  const cap = psnrCap(bitDepth);
  if (mse <= 0) return cap;
  const peak = peakValue(bitDepth);
  return Math.min(cap, 10 * Math.log10((peak * peak) / mse));
}

/** Luma PSNR in dB of two planes of the same geometry, on the grid of this step (default 1: every sample). */
export function lumaPsnr(a: Luma, b: Luma, geometry: LumaGeometry, step = 1): number {
  const { sse, samples } = lumaSse(a, b, geometry.width, geometry.height, step);
  return psnrFromMse(sse / samples, geometry.bitDepth);
}

/** Luma PSNR of two frames; their sizes and bit depths must match. */
export function framePsnr(a: Pick<Frame, 'luma' | 'format'>, b: Pick<Frame, 'luma' | 'format'>, step = 1): number {
  checkSameGeometry(a.format, b.format);
  return lumaPsnr(a.luma, b.luma, a.format, step);
}

export function checkSameGeometry(a: LumaGeometry, b: LumaGeometry): void {
  if (a.width !== b.width || a.height !== b.height || a.bitDepth !== b.bitDepth) {
    throw new RangeError(`luma PSNR: ${a.width}x${a.height} ${a.bitDepth}-bit against ${b.width}x${b.height} ${b.bitDepth}-bit`);
  }
}

/**
 * Copies the grid of this step of a luma plane into `out` (allocated when absent): a
 * gridSize(width, step) × gridSize(height, step) plane of the same sample type.
 */
export function thumbnail<T extends Luma>(luma: T, width: number, height: number, step: number, out?: T): T {
  checkStep(step);
  const tw = gridSize(width, step);
  const th = gridSize(height, step);
  const target = out ?? (new (luma.constructor as { new (n: number): T })(tw * th));
  if (target.length < tw * th) throw new RangeError(`thumbnail: output of ${target.length} samples, needs ${tw * th}`);
  if (step === 1) {
    target.set(luma.subarray(0, width * height));
    return target;
  }
  let o = 0;
  for (let y = 0; y < height; y += step) {
    const row = y * width;
    for (let x = row, end = row + width; x < end; x += step) target[o++] = luma[x]!;
  }
  return target;
}

/** The geometry of the thumbnails of frames of this format at this step. */
export function thumbnailGeometry(format: Pick<FrameFormat, 'width' | 'height' | 'bitDepth'>, step: number): LumaGeometry {
  return { width: gridSize(format.width, step), height: gridSize(format.height, step), bitDepth: format.bitDepth };
}

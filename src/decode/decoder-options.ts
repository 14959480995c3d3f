/**
 * Checks of the ffmpeg decoders' options that openFrameSource makes before any input is
 * opened, apart from the decoders' own modules (ffmpeg-source.ts, segmented-source.ts), which
 * only inputs that go through ffmpeg load.
 */
import os from 'node:os';
import { UsageError } from '../errors.js';
import { MAX_DIMENSION } from './frame-layout.js';

/** The size ffmpeg scales a distorted input to (--scale). */
export interface ScaleTo {
  width: number;
  height: number;
}

/** Throws UsageError unless scaleTo is absent or a valid size. */
export function validateScale(label: string, scaleTo: ScaleTo | undefined): void {
  if (!scaleTo) return;
  for (const [name, v] of [['width', scaleTo.width], ['height', scaleTo.height]] as const) {
    if (!Number.isInteger(v) || v < 1 || v > MAX_DIMENSION) {
      throw new UsageError(`${label}: the scale ${name} must be a whole number from 1 to ${MAX_DIMENSION}, got ${String(v)}`);
    }
  }
}

/** Decoders for `decoders: 'auto'`: half the cores (ffmpeg threads each one too), at most 4. */
export function autoDecoders(): number {
  const cores = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
  return Math.max(1, Math.min(4, Math.floor(cores / 2)));
}

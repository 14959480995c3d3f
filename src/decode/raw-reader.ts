/**
 * A reader for raw planar YUV (.yuv): frames back to back, no headers, the geometry given
 * by the caller as libvmaf's CLI takes it (-w, -h, -p 420|422|444, -b 8|10|12|16; 400 is
 * luma only). Samples above 8 bits are 16-bit little-endian.
 */
import type { Readable } from 'node:stream';

import { UsageError } from '../errors.js';
import type { BitDepth, ChromaSubsampling, FrameFormat } from '../types.js';
import { BIT_DEPTHS, CHROMAS, MAX_DIMENSION, frameLayout, type FrameLayout } from './frame-layout.js';
import { StreamFrameSource, type ByteInput, type StreamFrameSourceOptions } from './stream-frame-source.js';

export interface RawGeometry {
  width: number;
  height: number;
  /** Default '420'. */
  pixelFormat?: ChromaSubsampling;
  /** 8, 10, 12 or 16; default 8. */
  bitDepth?: BitDepth | number;
  /** Frames per second, for presentation times; unknown when absent. */
  fps?: number;
}

export interface RawReaderOptions extends Partial<StreamFrameSourceOptions>, RawGeometry {}

/** Checks the geometry options; throws UsageError naming the bad one. */
export function rawFormat(geometry: RawGeometry, label = 'raw input'): FrameFormat {
  const { width, height } = geometry;
  const pixelFormat = geometry.pixelFormat ?? '420';
  const bitDepth = (geometry.bitDepth ?? 8) as BitDepth;
  for (const [name, v] of [['width', width], ['height', height]] as const) {
    if (!Number.isInteger(v) || v < 1 || v > MAX_DIMENSION) {
      throw new UsageError(`${label}: raw YUV input needs a ${name} from 1 to ${MAX_DIMENSION}, got ${String(v)}`);
    }
  }
  if (!CHROMAS.includes(pixelFormat)) {
    throw new UsageError(`${label}: unknown pixel format "${String(pixelFormat)}" for raw YUV input (use 420, 422, 444 or 400)`);
  }
  if (!BIT_DEPTHS.includes(bitDepth)) {
    throw new UsageError(`${label}: unsupported bit depth ${String(bitDepth)} for raw YUV input (use 8, 10, 12 or 16)`);
  }
  const format: FrameFormat = { width, height, bitDepth, chroma: pixelFormat };
  if (geometry.fps !== undefined && geometry.fps > 0) format.fps = geometry.fps;
  return format;
}

export class RawReader extends StreamFrameSource {
  private readonly layout: FrameLayout;

  constructor(input: ByteInput, options: RawReaderOptions) {
    const label = options.label ?? 'raw';
    const layout = frameLayout(rawFormat(options, label));
    super(input, { ...options, label });
    this.layout = layout;
  }

  protected async readHeader(): Promise<FrameLayout> {
    return this.layout;
  }

  protected async readFrameHeader(): Promise<boolean> {
    return this.reader.hasMore();
  }
}

/** A RawReader over a file path or a Readable. Throws UsageError for bad geometry. */
export function openRaw(input: string | Readable, options: RawReaderOptions): RawReader {
  if (typeof input === 'string') {
    const label = options.label ?? input;
    rawFormat(options, label); // validate before opening anything
    return new RawReader({ file: input }, { ...options, label });
  }
  return new RawReader(input, options);
}

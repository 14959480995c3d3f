/**
 * The byte layout of one planar frame: the luma plane first, then the chroma planes
 * (and, for y4m's 444alpha, an alpha plane). Chroma planes of odd-sized pictures round
 * up, as ffmpeg lays them out: 7×5 at 4:2:0 has 4×3 chroma planes.
 */
import type { BitDepth, ChromaSubsampling, FrameFormat, PlaneSize } from '../types.js';

export interface FrameLayout {
  format: FrameFormat;
  /** Bytes per sample: 1 at 8 bits, 2 (little-endian) above. */
  bytesPerSample: 1 | 2;
  lumaBytes: number;
  /** Size of each chroma plane; undefined at 4:0:0. */
  chromaSize: PlaneSize | undefined;
  /** Bytes of one chroma plane (0 at 4:0:0). */
  chromaBytes: number;
  /** Bytes after the luma plane that are skipped: chroma (and alpha). */
  restBytes: number;
  frameBytes: number;
}

/** Whether two formats are the same in every field, the frame rate included. */
export function sameFormat(a: FrameFormat, b: FrameFormat): boolean {
  return a.width === b.width && a.height === b.height && a.bitDepth === b.bitDepth && a.chroma === b.chroma && a.fps === b.fps;
}

/** Horizontal and vertical chroma decimation. */
export function chromaDecimation(chroma: ChromaSubsampling): [number, number] | undefined {
  switch (chroma) {
    case '420': return [2, 2];
    case '422': return [2, 1];
    case '444': return [1, 1];
    case '400': return undefined;
  }
}

/**
 * The size of each of the two chroma planes of a picture in `format`: 4:2:0
 * ceil(w/2) × ceil(h/2), 4:2:2 ceil(w/2) × h, 4:4:4 w × h (ffmpeg's layout, odd sizes
 * rounding up); undefined at 4:0:0, which has none.
 */
export function chromaSize(format: Pick<FrameFormat, 'width' | 'height' | 'chroma'>): PlaneSize | undefined {
  const dec = chromaDecimation(format.chroma);
  if (!dec) return undefined;
  return { width: Math.ceil(format.width / dec[0]), height: Math.ceil(format.height / dec[1]) };
}

export function frameLayout(format: FrameFormat, extraPlanes = 0): FrameLayout {
  const { width, height, bitDepth } = format;
  const bytesPerSample: 1 | 2 = bitDepth > 8 ? 2 : 1;
  const lumaBytes = width * height * bytesPerSample;
  const chroma = chromaSize(format);
  const chromaBytes = chroma ? chroma.width * chroma.height * bytesPerSample : 0;
  const restBytes = 2 * chromaBytes + extraPlanes * lumaBytes;
  return { format, bytesPerSample, lumaBytes, chromaSize: chroma, chromaBytes, restBytes, frameBytes: lumaBytes + restBytes };
}

export const BIT_DEPTHS: readonly BitDepth[] = [8, 10, 12, 16];
export const CHROMAS: readonly ChromaSubsampling[] = ['420', '422', '444', '400'];

/** Largest width or height accepted from a header (guards against absurd allocations). */
export const MAX_DIMENSION = 1 << 15;

/** ffmpeg's name for a planar pixel format: ('420', 10) → 'yuv420p10le', ('400', 8) → 'gray'. */
export function ffmpegPixelFormat(chroma: ChromaSubsampling, bitDepth: BitDepth): string {
  if (chroma === '400') return bitDepth === 8 ? 'gray' : `gray${bitDepth}le`;
  return bitDepth === 8 ? `yuv${chroma}p` : `yuv${chroma}p${bitDepth}le`;
}

/** On big-endian hosts, 16-bit little-endian samples read byte-wise need swapping. */
export const HOST_IS_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export function swapBytes16(samples: Uint16Array): void {
  for (let i = 0; i < samples.length; i++) {
    const v = samples[i]!;
    samples[i] = ((v & 0xff) << 8) | (v >> 8);
  }
}

/**
 * How a picture's planes lie in one upload slot and one device-local buffer of the gpu
 * backend: luma at byte 0 (so the core kernels, which read luma only, bind the buffer as
 * before), then Cb and Cr when the run plan reads chroma, each plane packed (stride = its
 * width, the host's bytes) and starting on a 4-byte word, so a kernel finds sample i of a
 * plane at word `offset / 4 + (i >> 2)` (8 bits) or `offset / 4 + (i >> 1)` (above).
 * A luma-only run's layout is the luma plane alone: the same bytes and copies as before.
 */
import { chromaSize, frameLayout } from '../../decode/frame-layout.js';
import type { LocatedFileReader } from '../../decode/located-frames.js';
import { paddedBytes, type StagedPlane } from '../../pool/staging-ring.js';
import type { Frame, FrameFormat } from '../../types.js';
import { bytesOf } from '../../pool/frame-pool.js';
import { BackendError } from '../../errors.js';

const PLANE_NAMES = ['luma', 'Cb', 'Cr'] as const;

export interface PlaneSpan {
  /** Byte offset in the picture buffer (a multiple of 4). */
  offset: number;
  width: number;
  height: number;
  /** Bytes of samples (width * height * bytes per sample), before the pad to a word. */
  bytes: number;
}

export interface PictureLayout {
  /** Y, or Y Cb Cr. */
  planes: readonly PlaneSpan[];
  /** Bytes of the whole picture buffer (a multiple of 4). */
  bytes: number;
  bitDepth: FrameFormat['bitDepth'];
}

/** The layout for frames of `format`, with chroma when `chroma` and the format has it. */
export function pictureLayout(format: FrameFormat, chroma: boolean): PictureLayout {
  const sample = format.bitDepth > 8 ? 2 : 1;
  const sizes = [{ width: format.width, height: format.height }];
  const c = chroma ? chromaSize(format) : undefined;
  if (c) sizes.push(c, c);
  const planes: PlaneSpan[] = [];
  let offset = 0;
  for (const s of sizes) {
    const bytes = s.width * s.height * sample;
    planes.push({ offset, width: s.width, height: s.height, bytes });
    offset += paddedBytes(bytes);
  }
  return { planes, bytes: offset, bitDepth: format.bitDepth };
}

/**
 * A frame's planes as the layout takes them (bytes to copy, in plane order), checked
 * against it: a frame that lacks a plane or has one of the wrong size or type is refused,
 * naming the frame.
 */
function planesOf(frame: Frame, layout: PictureLayout, index: number, what: string): Uint8Array[] {
  const wide = layout.bitDepth > 8;
  const given = [frame.luma, ...(layout.planes.length > 1 ? (frame.chroma ?? []) : [])];
  if (given.length < layout.planes.length) {
    throw new BackendError('E_GPU', `frame ${index}: the ${what} frame carries no chroma planes, which the run reads`);
  }
  return layout.planes.map((span, p) => {
    const plane = given[p]!;
    const samples = span.width * span.height;
    const okType = wide ? plane instanceof Uint16Array : plane instanceof Uint8Array;
    if (!okType || plane.length < samples) {
      throw new BackendError(
        'E_GPU',
        `frame ${index}: the ${what} ${PLANE_NAMES[p]} plane is a ${plane?.constructor?.name} of ${plane?.length} samples, ${samples} ${wide ? 'u16' : 'u8'} samples expected`,
      );
    }
    return bytesOf(plane.subarray(0, samples));
  });
}

/**
 * A frame's planes for its upload: planesOf's bytes, or, for a located frame, reads of each
 * plane from its file (by `reader`) into the staging slot, checked against the layout.
 */
export function stagedPlanesOf(frame: Frame, layout: PictureLayout, index: number, what: string, reader: () => LocatedFileReader): StagedPlane[] {
  const at = frame.located;
  if (!at) return planesOf(frame, layout, index, what);
  const own = frameLayout(frame.format);
  return layout.planes.map((span, p) => {
    const bytes = p === 0 ? own.lumaBytes : own.chromaBytes;
    if (bytes !== span.bytes) {
      throw new BackendError('E_GPU', `frame ${index}: the ${what} ${PLANE_NAMES[p]} plane takes ${bytes} bytes in its file, ${span.bytes} expected`);
    }
    return { byteLength: bytes, readInto: (dst: Uint8Array) => reader().readPlane(at, frame.format, p, frame.index, dst) };
  });
}

/**
 * Which planes a frame carries, and the checks that say so when an input cannot give the
 * planes asked for: a 4:0:0 (gray) input has no chroma, and a FrameSource given by the
 * caller may hand out frames without it.
 */
import { InputError, UsageError } from '../errors.js';
import type { Frame, FrameFormat, PlaneSelection } from '../types.js';
import { chromaSize } from './frame-layout.js';

export const PLANE_SELECTIONS: readonly PlaneSelection[] = ['luma', 'all'];

/** Throws unless `planes` is absent, 'luma' or 'all'. */
export function checkPlaneSelection(label: string, planes: unknown): void {
  if (planes !== undefined && !PLANE_SELECTIONS.includes(planes as PlaneSelection)) {
    throw new UsageError(`${label}: planes must be 'luma' or 'all', got ${String(planes)}`);
  }
}

/** The error for a gray input asked for chroma. */
export function noChromaError(label: string, format: FrameFormat): InputError {
  return new InputError(
    'E_INPUT_FORMAT',
    label,
    `is 4:0:0 (gray, ${format.bitDepth}-bit): it has no chroma planes, but the features asked for read chroma ` +
      '(give a 4:2:0, 4:2:2 or 4:4:4 input, or only features that read luma)',
  );
}

/** Throws noChromaError when every plane is asked for and `format` has no chroma. */
export function assertChromaAvailable(label: string, format: FrameFormat, planes: PlaneSelection | undefined): void {
  if (planes === 'all' && format.chroma === '400') throw noChromaError(label, format);
}

/**
 * Checks that a frame handed out by a caller's FrameSource carries both chroma planes of the
 * right type and size (every plane asked for); throws an InputError naming the input and frame.
 */
export function assertFrameChroma(label: string, frame: Frame): void {
  const size = chromaSize(frame.format);
  if (!size) throw noChromaError(label, frame.format);
  if (frame.located) return; // its planes are read from its file, as its format sizes them
  const chroma = frame.chroma;
  if (!chroma) {
    throw new InputError(
      'E_INPUT_FORMAT',
      label,
      'has no chroma planes (frame.chroma is missing), but the features asked for read chroma: ' +
        'a FrameSource must give frames with chroma: [Cb, Cr] when every plane is asked for',
      frame.index,
    );
  }
  const want = size.width * size.height;
  const Type = frame.format.bitDepth > 8 ? Uint16Array : Uint8Array;
  chroma.forEach((plane, k) => {
    if (!(plane instanceof Type) || plane.length !== want) {
      const got = plane instanceof Uint8Array || plane instanceof Uint16Array ? `a ${plane.constructor.name} of ${plane.length} samples` : String(plane);
      throw new InputError(
        'E_INPUT_FORMAT',
        label,
        `its ${k === 0 ? 'Cb' : 'Cr'} plane is ${got}; a ${frame.format.chroma} frame of ${frame.format.width}x${frame.format.height} ` +
          `needs a ${Type.name} of ${size.width}x${size.height} = ${want} samples`,
        frame.index,
      );
    }
  });
}

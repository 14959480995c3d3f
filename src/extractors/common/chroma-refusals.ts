/** Inputs that libvmaf cannot give a chroma-reading extractor, refused the same way by each. */
import { InputError } from '../../errors.js';
import type { FrameFormat } from '../../types.js';

/** libvmaf's chroma extractors refuse 4:0:0 pictures at init. */
export function refuseGray(extractor: string, format: FrameFormat): void {
  if (format.chroma === '400') {
    throw new InputError('E_INPUT_FORMAT', extractor, `gray (4:0:0) input: ${extractor} reads the chroma planes, as libvmaf's does`);
  }
}

/**
 * libvmaf sizes subsampled chroma planes by truncating (w >> 1) and has no reader for odd
 * subsampled sizes, so there is no libvmaf value for them to match: refused.
 */
export function refuseOddSubsampled(extractor: string, format: FrameFormat): void {
  const oddWidth = format.chroma !== '444' && format.width % 2 === 1;
  const oddHeight = format.chroma === '420' && format.height % 2 === 1;
  if (oddWidth || oddHeight) {
    throw new InputError(
      'E_INPUT_FORMAT',
      extractor,
      `${format.width}x${format.height} 4:${format.chroma.slice(1, 2)}:${format.chroma.slice(2)}: ${extractor} needs even ${oddWidth ? 'width' : 'height'} at this chroma subsampling (libvmaf has no reader for odd subsampled sizes)`,
    );
  }
}

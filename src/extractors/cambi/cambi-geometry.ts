/**
 * The sizes and window libvmaf's cambi init settles on for given options and frames (used by
 * cambi.ts's check and by cambi-gpu.ts's supports()).
 */
import type { FrameFormat } from '../../types.js';
import type { OptionValues } from '../option.js';

/** The sizes and window libvmaf's init settles on for these options and frames. */
export function cambiGeometry(options: OptionValues, format: FrameFormat) {
  let encWidth = options['enc_width'] as number;
  let encHeight = options['enc_height'] as number;
  if (encWidth === 0 || encHeight === 0) [encWidth, encHeight] = [format.width, format.height];
  let srcWidth = options['src_width'] as number;
  let srcHeight = options['src_height'] as number;
  if (srcWidth === 0 || srcHeight === 0) [srcWidth, srcHeight] = [format.width, format.height];
  // A downscaled encode is measured as it arrives, never upscaled.
  if (encHeight > format.height || encWidth > format.width) [encWidth, encHeight] = [format.width, format.height];
  const pixels = encWidth * encHeight;
  const speedup = options['cambi_high_res_speedup'] as number;
  const halve =
    (speedup === 1080 && pixels >= 1920 * 1080) || (speedup === 1440 && pixels >= 2560 * 1440) || (speedup === 2160 && pixels >= 3840 * 2160);
  const adjust = (w: number, h: number): number => {
    let a = Math.floor(((options['window_size'] as number) * (w + h)) / 375) >> 4;
    if (halve) a = (a + 1) >> 1;
    return a | 1;
  };
  return { encWidth, encHeight, srcWidth, srcHeight, halve, window: adjust(encWidth, encHeight), srcWindow: adjust(srcWidth, srcHeight) };
}

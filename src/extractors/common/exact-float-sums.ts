/**
 * When libvmaf's double sums of float samples (picture_copy: s / 4, 16 or 256 above 8 bits)
 * and of their float squares are exact, so that an integer sum on the GPU, scaled by a power
 * of two, gives the same double bit for bit (float_psnr, float_moment; see their C++
 * finishStats).
 *
 * - A float sample s / 2^k is exact (s < 2^16), and so is a difference of two.
 * - A float square (s or a difference, |s| <= 2^bpc - 1) is exact when s^2 < 2^24: up to
 *   12 bits (4095^2 < 2^24). 16-bit squares round in float: not reproduced here.
 * - Every partial double sum is then an integer multiple of 2^-2k; it is exact while the
 *   integer stays below 2^53, which holds whatever the order when all N terms together
 *   are: N * (2^bpc - 1)^2 <= 2^53.
 */
import type { FrameFormat } from '../../types.js';

export function floatSquareSumsExact(format: FrameFormat): boolean {
  if (format.bitDepth > 12) return false;
  const max = 2 ** format.bitDepth - 1;
  return format.width * format.height * max * max <= 2 ** 53;
}

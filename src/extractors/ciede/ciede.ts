/**
 * libvmaf's "ciede" (ciede.c): the mean CIEDE2000 colour difference of the two pictures,
 * each pixel's YUV taken as BT.709 limited range to sRGB, CIE XYZ (D65) and L*a*b*,
 * logged as 45 - 20 * log10(mean ΔE00): ciede2000. Subsampled chroma is repeated to full
 * size as libvmaf repeats it. C++: ciede.cpp.
 */
import type { ExtractorDefinition } from '../extractor.js';
import { refuseGray, refuseOddSubsampled } from '../common/chroma-refusals.js';

export const ciede: ExtractorDefinition = {
  name: 'ciede',
  summary: 'CIEDE2000 colour difference of Y, Cb and Cr: ciede2000',
  options: [],
  provides: ['ciede2000'],
  planes: () => 'all',
  neighbours: () => ({ previous: 0, next: 0 }),
  outputs: () => ['ciede2000'],
  check(_options, format) {
    refuseGray('ciede', format);
    refuseOddSubsampled('ciede', format);
  },
  implementation: { kind: 'native', native: 'ciede' },
};

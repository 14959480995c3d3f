/**
 * libvmaf's "float_ansnr" (float_ansnr.c, ansnr.c): the SNR and PSNR of the luma after
 * filtering the reference and the distorted by different low-pass kernels (anti-noise SNR).
 * C++: float_ansnr.cpp; on the gpu backend float_ansnr-gpu.ts.
 */
import type { ExtractorDefinition } from '../extractor.js';

export const floatAnsnr: ExtractorDefinition = {
  name: 'float_ansnr',
  summary: 'anti-noise SNR of luma in floating point: float_ansnr, float_anpsnr',
  options: [],
  provides: ['float_ansnr'],
  planes: () => 'luma',
  neighbours: () => ({ previous: 0, next: 0 }),
  outputs: () => ['float_ansnr', 'float_anpsnr'],
  implementation: { kind: 'native', native: 'float_ansnr', gpu: () => import('./float_ansnr-gpu.js').then((m) => m.floatAnsnrGpu) },
};

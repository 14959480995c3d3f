/** libvmaf's "float_psnr" (float_psnr.c): luma PSNR on the 8-bit scale in float arithmetic. C++: float_psnr.cpp. */
import type { ExtractorDefinition } from '../extractor.js';

export const floatPsnr: ExtractorDefinition = {
  name: 'float_psnr',
  summary: 'luma PSNR in floating point: float_psnr',
  options: [],
  provides: ['float_psnr'],
  planes: () => 'luma',
  neighbours: () => ({ previous: 0, next: 0 }),
  outputs: () => ['float_psnr'],
  implementation: { kind: 'native', native: 'float_psnr', gpu: () => import('./float_psnr-gpu.js').then((m) => m.floatPsnrGpu) },
};

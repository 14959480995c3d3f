/**
 * libvmaf's "psnr" (integer_psnr.c): PSNR of Y, Cb and Cr from the integer sum of squared
 * differences over each whole plane, capped at 6 * bpc + 12 dB (or from min_sse).
 * C++: psnr.cpp; GPU: psnr-gpu.ts (the SSE per plane, finished by psnr.cpp).
 */
import type { ExtractorDefinition } from '../extractor.js';
import type { OptionDef, OptionValues } from '../option.js';
import type { FrameFormat } from '../../types.js';

const OPTIONS: readonly OptionDef[] = [
  { name: 'enable_chroma', type: 'bool', default: true, param: false, help: 'enable calculation for chroma channels' },
  { name: 'enable_mse', type: 'bool', default: false, param: false, help: 'enable MSE calculation' },
  { name: 'enable_apsnr', type: 'bool', default: false, param: false, help: 'enable APSNR calculation' },
  { name: 'reduced_hbd_peak', type: 'bool', default: false, param: false, help: 'reduce hbd peak value to align with scaled 8-bit content' },
  { name: 'min_sse', type: 'double', default: 0, min: 0, max: Number.MAX_VALUE, param: false, help: 'constrain the minimum possible sse' },
];

const chromaOn = (options: OptionValues, format: FrameFormat): boolean => options['enable_chroma'] === true && format.chroma !== '400';

export const psnr: ExtractorDefinition = {
  name: 'psnr',
  summary: 'PSNR of each plane: psnr_y, psnr_cb, psnr_cr (mse_* with enable_mse)',
  options: OPTIONS,
  provides: ['psnr_y', 'psnr_cb', 'psnr_cr'],
  planes: (options) => (options['enable_chroma'] === true ? 'all' : 'luma'),
  neighbours: () => ({ previous: 0, next: 0 }),
  outputs(options, format) {
    const planes = chromaOn(options, format) ? ['y', 'cb', 'cr'] : ['y'];
    return planes.flatMap((p) => (options['enable_mse'] ? [`psnr_${p}`, `mse_${p}`] : [`psnr_${p}`]));
  },
  implementation: { kind: 'native', native: 'psnr', gpu: () => import('./psnr-gpu.js').then((m) => m.psnrGpu) },
};

/**
 * libvmaf's "psnr_hvs" (third_party/xiph/psnr_hvs.c, Xiph's PSNR-HVS-M): per plane, the
 * error of overlapping 8×8 integer DCT blocks (a step of 7) weighted by a contrast
 * sensitivity table after contrast masking, as dB; psnr_hvs weighs Y 0.8 and each chroma
 * plane 0.1. C++: psnr_hvs.cpp; GPU: psnr_hvs-gpu.ts (each block's terms, summed by psnr_hvs.cpp).
 */
import { InputError } from '../../errors.js';
import type { ExtractorDefinition } from '../extractor.js';
import { refuseGray, refuseOddSubsampled } from '../common/chroma-refusals.js';

export const psnrHvs: ExtractorDefinition = {
  name: 'psnr_hvs',
  summary: 'PSNR-HVS-M of each plane and combined: psnr_hvs_y, psnr_hvs_cb, psnr_hvs_cr, psnr_hvs',
  options: [],
  provides: ['psnr_hvs_y', 'psnr_hvs_cb', 'psnr_hvs_cr', 'psnr_hvs'],
  planes: () => 'all',
  neighbours: () => ({ previous: 0, next: 0 }),
  outputs: () => ['psnr_hvs_y', 'psnr_hvs_cb', 'psnr_hvs_cr', 'psnr_hvs'],
  check(_options, format) {
    // libvmaf's init refuses these depths (its DCT reads at most 12-bit samples).
    if (format.bitDepth > 12) {
      throw new InputError('E_INPUT_FORMAT', 'psnr_hvs', `${format.bitDepth}-bit input: psnr_hvs takes at most 12 bits per sample, as libvmaf's does`);
    }
    refuseGray('psnr_hvs', format);
    refuseOddSubsampled('psnr_hvs', format);
  },
  implementation: { kind: 'native', native: 'psnr_hvs', gpu: () => import('./psnr_hvs-gpu.js').then((m) => m.psnrHvsGpu) },
};

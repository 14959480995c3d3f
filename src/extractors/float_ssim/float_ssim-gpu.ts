/**
 * float_ssim on the GPU: the luma as floats, the box decimation by `scale`, and the five
 * Gaussian-filtered maps at that size (common/ssim-maps.wgsl, integer-exact float and
 * double arithmetic), pooled on the device into libvmaf's four double sums; float_ssim.cpp's
 * finishStats finishes them as extract() does.
 */
import type { GpuImplementation } from '../../kernels/gpu/gpu-extractor.js';
import { fitsOnGpu, SsimMapsKernel, type SsimScale } from '../common/ssim-maps-gpu.js';
import { automaticSsimScale } from './float_ssim.js';

function scaleOf(options: Record<string, unknown>, width: number, height: number): number {
  const given = options['scale'] as number;
  return given > 0 ? given : automaticSsimScale(width, height);
}

/** The scales: the maps of the luma itself, or of its box decimation by `scale`. */
function scalesOf(options: Record<string, unknown>, width: number, height: number): SsimScale[] {
  const s = scaleOf(options, width, height);
  const box = { factor: s, taps: s, weights: new Array<number>(s * s).fill(Math.fround(1 / (s * s))) };
  return s > 1 ? [{ maps: false }, { decimate: box, maps: true }] : [{ maps: true }];
}

export const floatSsimGpu: GpuImplementation = {
  // Every scale up to 2160p (the maps are made in bands; fitsOnGpu says which sizes).
  supports: (options, format) => fitsOnGpu(format.width, format.height, scalesOf(options, format.width, format.height)),
  create: (ctx) => SsimMapsKernel.create(ctx, scalesOf(ctx.options, ctx.format.width, ctx.format.height)),
};

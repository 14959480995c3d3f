/**
 * float_ssim on the GPU: the luma as floats, the box decimation by `scale`, and the five
 * Gaussian-filtered maps at that size (common/ssim-maps.wgsl, integer-exact float and
 * double arithmetic); float_ssim.cpp's finishStats pools them as extract() does.
 */
import type { GpuImplementation } from '../../kernels/gpu/gpu-extractor.js';
import { decimatedSize, mapFloats, SsimMapsKernel } from '../common/ssim-maps-gpu.js';
import { automaticSsimScale } from './float_ssim.js';

/** The largest maps the kernel writes (WebGPU's default storage binding limit, 128 MiB, with room for scratch). */
const MAX_MAP_FLOATS = 8 << 20;

function scaleOf(options: Record<string, unknown>, width: number, height: number): number {
  const given = options['scale'] as number;
  return given > 0 ? given : automaticSsimScale(width, height);
}

export const floatSsimGpu: GpuImplementation = {
  supports: (options, format) => {
    const s = scaleOf(options, format.width, format.height);
    const w = s > 1 ? decimatedSize(format.width, s) : format.width;
    const h = s > 1 ? decimatedSize(format.height, s) : format.height;
    const n = mapFloats(w, h);
    return n > 0 && n <= MAX_MAP_FLOATS;
  },
  create: (ctx) => {
    const s = scaleOf(ctx.options, ctx.format.width, ctx.format.height);
    const box = { factor: s, taps: s, weights: new Array<number>(s * s).fill(Math.fround(1 / (s * s))) };
    return SsimMapsKernel.create(ctx, s > 1 ? [{ maps: false }, { decimate: box, maps: true }] : [{ maps: true }]);
  },
};

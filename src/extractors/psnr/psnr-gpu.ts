/**
 * psnr on the GPU: the sum of squared differences of each plane it reads (Y, or Y Cb Cr
 * with enable_chroma on an input that has chroma) as exact 64-bit integers
 * (common/plane-sums.wgsl), finished by psnr.cpp's finishStats: the same double arithmetic,
 * min_sse cap and APSNR accumulation as the cpu backend.
 */
import type { GpuImplementation } from '../../kernels/gpu/gpu-extractor.js';
import { PlaneSumsKernel } from '../common/plane-sums-gpu.js';

export const psnrGpu: GpuImplementation = {
  // Every depth and size: the SSE is an integer sum, and finishStats is extract()'s own tail.
  supports: () => true,
  create(ctx) {
    const planes = ctx.options['enable_chroma'] === true && ctx.format.chroma !== '400' ? [0, 1, 2] : [0];
    return PlaneSumsKernel.create(ctx, planes.map((plane) => ({ kind: 'squared-error' as const, plane })));
  },
};

/**
 * float_psnr on the GPU: the integer sum of squared luma differences (common/plane-sums.wgsl),
 * which equals libvmaf's double sum of float squares times 2^2k exactly where
 * floatSquareSumsExact holds (8 to 12 bits); float_psnr.cpp's finishStats scales it and
 * ends as extract() does. Other inputs run on the host.
 */
import type { GpuImplementation } from '../../kernels/gpu/gpu-extractor.js';
import { floatSquareSumsExact } from '../common/exact-float-sums.js';
import { PlaneSumsKernel } from '../common/plane-sums-gpu.js';

export const floatPsnrGpu: GpuImplementation = {
  supports: (_options, format) => floatSquareSumsExact(format),
  create: (ctx) => PlaneSumsKernel.create(ctx, [{ kind: 'squared-error', plane: 0 }]),
};

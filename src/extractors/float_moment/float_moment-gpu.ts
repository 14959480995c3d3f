/**
 * float_moment on the GPU: the integer sums of the luma samples and of their squares, ref
 * and dis (common/plane-sums.wgsl), in the order float_moment.cpp's finishStats takes them;
 * exact images of libvmaf's double sums where floatSquareSumsExact holds (8 to 12 bits).
 * Other inputs run on the host.
 */
import type { GpuImplementation } from '../../kernels/gpu/gpu-extractor.js';
import { floatSquareSumsExact } from '../common/exact-float-sums.js';
import { PlaneSumsKernel } from '../common/plane-sums-gpu.js';

export const floatMomentGpu: GpuImplementation = {
  supports: (_options, format) => floatSquareSumsExact(format),
  create: (ctx) =>
    PlaneSumsKernel.create(ctx, [
      { kind: 'sum', of: 'ref', plane: 0 },
      { kind: 'sum', of: 'dis', plane: 0 },
      { kind: 'sum-of-squares', of: 'ref', plane: 0 },
      { kind: 'sum-of-squares', of: 'dis', plane: 0 },
    ]),
};

/**
 * float_ms_ssim on the GPU: the luma as floats, the four 9x9 low-pass decimations by 2 and
 * the five Gaussian-filtered maps at each of the 5 scales (common/ssim-maps.wgsl,
 * integer-exact float and double arithmetic), pooled on the device into each scale's four
 * double sums; float_ms_ssim.cpp's finishStats combines the scales as extract() does.
 */
import type { GpuImplementation } from '../../kernels/gpu/gpu-extractor.js';
import { fitsOnGpu, SsimMapsKernel, type SsimScale } from '../common/ssim-maps-gpu.js';

// libvmaf's 9x9 low-pass as float constants (float_ms_ssim.cpp's kLowPassKernel), row-major.
const LOW_PASS = [
  0.000714, -0.000450, -0.002090, 0.007132, 0.016114, 0.007132, -0.002090, -0.000450, 0.000714,
  -0.000450, 0.000283, 0.001316, -0.004490, -0.010146, -0.004490, 0.001316, 0.000283, -0.000450,
  -0.002090, 0.001316, 0.006115, -0.020867, -0.047149, -0.020867, 0.006115, 0.001316, -0.002090,
  0.007132, -0.004490, -0.020867, 0.071207, 0.160885, 0.071207, -0.020867, -0.004490, 0.007132,
  0.016114, -0.010146, -0.047149, 0.160885, 0.363505, 0.160885, -0.047149, -0.010146, 0.016114,
  0.007132, -0.004490, -0.020867, 0.071207, 0.160885, 0.071207, -0.020867, -0.004490, 0.007132,
  -0.002090, 0.001316, 0.006115, -0.020867, -0.047149, -0.020867, 0.006115, 0.001316, -0.002090,
  -0.000450, 0.000283, 0.001316, -0.004490, -0.010146, -0.004490, 0.001316, 0.000283, -0.000450,
  0.000714, -0.000450, -0.002090, 0.007132, 0.016114, 0.007132, -0.002090, -0.000450, 0.000714,
];
const SCALES: SsimScale[] = Array.from({ length: 5 }, (_, i) => (i === 0 ? { maps: true } : { maps: true, decimate: { factor: 2, taps: 9, weights: LOW_PASS } }));

export const floatMsSsimGpu: GpuImplementation = {
  // Up to 2160p (the maps are made in bands; fitsOnGpu says which sizes).
  supports: (_options, format) => fitsOnGpu(format.width, format.height, SCALES),
  create: (ctx) => SsimMapsKernel.create(ctx, SCALES),
};

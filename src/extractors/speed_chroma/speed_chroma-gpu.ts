/**
 * speed_chroma on the GPU: the decimation of the U and V planes of both pictures
 * (../common/speed-decimate-gpu.ts, which says where each stage runs), the per-block
 * statistics on the host by speed_chroma.cpp's finishStats, the code the cpu backend runs.
 * Bicubic and lanczos4 prescales that resample run on the host.
 */
import type { GpuExtractorInputs, GpuExtractorKernel, GpuImplementation } from '../../kernels/gpu/gpu-extractor.js';
import type { StatsSlot } from '../../kernels/gpu/frame-kernel.js';
import { SpeedDecimator, speedPrescaleOnGpu } from '../common/speed-decimate-gpu.js';

class SpeedChromaKernel implements GpuExtractorKernel {
  readonly statsCount: number;
  readonly #decimator: SpeedDecimator;

  constructor(decimator: SpeedDecimator) {
    this.#decimator = decimator;
    this.statsCount = decimator.statsCount;
  }

  encode(encoder: GPUCommandEncoder, inputs: GpuExtractorInputs, out: StatsSlot): void {
    this.#decimator.encode(encoder, [{ picture: inputs.ref }, { picture: inputs.dis }], out);
  }

  destroy(): void {
    this.#decimator.destroy();
  }
}

export const speedChromaGpu: GpuImplementation = {
  // The chroma plane as libvmaf sizes it (speed_chroma.ts's check).
  supports: (options, format) =>
    speedPrescaleOnGpu(options, format.chroma === '444' ? format.width : Math.floor(format.width / 2), format.chroma === '420' ? Math.floor(format.height / 2) : format.height),
  create: async (ctx) => new SpeedChromaKernel(await SpeedDecimator.create(ctx, { native: 'speed_chroma', planes: [1, 2], difference: false, leading: 0 })),
};

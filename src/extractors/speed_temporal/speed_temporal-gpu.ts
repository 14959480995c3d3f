/**
 * speed_temporal on the GPU: the decimation of the two luma frame differences, the previous
 * reference minus this one and the previous distorted minus this one (or, with
 * speed_use_ref_diff, minus this reference), by ../common/speed-decimate-gpu.ts (which says
 * where each stage runs; its DIFFERENCE pipeline subtracts the two samples in float as
 * speed-plane.h's DifferenceSpeedSource does); the per-block statistics on the host by
 * speed_temporal.cpp's finishStats, the code the cpu backend runs after its own decimate().
 * It reads the previous distorted picture (`previousDis`): the gpu backend keeps each
 * rendition's last distorted picture, uploaded on every frame, scored or not. Its first
 * accumulator says whether the frame had a previous one: 0 on a stream's first frame (the
 * score is 0, nothing is computed), 1 else, copied from a constant buffer. Bicubic and
 * lanczos4 prescales that resample run on the host.
 */
import type { GpuExtractorContext, GpuExtractorInputs, GpuExtractorKernel, GpuImplementation } from '../../kernels/gpu/gpu-extractor.js';
import type { StatsSlot } from '../../kernels/gpu/frame-kernel.js';
import { SpeedDecimator, speedPrescaleOnGpu } from '../common/speed-decimate-gpu.js';

class SpeedTemporalKernel implements GpuExtractorKernel {
  readonly statsCount: number;
  readonly #decimator: SpeedDecimator;
  readonly #useRefDiff: boolean;
  /** The accumulator 1 (speed_temporal.cpp's "had a previous frame"), copied into each such frame's stats. */
  readonly #one: GPUBuffer;

  private constructor(decimator: SpeedDecimator, useRefDiff: boolean, one: GPUBuffer) {
    this.#decimator = decimator;
    this.#useRefDiff = useRefDiff;
    this.#one = one;
    this.statsCount = decimator.statsCount;
  }

  static async create(ctx: GpuExtractorContext): Promise<SpeedTemporalKernel> {
    const decimator = await SpeedDecimator.create(ctx, { native: 'speed_temporal', planes: [0], difference: true, leading: 1 });
    try {
      const one = ctx.gpu.device.createBuffer({ size: 8, usage: GPUBufferUsage.COPY_SRC, mappedAtCreation: true, label: 'speed_temporal previous-frame flag' });
      new Uint32Array(one.getMappedRange()).set([1, 0]);
      one.unmap();
      return new SpeedTemporalKernel(decimator, ctx.options['speed_use_ref_diff'] === true, one);
    } catch (e) {
      decimator.destroy();
      throw e;
    }
  }

  encode(encoder: GPUCommandEncoder, inputs: GpuExtractorInputs, out: StatsSlot): void {
    const { previousRef, previousDis } = inputs;
    if (!previousRef || !previousDis) {
      // No previous frame (a stream's first): 0, as on the cpu backend.
      encoder.clearBuffer(out.buffer, out.offset, 8);
      return;
    }
    encoder.copyBufferToBuffer(this.#one, 0, out.buffer, out.offset, 8);
    const disNow = this.#useRefDiff ? inputs.ref : inputs.dis;
    this.#decimator.encode(encoder, [{ picture: previousRef, minus: inputs.ref }, { picture: previousDis, minus: disNow }], out);
  }

  destroy(): void {
    this.#decimator.destroy();
    this.#one.destroy();
  }
}

export const speedTemporalGpu: GpuImplementation = {
  previousDis: true,
  supports: (options, format) => speedPrescaleOnGpu(options, format.width, format.height),
  create: (ctx) => SpeedTemporalKernel.create(ctx),
};

/**
 * The motion SAD of libvmaf 3.2.0 on the GPU (motion.wgsl; src/kernels/cpu/motion.h is the
 * spec): the blur of the DIFFERENCE of the previous and the current reference luma, rounded
 * after each pass, mirrored at the edges, summed per row in a u32 and over rows in a u64.
 * One accumulator: the SAD, as the cpu backend's motionSad returns it. Without a previous
 * reference (the first frame) it writes 0.
 */
import { BackendError } from '../../../errors.js';
import type { GpuDevice } from '../device.js';
import type { FrameGeometry, FrameKernel, LumaPlanes, StatsSlot } from '../frame-kernel.js';
import { loadWgsl } from '../wgsl.js';
import { BindGroupCache } from '../bind-groups.js';

/** Smallest width and height the mirroring serves (kMotionMinSize); smaller planes give 0. */
const MOTION_MIN_SIZE = 3;

export class MotionKernel implements FrameKernel {
  readonly statsLength = 1;
  readonly geometry: FrameGeometry;
  readonly #pipeline: GPUComputePipeline | undefined;
  /** Bind groups by prev, cur, stats buffer and output offset; uniforms (the output word) by output offset. */
  readonly #cache: BindGroupCache;
  #destroyed = false;

  private constructor(gpu: GpuDevice, geometry: FrameGeometry, pipeline: GPUComputePipeline | undefined) {
    this.geometry = { ...geometry };
    this.#pipeline = pipeline;
    this.#cache = new BindGroupCache(gpu.device, 64);
  }

  /** Compiles the kernel for one frame size and bit depth. */
  static async create(gpu: GpuDevice, geometry: FrameGeometry): Promise<MotionKernel> {
    const { width, height, bitDepth } = geometry;
    if (![8, 10, 12, 16].includes(bitDepth)) throw new BackendError('E_GPU', `motion: unsupported bit depth ${bitDepth}`);
    if (!(Number.isInteger(width) && Number.isInteger(height) && width > 0 && height > 0)) {
      throw new BackendError('E_GPU', `motion: bad frame size ${width}x${height}`);
    }
    if (width < MOTION_MIN_SIZE || height < MOTION_MIN_SIZE) return new MotionKernel(gpu, geometry, undefined);
    const maxGroups = gpu.limits.maxComputeWorkgroupsPerDimension;
    if (height > maxGroups) throw new BackendError('E_GPU', `motion: ${height} rows exceed the adapter's ${maxGroups} workgroups per dimension`);
    const pipeline = await gpu.createComputePipeline(loadWgsl('motion/motion.wgsl'), {
      label: `motion ${width}x${height} ${bitDepth}-bit`,
      constants: { WIDTH: width, HEIGHT: height, BIT_DEPTH: bitDepth },
    });
    return new MotionKernel(gpu, geometry, pipeline);
  }

  /**
   * Records the SAD of planes.prevRef against planes.ref into out (8 bytes at out.offset,
   * which must be a multiple of 8; out.buffer needs STORAGE and COPY_DST usage). Without
   * planes.prevRef it records a 0.
   */
  encode(encoder: GPUCommandEncoder, planes: LumaPlanes, out: StatsSlot): void {
    this.encodeBefore(encoder, planes, out);
    if (!planes.prevRef || !this.#pipeline) return;
    const pass = encoder.beginComputePass({ label: 'motion' });
    this.encodeInPass(pass, planes, out);
    pass.end();
  }

  /** encode() in two halves, for a compute pass shared with other kernels: this one (the accumulator's clear) before the pass is begun. */
  encodeBefore(encoder: GPUCommandEncoder, _planes: LumaPlanes, out: StatsSlot): void {
    if (this.#destroyed) throw new BackendError('E_GPU', 'motion: the kernel is destroyed');
    if (out.offset % 8 !== 0) throw new BackendError('E_GPU', `motion: output offset ${out.offset} is not a multiple of 8`);
    encoder.clearBuffer(out.buffer, out.offset, 8);
  }

  /** encode()'s second half (after encodeBefore): the dispatch, into a pass the caller has begun; nothing without planes.prevRef. */
  encodeInPass(pass: GPUComputePassEncoder, planes: LumaPlanes, out: StatsSlot): void {
    if (!planes.prevRef || !this.#pipeline) return;
    pass.setPipeline(this.#pipeline);
    pass.setBindGroup(0, this.#bindGroup(planes.prevRef, planes.ref, out));
    pass.dispatchWorkgroups(this.geometry.height);
  }

  destroy(): void {
    this.#destroyed = true;
    this.#cache.destroy();
  }

  #bindGroup(prev: GPUBuffer, cur: GPUBuffer, out: StatsSlot): GPUBindGroup {
    const cache = this.#cache;
    return cache.group(`${cache.id(prev)},${cache.id(cur)},${cache.id(out.buffer)},${out.offset}`, this.#pipeline!, 'motion', {
      0: prev,
      1: cur,
      2: out.buffer,
      3: cache.uniform(String(out.offset), [out.offset / 4, 0, 0, 0], 'motion params'),
    });
  }
}

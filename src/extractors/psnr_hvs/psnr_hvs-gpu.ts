/**
 * psnr_hvs on the GPU (psnr_hvs.wgsl): per plane, one invocation per 8x8 block pair gives
 * the block's 64 terms (integer DCT, variance ratios, masking, CSF weighting, in
 * integer-exact float arithmetic), written as the instance's accumulators, two floats per
 * 64-bit slot, plane after plane. psnr_hvs.cpp's finishStats sums them per plane in float,
 * in its block order (libvmaf's running total goes through every block, so only the terms
 * themselves can be handed over), giving the cpu backend's bits.
 *
 * The weights (CSF and masking tables per plane) come from the C++ instance (gpuParams), so
 * both sides use the same floats. Each plane's terms are bound alone, at an aligned offset
 * in the stats buffer.
 */
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BackendError } from '../../errors.js';
import { chromaSize } from '../../decode/frame-layout.js';
import type { GpuExtractorContext, GpuExtractorInputs, GpuExtractorKernel, GpuImplementation } from '../../kernels/gpu/gpu-extractor.js';
import type { StatsSlot } from '../../kernels/gpu/frame-kernel.js';
import { loadWgsl, WGSL_ROOT } from '../../kernels/gpu/wgsl.js';
import { createF32Pipeline } from '../../kernels/gpu/f32-probe.js';
import { loadNative, nativeGeometry } from '../../kernels/native.js';
import { BindGroupCache } from '../../kernels/gpu/bind-groups.js';
import type { FrameFormat } from '../../types.js';

const SOURCE = relative(WGSL_ROOT, join(dirname(fileURLToPath(import.meta.url)), 'psnr_hvs.wgsl'));
const WORKGROUP = 64;
const TERMS = 64;
const STEP = 7;
/** WebGPU's guaranteed storage binding size: one plane's terms must fit it. */
const GUARANTEED_BINDING_BYTES = 128 << 20;

/** Blocks along a side of `size` samples: one every 7 while a whole 8x8 block fits. */
function blocksAlong(size: number): number {
  return size > 7 ? Math.ceil((size - 7) / STEP) : 0;
}

/** Each plane's blocks per row and in all, Y Cb Cr. */
function planeBlocks(format: FrameFormat): { x: number; count: number }[] | undefined {
  const c = chromaSize(format);
  if (!c) return undefined;
  return [{ width: format.width, height: format.height }, c, c].map((s) => ({ x: blocksAlong(s.width), count: blocksAlong(s.width) * blocksAlong(s.height) }));
}

interface PlanePass {
  params: Uint32Array;
  blocks: number;
  /** Its first term's word in the instance's block of the stats. */
  word: number;
}

class PsnrHvsKernel implements GpuExtractorKernel {
  readonly statsCount: number;
  readonly #pipeline: GPUComputePipeline;
  readonly #passes: PlanePass[];
  readonly #weights: GPUBuffer;
  readonly #alignment: number;
  readonly #cache: BindGroupCache;

  private constructor(device: GPUDevice, pipeline: GPUComputePipeline, passes: PlanePass[], weights: GPUBuffer, alignment: number, statsCount: number) {
    this.#pipeline = pipeline;
    this.#passes = passes;
    this.#weights = weights;
    this.#alignment = alignment;
    this.#cache = new BindGroupCache(device);
    this.statsCount = statsCount;
  }

  static async create(ctx: GpuExtractorContext): Promise<PsnrHvsKernel> {
    const { gpu, format, layout, options } = ctx;
    const blocks = planeBlocks(format);
    if (!blocks || layout.planes.length < 3) throw new BackendError('E_GPU', 'psnr_hvs: the gpu kernel needs the chroma planes uploaded');
    const native = loadNative();
    const handle = native.createExtractor('psnr_hvs', options, nativeGeometry(format));
    const tables = native.extractorGpuParams(handle);
    if (tables.length !== 3 * 2 * TERMS) throw new BackendError('E_GPU', `psnr_hvs: the C++ gave ${tables.length} weights, ${3 * 2 * TERMS} expected`);
    const passes: PlanePass[] = [];
    let word = 0;
    blocks.forEach((b, p) => {
      if (4 * TERMS * b.count + gpu.limits.minStorageBufferOffsetAlignment > gpu.limits.maxStorageBufferBindingSize) {
        throw new BackendError('E_GPU', `psnr_hvs: plane ${p}'s ${b.count} blocks exceed the adapter's storage binding limit`);
      }
      if (b.count > 0) {
        const span = layout.planes[p]!;
        passes.push({ params: new Uint32Array([span.offset / 4, span.width, b.x, b.count, 0, p, 2, 5]), blocks: b.count, word });
      }
      word += TERMS * b.count;
    });
    const d = gpu.device;
    const weights = d.createBuffer({ size: 4 * tables.length, usage: GPUBufferUsage.STORAGE, mappedAtCreation: true, label: 'psnr_hvs weights' });
    new Float32Array(weights.getMappedRange()).set(tables); // floats in doubles: exact
    weights.unmap();
    try {
      const pipeline = await createF32Pipeline(gpu, loadWgsl(SOURCE), { label: `psnr_hvs ${layout.bitDepth}-bit`, entryPoint: 'block_terms', constants: { BIT_DEPTH: layout.bitDepth } });
      return new PsnrHvsKernel(d, pipeline, passes, weights, gpu.limits.minStorageBufferOffsetAlignment, word / 2);
    } catch (e) {
      weights.destroy();
      throw e;
    }
  }

  encode(encoder: GPUCommandEncoder, inputs: GpuExtractorInputs, out: StatsSlot): void {
    if (out.offset % 8 !== 0) throw new BackendError('E_GPU', `psnr_hvs: output offset ${out.offset} is not a multiple of 8`);
    const pass = encoder.beginComputePass({ label: 'psnr_hvs' });
    pass.setPipeline(this.#pipeline);
    this.#passes.forEach((p, i) => {
      pass.setBindGroup(0, this.#bindGroup(i, p, inputs, out));
      pass.dispatchWorkgroups(Math.ceil(p.blocks / WORKGROUP));
    });
    pass.end();
  }

  destroy(): void {
    this.#weights.destroy();
    this.#cache.destroy();
  }

  #bindGroup(index: number, p: PlanePass, inputs: GpuExtractorInputs, out: StatsSlot): GPUBindGroup {
    // The plane's terms alone: bound from the aligned offset at or below them.
    const start = out.offset + 4 * p.word;
    const offset = start - (start % this.#alignment);
    const dst = (start - offset) / 4;
    const cache = this.#cache;
    const values = p.params.slice();
    values[4] = dst;
    return cache.group(`${index},${cache.id(inputs.ref.buffer)},${cache.id(inputs.dis.buffer)},${cache.id(out.buffer)},${start}`, this.#pipeline, 'psnr_hvs', {
      0: inputs.ref.buffer,
      1: inputs.dis.buffer,
      2: { buffer: out.buffer, offset, size: start - offset + 4 * TERMS * p.blocks },
      3: cache.uniform(`${index},${dst}`, values, 'psnr_hvs params'),
      4: this.#weights,
    });
  }
}

export const psnrHvsGpu: GpuImplementation = {
  // Inputs with chroma, up to 12 bits (check() refuses the rest), where each plane's terms
  // fit the binding size every adapter has (2160p's luma takes 43 MB).
  supports: (_options, format) => {
    const blocks = planeBlocks(format);
    return format.bitDepth <= 12 && blocks !== undefined && blocks.every((b) => 4 * TERMS * b.count + 256 <= GUARANTEED_BINDING_BYTES) && blocks.some((b) => b.count > 0);
  },
  create: (ctx) => PsnrHvsKernel.create(ctx),
};

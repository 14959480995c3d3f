/**
 * Exact 64-bit integer sums over whole planes on the GPU (plane-sums.wgsl), the accumulators
 * of the extractors whose libvmaf values come from such sums: psnr (squared error per
 * plane), float_psnr and float_moment (where their double sums are exact, see their C++).
 * One kernel gives a list of sums, in order, as consecutive accumulators of its stats slot:
 * per sum one pass of row totals into a scratch buffer, then reduce-i64 over the rows.
 */
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BackendError } from '../../errors.js';
import type { GpuExtractorContext, GpuExtractorInputs, GpuExtractorKernel, GpuPicture } from '../../kernels/gpu/gpu-extractor.js';
import type { StatsSlot } from '../../kernels/gpu/frame-kernel.js';
import type { I64Reducer } from '../../kernels/gpu/reduce-i64.js';
import { loadWgsl, WGSL_ROOT } from '../../kernels/gpu/wgsl.js';
import { BindGroupCache, uniformBuffer } from '../../kernels/gpu/bind-groups.js';

/** One accumulator: the squared error of a plane of ref and dis, or a plane's samples (or squares) of one of them. */
export type PlaneSum =
  | { kind: 'squared-error'; plane: number }
  | { kind: 'sum' | 'sum-of-squares'; of: 'ref' | 'dis'; plane: number };

const MODES = { 'squared-error': 0, sum: 1, 'sum-of-squares': 2 } as const;
const SOURCE = relative(WGSL_ROOT, join(dirname(fileURLToPath(import.meta.url)), 'plane-sums.wgsl'));

interface Sum {
  spec: PlaneSum;
  pipeline: GPUComputePipeline;
  params: GPUBuffer;
  rows: number;
  /** Index of its first row total in the scratch buffer. */
  rowsAt: number;
}

export class PlaneSumsKernel implements GpuExtractorKernel {
  readonly statsCount: number;
  readonly #reducer: I64Reducer;
  readonly #sums: Sum[];
  readonly #scratch: GPUBuffer;
  readonly #cache: BindGroupCache;

  private constructor(ctx: GpuExtractorContext, sums: Sum[], scratch: GPUBuffer) {
    this.#reducer = ctx.reducer;
    this.#sums = sums;
    this.#scratch = scratch;
    this.#cache = new BindGroupCache(ctx.gpu.device, 256);
    this.statsCount = sums.length;
  }

  static async create(ctx: GpuExtractorContext, specs: readonly PlaneSum[]): Promise<PlaneSumsKernel> {
    const { gpu, layout } = ctx;
    const code = loadWgsl(SOURCE);
    const pipelines = new Map<number, Promise<GPUComputePipeline>>();
    const pipeline = (mode: number): Promise<GPUComputePipeline> => {
      let p = pipelines.get(mode);
      if (!p) {
        p = gpu.createComputePipeline(code, { label: `plane sums mode ${mode} ${layout.bitDepth}-bit`, constants: { BIT_DEPTH: layout.bitDepth, MODE: mode } });
        pipelines.set(mode, p);
      }
      return p;
    };
    const d = gpu.device;
    const made: GPUBuffer[] = [];
    try {
      let rowsAt = 0;
      const sums: Sum[] = [];
      for (const spec of specs) {
        const span = layout.planes[spec.plane];
        if (!span) throw new BackendError('E_GPU', `plane sums: plane ${spec.plane} is not uploaded (${layout.planes.length} planes)`);
        if (span.height > gpu.limits.maxComputeWorkgroupsPerDimension) {
          throw new BackendError('E_GPU', `plane sums: ${span.height} rows exceed the adapter's ${gpu.limits.maxComputeWorkgroupsPerDimension} workgroups per dimension`);
        }
        const params = uniformBuffer(d, [span.offset / 4, span.offset / 4, span.width, rowsAt], 'plane sums params');
        made.push(params);
        sums.push({ spec, pipeline: await pipeline(MODES[spec.kind]), params, rows: span.height, rowsAt });
        rowsAt += span.height;
      }
      const scratch = d.createBuffer({ size: Math.max(8, rowsAt * 8), usage: GPUBufferUsage.STORAGE, label: 'plane sums rows' });
      made.push(scratch);
      return new PlaneSumsKernel(ctx, sums, scratch);
    } catch (e) {
      for (const b of made) b.destroy();
      throw e;
    }
  }

  encode(encoder: GPUCommandEncoder, inputs: GpuExtractorInputs, out: StatsSlot): void {
    if (out.offset % 8 !== 0) throw new BackendError('E_GPU', `plane sums: output offset ${out.offset} is not a multiple of 8`);
    const pass = encoder.beginComputePass({ label: 'plane sums' });
    for (const sum of this.#sums) {
      const [a, b] = sum.spec.kind === 'squared-error' ? [inputs.ref, inputs.dis] : sum.spec.of === 'ref' ? [inputs.ref, inputs.ref] : [inputs.dis, inputs.dis];
      pass.setPipeline(sum.pipeline);
      pass.setBindGroup(0, this.#bindGroup(sum, a, b));
      pass.dispatchWorkgroups(sum.rows);
    }
    pass.end();
    this.#sums.forEach((sum, i) => {
      this.#reducer.encode(encoder, { input: this.#scratch, count: sum.rows, inputOffset: sum.rowsAt, output: out.buffer, outputOffset: out.offset / 8 + i });
    });
  }

  destroy(): void {
    for (const s of this.#sums) s.params.destroy();
    this.#scratch.destroy();
    this.#cache.destroy();
  }

  #bindGroup(sum: Sum, a: GpuPicture, b: GpuPicture): GPUBindGroup {
    const cache = this.#cache;
    return cache.group(`${this.#sums.indexOf(sum)},${cache.id(a.buffer)},${cache.id(b.buffer)}`, sum.pipeline, 'plane sums', {
      0: a.buffer,
      1: b.buffer,
      2: this.#scratch,
      3: sum.params,
    });
  }
}

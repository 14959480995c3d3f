/**
 * Exact, deterministic sums of 64-bit integers on the GPU.
 *
 * Input: `segments` arrays of `count` i64 values each (two u32 words per value, low word
 * first, two's complement) in one storage buffer; output: one i64 per segment. Each pass
 * sums chunks of 4096 values per workgroup (a fixed per-invocation order, then a fixed
 * workgroup tree: reduce-i64.wgsl) into partials; passes repeat over the partials until
 * one value per segment is left (1080p per-pixel values: 2 passes). Every add carries, so
 * the totals are exact modulo 2^64 and the same on every run and every adapter.
 *
 * Kernels that already reduce within their own workgroups can write one partial per
 * workgroup and hand that array to the reducer; kernels that want the in-workgroup part
 * themselves include lib/reduce-i64.wgsl (workgroup_sum_i64).
 */
import { BackendError } from '../../errors.js';
import type { GpuDevice } from './device.js';
import { loadWgsl, readI64 } from './wgsl.js';

/** Values one workgroup sums in one pass (REDUCE_WG_SIZE * REDUCE_ITEMS in the WGSL). */
export const REDUCE_CHUNK = 4096;
const MAX_GROUPS = 65535;

export interface ReduceJob {
  /** Storage buffer holding the values (usage STORAGE). */
  input: GPUBuffer;
  /** Values per segment (0 gives a total of 0). */
  count: number;
  /** Number of independent sums. Default 1; at most 65535. */
  segments?: number;
  /** Index (in values, not bytes) of segment 0's first value. Default 0. */
  inputOffset?: number;
  /** Values from one segment's start to the next one's. Default count. */
  inputStride?: number;
  /** Storage buffer receiving the totals (usage STORAGE); must not be `input`. */
  output: GPUBuffer;
  /** Index (in values) where segment 0's total goes; segment s's at outputOffset + s. */
  outputOffset?: number;
}

interface Pass {
  bindGroup: GPUBindGroup;
  groups: number;
}

interface Plan {
  passes: Pass[];
  owned: GPUBuffer[];
}

/** Records GPU sums of i64 arrays; plans (bind groups, scratch) are cached per job shape. */
export class I64Reducer {
  readonly #gpu: GpuDevice;
  #pipeline: GPUComputePipeline | undefined;
  readonly #plans = new WeakMap<GPUBuffer, Map<string, Plan>>();
  readonly #allPlans: Plan[] = [];
  /** Resolves once the pipeline is compiled: nothing may be encoded before. */
  readonly ready: Promise<void>;

  private constructor(gpu: GpuDevice) {
    this.#gpu = gpu;
    this.ready = gpu.createComputePipeline(loadWgsl('reduce-i64.wgsl'), { label: 'reduce-i64' }).then((p) => {
      this.#pipeline = p;
    });
    this.ready.catch(() => undefined); // awaited by whoever compiles with it
  }

  static async create(gpu: GpuDevice): Promise<I64Reducer> {
    const reducer = I64Reducer.compiling(gpu);
    await reducer.ready;
    return reducer;
  }

  /**
   * A reducer whose pipeline is still compiling (`ready`): kernels may be created with it
   * meanwhile, so its compilation runs beside theirs.
   */
  static compiling(gpu: GpuDevice): I64Reducer {
    return new I64Reducer(gpu);
  }

  /**
   * Records the passes of `job` into `encoder` (as compute passes of their own). The same
   * job may be recorded any number of times (each frame, say): its uniforms never change.
   */
  encode(encoder: GPUCommandEncoder, job: ReduceJob): void {
    const pipeline = this.#pipeline;
    if (!pipeline) throw new Error('reduce-i64: encoded before its pipeline is ready');
    for (const pass of this.#plan(job).passes) {
      const p = encoder.beginComputePass({ label: 'reduce-i64' });
      p.setPipeline(pipeline);
      p.setBindGroup(0, pass.bindGroup);
      p.dispatchWorkgroups(pass.groups, job.segments ?? 1);
      p.end();
    }
  }

  /** Sums and reads back: one bigint per segment (for tests and one-off use). */
  async sum(input: GPUBuffer, count: number, options: Omit<ReduceJob, 'input' | 'count' | 'output' | 'outputOffset'> = {}): Promise<bigint[]> {
    const segments = options.segments ?? 1;
    const d = this.#gpu.device;
    const output = d.createBuffer({ size: segments * 8, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC, label: 'reduce-i64 totals' });
    try {
      const job: ReduceJob = { ...options, input, count, output };
      const words = await this.#gpu.withErrorScopes('reduce-i64', async () => {
        const enc = d.createCommandEncoder();
        this.encode(enc, job);
        d.queue.submit([enc.finish()]);
        return new Uint32Array(await this.#gpu.read(output));
      });
      this.#forget(job);
      return Array.from({ length: segments }, (_, s) => readI64(words, 2 * s));
    } finally {
      output.destroy();
    }
  }

  /** Frees the cached scratch and uniform buffers. */
  destroy(): void {
    for (const plan of this.#allPlans.splice(0)) for (const b of plan.owned) b.destroy();
  }

  #key(job: ReduceJob, output: GPUBuffer): string {
    return [job.count, job.segments ?? 1, job.inputOffset ?? 0, job.inputStride ?? job.count, job.outputOffset ?? 0, this.#bufferId(output)].join(',');
  }

  #ids = new WeakMap<GPUBuffer, number>();
  #nextId = 0;
  #bufferId(b: GPUBuffer): number {
    let id = this.#ids.get(b);
    if (id === undefined) this.#ids.set(b, (id = this.#nextId++));
    return id;
  }

  #forget(job: ReduceJob): void {
    const byInput = this.#plans.get(job.input);
    const key = this.#key(job, job.output);
    const plan = byInput?.get(key);
    if (!plan) return;
    byInput!.delete(key);
    const i = this.#allPlans.indexOf(plan);
    if (i >= 0) this.#allPlans.splice(i, 1);
    for (const b of plan.owned) b.destroy();
  }

  #plan(job: ReduceJob): Plan {
    let byInput = this.#plans.get(job.input);
    if (!byInput) this.#plans.set(job.input, (byInput = new Map()));
    const key = this.#key(job, job.output);
    let plan = byInput.get(key);
    if (!plan) {
      plan = this.#build(job);
      byInput.set(key, plan);
      this.#allPlans.push(plan);
    }
    return plan;
  }

  #build(job: ReduceJob): Plan {
    const count = job.count;
    const segments = job.segments ?? 1;
    const inOffset = job.inputOffset ?? 0;
    const inStride = job.inputStride ?? count;
    const outOffset = job.outputOffset ?? 0;
    for (const [name, v] of Object.entries({ count, segments, inOffset, inStride, outOffset })) {
      if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new BackendError('E_GPU', `reduce-i64: bad ${name} ${v}`);
    }
    if (segments < 1 || segments > MAX_GROUPS) throw new BackendError('E_GPU', `reduce-i64: ${segments} segments (1..${MAX_GROUPS})`);
    if (job.input === job.output) throw new BackendError('E_GPU', 'reduce-i64: output must be another buffer than input');
    if (Math.ceil(count / REDUCE_CHUNK) > MAX_GROUPS) throw new BackendError('E_GPU', `reduce-i64: ${count} values per segment is too many`);
    const inEnd = inOffset + (segments - 1) * inStride + count;
    if (inEnd * 8 > job.input.size) throw new BackendError('E_GPU', `reduce-i64: input holds ${job.input.size / 8} values, the job reads ${inEnd}`);
    if ((outOffset + segments) * 8 > job.output.size) throw new BackendError('E_GPU', `reduce-i64: output holds ${job.output.size / 8} values, the job writes ${outOffset + segments}`);

    const d = this.#gpu.device;
    const layout = this.#pipeline!.getBindGroupLayout(0); // encode checked it
    const owned: GPUBuffer[] = [];
    const passes: Pass[] = [];
    const scratch: (GPUBuffer | undefined)[] = [undefined, undefined];

    let n = count;
    let src = job.input;
    let srcOffset = inOffset;
    let srcStride = inStride;
    for (let k = 0; ; k++) {
      const groups = Math.max(1, Math.ceil(n / REDUCE_CHUNK));
      const last = groups === 1;
      let dst: GPUBuffer;
      let dstOffset: number;
      let dstStride: number;
      if (last) {
        dst = job.output;
        dstOffset = outOffset;
        dstStride = 1;
      } else {
        const size = segments * groups * 8;
        let s = scratch[k % 2];
        if (!s || s.size < size) {
          s = d.createBuffer({ size, usage: GPUBufferUsage.STORAGE, label: `reduce-i64 partials ${k % 2}` });
          owned.push(s);
          scratch[k % 2] = s;
        }
        dst = s;
        dstOffset = 0;
        dstStride = groups;
      }
      const params = d.createBuffer({ size: 32, usage: GPUBufferUsage.UNIFORM, mappedAtCreation: true, label: 'reduce-i64 params' });
      new Uint32Array(params.getMappedRange()).set([n, srcOffset, srcStride, dstOffset, dstStride, 0, 0, 0]);
      params.unmap();
      owned.push(params);
      const srcBytes = (srcOffset + (segments - 1) * srcStride + n) * 8;
      const dstBytes = (dstOffset + (segments - 1) * dstStride + groups) * 8;
      const bindGroup = d.createBindGroup({
        layout,
        entries: [
          { binding: 0, resource: { buffer: src, offset: 0, size: Math.min(src.size, Math.max(8, srcBytes)) } },
          { binding: 1, resource: { buffer: dst, offset: 0, size: dstBytes } },
          { binding: 2, resource: { buffer: params } },
        ],
      });
      passes.push({ bindGroup, groups });
      if (last) break;
      n = groups;
      src = dst;
      srcOffset = 0;
      srcStride = groups;
    }
    return { passes, owned };
  }
}

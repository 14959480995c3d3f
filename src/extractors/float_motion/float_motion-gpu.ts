/**
 * float_motion on the GPU (float_motion.wgsl), for luma at scale 0 (without motion_add_scale1
 * and motion_add_uv, which run on the host): the previous and this reference frame as floats,
 * each blurred by the separable filter, and the mean absolute difference's float sums, every
 * float operation integer-exact (lib/f32.wgsl) and every sum in float_motion.cpp's order (per
 * row left to right, then the rows top to bottom, each sequential on one invocation), so the
 * sum is the cpu backend's bit for bit; float_motion.cpp's finishStats ends as extract()
 * does. Everything runs on the GPU: no readback of maps, no host summation.
 *
 * It reads only reference pictures (`referenceOnly`): the gpu backend runs it once per frame,
 * scored or not, with the previous frame's reference from its reference ring, and finishes
 * motion2 and motion3 from the next frame's score (float_motion.ts's finishFrame) as the cpu
 * backend does.
 */
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BackendError } from '../../errors.js';
import type { GpuExtractorContext, GpuExtractorInputs, GpuExtractorKernel, GpuImplementation, GpuPicture } from '../../kernels/gpu/gpu-extractor.js';
import type { StatsSlot } from '../../kernels/gpu/frame-kernel.js';
import { loadWgsl, WGSL_ROOT } from '../../kernels/gpu/wgsl.js';
import type { OptionValues } from '../option.js';

const SOURCE = relative(WGSL_ROOT, join(dirname(fileURLToPath(import.meta.url)), 'float_motion.wgsl'));
const PARAMS_WORDS = 12;
const WORKGROUP = 16;
const ROWS_WORKGROUP = 64;

/** float_motion.cpp's filters as floats: motion_filter_size 1 (identity), 3, else 5. */
function filterOf(options: OptionValues): number[] {
  const size = Number(options['motion_filter_size']);
  if (size === 1) return [0, 0, 1, 0, 0];
  if (size === 3) return [0.166378498, 0.667243004, 0.166378498].map(Math.fround);
  return [0.054488685, 0.244201342, 0.402619947, 0.244201342, 0.054488685].map(Math.fround);
}

const f32 = new Float32Array(1);
const f32Bits = new Uint32Array(f32.buffer);
function floatBits(x: number): number {
  f32[0] = x;
  return f32Bits[0]!;
}

type Entry = 'to_float' | 'blur_rows' | 'blur_cols' | 'row_sums' | 'total' | 'no_previous';

interface Pass {
  entry: Entry;
  params: GPUBuffer;
  groups: [number, number];
  /** to_float: which picture it reads. */
  of?: 'previous' | 'current';
}

class FloatMotionKernel implements GpuExtractorKernel {
  readonly statsCount = 2;
  readonly #device: GPUDevice;
  readonly #pipelines: Map<Entry, GPUComputePipeline>;
  readonly #passes: Pass[];
  readonly #work: GPUBuffer;
  readonly #taps: GPUBuffer;
  readonly #forceZero: boolean;
  /** total's and no_previous's params, per output word (one per rendition block). */
  readonly #outParams = new Map<number, GPUBuffer>();
  readonly #totalWords: Uint32Array;
  readonly #bindGroups = new Map<string, GPUBindGroup>();
  readonly #ids = new WeakMap<GPUBuffer, number>();
  #nextId = 0;

  private constructor(device: GPUDevice, pipelines: Map<Entry, GPUComputePipeline>, passes: Pass[], work: GPUBuffer, taps: GPUBuffer, totalWords: Uint32Array, forceZero: boolean) {
    this.#device = device;
    this.#pipelines = pipelines;
    this.#passes = passes;
    this.#work = work;
    this.#taps = taps;
    this.#totalWords = totalWords;
    this.#forceZero = forceZero;
  }

  static async create(ctx: GpuExtractorContext): Promise<FloatMotionKernel> {
    const { gpu, layout, options } = ctx;
    const luma = layout.planes[0]!;
    const { width: w, height: h } = luma;
    const d = gpu.device;
    const made: GPUBuffer[] = [];
    const filter = filterOf(options);
    const uniform = (values: Partial<Record<'src' | 'dst' | 'scale' | 'a' | 'b', number>>): GPUBuffer => {
      const b = d.createBuffer({ size: 4 * PARAMS_WORDS, usage: GPUBufferUsage.UNIFORM, mappedAtCreation: true, label: 'float_motion params' });
      made.push(b);
      new Uint32Array(b.getMappedRange()).set([values.src ?? 0, values.dst ?? 0, w, h, filter.length, values.scale ?? 0, values.a ?? 0, values.b ?? 0, 0, 0, 0, 0]);
      b.unmap();
      return b;
    };
    try {
      const maxGroups = gpu.limits.maxComputeWorkgroupsPerDimension;
      if (Math.ceil(w / WORKGROUP) > maxGroups || Math.ceil(h / WORKGROUP) > maxGroups || Math.ceil(h / ROWS_WORKGROUP) > maxGroups) {
        throw new BackendError('E_GPU', `float_motion: ${w}x${h} exceeds the adapter's ${maxGroups} workgroups per dimension`);
      }
      // work: a picture as floats, the vertical pass, both blurred pictures, one sum per row.
      const n = w * h;
      const [floats, vertical, previous, current, rows] = [0, n, 2 * n, 3 * n, 4 * n];
      const words = 4 * n + h;
      if (4 * words > gpu.limits.maxStorageBufferBindingSize) {
        throw new BackendError('E_GPU', `float_motion: ${4 * words} bytes of scratch exceed the adapter's storage binding limit (${gpu.limits.maxStorageBufferBindingSize})`);
      }
      const work = d.createBuffer({ size: 4 * words, usage: GPUBufferUsage.STORAGE, label: 'float_motion work' });
      made.push(work);
      const taps = d.createBuffer({ size: 4 * filter.length, usage: GPUBufferUsage.STORAGE, mappedAtCreation: true, label: 'float_motion filter' });
      made.push(taps);
      new Uint32Array(taps.getMappedRange()).set(filter.map(floatBits));
      taps.unmap();
      const scale = floatBits(layout.bitDepth === 8 ? 1 : 2 ** -(layout.bitDepth - 8));
      const image: [number, number] = [Math.ceil(w / WORKGROUP), Math.ceil(h / WORKGROUP)];
      const passes: Pass[] = [];
      for (const [of, dst] of [['previous', previous], ['current', current]] as const) {
        passes.push(
          { entry: 'to_float', of, params: uniform({ src: luma.offset / 4, dst: floats, scale }), groups: image },
          { entry: 'blur_rows', params: uniform({ src: floats, dst: vertical }), groups: image },
          { entry: 'blur_cols', params: uniform({ src: vertical, dst }), groups: image },
        );
      }
      passes.push({ entry: 'row_sums', params: uniform({ dst: rows, a: previous, b: current }), groups: [Math.ceil(h / ROWS_WORKGROUP), 1] });
      const totalWords = new Uint32Array([0, 0, w, h, filter.length, 0, rows, 0, 0, 0, 0, 0]);
      const code = loadWgsl(SOURCE);
      const entries: Entry[] = ['to_float', 'blur_rows', 'blur_cols', 'row_sums', 'total', 'no_previous'];
      const pipelines = await Promise.all(
        entries.map((entry) => gpu.createComputePipeline(code, { label: `float_motion ${entry} ${layout.bitDepth}-bit`, entryPoint: entry, constants: { BIT_DEPTH: layout.bitDepth } })),
      );
      return new FloatMotionKernel(d, new Map(entries.map((e, i) => [e, pipelines[i]!] as const)), passes, work, taps, totalWords, options['motion_force_zero'] === true);
    } catch (e) {
      for (const b of made) b.destroy();
      throw e;
    }
  }

  encode(encoder: GPUCommandEncoder, inputs: GpuExtractorInputs, out: StatsSlot): void {
    if (out.offset % 8 !== 0) throw new BackendError('E_GPU', `float_motion: output offset ${out.offset} is not a multiple of 8`);
    const pass = encoder.beginComputePass({ label: 'float_motion' });
    const previous = inputs.previousRef;
    // The first frame scores 0 (and motion_force_zero always does): no previous frame is read.
    if (previous && !this.#forceZero) {
      // Each dispatch is its own usage scope: the later passes see the earlier ones' writes.
      for (const p of this.#passes) {
        pass.setPipeline(this.#pipelines.get(p.entry)!);
        pass.setBindGroup(0, this.#bindGroup(p, p.of === 'previous' ? previous : p.of === 'current' ? inputs.ref : undefined));
        pass.dispatchWorkgroups(p.groups[0], p.groups[1]);
      }
    }
    const last: Entry = previous && !this.#forceZero ? 'total' : 'no_previous';
    pass.setPipeline(this.#pipelines.get(last)!);
    pass.setBindGroup(0, this.#outBindGroup(last, out));
    pass.dispatchWorkgroups(1);
    pass.end();
  }

  destroy(): void {
    for (const p of this.#passes) p.params.destroy();
    for (const b of this.#outParams.values()) b.destroy();
    this.#outParams.clear();
    this.#work.destroy();
    this.#taps.destroy();
    this.#bindGroups.clear();
  }

  #id(b: GPUBuffer): number {
    let id = this.#ids.get(b);
    if (id === undefined) this.#ids.set(b, (id = this.#nextId++));
    return id;
  }

  #cached(key: string, make: () => GPUBindGroup): GPUBindGroup {
    let group = this.#bindGroups.get(key);
    if (group) return group;
    group = make();
    // The rings a backend cycles through are small; a stray caller's buffers are not kept forever.
    if (this.#bindGroups.size >= 256) this.#bindGroups.clear();
    this.#bindGroups.set(key, group);
    return group;
  }

  #bindGroup(p: Pass, picture: GpuPicture | undefined): GPUBindGroup {
    const index = this.#passes.indexOf(p);
    return this.#cached(picture ? `${index},${this.#id(picture.buffer)}` : String(index), () => {
      const entries: GPUBindGroupEntry[] = [
        { binding: 1, resource: { buffer: this.#work } },
        { binding: 3, resource: { buffer: p.params } },
      ];
      if (picture) entries.push({ binding: 0, resource: { buffer: picture.buffer } });
      if (p.entry === 'blur_rows' || p.entry === 'blur_cols') entries.push({ binding: 4, resource: { buffer: this.#taps } });
      return this.#device.createBindGroup({ label: `float_motion ${p.entry}`, layout: this.#pipelines.get(p.entry)!.getBindGroupLayout(0), entries });
    });
  }

  #outBindGroup(entry: Entry, out: StatsSlot): GPUBindGroup {
    const word = out.offset / 4;
    let params = this.#outParams.get(word);
    if (!params) {
      params = this.#device.createBuffer({ size: 4 * PARAMS_WORDS, usage: GPUBufferUsage.UNIFORM, mappedAtCreation: true, label: 'float_motion out params' });
      const values = this.#totalWords.slice();
      values[8] = word;
      new Uint32Array(params.getMappedRange()).set(values);
      params.unmap();
      this.#outParams.set(word, params);
    }
    const buffer = params;
    return this.#cached(`${entry},${this.#id(out.buffer)},${word}`, () => {
      const entries: GPUBindGroupEntry[] = [
        { binding: 2, resource: { buffer: out.buffer } },
        { binding: 3, resource: { buffer } },
      ];
      if (entry === 'total') entries.push({ binding: 1, resource: { buffer: this.#work } });
      return this.#device.createBindGroup({ label: `float_motion ${entry}`, layout: this.#pipelines.get(entry)!.getBindGroupLayout(0), entries });
    });
  }
}

export const floatMotionGpu: GpuImplementation = {
  referenceOnly: true,
  supports: (options) => options['motion_add_scale1'] !== true && options['motion_add_uv'] !== true,
  create: (ctx) => FloatMotionKernel.create(ctx),
};

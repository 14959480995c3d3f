/**
 * float_ansnr on the GPU (float_ansnr.wgsl): the luma as floats, the reference's 3x3 and the
 * distorted's 5x5 filters, and the signal and noise energies, every float operation
 * integer-exact (lib/f32.wgsl) and every sum in float_ansnr.cpp's order (per row left to
 * right, then the rows top to bottom, each a sequential float sum on one invocation), so the
 * two floats are the cpu backend's bit for bit; float_ansnr.cpp's finishStats ends as
 * extract() does. Everything runs on the GPU: no readback of maps, no host summation.
 */
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BackendError } from '../../errors.js';
import type { GpuExtractorContext, GpuExtractorInputs, GpuExtractorKernel, GpuImplementation, GpuPicture } from '../../kernels/gpu/gpu-extractor.js';
import type { StatsSlot } from '../../kernels/gpu/frame-kernel.js';
import { loadWgsl, WGSL_ROOT } from '../../kernels/gpu/wgsl.js';

const SOURCE = relative(WGSL_ROOT, join(dirname(fileURLToPath(import.meta.url)), 'float_ansnr.wgsl'));
const PARAMS_WORDS = 12;
const WORKGROUP = 16;
const ROWS_WORKGROUP = 64;

/** The kernels as float_ansnr.cpp has them: the 3x3 binomial (/16) and libvmaf's 5x5 (/571), as floats. */
const REF_KERNEL = [1, 2, 1, 2, 4, 2, 1, 2, 1].map((v) => Math.fround(v / 16));
const DIS_KERNEL = [2, 7, 12, 7, 2, 7, 31, 52, 31, 7, 12, 52, 127, 52, 12, 7, 31, 52, 31, 7, 2, 7, 12, 7, 2].map((v) => Math.fround(v / 571));

/** The 5x5 filter's mirroring (-2 -> 2, n + 1 -> n - 2) stays inside planes of 3 samples a side and more. */
const MIN_SIDE = 3;

const f32 = new Float32Array(1);
const f32Bits = new Uint32Array(f32.buffer);
function floatBits(x: number): number {
  f32[0] = x;
  return f32Bits[0]!;
}

type Entry = 'to_float' | 'filter_2d' | 'energies' | 'total';

interface Pass {
  entry: Entry;
  params: GPUBuffer;
  /** Workgroups in x and y. */
  groups: [number, number];
  /** to_float: which picture it reads. */
  of?: 'ref' | 'dis';
}

class FloatAnsnrKernel implements GpuExtractorKernel {
  readonly statsCount = 2;
  readonly #device: GPUDevice;
  readonly #pipelines: Map<Entry, GPUComputePipeline>;
  readonly #passes: Pass[];
  readonly #work: GPUBuffer;
  readonly #weights: GPUBuffer;
  /** total's params, per output word (one per rendition block). */
  readonly #totalParams = new Map<number, GPUBuffer>();
  readonly #totalWords: Uint32Array;
  readonly #bindGroups = new Map<string, GPUBindGroup>();
  readonly #ids = new WeakMap<GPUBuffer, number>();
  #nextId = 0;

  private constructor(device: GPUDevice, pipelines: Map<Entry, GPUComputePipeline>, passes: Pass[], work: GPUBuffer, weights: GPUBuffer, totalWords: Uint32Array) {
    this.#device = device;
    this.#pipelines = pipelines;
    this.#passes = passes;
    this.#work = work;
    this.#weights = weights;
    this.#totalWords = totalWords;
  }

  static async create(ctx: GpuExtractorContext): Promise<FloatAnsnrKernel> {
    const { gpu, layout } = ctx;
    const luma = layout.planes[0]!;
    const { width: w, height: h } = luma;
    const d = gpu.device;
    const made: GPUBuffer[] = [];
    const uniform = (values: Partial<Record<'src' | 'dst' | 'taps' | 'weightsAt' | 'scale' | 'ref' | 'dis', number>>): GPUBuffer => {
      const b = d.createBuffer({ size: 4 * PARAMS_WORDS, usage: GPUBufferUsage.UNIFORM, mappedAtCreation: true, label: 'float_ansnr params' });
      made.push(b);
      new Uint32Array(b.getMappedRange()).set([values.src ?? 0, values.dst ?? 0, w, h, values.taps ?? 0, values.weightsAt ?? 0, values.scale ?? 0, values.ref ?? 0, values.dis ?? 0, 0, 0, 0]);
      b.unmap();
      return b;
    };
    try {
      const maxGroups = gpu.limits.maxComputeWorkgroupsPerDimension;
      if (Math.ceil(w / WORKGROUP) > maxGroups || Math.ceil(h / WORKGROUP) > maxGroups || Math.ceil(h / ROWS_WORKGROUP) > maxGroups) {
        throw new BackendError('E_GPU', `float_ansnr: ${w}x${h} exceeds the adapter's ${maxGroups} workgroups per dimension`);
      }
      // work: ref and dis as floats, their filtered images, two row sums per row.
      const n = w * h;
      const [refFloat, disFloat, refFiltered, disFiltered, rows] = [0, n, 2 * n, 3 * n, 4 * n];
      const words = 4 * n + 2 * h;
      if (4 * words > gpu.limits.maxStorageBufferBindingSize) {
        throw new BackendError('E_GPU', `float_ansnr: ${4 * words} bytes of scratch exceed the adapter's storage binding limit (${gpu.limits.maxStorageBufferBindingSize})`);
      }
      const work = d.createBuffer({ size: 4 * words, usage: GPUBufferUsage.STORAGE, label: 'float_ansnr work' });
      made.push(work);
      const weights = d.createBuffer({ size: 4 * (REF_KERNEL.length + DIS_KERNEL.length), usage: GPUBufferUsage.STORAGE, mappedAtCreation: true, label: 'float_ansnr kernels' });
      made.push(weights);
      new Uint32Array(weights.getMappedRange()).set([...REF_KERNEL, ...DIS_KERNEL].map(floatBits));
      weights.unmap();
      const scale = floatBits(layout.bitDepth === 8 ? 1 : 2 ** -(layout.bitDepth - 8));
      const image: [number, number] = [Math.ceil(w / WORKGROUP), Math.ceil(h / WORKGROUP)];
      const passes: Pass[] = [
        { entry: 'to_float', of: 'ref', params: uniform({ src: luma.offset / 4, dst: refFloat, scale }), groups: image },
        { entry: 'to_float', of: 'dis', params: uniform({ src: luma.offset / 4, dst: disFloat, scale }), groups: image },
        { entry: 'filter_2d', params: uniform({ src: refFloat, dst: refFiltered, taps: 3, weightsAt: 0 }), groups: image },
        { entry: 'filter_2d', params: uniform({ src: disFloat, dst: disFiltered, taps: 5, weightsAt: REF_KERNEL.length }), groups: image },
        { entry: 'energies', params: uniform({ dst: rows, ref: refFiltered, dis: disFiltered }), groups: [Math.ceil(h / ROWS_WORKGROUP), 1] },
      ];
      const totalWords = new Uint32Array([rows, 0, w, h, 0, 0, 0, 0, 0, 0, 0, 0]);
      const code = loadWgsl(SOURCE);
      const entries: Entry[] = ['to_float', 'filter_2d', 'energies', 'total'];
      const pipelines = await Promise.all(
        entries.map((entry) => gpu.createComputePipeline(code, { label: `float_ansnr ${entry} ${layout.bitDepth}-bit`, entryPoint: entry, constants: { BIT_DEPTH: layout.bitDepth } })),
      );
      return new FloatAnsnrKernel(d, new Map(entries.map((e, i) => [e, pipelines[i]!] as const)), passes, work, weights, totalWords);
    } catch (e) {
      for (const b of made) b.destroy();
      throw e;
    }
  }

  encode(encoder: GPUCommandEncoder, inputs: GpuExtractorInputs, out: StatsSlot): void {
    if (out.offset % 8 !== 0) throw new BackendError('E_GPU', `float_ansnr: output offset ${out.offset} is not a multiple of 8`);
    // Each dispatch is its own usage scope: the later passes see the earlier ones' writes.
    const pass = encoder.beginComputePass({ label: 'float_ansnr' });
    for (const p of this.#passes) {
      pass.setPipeline(this.#pipelines.get(p.entry)!);
      pass.setBindGroup(0, this.#bindGroup(p, p.of === 'ref' ? inputs.ref : p.of === 'dis' ? inputs.dis : undefined));
      pass.dispatchWorkgroups(p.groups[0], p.groups[1]);
    }
    pass.setPipeline(this.#pipelines.get('total')!);
    pass.setBindGroup(0, this.#totalBindGroup(out));
    pass.dispatchWorkgroups(1);
    pass.end();
  }

  destroy(): void {
    for (const p of this.#passes) p.params.destroy();
    for (const b of this.#totalParams.values()) b.destroy();
    this.#totalParams.clear();
    this.#work.destroy();
    this.#weights.destroy();
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
      if (p.entry === 'filter_2d') entries.push({ binding: 4, resource: { buffer: this.#weights } });
      return this.#device.createBindGroup({ label: `float_ansnr ${p.entry}`, layout: this.#pipelines.get(p.entry)!.getBindGroupLayout(0), entries });
    });
  }

  #totalBindGroup(out: StatsSlot): GPUBindGroup {
    const word = out.offset / 4;
    let params = this.#totalParams.get(word);
    if (!params) {
      params = this.#device.createBuffer({ size: 4 * PARAMS_WORDS, usage: GPUBufferUsage.UNIFORM, mappedAtCreation: true, label: 'float_ansnr total params' });
      const values = this.#totalWords.slice();
      values[9] = word;
      new Uint32Array(params.getMappedRange()).set(values);
      params.unmap();
      this.#totalParams.set(word, params);
    }
    const buffer = params;
    return this.#cached(`total,${this.#id(out.buffer)},${word}`, () =>
      this.#device.createBindGroup({
        label: 'float_ansnr total',
        layout: this.#pipelines.get('total')!.getBindGroupLayout(0),
        entries: [
          { binding: 1, resource: { buffer: this.#work } },
          { binding: 2, resource: { buffer: out.buffer } },
          { binding: 3, resource: { buffer } },
        ],
      }),
    );
  }
}

export const floatAnsnrGpu: GpuImplementation = {
  supports: (_options, format) => format.width >= MIN_SIDE && format.height >= MIN_SIDE,
  create: (ctx) => FloatAnsnrKernel.create(ctx),
};

/**
 * The binding work shared by the float extractors whose GPU part is a fixed list of passes
 * over the luma in one scratch buffer, ended by one pass that writes the frame's accumulators
 * (float_ansnr, float_motion): the size checks, the scratch and constants buffers, the
 * pipelines, the bind groups (cached per picture and output buffer) and the encoding. Each
 * extractor keeps what differs: its WGSL, its params words, its passes and which picture a
 * to_float pass reads.
 *
 * Every pass's params are a uniform of PARAMS_WORDS u32; bindings: 0 the picture, 1 the
 * scratch, 2 the output, 3 the params, 4 the float constants (filter weights).
 */
import { BackendError } from '../../errors.js';
import type { GpuExtractorContext, GpuPicture } from '../../kernels/gpu/gpu-extractor.js';
import type { StatsSlot } from '../../kernels/gpu/frame-kernel.js';
import { f32Bits, loadWgsl } from '../../kernels/gpu/wgsl.js';
import { createF32Pipeline } from '../../kernels/gpu/f32-probe.js';
import { BindGroupCache, type Bindings, uniformBuffer } from '../../kernels/gpu/bind-groups.js';

export const PARAMS_WORDS = 16;
/** The image passes' workgroup side, and the row passes' rows per workgroup (serial-rows.wgsl's SR_ROWS). */
const WORKGROUP = 16;
const ROWS_WORKGROUP = 16;

export interface FloatPass<E extends string, P extends string> {
  entry: E;
  params: GPUBuffer;
  /** Workgroups in x and y. */
  groups: [number, number];
  /** to_float: which picture it reads. */
  of?: P;
}

/** What a create() gives the extractor's pass list. */
export interface FloatPassesBuilder {
  /** A params uniform holding `words` (zero-padded to PARAMS_WORDS), freed with the kernel. */
  uniform(words: readonly number[]): GPUBuffer;
  /** Workgroups covering the luma (image passes) and its rows (row passes). */
  image: [number, number];
  rows: [number, number];
  /** The luma's float scale (1 at 8 bits, 2^-(depth - 8) above), as float bits. */
  scale: number;
}

export interface FloatPassesSpec<E extends string, P extends string> {
  /** The extractor's name, for labels and errors. */
  name: string;
  /** Its WGSL, relative to WGSL_ROOT. */
  source: string;
  /** Every entry point the passes and the output passes use. */
  entries: readonly E[];
  /** Scratch words. */
  workWords: number;
  /** Float constants bound at 4 for the entries in `constantsFor`. */
  constants: readonly number[];
  constantsFor: readonly E[];
  /** The output passes that read the scratch (binding 1). */
  outReadsWork: readonly E[];
  /** The output passes' params, but the output word at `outWordAt` (set per output slot). */
  outWords: readonly number[];
  outWordAt: number;
  passes(build: FloatPassesBuilder): FloatPass<E, P>[];
}

export class FloatPasses<E extends string, P extends string> {
  readonly #name: string;
  readonly #pipelines: Map<E, GPUComputePipeline>;
  readonly #passes: FloatPass<E, P>[];
  readonly #work: GPUBuffer;
  readonly #constants: GPUBuffer;
  readonly #constantsFor: ReadonlySet<E>;
  readonly #outReadsWork: ReadonlySet<E>;
  readonly #outWords: readonly number[];
  readonly #outWordAt: number;
  /** Bind groups, and the output passes' params per output word (one per rendition block). */
  readonly #cache: BindGroupCache;

  private constructor(spec: FloatPassesSpec<E, P>, device: GPUDevice, pipelines: Map<E, GPUComputePipeline>, passes: FloatPass<E, P>[], work: GPUBuffer, constants: GPUBuffer) {
    this.#name = spec.name;
    this.#pipelines = pipelines;
    this.#passes = passes;
    this.#work = work;
    this.#constants = constants;
    this.#constantsFor = new Set(spec.constantsFor);
    this.#outReadsWork = new Set(spec.outReadsWork);
    this.#outWords = spec.outWords;
    this.#outWordAt = spec.outWordAt;
    this.#cache = new BindGroupCache(device, 256);
  }

  static async create<E extends string, P extends string>(ctx: GpuExtractorContext, spec: FloatPassesSpec<E, P>): Promise<FloatPasses<E, P>> {
    const { gpu, layout } = ctx;
    const { name } = spec;
    const luma = layout.planes[0]!;
    const { width: w, height: h } = luma;
    const d = gpu.device;
    const made: GPUBuffer[] = [];
    const uniform = (words: readonly number[]): GPUBuffer => {
      const b = uniformBuffer(d, words, `${name} params`, 4 * PARAMS_WORDS);
      made.push(b);
      return b;
    };
    try {
      const maxGroups = gpu.limits.maxComputeWorkgroupsPerDimension;
      if (Math.ceil(w / WORKGROUP) > maxGroups || Math.ceil(h / WORKGROUP) > maxGroups || Math.ceil(h / ROWS_WORKGROUP) > maxGroups) {
        throw new BackendError('E_GPU', `${name}: ${w}x${h} exceeds the adapter's ${maxGroups} workgroups per dimension`);
      }
      const words = spec.workWords;
      if (4 * words > gpu.limits.maxStorageBufferBindingSize) {
        throw new BackendError('E_GPU', `${name}: ${4 * words} bytes of scratch exceed the adapter's storage binding limit (${gpu.limits.maxStorageBufferBindingSize})`);
      }
      const work = d.createBuffer({ size: 4 * words, usage: GPUBufferUsage.STORAGE, label: `${name} work` });
      made.push(work);
      const constants = d.createBuffer({ size: 4 * spec.constants.length, usage: GPUBufferUsage.STORAGE, mappedAtCreation: true, label: `${name} constants` });
      made.push(constants);
      new Uint32Array(constants.getMappedRange()).set(spec.constants.map(f32Bits));
      constants.unmap();
      const passes = spec.passes({
        uniform,
        image: [Math.ceil(w / WORKGROUP), Math.ceil(h / WORKGROUP)],
        rows: [Math.ceil(h / ROWS_WORKGROUP), 1],
        scale: f32Bits(layout.bitDepth === 8 ? 1 : 2 ** -(layout.bitDepth - 8)),
      });
      const code = loadWgsl(spec.source);
      const pipelines = await Promise.all(
        spec.entries.map((entry) => createF32Pipeline(gpu, code, { label: `${name} ${entry} ${layout.bitDepth}-bit`, entryPoint: entry, constants: { BIT_DEPTH: layout.bitDepth } })),
      );
      return new FloatPasses(spec, d, new Map(spec.entries.map((e, i) => [e, pipelines[i]!] as const)), passes, work, constants);
    } catch (e) {
      for (const b of made) b.destroy();
      throw e;
    }
  }

  /**
   * One compute pass: the passes (unless `picture` is undefined: then only the output pass),
   * each to_float reading `picture(of)`, then `last` writing the accumulators to `out`.
   */
  encode(encoder: GPUCommandEncoder, out: StatsSlot, picture: ((of: P) => GpuPicture) | undefined, last: E): void {
    if (out.offset % 8 !== 0) throw new BackendError('E_GPU', `${this.#name}: output offset ${out.offset} is not a multiple of 8`);
    const pass = encoder.beginComputePass({ label: this.#name });
    if (picture) {
      // Each dispatch is its own usage scope: the later passes see the earlier ones' writes.
      for (const p of this.#passes) {
        pass.setPipeline(this.#pipelines.get(p.entry)!);
        pass.setBindGroup(0, this.#bindGroup(p, p.of === undefined ? undefined : picture(p.of)));
        pass.dispatchWorkgroups(p.groups[0], p.groups[1]);
      }
    }
    pass.setPipeline(this.#pipelines.get(last)!);
    pass.setBindGroup(0, this.#outBindGroup(last, out));
    pass.dispatchWorkgroups(1);
    pass.end();
  }

  destroy(): void {
    for (const p of this.#passes) p.params.destroy();
    this.#work.destroy();
    this.#constants.destroy();
    this.#cache.destroy();
  }

  #bindGroup(p: FloatPass<E, P>, picture: GpuPicture | undefined): GPUBindGroup {
    const index = this.#passes.indexOf(p);
    const cache = this.#cache;
    const bindings: Bindings = { 1: this.#work, 3: p.params };
    if (picture) bindings[0] = picture.buffer;
    if (this.#constantsFor.has(p.entry)) bindings[4] = this.#constants;
    return cache.group(picture ? `${index},${cache.id(picture.buffer)}` : String(index), this.#pipelines.get(p.entry)!, `${this.#name} ${p.entry}`, bindings);
  }

  #outBindGroup(entry: E, out: StatsSlot): GPUBindGroup {
    const word = out.offset / 4;
    const cache = this.#cache;
    const values = this.#outWords.slice();
    values[this.#outWordAt] = word;
    const bindings: Bindings = { 2: out.buffer, 3: cache.uniform(String(word), values, `${this.#name} out params`, 4 * PARAMS_WORDS) };
    if (this.#outReadsWork.has(entry)) bindings[1] = this.#work;
    return cache.group(`${entry},${cache.id(out.buffer)},${word}`, this.#pipelines.get(entry)!, `${this.#name} ${entry}`, bindings);
  }
}

/**
 * cambi on the GPU (cambi.wgsl): the distorted luma's integer stages (10-bit conversion,
 * anti-dithering, the flat-pixel mask, per scale the decimation, the mode filter and the
 * window counts) and the per-pixel contrast values c, exactly as cambi.cpp computes them.
 * The accumulators are a count of samples above the bit depth's range, then every scale's
 * c values as float bits; cambi.cpp's finishStats pools them as extract() does (libvmaf's
 * top-k selection decides the order of its double sum, so that part stays on the host).
 *
 * The constants that need glibc's pow (the visibility limits) and libvmaf's reciprocal
 * table come from the C++ instance (gpuParams), so both sides use the same numbers.
 * Supported: the distorted alone (no full_ref), measured at the frame's own size (no
 * enc_width/enc_height downscale), max_log_contrast <= 2; the rest runs on the host.
 */
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BackendError } from '../../errors.js';
import { chromaSize } from '../../decode/frame-layout.js';
import type { GpuExtractorContext, GpuExtractorInputs, GpuExtractorKernel, GpuImplementation } from '../../kernels/gpu/gpu-extractor.js';
import type { StatsSlot } from '../../kernels/gpu/frame-kernel.js';
import { loadWgsl, WGSL_ROOT } from '../../kernels/gpu/wgsl.js';
import { loadNative } from '../../kernels/native.js';
import { cambiGeometry } from './cambi-geometry.js';

const SOURCE = relative(WGSL_ROOT, join(dirname(fileURLToPath(import.meta.url)), 'cambi.wgsl'));
const SCALES = 5;
const TILE = 16;
const WEIGHTS = [1, 2, 3, 4, 4, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9];
const WEIGHTS_AT = 32;
const RECIPROCALS_AT = 64;
/** gpuParams' layout (cambi.cpp): ten integers, visible[diffs], the reciprocals. */
const P = { width: 0, height: 1, window: 2, halveFirst: 3, diffs: 4, lowestLuma: 5, bandBase: 6, bandSize: 7, encBitDepth: 8, threshold: 9 } as const;

/**
 * Beyond these the per-frame buffers (a picture of u32 per pixel; every scale's values, which
 * also travel in the readback) stay on the host rather than risk the adapter's binding limit
 * (WebGPU's default, 128 MiB): frames over about 4K at full resolution (8K with a halving
 * cambi_high_res_speedup runs).
 */
const MAX_PICTURE_BYTES = 128 * 2 ** 20;
const MAX_VALUES_BYTES = 64 * 2 ** 20;

/** The sizes of the five scales (cambi.cpp's scaleSizes). */
function scaleSizes(width: number, height: number, halveFirst: boolean): Array<[number, number]> {
  const sizes: Array<[number, number]> = [];
  for (let s = 0; s < SCALES; s++) {
    if (s > 0 || halveFirst) [width, height] = [(width + 1) >> 1, (height + 1) >> 1];
    sizes.push([width, height]);
  }
  return sizes;
}

const valuesBytesOf = (sizes: Array<[number, number]>): number => 8 * Math.ceil(sizes.reduce((n, [w, h]) => n + w * h, 0) / 2);

export const cambiGpu: GpuImplementation = {
  supports(options, format) {
    if (options['full_ref'] === true || (options['max_log_contrast'] as number) > 2) return false;
    // Heatmaps are written by the C++ as it computes each frame's c values: on the host.
    if (typeof options['heatmaps_path'] === 'string' && options['heatmaps_path'] !== '') return false;
    const g = cambiGeometry(options, format);
    if (g.encWidth !== format.width || g.encHeight !== format.height) return false;
    return format.width * format.height * 4 <= MAX_PICTURE_BYTES && valuesBytesOf(scaleSizes(format.width, format.height, g.halve)) <= MAX_VALUES_BYTES;
  },
  create: (ctx) => CambiKernel.create(ctx),
};

/** The fields of cambi.wgsl's Params, in order. */
interface Params {
  width: number;
  height: number;
  srcStride?: number;
  step?: number;
  maskStride?: number;
  maskShift?: number;
  pad?: number;
  outAt?: number;
  picWord?: number;
  bitDepth?: number;
  antiDither?: number;
  threshold?: number;
  diffs?: number;
  lowestLuma?: number;
  bandBase?: number;
  bandSize?: number;
}

const FIELDS = ['width', 'height', 'srcStride', 'step', 'maskStride', 'maskShift', 'pad', 'outAt', 'picWord', 'bitDepth', 'antiDither', 'threshold', 'diffs', 'lowestLuma', 'bandBase', 'bandSize'] as const;

type Entry = 'prepare' | 'zeros' | 'flat' | 'mode' | 'keys' | 'contrast';

interface Dispatch {
  entry: Entry;
  params: GPUBuffer;
  width: number;
  height: number;
  /** Buffers bound as src / dst / mask ('pic' is the frame's). */
  src?: GPUBuffer;
  dst: GPUBuffer;
  mask?: GPUBuffer;
}

export class CambiKernel implements GpuExtractorKernel {
  readonly statsCount: number;
  readonly #ctx: GpuExtractorContext;
  readonly #pipelines: Map<Entry, GPUComputePipeline>;
  readonly #dispatches: Dispatch[];
  readonly #buffers: GPUBuffer[];
  readonly #tables: GPUBuffer;
  readonly #counter: GPUBuffer;
  readonly #values: GPUBuffer;
  readonly #valuesBytes: number;
  readonly #fixedGroups = new Map<Dispatch, GPUBindGroup>();
  readonly #prepareGroups = new WeakMap<GPUBuffer, GPUBindGroup>();

  private constructor(ctx: GpuExtractorContext, pipelines: Map<Entry, GPUComputePipeline>, dispatches: Dispatch[], buffers: GPUBuffer[], tables: GPUBuffer, counter: GPUBuffer, values: GPUBuffer, valuesBytes: number) {
    this.#ctx = ctx;
    this.#pipelines = pipelines;
    this.#dispatches = dispatches;
    this.#buffers = buffers;
    this.#tables = tables;
    this.#counter = counter;
    this.#values = values;
    this.#valuesBytes = valuesBytes;
    this.statsCount = 1 + valuesBytes / 8;
  }

  static async create(ctx: GpuExtractorContext): Promise<CambiKernel> {
    const { gpu, format, options } = ctx;
    const native = loadNative();
    const chroma = chromaSize(format) ?? { width: 0, height: 0 };
    const handle = native.createExtractor('cambi', options, { width: format.width, height: format.height, bitDepth: format.bitDepth, chromaWidth: chroma.width, chromaHeight: chroma.height });
    const p = native.extractorGpuParams(handle);
    const w = p[P.width]!;
    const h = p[P.height]!;
    const diffs = p[P.diffs]!;
    if (w !== format.width || h !== format.height || diffs > 4) throw new BackendError('E_GPU', `cambi: these options do not run on the GPU (${w}x${h}, ${diffs} contrast steps)`);
    const table = new Uint32Array(RECIPROCALS_AT + (p.length - 10 - diffs));
    for (let d = 0; d < diffs; d++) table[d] = p[10 + d]!;
    table.set(WEIGHTS, WEIGHTS_AT);
    new Float32Array(table.buffer, RECIPROCALS_AT * 4).set(p.subarray(10 + diffs));
    const maxBinding = Math.min(gpu.limits.maxStorageBufferBindingSize, gpu.limits.maxBufferSize);
    if (w * h * 4 > maxBinding) throw new BackendError('E_GPU', `cambi: ${w}x${h} needs buffers over this adapter's maxStorageBufferBindingSize (${maxBinding})`);

    const d = gpu.device;
    const made: GPUBuffer[] = [];
    const buffer = (size: number, usage: number, label: string): GPUBuffer => {
      const b = d.createBuffer({ size, usage, label });
      made.push(b);
      return b;
    };
    try {
      const code = loadWgsl(SOURCE);
      const pipelines = new Map<Entry, GPUComputePipeline>();
      for (const entry of ['prepare', 'zeros', 'flat', 'mode', 'keys', 'contrast'] as const) {
        pipelines.set(entry, await gpu.createComputePipeline(code, { label: `cambi ${entry}`, entryPoint: entry }));
      }
      const tables = buffer(table.byteLength, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST, 'cambi tables');
      d.queue.writeBuffer(tables, 0, table);
      const counter = buffer(8, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST, 'cambi range counter');
      const picture = () => buffer(w * h * 4, GPUBufferUsage.STORAGE, 'cambi picture');
      const a = picture();
      const b = picture();
      const mask = picture();
      const keys = picture();
      const halveFirst = p[P.halveFirst] === 1;
      const sizes = scaleSizes(w, h, halveFirst);
      const valuesBytes = valuesBytesOf(sizes);
      if (valuesBytes > maxBinding) throw new BackendError('E_GPU', `cambi: ${w}x${h} needs a ${valuesBytes}-byte buffer, over this adapter's maxStorageBufferBindingSize (${maxBinding})`);
      const values = buffer(valuesBytes, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC, 'cambi contrast values');

      const uniform = (params: Params): GPUBuffer => {
        const u = buffer(FIELDS.length * 4, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, 'cambi params');
        d.queue.writeBuffer(u, 0, new Uint32Array(FIELDS.map((f) => params[f] ?? 0)));
        return u;
      };
      const dispatches: Dispatch[] = [];
      dispatches.push({
        entry: 'prepare',
        params: uniform({ width: w, height: h, picWord: ctx.layout.planes[0]!.offset / 4, bitDepth: format.bitDepth, antiDither: p[P.encBitDepth]! < 10 ? 1 : 0 }),
        width: w,
        height: h,
        dst: a,
      });
      dispatches.push({ entry: 'zeros', params: uniform({ width: w, height: h }), width: w, height: h, src: a, dst: b });
      dispatches.push({ entry: 'flat', params: uniform({ width: w, height: h, threshold: p[P.threshold]! }), width: w, height: h, src: b, dst: mask });
      const band = { diffs, lowestLuma: p[P.lowestLuma]!, bandBase: p[P.bandBase]!, bandSize: p[P.bandSize]! };
      let from = a;
      let to = b;
      let fromWidth = w;
      let outAt = 0;
      sizes.forEach(([width, height], s) => {
        const step = s > 0 || halveFirst ? 2 : 1;
        dispatches.push({ entry: 'mode', params: uniform({ width, height, srcStride: fromWidth, step }), width, height, src: from, dst: to });
        const maskShift = s + (halveFirst ? 1 : 0);
        dispatches.push({ entry: 'keys', params: uniform({ width, height, maskStride: w, maskShift, ...band }), width, height, src: to, dst: keys, mask });
        dispatches.push({ entry: 'contrast', params: uniform({ width, height, pad: p[P.window]! >> 1, outAt, ...band }), width, height, src: keys, dst: values });
        outAt += width * height;
        [from, to] = [to, from];
        fromWidth = width;
      });
      return new CambiKernel(ctx, pipelines, dispatches, made, tables, counter, values, valuesBytes);
    } catch (e) {
      for (const m of made) m.destroy();
      throw e;
    }
  }

  encode(encoder: GPUCommandEncoder, inputs: GpuExtractorInputs, out: StatsSlot): void {
    if (out.offset % 8 !== 0) throw new BackendError('E_GPU', `cambi: output offset ${out.offset} is not a multiple of 8`);
    encoder.clearBuffer(this.#counter);
    const pass = encoder.beginComputePass({ label: 'cambi' });
    for (const dispatch of this.#dispatches) {
      pass.setPipeline(this.#pipelines.get(dispatch.entry)!);
      pass.setBindGroup(0, this.#bindGroup(dispatch, inputs.dis.buffer));
      pass.dispatchWorkgroups(Math.ceil(dispatch.width / TILE), Math.ceil(dispatch.height / TILE));
    }
    pass.end();
    encoder.copyBufferToBuffer(this.#counter, 0, out.buffer, out.offset, 8);
    encoder.copyBufferToBuffer(this.#values, 0, out.buffer, out.offset + 8, this.#valuesBytes);
  }

  destroy(): void {
    for (const b of this.#buffers) b.destroy();
    this.#fixedGroups.clear();
  }

  #bindGroup(dispatch: Dispatch, pic: GPUBuffer): GPUBindGroup {
    if (dispatch.entry === 'prepare') {
      // The frame's picture changes with the upload ring: one group per picture buffer.
      let group = this.#prepareGroups.get(pic);
      if (!group) this.#prepareGroups.set(pic, (group = this.#make(dispatch, pic)));
      return group;
    }
    let group = this.#fixedGroups.get(dispatch);
    if (!group) this.#fixedGroups.set(dispatch, (group = this.#make(dispatch, pic)));
    return group;
  }

  #make(dispatch: Dispatch, pic: GPUBuffer): GPUBindGroup {
    const pipeline = this.#pipelines.get(dispatch.entry)!;
    const entries: GPUBindGroupEntry[] = [{ binding: 2, resource: { buffer: dispatch.dst } }, { binding: 4, resource: { buffer: dispatch.params } }];
    if (dispatch.entry === 'prepare') {
      entries.push({ binding: 0, resource: { buffer: pic } }, { binding: 6, resource: { buffer: this.#counter } });
    } else {
      entries.push({ binding: 1, resource: { buffer: dispatch.src! } });
    }
    if (dispatch.entry === 'keys') entries.push({ binding: 3, resource: { buffer: dispatch.mask! } });
    if (dispatch.entry === 'contrast') entries.push({ binding: 5, resource: { buffer: this.#tables } });
    return this.#ctx.gpu.device.createBindGroup({ label: `cambi ${dispatch.entry}`, layout: pipeline.getBindGroupLayout(0), entries });
  }
}

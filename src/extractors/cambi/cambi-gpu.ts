/**
 * cambi on the GPU: per picture (cambi-picture.ts: the distorted at the encode size and,
 * with full_ref, the reference at the source size, each with its own scratch) the luma's
 * integer stages (10-bit conversion, anti-dithering, the flat-pixel mask, per scale the
 * decimation, the mode filter and the window counts) and the per-pixel contrast values c,
 * exactly as cambi.cpp computes them (cambi.wgsl). Then each scale's top-k pooling
 * (cambi-pool.wgsl): the k-th largest c value by a radix selection, the exact sum of those
 * above it and what proves the double sum exact, so a frame reads back 22 accumulators per
 * picture (cambi.cpp's finishStats) instead of every c value. libvmaf's selection decides
 * the order of its double sum; where the exact total does not prove every order gives the
 * same double, finishStats says so (NaN) and finish() pools that frame on the host from a
 * copy of its values, in libvmaf's order (poolScale below).
 *
 * The constants that need glibc's pow (the visibility limits) and libvmaf's reciprocal
 * table come from the C++ instance (gpuParams), so both sides use the same numbers, as do
 * the samples each picture picks from the frame (enc_width/enc_height, src_width/src_height).
 * Supported: max_log_contrast <= 2, no heatmaps; the rest runs on the host.
 */
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BackendError } from '../../errors.js';
import { chromaSize } from '../../decode/frame-layout.js';
import type { GpuExtractorContext, GpuExtractorInputs, GpuExtractorKernel, GpuImplementation, NativeFinish } from '../../kernels/gpu/gpu-extractor.js';
import type { StatsSlot } from '../../kernels/gpu/frame-kernel.js';
import { loadWgsl, WGSL_ROOT } from '../../kernels/gpu/wgsl.js';
import { loadNative } from '../../kernels/native.js';
import { cambiGeometry } from './cambi-geometry.js';
import {
  CambiPicture,
  type CambiPictureGeometry,
  type CambiShared,
  type Entry,
  type PoolEntry,
  RECIPROCALS,
  SCALE_STATS,
  SCALES,
  scaleSizes,
  valuesBytesOf,
} from './cambi-picture.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const SOURCE = relative(WGSL_ROOT, join(HERE, 'cambi.wgsl'));
const POOL_SOURCE = relative(WGSL_ROOT, join(HERE, 'cambi-pool.wgsl'));
/** Accumulators per picture, after the two of the frame. */
const PICTURE_STATS = SCALES * SCALE_STATS;
/**
 * Copies of the values kept for frames encoded and not yet finished (frames in flight times
 * renditions): beyond this many bytes (and 64 copies), finish() is not being called.
 */
const MAX_SLOT_BYTES = 2 * 2 ** 30;
const MIN_SLOTS = 64;
/** gpuParams' layout (cambi.cpp): seven integers, visible[diffs], the reciprocals, then per picture four and its picks. */
const P = { halveFirst: 0, diffs: 1, lowestLuma: 2, bandBase: 3, bandSize: 4, encBitDepth: 5, pictures: 6 } as const;
const HEAD = 7;
const PASS: GPUComputePassDescriptor = { label: 'cambi' };

/**
 * Beyond these the per-frame buffers (a picture of u32 per pixel; every scale's values, of which
 * each frame in flight keeps a copy) stay on the host rather than risk the adapter's binding limit
 * (WebGPU's default, 128 MiB): pictures over about 4K at full resolution (8K with a halving
 * cambi_high_res_speedup runs).
 */
const MAX_PICTURE_BYTES = 128 * 2 ** 20;
const MAX_VALUES_BYTES = 64 * 2 ** 20;

export const cambiGpu: GpuImplementation = {
  supports(options, format) {
    if ((options['max_log_contrast'] as number) > 2) return false;
    // Heatmaps are written by the C++ as it computes each frame's c values: on the host.
    if (typeof options['heatmaps_path'] === 'string' && options['heatmaps_path'] !== '') return false;
    const g = cambiGeometry(options, format);
    // The distorted at the encode size (at most the frame's), the reference at the source
    // size (which may exceed the frame's: libvmaf picks samples up to it).
    const pictures: Array<[number, number]> = [[format.width, format.height]];
    if (options['full_ref'] === true) pictures.push([g.srcWidth, g.srcHeight]);
    return pictures.every(([w, h]) => w * h * 4 <= MAX_PICTURE_BYTES && valuesBytesOf(scaleSizes(w, h, g.halve)) <= MAX_VALUES_BYTES);
  },
  create: (ctx) => CambiKernel.create(ctx),
};

/** A frame's copy of its c values (every picture's), kept until finish() (the host pools from it when it must). */
interface Slot {
  id: number;
  values: GPUBuffer;
  /** The id as an accumulator, copied into the frame's stats. */
  idBuffer: GPUBuffer;
}

/**
 * How the frames were pooled in this process (tests read it): on the GPU, or on the host from
 * the values because the GPU's sums could not be proven libvmaf's. `forceHost` makes every
 * frame take the host's way (tests, to check it against the cpu backend).
 */
export const cambiPooling = { gpu: 0, host: 0, forceHost: false };

/** cambi.cpp's poolScale: the first k of c become the k largest (its selection), their mean in that order. */
export function poolScale(c: Float32Array, topk: number): number {
  const n = c.length;
  const k = Math.min(Math.max(Math.trunc(topk * n), 1), n);
  if (k !== n) {
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const pivot = c[k]!;
      let i = lo;
      let j = hi;
      do {
        while (c[i]! > pivot) i++;
        while (c[j]! < pivot) j--;
        if (i <= j) {
          const t = c[i]!;
          c[i] = c[j]!;
          c[j] = t;
          i++;
          j--;
        }
      } while (i <= j);
      if (j < k) lo = i;
      if (k < i) hi = j;
    }
  }
  let sum = 0;
  for (let i = 0; i < k; i++) sum += c[i]!;
  return sum / k;
}

/** cambi.cpp's gpuParams, decoded: what the pictures share, and each picture's geometry. */
function decodeParams(p: Float64Array, topk: number): { shared: CambiShared; pictures: CambiPictureGeometry[] } {
  const diffs = p[P.diffs]!;
  const count = p[P.pictures]!;
  if (diffs > 4 || count < 1 || count > 2) throw new BackendError('E_GPU', `cambi: these options do not run on the GPU (${diffs} contrast steps)`);
  const shared: CambiShared = {
    halveFirst: p[P.halveFirst] === 1,
    diffs,
    lowestLuma: p[P.lowestLuma]!,
    bandBase: p[P.bandBase]!,
    bandSize: p[P.bandSize]!,
    encBitDepth: p[P.encBitDepth]!,
    visible: p.subarray(HEAD, HEAD + diffs),
    reciprocals: p.subarray(HEAD + diffs, HEAD + diffs + RECIPROCALS),
    topk,
  };
  const pictures: CambiPictureGeometry[] = [];
  let at = HEAD + diffs + RECIPROCALS;
  for (let i = 0; i < count; i++) {
    const [width, height, window, threshold] = [p[at]!, p[at + 1]!, p[at + 2]!, p[at + 3]!];
    at += 4;
    pictures.push({ width, height, window, threshold, cols: p.subarray(at, at + width), rows: p.subarray(at + width, at + width + height) });
    at += width + height;
  }
  if (at !== p.length) throw new BackendError('E_GPU', `cambi: gpuParams holds ${p.length} numbers, ${at} expected`);
  return { shared, pictures };
}

export class CambiKernel implements GpuExtractorKernel {
  readonly statsCount: number;
  readonly #ctx: GpuExtractorContext;
  /** The distorted, then (full_ref) the reference. */
  readonly #pictures: CambiPicture[];
  readonly #counter: GPUBuffer;
  /** Bytes of a frame's copy of every picture's values, and where each picture's start. */
  readonly #valuesBytes: number;
  readonly #valuesAt: number[];
  readonly #topk: number;
  readonly #free: Slot[] = [];
  readonly #busy = new Map<number, Slot>();
  #slots = 0;

  private constructor(ctx: GpuExtractorContext, pictures: CambiPicture[], counter: GPUBuffer, topk: number) {
    this.#ctx = ctx;
    this.#pictures = pictures;
    this.#counter = counter;
    this.#topk = topk;
    this.statsCount = 2 + pictures.length * PICTURE_STATS;
    let bytes = 0;
    this.#valuesAt = pictures.map((pic) => {
      const at = bytes;
      bytes += pic.valuesBytes;
      return at;
    });
    this.#valuesBytes = bytes;
  }

  static async create(ctx: GpuExtractorContext): Promise<CambiKernel> {
    const { gpu, format, options } = ctx;
    const native = loadNative();
    const chroma = chromaSize(format) ?? { width: 0, height: 0 };
    const handle = native.createExtractor('cambi', options, { width: format.width, height: format.height, bitDepth: format.bitDepth, chromaWidth: chroma.width, chromaHeight: chroma.height });
    // cambi.cpp's topk: topk unless left at its default, then cambi_topk.
    const topk = (options['topk'] as number) !== 0.6 ? (options['topk'] as number) : (options['cambi_topk'] as number);
    const { shared, pictures } = decodeParams(native.extractorGpuParams(handle), topk);
    const maxBinding = Math.min(gpu.limits.maxStorageBufferBindingSize, gpu.limits.maxBufferSize);
    const d = gpu.device;

    // Dawn compiles pipelines on its own threads: all nine at once, not one after another.
    const compile = <E extends string>(source: string, entries: readonly E[]): Promise<Map<E, GPUComputePipeline>> => {
      const code = loadWgsl(source);
      return Promise.all(entries.map((entry) => gpu.createComputePipeline(code, { label: `cambi ${entry}`, entryPoint: entry })))
        .then((made) => new Map(entries.map((entry, i) => [entry, made[i]!])));
    };
    const [pipelines, poolPipelines] = await Promise.all([
      compile<Entry>(SOURCE, ['prepare', 'flat', 'mode', 'contrast']),
      compile<PoolEntry>(POOL_SOURCE, ['hist_pass', 'chunk_pass', 'select_pass', 'sum_pass', 'total_pass']),
    ]);
    const counter = d.createBuffer({ size: 8, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST, label: 'cambi range counter' });
    const made: CambiPicture[] = [];
    try {
      const frame = { width: format.width, height: format.height, bitDepth: format.bitDepth, picWord: ctx.layout.planes[0]!.offset / 4 };
      const pictureCtx = { device: d, pipelines, poolPipelines, counter, frame, maxBinding };
      pictures.forEach((g, i) => made.push(CambiPicture.create(pictureCtx, i === 0 ? 'dis' : 'ref', shared, g)));
      return new CambiKernel(ctx, made, counter, topk);
    } catch (e) {
      for (const m of made) m.destroy();
      counter.destroy();
      throw e;
    }
  }

  encode(encoder: GPUCommandEncoder, inputs: GpuExtractorInputs, out: StatsSlot): void {
    if (out.offset % 8 !== 0) throw new BackendError('E_GPU', `cambi: output offset ${out.offset} is not a multiple of 8`);
    const slot = this.#acquire();
    const pictures = this.#pictures;
    // The pooling writes every result word each frame (cambi-pool.wgsl): only the count is cleared.
    encoder.clearBuffer(this.#counter);
    const pass = encoder.beginComputePass(PASS);
    for (let i = 0; i < pictures.length; i++) pictures[i]!.encodePasses(pass, inputs);
    pass.end();
    encoder.copyBufferToBuffer(this.#counter, 0, out.buffer, out.offset, 8);
    encoder.copyBufferToBuffer(slot.idBuffer, 0, out.buffer, out.offset + 8, 8);
    for (let i = 0; i < pictures.length; i++) {
      const picture = pictures[i]!;
      encoder.copyBufferToBuffer(picture.result, 0, out.buffer, out.offset + 16 + i * PICTURE_STATS * 8, PICTURE_STATS * 8);
      encoder.copyBufferToBuffer(picture.values, 0, slot.values, this.#valuesAt[i]!, picture.valuesBytes);
    }
  }

  /**
   * The frame's values from its accumulators (cambi.cpp's finishStats); where that cannot
   * prove the GPU's sums equal libvmaf's (NaN), every picture's scales pooled here from the
   * frame's values, in libvmaf's order, and handed to finishStats in their place.
   */
  async finish(stats: BigUint64Array, finishNative: NativeFinish): Promise<Float64Array> {
    const id = Number(stats[1]! & 0xffffffffn);
    try {
      const out = await finishNative(stats);
      if (!Number.isNaN(out[0]) && !cambiPooling.forceHost) {
        cambiPooling.gpu++;
        return out;
      }
      cambiPooling.host++;
      const slot = this.#busy.get(id);
      if (!slot) throw new BackendError('E_GPU', `cambi: no values kept for frame slot ${id}`);
      const all = await this.#ctx.gpu.read(slot.values, this.#valuesBytes);
      const given = stats.slice();
      given[1] = given[1]! | (1n << 63n);
      const bits = new BigUint64Array(1);
      const asDouble = new Float64Array(bits.buffer);
      this.#pictures.forEach((picture, i) => {
        const c = new Float32Array(all, this.#valuesAt[i]!, picture.valuesBytes / 4);
        picture.scales.forEach((scale, s) => {
          asDouble[0] = poolScale(c.subarray(scale.at, scale.at + scale.count), this.#topk);
          given[2 + i * PICTURE_STATS + s * SCALE_STATS + 1] = bits[0]!;
        });
      });
      return await finishNative(given);
    } finally {
      this.#release(id);
    }
  }

  destroy(): void {
    for (const picture of this.#pictures) picture.destroy();
    this.#counter.destroy();
    for (const slot of [...this.#free, ...this.#busy.values()]) {
      slot.values.destroy();
      slot.idBuffer.destroy();
    }
    this.#free.length = 0;
    this.#busy.clear();
  }

  #acquire(): Slot {
    let slot = this.#free.pop();
    if (!slot) {
      const most = Math.max(MIN_SLOTS, Math.floor(MAX_SLOT_BYTES / this.#valuesBytes));
      if (this.#slots >= most) throw new BackendError('E_GPU', `cambi: more than ${most} frames encoded and not finished`);
      const d = this.#ctx.gpu.device;
      const id = this.#slots++;
      const idBuffer = d.createBuffer({ size: 8, usage: GPUBufferUsage.COPY_SRC, mappedAtCreation: true, label: 'cambi slot id' });
      new Uint32Array(idBuffer.getMappedRange()).set([id, 0]);
      idBuffer.unmap();
      slot = { id, values: d.createBuffer({ size: this.#valuesBytes, usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC, label: 'cambi frame values' }), idBuffer };
    }
    this.#busy.set(slot.id, slot);
    return slot;
  }

  #release(id: number): void {
    const slot = this.#busy.get(id);
    if (!slot) return;
    this.#busy.delete(id);
    this.#free.push(slot);
  }
}

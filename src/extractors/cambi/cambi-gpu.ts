/**
 * cambi on the GPU (cambi.wgsl): the distorted luma's integer stages (10-bit conversion,
 * anti-dithering, the flat-pixel mask, per scale the decimation, the mode filter and the
 * window counts) and the per-pixel contrast values c, exactly as cambi.cpp computes them.
 * Then each scale's top-k pooling (cambi-pool.wgsl): the k-th largest c value by a radix
 * selection, the exact sum of those above it and what proves the double sum exact, so a
 * frame reads back 22 accumulators (cambi.cpp's finishStats) instead of every c value.
 * libvmaf's selection decides the order of its double sum; where the exact total does not
 * prove every order gives the same double, finishStats says so (NaN) and finish() pools that
 * frame on the host from a copy of its values, in libvmaf's order (poolScale below).
 *
 * The constants that need glibc's pow (the visibility limits) and libvmaf's reciprocal
 * table come from the C++ instance (gpuParams), so both sides use the same numbers.
 * Supported: the distorted alone (no full_ref), at the frame's size or an encode size below
 * it (enc_width/enc_height: the samples cambi.cpp picks, from its gpuParams),
 * max_log_contrast <= 2; the rest runs on the host.
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

const HERE = dirname(fileURLToPath(import.meta.url));
const SOURCE = relative(WGSL_ROOT, join(HERE, 'cambi.wgsl'));
const POOL_SOURCE = relative(WGSL_ROOT, join(HERE, 'cambi-pool.wgsl'));
/** Values per workgroup of the pooling passes (REDUCE_WG_SIZE * ITEMS in cambi-pool.wgsl). */
const POOL_CHUNK = 1024;
const HIST_BYTES = 65536 * 4;
/** Accumulators per scale in the stats (cambi.cpp's finishStats), after the two of the frame. */
const SCALE_STATS = 4;
/**
 * Copies of the values kept for frames encoded and not yet finished (frames in flight times
 * renditions): beyond this many bytes (and 64 copies), finish() is not being called.
 */
const MAX_SLOT_BYTES = 2 * 2 ** 30;
const MIN_SLOTS = 64;
const SCALES = 5;
const TILE = 16;
const WEIGHTS = [1, 2, 3, 4, 4, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9];
const WEIGHTS_AT = 32;
const RECIPROCALS_AT = 64;
/** libvmaf's table of reciprocals (cambi.cpp's kReciprocals); the encode size's picks follow it. */
const RECIPROCALS = 4226;
/** gpuParams' layout (cambi.cpp): ten integers, visible[diffs], the reciprocals. */
const P = { width: 0, height: 1, window: 2, halveFirst: 3, diffs: 4, lowestLuma: 5, bandBase: 6, bandSize: 7, encBitDepth: 8, threshold: 9 } as const;

/**
 * Beyond these the per-frame buffers (a picture of u32 per pixel; every scale's values, of which
 * each frame in flight keeps a copy) stay on the host rather than risk the adapter's binding limit
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

type Entry = 'range' | 'prepare' | 'zeros' | 'flat' | 'mode' | 'keys' | 'contrast';
type PoolEntry = 'hist_pass' | 'select_pass' | 'sum_pass';

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

/** One scale's pooling: its passes' uniforms (select level 0 and 1) and sizes. */
interface PoolScale {
  count: number;
  at: number;
  k: number;
  groups: number;
  /** Its first i64 in the partials buffer (low halves, then high halves). */
  partials: number;
  level0: GPUBindGroup[];
  level1: GPUBindGroup[];
}

/** A frame's copy of its c values, kept until finish() (the host pools from it when it must). */
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

export class CambiKernel implements GpuExtractorKernel {
  readonly statsCount = 2 + SCALES * SCALE_STATS;
  readonly #ctx: GpuExtractorContext;
  readonly #pipelines: Map<Entry, GPUComputePipeline>;
  readonly #poolPipelines: Map<PoolEntry, GPUComputePipeline>;
  readonly #dispatches: Dispatch[];
  readonly #buffers: GPUBuffer[];
  readonly #tables: GPUBuffer;
  readonly #counter: GPUBuffer;
  readonly #values: GPUBuffer;
  readonly #valuesBytes: number;
  readonly #result: GPUBuffer;
  readonly #partials: GPUBuffer;
  readonly #scales: PoolScale[];
  readonly #topk: number;
  readonly #fixedGroups = new Map<Dispatch, GPUBindGroup>();
  /** Per dispatch that reads the frame's picture, its groups per picture buffer (the upload ring). */
  readonly #pictureGroups = new Map<Dispatch, WeakMap<GPUBuffer, GPUBindGroup>>();
  readonly #free: Slot[] = [];
  readonly #busy = new Map<number, Slot>();
  #slots = 0;

  private constructor(
    ctx: GpuExtractorContext,
    pipelines: Map<Entry, GPUComputePipeline>,
    poolPipelines: Map<PoolEntry, GPUComputePipeline>,
    dispatches: Dispatch[],
    buffers: GPUBuffer[],
    bufs: { tables: GPUBuffer; counter: GPUBuffer; values: GPUBuffer; valuesBytes: number; result: GPUBuffer; partials: GPUBuffer },
    scales: PoolScale[],
    topk: number,
  ) {
    this.#ctx = ctx;
    this.#pipelines = pipelines;
    this.#poolPipelines = poolPipelines;
    this.#dispatches = dispatches;
    this.#buffers = buffers;
    this.#tables = bufs.tables;
    this.#counter = bufs.counter;
    this.#values = bufs.values;
    this.#valuesBytes = bufs.valuesBytes;
    this.#result = bufs.result;
    this.#partials = bufs.partials;
    this.#scales = scales;
    this.#topk = topk;
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
    if (w > format.width || h > format.height || diffs > 4 || p.length !== 10 + diffs + RECIPROCALS + w + h) {
      throw new BackendError('E_GPU', `cambi: these options do not run on the GPU (${w}x${h}, ${diffs} contrast steps)`);
    }
    // visible[diffs], the weights, the reciprocals, then the frame column and row of each encode-size sample.
    const table = new Uint32Array(RECIPROCALS_AT + RECIPROCALS + w + h);
    for (let d = 0; d < diffs; d++) table[d] = p[10 + d]!;
    table.set(WEIGHTS, WEIGHTS_AT);
    new Float32Array(table.buffer, RECIPROCALS_AT * 4, RECIPROCALS).set(p.subarray(10 + diffs, 10 + diffs + RECIPROCALS));
    table.set(p.subarray(10 + diffs + RECIPROCALS), RECIPROCALS_AT + RECIPROCALS);
    const maxBinding = Math.min(gpu.limits.maxStorageBufferBindingSize, gpu.limits.maxBufferSize);
    if (w * h * 4 > maxBinding) throw new BackendError('E_GPU', `cambi: ${w}x${h} needs buffers over this adapter's maxStorageBufferBindingSize (${maxBinding})`);
    // cambi.cpp's topk: topk unless left at its default, then cambi_topk.
    const topk = (options['topk'] as number) !== 0.6 ? (options['topk'] as number) : (options['cambi_topk'] as number);

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
      for (const entry of ['range', 'prepare', 'zeros', 'flat', 'mode', 'keys', 'contrast'] as const) {
        pipelines.set(entry, await gpu.createComputePipeline(code, { label: `cambi ${entry}`, entryPoint: entry }));
      }
      const poolCode = loadWgsl(POOL_SOURCE);
      const poolPipelines = new Map<PoolEntry, GPUComputePipeline>();
      for (const entry of ['hist_pass', 'select_pass', 'sum_pass'] as const) {
        poolPipelines.set(entry, await gpu.createComputePipeline(poolCode, { label: `cambi ${entry}`, entryPoint: entry }));
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

      const uniformOf = (words: number[], label: string): GPUBuffer => {
        const u = buffer(words.length * 4, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, label);
        d.queue.writeBuffer(u, 0, new Uint32Array(words));
        return u;
      };
      const uniform = (params: Params): GPUBuffer => uniformOf(FIELDS.map((f) => params[f] ?? 0), 'cambi params');
      const dispatches: Dispatch[] = [];
      const picWord = ctx.layout.planes[0]!.offset / 4;
      dispatches.push({
        entry: 'range',
        params: uniform({ width: format.width, height: format.height, srcStride: format.width, picWord, bitDepth: format.bitDepth }),
        width: format.width,
        height: format.height,
        dst: a,
      });
      dispatches.push({
        entry: 'prepare',
        params: uniform({ width: w, height: h, srcStride: format.width, picWord, bitDepth: format.bitDepth, antiDither: p[P.encBitDepth]! < 10 ? 1 : 0 }),
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

      // The pooling: a histogram shared by the scales (select zeroes it after use), each
      // scale's 8 result words, the sum's per-workgroup partials.
      const hist = buffer(HIST_BYTES, GPUBufferUsage.STORAGE, 'cambi pooling histogram');
      const result = buffer(SCALES * SCALE_STATS * 8, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST, 'cambi pooling result');
      const groupsOf = sizes.map(([sw, sh]) => Math.ceil((sw * sh) / POOL_CHUNK));
      if (groupsOf[0]! > 65535) throw new BackendError('E_GPU', `cambi: ${w}x${h} is too large for the pooling passes`);
      const partials = buffer(8 * 2 * groupsOf.reduce((n, g) => n + g, 0), GPUBufferUsage.STORAGE, 'cambi pooling partials');
      const layoutOf = (entry: PoolEntry) => poolPipelines.get(entry)!.getBindGroupLayout(0);
      const scales: PoolScale[] = [];
      let at = 0;
      let partialAt = 0;
      sizes.forEach(([sw, sh], s) => {
        const count = sw * sh;
        const k = Math.min(Math.max(Math.trunc(topk * count), 1), count);
        const groups = groupsOf[s]!;
        const groupsFor = (level: number): GPUBindGroup[] => {
          const params = { buffer: uniformOf([count, at, k, level, s * SCALE_STATS * 2, partialAt, groups, 0], 'cambi pooling params') };
          return [
            d.createBindGroup({ label: 'cambi hist', layout: layoutOf('hist_pass'), entries: [{ binding: 0, resource: { buffer: values } }, { binding: 1, resource: { buffer: hist } }, { binding: 2, resource: { buffer: result } }, { binding: 3, resource: params }] }),
            d.createBindGroup({ label: 'cambi select', layout: layoutOf('select_pass'), entries: [{ binding: 1, resource: { buffer: hist } }, { binding: 2, resource: { buffer: result } }, { binding: 3, resource: params }] }),
            d.createBindGroup({ label: 'cambi sum', layout: layoutOf('sum_pass'), entries: [{ binding: 0, resource: { buffer: values } }, { binding: 2, resource: { buffer: result } }, { binding: 3, resource: params }, { binding: 4, resource: { buffer: partials } }] }),
          ];
        };
        scales.push({ count, at, k, groups, partials: partialAt, level0: groupsFor(0), level1: groupsFor(1) });
        at += count;
        partialAt += 2 * groups;
      });
      return new CambiKernel(ctx, pipelines, poolPipelines, dispatches, made, { tables, counter, values, valuesBytes, result, partials }, scales, topk);
    } catch (e) {
      for (const m of made) m.destroy();
      throw e;
    }
  }

  encode(encoder: GPUCommandEncoder, inputs: GpuExtractorInputs, out: StatsSlot): void {
    if (out.offset % 8 !== 0) throw new BackendError('E_GPU', `cambi: output offset ${out.offset} is not a multiple of 8`);
    const slot = this.#acquire();
    encoder.clearBuffer(this.#counter);
    encoder.clearBuffer(this.#result);
    const pass = encoder.beginComputePass({ label: 'cambi' });
    for (const dispatch of this.#dispatches) {
      pass.setPipeline(this.#pipelines.get(dispatch.entry)!);
      pass.setBindGroup(0, this.#bindGroup(dispatch, inputs.dis.buffer));
      pass.dispatchWorkgroups(Math.ceil(dispatch.width / TILE), Math.ceil(dispatch.height / TILE));
    }
    const hist = this.#poolPipelines.get('hist_pass')!;
    const select = this.#poolPipelines.get('select_pass')!;
    const sum = this.#poolPipelines.get('sum_pass')!;
    for (const scale of this.#scales) {
      for (const groups of [scale.level0, scale.level1]) {
        pass.setPipeline(hist);
        pass.setBindGroup(0, groups[0]!);
        pass.dispatchWorkgroups(scale.groups);
        pass.setPipeline(select);
        pass.setBindGroup(0, groups[1]!);
        pass.dispatchWorkgroups(1);
      }
      pass.setPipeline(sum);
      pass.setBindGroup(0, scale.level1[2]!);
      pass.dispatchWorkgroups(scale.groups);
    }
    pass.end();
    this.#scales.forEach((scale, s) => {
      this.#ctx.reducer.encode(encoder, {
        input: this.#partials,
        count: scale.groups,
        segments: 2,
        inputOffset: scale.partials,
        inputStride: scale.groups,
        output: this.#result,
        outputOffset: s * SCALE_STATS + 1,
      });
    });
    encoder.copyBufferToBuffer(this.#counter, 0, out.buffer, out.offset, 8);
    encoder.copyBufferToBuffer(slot.idBuffer, 0, out.buffer, out.offset + 8, 8);
    encoder.copyBufferToBuffer(this.#result, 0, out.buffer, out.offset + 16, SCALES * SCALE_STATS * 8);
    encoder.copyBufferToBuffer(this.#values, 0, slot.values, 0, this.#valuesBytes);
  }

  /**
   * The frame's value from its accumulators (cambi.cpp's finishStats); where that cannot
   * prove the GPU's sums equal libvmaf's (NaN), the frame's scales pooled here from its
   * values, in libvmaf's order, and handed to finishStats in their place.
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
      const c = new Float32Array(await this.#ctx.gpu.read(slot.values, this.#valuesBytes));
      const given = stats.slice();
      given[1] = given[1]! | (1n << 63n);
      const bits = new BigUint64Array(1);
      const asDouble = new Float64Array(bits.buffer);
      this.#scales.forEach((scale, s) => {
        asDouble[0] = poolScale(c.subarray(scale.at, scale.at + scale.count), this.#topk);
        given[2 + s * SCALE_STATS + 1] = bits[0]!;
      });
      return await finishNative(given);
    } finally {
      this.#release(id);
    }
  }

  destroy(): void {
    for (const b of this.#buffers) b.destroy();
    for (const slot of [...this.#free, ...this.#busy.values()]) {
      slot.values.destroy();
      slot.idBuffer.destroy();
    }
    this.#free.length = 0;
    this.#busy.clear();
    this.#fixedGroups.clear();
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

  #bindGroup(dispatch: Dispatch, pic: GPUBuffer): GPUBindGroup {
    if (dispatch.entry === 'prepare' || dispatch.entry === 'range') {
      // The frame's picture changes with the upload ring: one group per picture buffer.
      let byPicture = this.#pictureGroups.get(dispatch);
      if (!byPicture) this.#pictureGroups.set(dispatch, (byPicture = new WeakMap()));
      let group = byPicture.get(pic);
      if (!group) byPicture.set(pic, (group = this.#make(dispatch, pic)));
      return group;
    }
    let group = this.#fixedGroups.get(dispatch);
    if (!group) this.#fixedGroups.set(dispatch, (group = this.#make(dispatch, pic)));
    return group;
  }

  #make(dispatch: Dispatch, pic: GPUBuffer): GPUBindGroup {
    const pipeline = this.#pipelines.get(dispatch.entry)!;
    const layout = pipeline.getBindGroupLayout(0);
    if (dispatch.entry === 'range') {
      const entries = [{ binding: 0, resource: { buffer: pic } }, { binding: 4, resource: { buffer: dispatch.params } }, { binding: 6, resource: { buffer: this.#counter } }];
      return this.#ctx.gpu.device.createBindGroup({ label: 'cambi range', layout, entries });
    }
    const entries: GPUBindGroupEntry[] = [{ binding: 2, resource: { buffer: dispatch.dst } }, { binding: 4, resource: { buffer: dispatch.params } }];
    if (dispatch.entry === 'prepare') {
      entries.push({ binding: 0, resource: { buffer: pic } }, { binding: 5, resource: { buffer: this.#tables } });
    } else {
      entries.push({ binding: 1, resource: { buffer: dispatch.src! } });
    }
    if (dispatch.entry === 'keys') entries.push({ binding: 3, resource: { buffer: dispatch.mask! } });
    if (dispatch.entry === 'contrast') entries.push({ binding: 5, resource: { buffer: this.#tables } });
    return this.#ctx.gpu.device.createBindGroup({ label: `cambi ${dispatch.entry}`, layout, entries });
  }
}

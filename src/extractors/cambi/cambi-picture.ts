/**
 * One picture's CAMBI on the GPU (the distorted at the encode size, or with full_ref the
 * reference at the source size): its per-pixel passes (cambi.wgsl) and each scale's top-k
 * pooling (cambi-pool.wgsl), with its own scratch, tables and results, so that the two
 * pictures of a full_ref frame share only the compiled pipelines and the range counter.
 * cambi-gpu.ts drives it and reads its 20 accumulators (4 per scale, cambi.cpp's
 * finishStats layout) and, where the host must pool, its c values.
 */
import { BackendError } from '../../errors.js';
import type { GpuExtractorInputs } from '../../kernels/gpu/gpu-extractor.js';
import type { I64Reducer } from '../../kernels/gpu/reduce-i64.js';

export const SCALES = 5;
/** Accumulators per scale (cambi.cpp's finishStats). */
export const SCALE_STATS = 4;
/** Values per workgroup of the pooling passes (REDUCE_WG_SIZE * ITEMS in cambi-pool.wgsl). */
const POOL_CHUNK = 1024;
const HIST_BYTES = 65536 * 4;
const TILE = 16;
const WEIGHTS = [1, 2, 3, 4, 4, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9];
const WEIGHTS_AT = 32;
const RECIPROCALS_AT = 64;
/** libvmaf's table of reciprocals (cambi.cpp's kReciprocals). */
export const RECIPROCALS = 4226;

export type Entry = 'range' | 'prepare' | 'zeros' | 'flat' | 'mode' | 'keys' | 'contrast';
export type PoolEntry = 'hist_pass' | 'select_pass' | 'sum_pass';

/** What both pictures of an instance measure with (cambi.cpp's Settings, from gpuParams). */
export interface CambiShared {
  halveFirst: boolean;
  diffs: number;
  lowestLuma: number;
  bandBase: number;
  bandSize: number;
  encBitDepth: number;
  visible: ArrayLike<number>;
  reciprocals: ArrayLike<number>;
  topk: number;
}

/** One picture's size, window, mask threshold, and the frame column / row of each sample. */
export interface CambiPictureGeometry {
  width: number;
  height: number;
  window: number;
  threshold: number;
  cols: ArrayLike<number>;
  rows: ArrayLike<number>;
}

/** The sizes of the five scales (cambi.cpp's scaleSizes). */
export function scaleSizes(width: number, height: number, halveFirst: boolean): Array<[number, number]> {
  const sizes: Array<[number, number]> = [];
  for (let s = 0; s < SCALES; s++) {
    if (s > 0 || halveFirst) [width, height] = [(width + 1) >> 1, (height + 1) >> 1];
    sizes.push([width, height]);
  }
  return sizes;
}

/** Bytes of every scale's c values (rounded up to whole u64s, for the copies). */
export const valuesBytesOf = (sizes: Array<[number, number]>): number => 8 * Math.ceil(sizes.reduce((n, [w, h]) => n + w * h, 0) / 2);

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

/** One scale's pooling: its passes' bind groups (select level 0 and 1) and sizes. */
export interface PoolScale {
  count: number;
  /** Its first value in the picture's values. */
  at: number;
  groups: number;
  /** Its first i64 in the partials buffer (low halves, then high halves). */
  partials: number;
  level0: GPUBindGroup[];
  level1: GPUBindGroup[];
}

/** What a picture is built from beside its geometry. */
export interface CambiPictureContext {
  device: GPUDevice;
  pipelines: ReadonlyMap<Entry, GPUComputePipeline>;
  poolPipelines: ReadonlyMap<PoolEntry, GPUComputePipeline>;
  /** The range check's count, shared by the pictures of a frame (cleared once per frame). */
  counter: GPUBuffer;
  frame: { width: number; height: number; bitDepth: number; picWord: number };
  maxBinding: number;
}

export class CambiPicture {
  readonly scales: PoolScale[];
  /** Every scale's c values, one after the other (cambi.wgsl's contrast writes them). */
  readonly values: GPUBuffer;
  readonly valuesBytes: number;
  /** SCALES * SCALE_STATS accumulators (the pooling's result words). */
  readonly result: GPUBuffer;
  readonly #ctx: CambiPictureContext;
  /** Which of the frame's pictures it measures. */
  readonly #input: 'dis' | 'ref';
  readonly #dispatches: Dispatch[];
  readonly #buffers: GPUBuffer[];
  readonly #tables: GPUBuffer;
  readonly #partials: GPUBuffer;
  readonly #fixedGroups = new Map<Dispatch, GPUBindGroup>();
  /** Per dispatch that reads the frame's picture, its groups per picture buffer (the upload ring). */
  readonly #pictureGroups = new Map<Dispatch, WeakMap<GPUBuffer, GPUBindGroup>>();

  private constructor(
    ctx: CambiPictureContext,
    input: 'dis' | 'ref',
    dispatches: Dispatch[],
    buffers: GPUBuffer[],
    bufs: { tables: GPUBuffer; values: GPUBuffer; valuesBytes: number; result: GPUBuffer; partials: GPUBuffer },
    scales: PoolScale[],
  ) {
    this.#ctx = ctx;
    this.#input = input;
    this.#dispatches = dispatches;
    this.#buffers = buffers;
    this.#tables = bufs.tables;
    this.values = bufs.values;
    this.valuesBytes = bufs.valuesBytes;
    this.result = bufs.result;
    this.#partials = bufs.partials;
    this.scales = scales;
  }

  static create(ctx: CambiPictureContext, input: 'dis' | 'ref', shared: CambiShared, g: CambiPictureGeometry): CambiPicture {
    const { device: d, frame } = ctx;
    const { width: w, height: h } = g;
    const label = `cambi ${input === 'dis' ? 'distorted' : 'reference'}`;
    if (w * h * 4 > ctx.maxBinding) throw new BackendError('E_GPU', `cambi: ${w}x${h} needs buffers over this adapter's maxStorageBufferBindingSize (${ctx.maxBinding})`);
    const made: GPUBuffer[] = [];
    const buffer = (size: number, usage: number, what: string): GPUBuffer => {
      const b = d.createBuffer({ size, usage, label: `${label} ${what}` });
      made.push(b);
      return b;
    };
    try {
      // visible[diffs], the weights, the reciprocals, then the frame column and row of each sample.
      const table = new Uint32Array(RECIPROCALS_AT + RECIPROCALS + w + h);
      for (let i = 0; i < shared.diffs; i++) table[i] = shared.visible[i]!;
      table.set(WEIGHTS, WEIGHTS_AT);
      new Float32Array(table.buffer, RECIPROCALS_AT * 4, RECIPROCALS).set(shared.reciprocals);
      table.set(g.cols, RECIPROCALS_AT + RECIPROCALS);
      table.set(g.rows, RECIPROCALS_AT + RECIPROCALS + w);
      const tables = buffer(table.byteLength, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST, 'tables');
      d.queue.writeBuffer(tables, 0, table);
      const picture = (what: string) => buffer(w * h * 4, GPUBufferUsage.STORAGE, what);
      const a = picture('picture a');
      const b = picture('picture b');
      const mask = picture('mask');
      const keys = picture('keys');
      const sizes = scaleSizes(w, h, shared.halveFirst);
      const valuesBytes = valuesBytesOf(sizes);
      if (valuesBytes > ctx.maxBinding) throw new BackendError('E_GPU', `cambi: ${w}x${h} needs a ${valuesBytes}-byte buffer, over this adapter's maxStorageBufferBindingSize (${ctx.maxBinding})`);
      const values = buffer(valuesBytes, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC, 'contrast values');

      const uniformOf = (words: number[], what: string): GPUBuffer => {
        const u = buffer(words.length * 4, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, what);
        d.queue.writeBuffer(u, 0, new Uint32Array(words));
        return u;
      };
      const uniform = (params: Params): GPUBuffer => uniformOf(FIELDS.map((f) => params[f] ?? 0), 'params');
      const dispatches: Dispatch[] = [];
      const { picWord, bitDepth } = frame;
      dispatches.push({
        entry: 'range',
        params: uniform({ width: frame.width, height: frame.height, srcStride: frame.width, picWord, bitDepth }),
        width: frame.width,
        height: frame.height,
        dst: a,
      });
      dispatches.push({
        entry: 'prepare',
        params: uniform({ width: w, height: h, srcStride: frame.width, picWord, bitDepth, antiDither: shared.encBitDepth < 10 ? 1 : 0 }),
        width: w,
        height: h,
        dst: a,
      });
      dispatches.push({ entry: 'zeros', params: uniform({ width: w, height: h }), width: w, height: h, src: a, dst: b });
      dispatches.push({ entry: 'flat', params: uniform({ width: w, height: h, threshold: g.threshold }), width: w, height: h, src: b, dst: mask });
      const band = { diffs: shared.diffs, lowestLuma: shared.lowestLuma, bandBase: shared.bandBase, bandSize: shared.bandSize };
      let from = a;
      let to = b;
      let fromWidth = w;
      let outAt = 0;
      sizes.forEach(([width, height], s) => {
        const step = s > 0 || shared.halveFirst ? 2 : 1;
        dispatches.push({ entry: 'mode', params: uniform({ width, height, srcStride: fromWidth, step }), width, height, src: from, dst: to });
        const maskShift = s + (shared.halveFirst ? 1 : 0);
        dispatches.push({ entry: 'keys', params: uniform({ width, height, maskStride: w, maskShift, ...band }), width, height, src: to, dst: keys, mask });
        dispatches.push({ entry: 'contrast', params: uniform({ width, height, pad: g.window >> 1, outAt, ...band }), width, height, src: keys, dst: values });
        outAt += width * height;
        [from, to] = [to, from];
        fromWidth = width;
      });

      // The pooling: a histogram shared by the scales (select zeroes it after use), each
      // scale's 8 result words, the sum's per-workgroup partials.
      const hist = buffer(HIST_BYTES, GPUBufferUsage.STORAGE, 'pooling histogram');
      const result = buffer(SCALES * SCALE_STATS * 8, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST, 'pooling result');
      const groupsOf = sizes.map(([sw, sh]) => Math.ceil((sw * sh) / POOL_CHUNK));
      if (groupsOf[0]! > 65535) throw new BackendError('E_GPU', `cambi: ${w}x${h} is too large for the pooling passes`);
      const partials = buffer(8 * 2 * groupsOf.reduce((n, gr) => n + gr, 0), GPUBufferUsage.STORAGE, 'pooling partials');
      const layoutOf = (entry: PoolEntry) => ctx.poolPipelines.get(entry)!.getBindGroupLayout(0);
      const scales: PoolScale[] = [];
      let at = 0;
      let partialAt = 0;
      sizes.forEach(([sw, sh], s) => {
        const count = sw * sh;
        const k = Math.min(Math.max(Math.trunc(shared.topk * count), 1), count);
        const groups = groupsOf[s]!;
        const groupsFor = (level: number): GPUBindGroup[] => {
          const params = { buffer: uniformOf([count, at, k, level, s * SCALE_STATS * 2, partialAt, groups, 0], 'pooling params') };
          return [
            d.createBindGroup({ label: `${label} hist`, layout: layoutOf('hist_pass'), entries: [{ binding: 0, resource: { buffer: values } }, { binding: 1, resource: { buffer: hist } }, { binding: 2, resource: { buffer: result } }, { binding: 3, resource: params }] }),
            d.createBindGroup({ label: `${label} select`, layout: layoutOf('select_pass'), entries: [{ binding: 1, resource: { buffer: hist } }, { binding: 2, resource: { buffer: result } }, { binding: 3, resource: params }] }),
            d.createBindGroup({ label: `${label} sum`, layout: layoutOf('sum_pass'), entries: [{ binding: 0, resource: { buffer: values } }, { binding: 2, resource: { buffer: result } }, { binding: 3, resource: params }, { binding: 4, resource: { buffer: partials } }] }),
          ];
        };
        scales.push({ count, at, groups, partials: partialAt, level0: groupsFor(0), level1: groupsFor(1) });
        at += count;
        partialAt += 2 * groups;
      });
      return new CambiPicture(ctx, input, dispatches, made, { tables, values, valuesBytes, result, partials }, scales);
    } catch (e) {
      for (const m of made) m.destroy();
      throw e;
    }
  }

  /** Clears what the passes accumulate into (the pooling's result words). */
  clear(encoder: GPUCommandEncoder): void {
    encoder.clearBuffer(this.result);
  }

  /** Records the per-pixel passes and the pooling's selection and partial sums into `pass`. */
  encodePasses(pass: GPUComputePassEncoder, inputs: GpuExtractorInputs): void {
    const pic = inputs[this.#input].buffer;
    for (const dispatch of this.#dispatches) {
      pass.setPipeline(this.#ctx.pipelines.get(dispatch.entry)!);
      pass.setBindGroup(0, this.#bindGroup(dispatch, pic));
      pass.dispatchWorkgroups(Math.ceil(dispatch.width / TILE), Math.ceil(dispatch.height / TILE));
    }
    const hist = this.#ctx.poolPipelines.get('hist_pass')!;
    const select = this.#ctx.poolPipelines.get('select_pass')!;
    const sum = this.#ctx.poolPipelines.get('sum_pass')!;
    for (const scale of this.scales) {
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
  }

  /** Records each scale's deterministic sum of its partials into its result words (after the pass). */
  encodeSums(encoder: GPUCommandEncoder, reducer: I64Reducer): void {
    this.scales.forEach((scale, s) => {
      reducer.encode(encoder, {
        input: this.#partials,
        count: scale.groups,
        segments: 2,
        inputOffset: scale.partials,
        inputStride: scale.groups,
        output: this.result,
        outputOffset: s * SCALE_STATS + 1,
      });
    });
  }

  destroy(): void {
    for (const b of this.#buffers) b.destroy();
    this.#fixedGroups.clear();
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
    const pipeline = this.#ctx.pipelines.get(dispatch.entry)!;
    const layout = pipeline.getBindGroupLayout(0);
    const device = this.#ctx.device;
    if (dispatch.entry === 'range') {
      const entries = [{ binding: 0, resource: { buffer: pic } }, { binding: 4, resource: { buffer: dispatch.params } }, { binding: 6, resource: { buffer: this.#ctx.counter } }];
      return device.createBindGroup({ label: 'cambi range', layout, entries });
    }
    const entries: GPUBindGroupEntry[] = [{ binding: 2, resource: { buffer: dispatch.dst } }, { binding: 4, resource: { buffer: dispatch.params } }];
    if (dispatch.entry === 'prepare') {
      entries.push({ binding: 0, resource: { buffer: pic } }, { binding: 5, resource: { buffer: this.#tables } });
    } else {
      entries.push({ binding: 1, resource: { buffer: dispatch.src! } });
    }
    if (dispatch.entry === 'keys') entries.push({ binding: 3, resource: { buffer: dispatch.mask! } });
    if (dispatch.entry === 'contrast') entries.push({ binding: 5, resource: { buffer: this.#tables } });
    return device.createBindGroup({ label: `cambi ${dispatch.entry}`, layout, entries });
  }
}

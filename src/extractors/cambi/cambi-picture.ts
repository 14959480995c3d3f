/**
 * One picture's CAMBI on the GPU (the distorted at the encode size, or with full_ref the
 * reference at the source size): its per-pixel passes (cambi.wgsl) and each scale's top-k
 * pooling (cambi-pool.wgsl), with its own scratch, tables and results, so that the two
 * pictures of a full_ref frame share only the compiled pipelines and the range counter.
 * cambi-gpu.ts drives it and reads its 20 accumulators (4 per scale, cambi.cpp's
 * finishStats layout) and, where the host must pool, its c values.
 *
 * A frame costs the main thread few native calls (dawn.node's are microseconds each): 16
 * dispatches in the frame's compute pass (prepare, flat, mode per scale, contrast
 * over every scale, then the pooling's eight, each over every scale), their bind groups made
 * once, a pipeline set only where it changes, nothing allocated per frame.
 */
import { BackendError } from '../../errors.js';
import type { GpuExtractorInputs } from '../../kernels/gpu/gpu-extractor.js';

export const SCALES = 5;
/** Accumulators per scale (cambi.cpp's finishStats). */
export const SCALE_STATS = 4;
/** Values per workgroup of the pooling passes (REDUCE_WG_SIZE * ITEMS in cambi-pool.wgsl). */
const POOL_CHUNK = 1024;
const HIST_BINS = 65536;
const HIST_BYTES = HIST_BINS * 4;
/** The histogram's chunks (cambi-pool.wgsl's CHUNKS: BINS / REDUCE_WG_SIZE). */
const HIST_CHUNKS = 256;
/** Most workgroups of a one-dimensional dispatch (WebGPU's default limit). */
const MAX_GROUPS = 65535;
const TILE = 16;
/** contrast's tiles (cambi.wgsl's CT_W x CT_H) and the largest half window they hold (CT_MAX_PAD). */
const CONTRAST_W = 64;
const CONTRAST_H = 16;
const CONTRAST_MAX_PAD = 32;
const WEIGHTS = [1, 2, 3, 4, 4, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9];
const WEIGHTS_AT = 32;
const RECIPROCALS_AT = 64;
/** libvmaf's table of reciprocals (cambi.cpp's kReciprocals). */
export const RECIPROCALS = 4226;

export type Entry = 'prepare' | 'flat' | 'mode' | 'contrast';
export type PoolEntry = 'hist_pass' | 'chunk_pass' | 'select_pass' | 'sum_pass' | 'total_pass';

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
  frameHeight?: number;
}

const FIELDS = ['width', 'height', 'srcStride', 'step', 'maskStride', 'maskShift', 'pad', 'outAt', 'picWord', 'bitDepth', 'antiDither', 'threshold', 'diffs', 'lowestLuma', 'bandBase', 'bandSize', 'frameHeight'] as const;

interface Dispatch {
  entry: Entry;
  params: GPUBuffer;
  /** Workgroups in x and y. */
  x: number;
  y: number;
  /** Buffers bound as src / dst / mask / keys_out, and contrast's tiles ('pic' is the frame's). */
  src?: GPUBuffer;
  dst: GPUBuffer;
  mask?: GPUBuffer;
  keys?: GPUBuffer;
  tiles?: GPUBuffer;
}

/** One scale's values in the picture's values (the host pools from them). */
export interface PoolScale {
  count: number;
  /** Its first value in the picture's values. */
  at: number;
}

/** One dispatch of the pooling, every scale at once. */
interface PoolStep {
  pipeline: GPUComputePipeline;
  group: GPUBindGroup;
  x: number;
}

/** Workgroups (x, y) covering `n` in a one-dimensional order (y only past the limit). */
function groups2d(n: number): [number, number] {
  const y = Math.ceil(n / MAX_GROUPS);
  return [Math.ceil(n / y), y];
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
  /** Each dispatch's pipeline, and its bind group (made at creation) but for prepare's (index 0). */
  readonly #pipelineOf: GPUComputePipeline[];
  readonly #groupOf: GPUBindGroup[];
  readonly #pool: PoolStep[];
  readonly #buffers: GPUBuffer[];
  readonly #tables: GPUBuffer;
  /** prepare's bind group per picture buffer (the frame's picture changes with the upload ring). */
  readonly #prepareGroups = new WeakMap<GPUBuffer, GPUBindGroup>();

  private constructor(
    ctx: CambiPictureContext,
    input: 'dis' | 'ref',
    dispatches: Dispatch[],
    buffers: GPUBuffer[],
    bufs: { tables: GPUBuffer; values: GPUBuffer; valuesBytes: number; result: GPUBuffer },
    scales: PoolScale[],
    pool: PoolStep[],
  ) {
    this.#ctx = ctx;
    this.#input = input;
    this.#dispatches = dispatches;
    this.#buffers = buffers;
    this.#tables = bufs.tables;
    this.values = bufs.values;
    this.valuesBytes = bufs.valuesBytes;
    this.result = bufs.result;
    this.scales = scales;
    this.#pool = pool;
    this.#pipelineOf = dispatches.map((dispatch) => ctx.pipelines.get(dispatch.entry)!);
    // Every group but prepare's binds buffers of this picture only: made once, here.
    this.#groupOf = dispatches.map((dispatch, i) => (i === 0 ? undefined! : this.#make(dispatch, undefined)));
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
      const sizes = scaleSizes(w, h, shared.halveFirst);
      const valuesBytes = valuesBytesOf(sizes);
      if (valuesBytes > ctx.maxBinding) throw new BackendError('E_GPU', `cambi: ${w}x${h} needs a ${valuesBytes}-byte buffer, over this adapter's maxStorageBufferBindingSize (${ctx.maxBinding})`);
      const values = buffer(valuesBytes, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC, 'contrast values');
      // Every scale's keys, laid out as their values (mode writes them, contrast reads them).
      const keys = buffer(valuesBytes, GPUBufferUsage.STORAGE, 'keys');

      const uniformOf = (words: number[], what: string): GPUBuffer => {
        const u = buffer(words.length * 4, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, what);
        d.queue.writeBuffer(u, 0, new Uint32Array(words));
        return u;
      };
      const uniform = (params: Params): GPUBuffer => uniformOf(FIELDS.map((f) => params[f] ?? 0), 'params');
      const dispatches: Dispatch[] = [];
      const { picWord, bitDepth } = frame;
      const tilesOf = (n: number) => Math.ceil(n / TILE);
      // prepare also counts the frame's samples out of range: it covers the frame and the picture.
      dispatches.push({
        entry: 'prepare',
        params: uniform({ width: w, height: h, srcStride: frame.width, picWord, bitDepth, antiDither: shared.encBitDepth < 10 ? 1 : 0, frameHeight: frame.height }),
        x: tilesOf(Math.max(w, frame.width)),
        y: tilesOf(Math.max(h, frame.height)),
        dst: a,
      });
      dispatches.push({ entry: 'flat', params: uniform({ width: w, height: h, threshold: g.threshold }), x: tilesOf(w), y: tilesOf(h), src: a, dst: mask });
      const band = { diffs: shared.diffs, lowestLuma: shared.lowestLuma, bandBase: shared.bandBase, bandSize: shared.bandSize };
      let from = a;
      let to = b;
      let fromWidth = w;
      let outAt = 0;
      // contrast's table: per scale width, height, first value, first workgroup, workgroups per row.
      const tileWords = new Uint32Array(4 + SCALES * 8);
      let tiles = 0;
      sizes.forEach(([width, height], s) => {
        const step = s > 0 || shared.halveFirst ? 2 : 1;
        const maskShift = s + (shared.halveFirst ? 1 : 0);
        dispatches.push({
          entry: 'mode',
          params: uniform({ width, height, srcStride: fromWidth, step, maskStride: w, maskShift, outAt, ...band }),
          x: tilesOf(width),
          y: tilesOf(height),
          src: from,
          dst: to,
          mask,
          keys,
        });
        const across = Math.ceil(width / CONTRAST_W);
        tileWords.set([width, height, outAt, tiles, across], 4 + s * 8);
        tiles += across * Math.ceil(height / CONTRAST_H);
        outAt += width * height;
        [from, to] = [to, from];
        fromWidth = width;
      });
      tileWords[0] = tiles;
      if (g.window >> 1 > CONTRAST_MAX_PAD) throw new BackendError('E_GPU', `cambi: a ${g.window}-pixel window is wider than the GPU's contrast pass holds`);
      const tileTable = uniformOf(Array.from(tileWords), 'contrast tiles');
      const [cx, cy] = groups2d(tiles);
      dispatches.push({ entry: 'contrast', params: uniform({ width: w, height: h, pad: g.window >> 1, ...band }), x: cx, y: cy, src: keys, dst: values, tiles: tileTable });

      // The pooling, every scale per dispatch: a histogram per scale (chunk_pass zeroes it
      // after use, keeping its bins and chunk totals for select), each scale's 8 result
      // words, the sum's per-workgroup partials.
      const hist = buffer(SCALES * HIST_BYTES, GPUBufferUsage.STORAGE, 'pooling histograms');
      const kept = buffer(SCALES * (HIST_BYTES + HIST_CHUNKS * 4), GPUBufferUsage.STORAGE, 'pooling kept bins');
      const result = buffer(SCALES * SCALE_STATS * 8, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST, 'pooling result');
      const groupsOf = sizes.map(([sw, sh]) => Math.ceil((sw * sh) / POOL_CHUNK));
      const allGroups = groupsOf.reduce((n, gr) => n + gr, 0);
      if (allGroups > MAX_GROUPS) throw new BackendError('E_GPU', `cambi: ${w}x${h} is too large for the pooling passes`);
      const partials = buffer(8 * 2 * allGroups, GPUBufferUsage.STORAGE, 'pooling partials');
      const scales: PoolScale[] = [];
      // cambi-pool.wgsl's Params: the level, then per scale count, at, k, result word, partials, groups, first.
      const poolWords = new Uint32Array(4 + SCALES * 8);
      let at = 0;
      let partialAt = 0;
      let first = 0;
      sizes.forEach(([sw, sh], s) => {
        const count = sw * sh;
        const k = Math.min(Math.max(Math.trunc(shared.topk * count), 1), count);
        const groups = groupsOf[s]!;
        poolWords.set([count, at, k, s * SCALE_STATS * 2, partialAt, groups, first], 4 + s * 8);
        scales.push({ count, at });
        at += count;
        partialAt += 2 * groups;
        first += groups;
      });
      const level0 = uniformOf(Array.from(poolWords), 'pooling params');
      poolWords[0] = 1;
      const level1 = uniformOf(Array.from(poolWords), 'pooling params');
      const entry = (binding: number, b: GPUBuffer): GPUBindGroupEntry => ({ binding, resource: { buffer: b } });
      const step = (pass: PoolEntry, x: number, entries: GPUBindGroupEntry[]): PoolStep => {
        const pipeline = ctx.poolPipelines.get(pass)!;
        return { pipeline, x, group: d.createBindGroup({ label: `${label} ${pass}`, layout: pipeline.getBindGroupLayout(0), entries }) };
      };
      const pool = [
        step('hist_pass', allGroups, [entry(0, values), entry(1, hist), entry(2, result), entry(3, level0)]),
        step('chunk_pass', SCALES * HIST_CHUNKS, [entry(1, hist), entry(5, kept)]),
        step('select_pass', SCALES, [entry(2, result), entry(3, level0), entry(5, kept)]),
        step('hist_pass', allGroups, [entry(0, values), entry(1, hist), entry(2, result), entry(3, level1)]),
        step('chunk_pass', SCALES * HIST_CHUNKS, [entry(1, hist), entry(5, kept)]),
        step('select_pass', SCALES, [entry(2, result), entry(3, level1), entry(5, kept)]),
        step('sum_pass', allGroups, [entry(0, values), entry(2, result), entry(3, level1), entry(4, partials)]),
        step('total_pass', SCALES, [entry(2, result), entry(3, level1), entry(4, partials)]),
      ];
      return new CambiPicture(ctx, input, dispatches, made, { tables, values, valuesBytes, result }, scales, pool);
    } catch (e) {
      for (const m of made) m.destroy();
      throw e;
    }
  }

  /**
   * Records the per-pixel passes and the pooling into `pass` (16 dispatches; a pipeline is
   * set only where it changes, every bind group but prepare's made at creation).
   */
  encodePasses(pass: GPUComputePassEncoder, inputs: GpuExtractorInputs): void {
    const pic = inputs[this.#input].buffer;
    const dispatches = this.#dispatches;
    let last: GPUComputePipeline | undefined;
    for (let i = 0; i < dispatches.length; i++) {
      const dispatch = dispatches[i]!;
      const pipeline = this.#pipelineOf[i]!;
      if (pipeline !== last) pass.setPipeline((last = pipeline));
      pass.setBindGroup(0, i === 0 ? this.#prepareGroup(dispatch, pic) : this.#groupOf[i]!);
      pass.dispatchWorkgroups(dispatch.x, dispatch.y);
    }
    const pool = this.#pool;
    for (let i = 0; i < pool.length; i++) {
      const step = pool[i]!;
      pass.setPipeline(step.pipeline);
      pass.setBindGroup(0, step.group);
      pass.dispatchWorkgroups(step.x);
    }
  }

  destroy(): void {
    for (const b of this.#buffers) b.destroy();
  }

  /** prepare's group for the frame's picture buffer (one per buffer of the upload ring). */
  #prepareGroup(dispatch: Dispatch, pic: GPUBuffer): GPUBindGroup {
    let group = this.#prepareGroups.get(pic);
    if (!group) this.#prepareGroups.set(pic, (group = this.#make(dispatch, pic)));
    return group;
  }

  #make(dispatch: Dispatch, pic: GPUBuffer | undefined): GPUBindGroup {
    const pipeline = this.#ctx.pipelines.get(dispatch.entry)!;
    const layout = pipeline.getBindGroupLayout(0);
    const device = this.#ctx.device;
    const entries: GPUBindGroupEntry[] = [{ binding: 2, resource: { buffer: dispatch.dst } }, { binding: 4, resource: { buffer: dispatch.params } }];
    if (dispatch.entry === 'prepare') {
      entries.push({ binding: 0, resource: { buffer: pic! } }, { binding: 5, resource: { buffer: this.#tables } }, { binding: 6, resource: { buffer: this.#ctx.counter } });
    } else {
      entries.push({ binding: 1, resource: { buffer: dispatch.src! } });
    }
    if (dispatch.entry === 'mode') entries.push({ binding: 3, resource: { buffer: dispatch.mask! } }, { binding: 7, resource: { buffer: dispatch.keys! } });
    if (dispatch.entry === 'contrast') entries.push({ binding: 5, resource: { buffer: this.#tables } }, { binding: 8, resource: { buffer: dispatch.tiles! } });
    return device.createBindGroup({ label: `cambi ${dispatch.entry}`, layout, entries });
  }
}

/**
 * The SSIM extractors' gpu kernel (ssim-maps.wgsl): the luma as floats, optional
 * decimations, and at the scales asked for the five Gaussian-filtered maps, the per-sample
 * SSIM terms and libvmaf's four double running sums over them, pooled on the device with
 * the sequential sums' exact bits (ssim-maps.wgsl's pooling section says how). What comes
 * back is four doubles per scale (their bit patterns as the instance's accumulators), which
 * the C++ extractor's finishStats turns into the scores (ssim::meansFromSums), giving the
 * cpu backend's bits.
 *
 * The maps and terms are large (1080p's terms are 64 MB for one scale), so they are made in
 * bands of output rows: each band's row scratch, maps and terms stay far below the storage
 * binding limit, and the band's sums carry over to the next band through the output. Only
 * the float images are bound whole (fitsOnGpu: at most WebGPU's guaranteed 128 MiB
 * binding, which 2160p's fit).
 */
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BackendError } from '../../errors.js';
import type { GpuExtractorContext, GpuExtractorInputs, GpuExtractorKernel, GpuPicture } from '../../kernels/gpu/gpu-extractor.js';
import type { StatsSlot } from '../../kernels/gpu/frame-kernel.js';
import type { GpuDevice } from '../../kernels/gpu/device.js';
import { f32Bits, loadWgsl, WGSL_ROOT } from '../../kernels/gpu/wgsl.js';
import { createF32Pipeline } from '../../kernels/gpu/f32-probe.js';
import { BindGroupCache, type Bindings } from '../../kernels/gpu/bind-groups.js';
import { SSIM_WINDOW } from './ssim-options.js';

const SOURCE = relative(WGSL_ROOT, join(dirname(fileURLToPath(import.meta.url)), 'ssim-maps.wgsl'));
const QUANTITIES = 5;
const PARAMS_BYTES = 80;
const WORKGROUP = 16;
/**
 * ssim-maps.wgsl's CHUNK (terms per chunk map), TERMS_GROUP (pool_terms' workgroup), GROUP
 * (maps per map of the next level), MAX_LEVELS, SUMS and MAP_WORDS.
 */
const CHUNK = 32;
const TERMS_GROUP = 256;
const GROUP = 8;
const MAX_LEVELS = 8;
const SUMS = 4;
const MAP_WORDS = 10;
/** pool_chunk_maps' and pool_group_maps' workgroup (GROUP * GROUP: chunk_maps makes levels 1 and 2 in one). */
const MAPS_WORKGROUP = 64;
/** Words per sum of the path counters (pool_compose). */
const COUNTER_WORDS = 8;

/** A band's maps per level (chunks', then groups of GROUP) up to the first level of at most GROUP. */
function levelCounts(chunks: number): number[] {
  const counts = [chunks];
  while (counts[counts.length - 1]! > GROUP) counts.push(Math.ceil(counts[counts.length - 1]! / GROUP));
  return counts;
}
/** Row scratch per band (bytes): bands of a few hundred rows at 1080p and 2160p. */
const BAND_SCRATCH_BYTES = 16 << 20;
/** WebGPU's guaranteed limits: every adapter binds 128 MiB and makes 256 MiB buffers. */
const GUARANTEED_BINDING_BYTES = 128 << 20;

/** A decimation between scales: every factor-th sample through a taps x taps kernel (row-major). */
export interface SsimDecimation {
  factor: number;
  taps: number;
  weights: readonly number[];
}

/** One scale: reached from the previous one by `decimate` (none for the first), with maps or not. */
export interface SsimScale {
  decimate?: SsimDecimation;
  maps: boolean;
}

/** The size decimation by `factor` gives (ssim::decimatedSize): w / factor, plus 1 when w is odd. */
export function decimatedSize(size: number, factor: number): number {
  return Math.trunc(size / factor) + (size & 1);
}

/** Words of the float images for a w x h luma through `scales`; undefined where a map scale is under 11x11. */
function imageWords(width: number, height: number, scales: readonly SsimScale[]): number | undefined {
  let [w, h] = [width, height];
  let images = 2 * w * h;
  for (const s of scales) {
    if (s.decimate) {
      [w, h] = [decimatedSize(w, s.decimate.factor), decimatedSize(h, s.decimate.factor)];
      images += 2 * w * h;
    }
    if (s.maps && (w < SSIM_WINDOW || h < SSIM_WINDOW)) return undefined;
  }
  return images;
}

/**
 * Whether the kernel runs on every adapter for a w x h luma: the float images within the
 * guaranteed binding size (up to 2160p). Larger pictures stay on the host.
 */
export function fitsOnGpu(width: number, height: number, scales: readonly SsimScale[]): boolean {
  const words = imageWords(width, height, scales);
  return words !== undefined && 4 * words <= GUARANTEED_BINDING_BYTES;
}

type Entry = 'to_float' | 'decimate' | 'filter_rows' | 'filter_columns' | 'pool_terms' | 'pool_scan' | 'pool_chunk_maps' | 'pool_group_maps' | 'pool_compose';
const ENTRIES: readonly Entry[] = ['to_float', 'decimate', 'filter_rows', 'filter_columns', 'pool_terms', 'pool_scan', 'pool_chunk_maps', 'pool_group_maps', 'pool_compose'];

/** Compiled pipelines per device, by entry point and bit depth. */
const PIPELINES = new WeakMap<GpuDevice, Map<string, Promise<GPUComputePipeline>>>();

/** The per-band buffers: row-filter scratch, maps, terms, chunk guesses, chunk maps. */
type Scratch = Record<'rows' | 'maps' | 'terms' | 'approx' | 'chunkMaps' | 'counters', GPUBuffer>;

interface Pass {
  entry: Entry;
  params: Uint32Array;
  /** Workgroups in x and y. */
  groups: [number, number];
  /** decimate: its weights buffer. */
  weights?: GPUBuffer;
  /** pool_scan, pool_compose: the scale's four sums' first word in the output slot. */
  sumsWord?: number;
  /** to_float: which picture. */
  of?: 'ref' | 'dis';
}

export class SsimMapsKernel implements GpuExtractorKernel {
  readonly statsCount: number;
  readonly #pipelines: Map<Entry, GPUComputePipeline>;
  readonly #passes: Pass[];
  readonly #work: GPUBuffer;
  readonly #scratch: Scratch;
  readonly #alignment: number;
  readonly #buffers: GPUBuffer[];
  /** Params uniforms (per pass, the pooling passes' per output offset too) and bind groups. */
  readonly #cache: BindGroupCache;
  /** For tests (encodePoolingOfTerms): compiles pool_approx. */
  readonly #approxPipeline: () => Promise<GPUComputePipeline>;

  private constructor(device: GPUDevice, pipelines: Map<Entry, GPUComputePipeline>, passes: Pass[], work: GPUBuffer, scratch: Scratch, alignment: number, buffers: GPUBuffer[], statsCount: number, approxPipeline: () => Promise<GPUComputePipeline>) {
    this.#pipelines = pipelines;
    this.#passes = passes;
    this.#work = work;
    this.#scratch = scratch;
    this.#alignment = alignment;
    this.#buffers = buffers;
    this.#cache = new BindGroupCache(device);
    this.statsCount = statsCount;
    this.#approxPipeline = approxPipeline;
  }

  /** `bandRows` (tests): at most that many output rows a band, to pool a small picture in several bands. */
  static async create(ctx: GpuExtractorContext, scales: readonly SsimScale[], bandRows = Infinity): Promise<SsimMapsKernel> {
    const { gpu, layout } = ctx;
    const luma = layout.planes[0]!;
    const d = gpu.device;
    const buffers: GPUBuffer[] = [];
    try {
      const passes: Pass[] = [];
      let words = 0;
      let w = luma.width;
      let h = luma.height;
      const scale = layout.bitDepth === 8 ? 1 : 2 ** -(layout.bitDepth - 8);
      type Field = 'src' | 'src2' | 'sw' | 'sh' | 'dst' | 'dw' | 'dh' | 'factor' | 'taps' | 'scale' | 'row0' | 'count' | 'chunks' | 'sums' | 'first' | 'level' | 'levels';
      const fields: readonly Field[] = ['src', 'src2', 'sw', 'sh', 'dst', 'dw', 'dh', 'factor', 'taps', 'scale', 'row0', 'count', 'chunks', 'sums', 'first', 'level', 'levels'];
      const params = (values: Partial<Record<Field, number>>): Uint32Array => {
        const words = new Uint32Array(PARAMS_BYTES / 4);
        words.set(fields.map((f) => values[f] ?? 0));
        return words;
      };
      const tiles = (x: number, y: number): [number, number] => [Math.ceil(x / WORKGROUP), Math.ceil(y / WORKGROUP)];
      // Scale 0's float images, then each later scale's; the row-filter scratch is its own buffer.
      let ref = words;
      let dis = ref + w * h;
      words = dis + w * h;
      for (const of of ['ref', 'dis'] as const) {
        passes.push({ entry: 'to_float', of, params: params({ src: luma.offset / 4, sw: w, sh: h, dst: of === 'ref' ? ref : dis, scale: f32Bits(scale) }), groups: tiles(w, h) });
      }
      const mapScales: { ref: number; dis: number; w: number; h: number }[] = [];
      scales.forEach((s, i) => {
        if (s.decimate) {
          if (i === 0) throw new BackendError('E_GPU', 'ssim maps: the first scale cannot be decimated');
          const { factor, taps, weights } = s.decimate;
          const dw = decimatedSize(w, factor);
          const dh = decimatedSize(h, factor);
          const buffer = d.createBuffer({ size: 4 * weights.length, usage: GPUBufferUsage.STORAGE, mappedAtCreation: true, label: 'ssim decimation weights' });
          buffers.push(buffer);
          new Uint32Array(buffer.getMappedRange()).set(weights.map(f32Bits));
          buffer.unmap();
          const nref = words;
          const ndis = nref + dw * dh;
          words = ndis + dw * dh;
          for (const [src, dst] of [[ref, nref], [dis, ndis]] as const) {
            passes.push({ entry: 'decimate', params: params({ src, sw: w, sh: h, dst, dw, dh, factor, taps }), groups: tiles(dw, dh), weights: buffer });
          }
          [ref, dis, w, h] = [nref, ndis, dw, dh];
        }
        if (s.maps) {
          if (w < SSIM_WINDOW || h < SSIM_WINDOW) throw new BackendError('E_GPU', `ssim maps: ${w}x${h} is smaller than the ${SSIM_WINDOW}x${SSIM_WINDOW} window`);
          mapScales.push({ ref, dis, w, h });
        }
      });
      // Bands of output rows: each band's five filtered source rows (its output rows and the
      // 10 below them) fit the scratch; its maps (a subset of those bytes) and its terms (8
      // bytes per sample and sum, 32/20 of the maps) one binding each. The band's chunk maps
      // and sums follow its terms (pool_*); each scale's four sums take 8 words of the output.
      // Above the chunk maps, levels of group maps (the first two by pool_chunk_maps, then
      // pool_group_maps, one pass a level) until one has at most GROUP maps: the serial walk
      // (pool_compose) starts there.
      const budget = Math.min(BAND_SCRATCH_BYTES, gpu.limits.maxStorageBufferBindingSize - gpu.limits.minStorageBufferOffsetAlignment);
      let rowsWords = 0;
      let mapsWords = 0;
      let termWords = 0;
      let chunkCount = 0;
      let mapCount = 0;
      mapScales.forEach((s, scaleIndex) => {
        const ow = s.w - SSIM_WINDOW + 1;
        const oh = s.h - SSIM_WINDOW + 1;
        const perRow = 4 * QUANTITIES * ow;
        const band = Math.max(1, Math.min(oh, bandRows, Math.floor(budget / perRow) - (SSIM_WINDOW - 1)));
        if (perRow * (band + SSIM_WINDOW - 1) > gpu.limits.maxStorageBufferBindingSize || 8 * SUMS * band * ow > gpu.limits.maxStorageBufferBindingSize) {
          throw new BackendError('E_GPU', `ssim maps: ${s.w}-sample rows exceed the adapter's storage binding limit (${gpu.limits.maxStorageBufferBindingSize})`);
        }
        const sums = 2 * SUMS * scaleIndex;
        for (let y0 = 0; y0 < oh; y0 += band) {
          const out = Math.min(band, oh - y0);
          const sourceRows = out + SSIM_WINDOW - 1;
          const count = out * ow;
          const chunks = Math.ceil(count / CHUNK);
          const counts = levelCounts(chunks);
          if (counts.length > MAX_LEVELS) throw new BackendError('E_GPU', `ssim maps: a band of ${count} samples needs more than ${MAX_LEVELS} map levels`);
          rowsWords = Math.max(rowsWords, QUANTITIES * sourceRows * ow);
          mapsWords = Math.max(mapsWords, QUANTITIES * count);
          termWords = Math.max(termWords, 2 * SUMS * count);
          chunkCount = Math.max(chunkCount, chunks);
          mapCount = Math.max(mapCount, counts.reduce((a, b) => a + b, 0));
          passes.push({ entry: 'filter_rows', params: params({ src: s.ref, src2: s.dis, sw: s.w, dh: sourceRows, row0: y0 }), groups: tiles(ow, sourceRows) });
          passes.push({ entry: 'filter_columns', params: params({ sw: s.w, sh: sourceRows, dh: out }), groups: tiles(ow, out) });
          const pool = { sw: s.w, count, chunks, first: y0 === 0 ? 1 : 0, levels: counts.length - 1 };
          passes.push({ entry: 'pool_terms', params: params(pool), groups: [Math.ceil(count / TERMS_GROUP), 1] });
          passes.push({ entry: 'pool_scan', params: params(pool), groups: [SUMS, 1], sumsWord: sums });
          passes.push({ entry: 'pool_chunk_maps', params: params(pool), groups: [Math.ceil(chunks / MAPS_WORKGROUP), SUMS] });
          // pool_chunk_maps makes levels 1 and 2 (from each workgroup's 64 chunk maps).
          for (let level = 3; level < counts.length; level++) {
            passes.push({ entry: 'pool_group_maps', params: params({ ...pool, level }), groups: [Math.ceil(counts[level]! / MAPS_WORKGROUP), SUMS] });
          }
          passes.push({ entry: 'pool_compose', params: params(pool), groups: [SUMS, 1], sumsWord: sums });
        }
      });
      const maxGroups = gpu.limits.maxComputeWorkgroupsPerDimension;
      for (const p of passes) {
        if (p.groups[0] > maxGroups || p.groups[1] > maxGroups) {
          throw new BackendError('E_GPU', `ssim maps: ${p.entry}'s ${p.groups.join('x')} workgroups exceed the adapter's ${maxGroups} per dimension`);
        }
      }
      if (4 * words > gpu.limits.maxStorageBufferBindingSize) {
        throw new BackendError('E_GPU', `ssim maps: ${4 * words} bytes of scratch exceed the adapter's storage binding limit (${gpu.limits.maxStorageBufferBindingSize})`);
      }
      const work = d.createBuffer({ size: Math.max(16, 4 * words), usage: GPUBufferUsage.STORAGE, label: 'ssim maps work' });
      buffers.push(work);
      // Terms and counters can be copied out (diagnostics), terms written (encodePoolingOfTerms).
      const scratch = (label: string, words: number): GPUBuffer => {
        const b = d.createBuffer({ size: Math.max(16, 4 * words), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST, label: `ssim ${label}` });
        buffers.push(b);
        return b;
      };
      const scratchBuffers = {
        rows: scratch('row scratch', rowsWords),
        maps: scratch('band maps', mapsWords),
        terms: scratch('band terms', termWords),
        approx: scratch('chunk guesses', SUMS * (chunkCount + Math.ceil(chunkCount / (TERMS_GROUP / CHUNK)))),
        chunkMaps: scratch('chunk and group maps', MAP_WORDS * SUMS * mapCount),
        counters: scratch('path counters', COUNTER_WORDS * SUMS),
      };
      const code = loadWgsl(SOURCE);
      // float_ssim and float_ms_ssim share one set of pipelines per device and depth (they
      // compile slowly on software adapters).
      let cache = PIPELINES.get(gpu);
      if (!cache) PIPELINES.set(gpu, (cache = new Map()));
      const shared = cache;
      const made = await Promise.all(
        ENTRIES.map((entry) => {
          const key = `${entry},${layout.bitDepth}`;
          let p = shared.get(key);
          if (!p) {
            p = createF32Pipeline(gpu, code, { label: `ssim ${entry} ${layout.bitDepth}-bit`, entryPoint: entry, constants: { BIT_DEPTH: layout.bitDepth } });
            // A failed compilation is not kept: the next kernel tries again (and reports it).
            p.catch(() => shared.delete(key));
            shared.set(key, p);
          }
          return p;
        }),
      );
      const pipelines = new Map(ENTRIES.map((e, i) => [e, made[i]!] as const));
      const approxPipeline = (): Promise<GPUComputePipeline> => gpu.createComputePipeline(code, { label: 'ssim pool_approx', entryPoint: 'pool_approx', constants: { BIT_DEPTH: layout.bitDepth } });
      return new SsimMapsKernel(d, pipelines, passes, work, scratchBuffers, gpu.limits.minStorageBufferOffsetAlignment, buffers, SUMS * mapScales.length, approxPipeline);
    } catch (e) {
      for (const b of buffers) b.destroy();
      throw e;
    }
  }

  encode(encoder: GPUCommandEncoder, inputs: GpuExtractorInputs, out: StatsSlot): void {
    if (out.offset % 8 !== 0) throw new BackendError('E_GPU', `ssim maps: output offset ${out.offset} is not a multiple of 8`);
    // Each dispatch is its own usage scope: the later passes see the earlier ones' writes.
    const pass = encoder.beginComputePass({ label: 'ssim maps' });
    this.#passes.forEach((p, i) => {
      pass.setPipeline(this.#pipelines.get(p.entry)!);
      pass.setBindGroup(0, this.#bindGroup(i, p, inputs, out));
      pass.dispatchWorkgroups(p.groups[0], p.groups[1]);
    });
    pass.end();
  }

  /**
   * For tests and measurements: the last band's terms (sum q's 8-byte doubles at q * count,
   * count = that band's samples) and the path counters (per sum, 8 u32s apart, over the
   * kernel's life: chunks passed through maps of any level, chunks summed term by term, group
   * maps applied, group maps walked a level down, maps tried). Both are COPY_SRC.
   */
  get diagnostics(): { terms: GPUBuffer; counters: GPUBuffer } {
    return { terms: this.#scratch.terms, counters: this.#scratch.counters };
  }

  /**
   * For tests: records the pooling of terms the caller wrote into diagnostics.terms (sum q's
   * at q * count, count = (w - 10) * (h - 10)), for a kernel of one map scale made in one band:
   * pool_approx (the binade guesses, from those terms) in place of pool_terms, then the scan,
   * the maps and the walk, which leave the four sums in `out` as encode does.
   */
  async encodePoolingOfTerms(encoder: GPUCommandEncoder, out: StatsSlot): Promise<void> {
    const first = this.#passes.findIndex((p) => p.entry === 'pool_terms');
    const pool = this.#passes.slice(first);
    if (first < 0 || this.statsCount !== SUMS || pool.some((p, i) => i > 0 && p.entry === 'pool_terms')) {
      throw new BackendError('E_GPU', 'ssim maps: encodePoolingOfTerms needs one map scale in one band');
    }
    const approx = await this.#approxPipeline();
    const pass = encoder.beginComputePass({ label: 'ssim pooling of terms' });
    const p = pool[0]!;
    pass.setPipeline(approx);
    const params = this.#cache.uniform(String(first), p.params, 'ssim maps params', PARAMS_BYTES);
    pass.setBindGroup(0, this.#cache.group(`${first},approx`, approx, 'ssim pool_approx', { 3: params, 6: this.#scratch.terms, 7: this.#scratch.approx }));
    pass.dispatchWorkgroups(p.groups[0], p.groups[1]);
    pool.slice(1).forEach((q, i) => {
      pass.setPipeline(this.#pipelines.get(q.entry)!);
      pass.setBindGroup(0, this.#bindGroup(first + 1 + i, q, undefined, out));
      pass.dispatchWorkgroups(q.groups[0], q.groups[1]);
    });
    pass.end();
  }

  destroy(): void {
    for (const b of this.#buffers) b.destroy();
    this.#cache.destroy();
  }

  #bindGroup(index: number, p: Pass, inputs: GpuExtractorInputs | undefined, out: StatsSlot): GPUBindGroup {
    const cache = this.#cache;
    const params = (values: Uint32Array, key = String(index)): GPUBuffer => cache.uniform(key, values, 'ssim maps params', PARAMS_BYTES);
    const group = (key: string, bindings: Bindings): GPUBindGroup => cache.group(key, this.#pipelines.get(p.entry)!, `ssim ${p.entry}`, bindings);
    const { rows, maps, terms, approx, chunkMaps, counters } = this.#scratch;
    if (p.entry === 'to_float') {
      if (!inputs) throw new BackendError('E_GPU', 'ssim maps: to_float without pictures');
      const picture: GpuPicture = p.of === 'ref' ? inputs.ref : inputs.dis;
      return group(`${index},${cache.id(picture.buffer)}`, { 0: picture.buffer, 1: this.#work, 3: params(p.params) });
    }
    if (p.sumsWord !== undefined) {
      // The scale's sums in the output slot: bound from the aligned offset at or below them.
      const start = out.offset + 4 * p.sumsWord;
      const offset = start - (start % this.#alignment);
      const at = (start - offset) / 8;
      const values = p.params.slice();
      values[13] = at;
      const sums = { 3: params(values, `${index},${at}`), 9: { buffer: out.buffer, offset, size: start - offset + 8 * SUMS } };
      const key = `${index},${cache.id(out.buffer)},${start}`;
      return group(key, p.entry === 'pool_scan' ? { ...sums, 7: approx } : { ...sums, 6: terms, 8: chunkMaps, 10: counters });
    }
    const used: Record<Exclude<Entry, 'to_float' | 'pool_scan' | 'pool_compose'>, Bindings> = {
      decimate: p.weights ? { 1: this.#work, 4: p.weights } : { 1: this.#work },
      filter_rows: { 1: this.#work, 5: rows },
      filter_columns: { 5: rows, 2: maps },
      pool_terms: { 2: maps, 6: terms, 7: approx },
      pool_chunk_maps: { 6: terms, 7: approx, 8: chunkMaps },
      pool_group_maps: { 8: chunkMaps },
    };
    return group(String(index), { ...used[p.entry as keyof typeof used], 3: params(p.params) });
  }
}

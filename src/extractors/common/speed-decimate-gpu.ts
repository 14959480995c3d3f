/**
 * SpEED's per-pixel work on the GPU (speed-decimate.wgsl), shared by speed_chroma's and
 * speed_temporal's gpu parts. Where each stage runs:
 * - GPU: SpeedScorer::decimate() of speed-core.cpp for the planes the extractor scores: the
 *   samples as floats (speed_temporal: the difference of two pictures' samples), the
 *   antialiasing Gaussian evaluated at the samples the decimation by 16 keeps, the local-mean
 *   filter of the decimated planes and the difference, in integer-exact soft float
 *   (lib/f32.wgsl) in the C++'s order. The decimated planes are the frame's stats words (two
 *   floats an accumulator, SpeedScorer::unpackDecimated), after the extractor's own leading
 *   accumulators.
 * - Host: the C++ extractor's finishStats, from those planes: SpeedScorer::scoreDecimated
 *   (per plane the 25x25 covariance of the 5x5 blocks in double sums, its eigenvalues and the
 *   K X = Y solve in float, the blocks' entropies, the score), the very code the cpu
 *   backend's extract() runs after its own decimate(), so both backends give the same bits.
 *   A few thousand values a frame (1/256 of the plane), read back with the group's stats.
 * The filters come from the C++ instance (SpeedScorer::gpuParams: glibc's exp), and so, for a
 * speed_prescale that resamples the planes (nearest or bilinear: the v1 models' is bilinear),
 * does each scaled column's and row's pair of source samples and fraction, which the kernel
 * combines at the samples the antialias filter reads. Bicubic and lanczos4 resampling runs on
 * the host (speedPrescaleOnGpu).
 *
 * A frame's planes come from two sources, the reference's side and the distorted's (SpEED
 * compares the two): each source is one antialias dispatch over its picture's planes (one or
 * two of the layout: speed_chroma's U and V), source s's plane z written as decimated plane
 * s + 2 z; then one local_mean dispatch over every decimated plane.
 */
import { createF32Pipeline } from '../../kernels/gpu/f32-probe.js';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BackendError } from '../../errors.js';
import type { OptionValues } from '../option.js';
import type { GpuExtractorContext, GpuPicture } from '../../kernels/gpu/gpu-extractor.js';
import type { StatsSlot } from '../../kernels/gpu/frame-kernel.js';
import { f32Bits, loadWgsl, WGSL_ROOT } from '../../kernels/gpu/wgsl.js';
import { loadNative, nativeGeometry } from '../../kernels/native.js';
import { BindGroupCache } from '../../kernels/gpu/bind-groups.js';

const SOURCE = relative(WGSL_ROOT, join(dirname(fileURLToPath(import.meta.url)), 'speed-decimate.wgsl'));
const PARAMS_WORDS = 16;
/** speed-decimate.wgsl's MAX_AA_TAPS: its workgroup arrays' size. */
const MAX_AA_TAPS = 35;
/** speed-decimate.wgsl's MEAN_GROUP: a local_mean workgroup's invocations; its outputs: mean_outs(). */
const MEAN_GROUP = 128;
/** antialias's invocations: 256 (every product of a 9-tap filter's 3 outputs in one round) where the adapter allows. */
const aaGroup = (limits: GPUSupportedLimits): number => Math.min(256, limits.maxComputeInvocationsPerWorkgroup, limits.maxComputeWorkgroupSizeX);
/** speed-decimate.wgsl's aa_outs() and mean_outs(): how many outputs a workgroup computes. */
const aaOuts = (group: number, taps: number): number => Math.max(1, Math.floor(group / (taps * taps)));
const meanOuts = (taps: number): number => Math.max(1, Math.floor(MEAN_GROUP / (taps * taps)));
/** The reference's side and the distorted's. */
const SOURCES = 2;

type Entry = 'antialias' | 'local_mean';
const ENTRIES: readonly Entry[] = ['antialias', 'local_mean'];

/**
 * Whether the kernel resamples a `width` x `height` SpEED plane as the options ask: nearest
 * and bilinear (the v1 models' prescales are bilinear) on the GPU; bicubic and lanczos4 only
 * where they keep the size (scalePlane then copies).
 */
export function speedPrescaleOnGpu(options: OptionValues, width: number, height: number): boolean {
  if (['nearest', 'bilinear'].includes(String(options['speed_prescale_method']))) return true;
  const prescale = Number(options['speed_prescale']);
  return Math.trunc(width * prescale + 0.5) === width && Math.trunc(height * prescale + 0.5) === height;
}

/** What an extractor's SpEED decimation reads and writes. */
export interface SpeedDecimateSpec {
  /** The registered (C++) extractor: its gpuParams and statsCount. */
  native: string;
  /** The layout's planes each source reads (1 or 2): speed_chroma's Cb and Cr, speed_temporal's luma. */
  planes: readonly number[];
  /** Whether a source is the difference of two pictures (speed_temporal's frame differences). */
  difference: boolean;
  /** The C++ extractor's accumulators before the decimated planes. */
  leading: number;
}

/** One source's pictures: its samples, minus `minus`'s with SpeedDecimateSpec.difference. */
export interface SpeedSourcePictures {
  picture: GpuPicture;
  minus?: GpuPicture;
}

export class SpeedDecimator {
  /** The C++ extractor's accumulators per frame (leading ones and planes). */
  readonly statsCount: number;
  readonly #name: string;
  readonly #leading: number;
  readonly #pipelines: Map<Entry, GPUComputePipeline>;
  readonly #buffers: GPUBuffer[];
  readonly #work: GPUBuffer;
  readonly #taps: GPUBuffer;
  /** The params words (speed-decimate.wgsl's Params), but `first` (10) and `out_word` (11), set per pass. */
  readonly #params: number[];
  readonly #groups: { antialias: [number, number, number]; mean: [number, number, number] };
  readonly #cache: BindGroupCache;

  private constructor(name: string, device: GPUDevice, pipelines: Map<Entry, GPUComputePipeline>, work: GPUBuffer, taps: GPUBuffer, params: number[], sizes: { dw: number; dh: number; aaTaps: number; meanTaps: number; group: number; planes: number }, statsCount: number, leading: number) {
    this.#name = name;
    this.#pipelines = pipelines;
    this.#work = work;
    this.#taps = taps;
    this.#buffers = [work, taps];
    this.#params = params;
    this.#leading = leading;
    const { dw, dh, aaTaps, meanTaps, group, planes } = sizes;
    // A workgroup per run of aaOuts() kept samples of a row, and plane of the source
    // (antialias); of meanOuts() decimated samples of a row, and decimated plane (local_mean).
    this.#groups = { antialias: [Math.ceil(dw / aaOuts(group, aaTaps)), dh, planes / SOURCES], mean: [Math.ceil(dw / meanOuts(meanTaps)), dh, planes] };
    this.#cache = new BindGroupCache(device, 256);
    this.statsCount = statsCount;
  }

  static async create(ctx: GpuExtractorContext, spec: SpeedDecimateSpec): Promise<SpeedDecimator> {
    const { gpu, layout, format, options } = ctx;
    const name = spec.native;
    const native = loadNative();
    const handle = native.createExtractor(name, options, nativeGeometry(format));
    const statsCount = native.extractorStatsCount(handle);
    // SpeedScorer::gpuParams' layout: width, height, dw, dh, the two filters' lengths, the
    // filters; the prescale's method, the scaled size, and for methods 1 and 2 a
    // (first, second, 1 - fraction, fraction) per scaled column, then per scaled row.
    const p = native.extractorGpuParams(handle);
    const [width, height, dw, dh, aaTaps, meanTaps] = [p[0]!, p[1]!, p[2]!, p[3]!, p[4]!, p[5]!];
    const filters = aaTaps + meanTaps;
    const [method, scaledWidth, scaledHeight] = [p[6 + filters]!, p[7 + filters]!, p[8 + filters]!];
    if (method === 3) throw new BackendError('E_GPU', `${name}: bicubic and lanczos4 prescales run on the host`);
    const tableWords = method === 0 ? 0 : 4 * (scaledWidth + scaledHeight);
    if (p.length !== 9 + filters + tableWords) throw new BackendError('E_GPU', `${name}: gpuParams holds ${p.length} numbers, ${9 + filters + tableWords} expected`);
    const spans = spec.planes.map((i) => layout.planes[i]);
    const first = spans[0];
    if (spans.length < 1 || spans.length > 2 || !first || spans.some((s) => !s || s.width !== first.width || s.height !== first.height)) {
      throw new BackendError('E_GPU', `${name}: the run uploads no such planes (${spec.planes.join(', ')})`);
    }
    if (width > first.width || height > first.height) throw new BackendError('E_GPU', `${name}: a ${width}x${height} SpEED plane in a ${first.width}x${first.height} one`);
    const planes = SOURCES * spans.length;
    if (2 * (statsCount - spec.leading) !== planes * dw * dh) {
      throw new BackendError('E_GPU', `${name}: the C++ extractor takes ${statsCount} accumulators, the kernel writes ${spec.leading + (planes * dw * dh) / 2}`);
    }
    if (aaTaps < 3 || aaTaps > MAX_AA_TAPS) throw new BackendError('E_GPU', `${name}: a ${aaTaps}-tap antialias filter (the kernel takes 3 to ${MAX_AA_TAPS})`);
    if (meanTaps * meanTaps > MEAN_GROUP) throw new BackendError('E_GPU', `${name}: a ${meanTaps}-tap local-mean filter (the kernel holds ${Math.floor(Math.sqrt(MEAN_GROUP))})`);
    const maxGroups = gpu.limits.maxComputeWorkgroupsPerDimension;
    if (dw > maxGroups || dh > maxGroups) {
      throw new BackendError('E_GPU', `${name}: ${dw}x${dh} decimated samples exceed the adapter's ${maxGroups} workgroups per dimension`);
    }
    const workWords = planes * dw * dh;
    if (4 * workWords > gpu.limits.maxStorageBufferBindingSize) throw new BackendError('E_GPU', `${name}: ${4 * workWords} bytes of scratch exceed the adapter's storage binding limit`);
    const scale = format.bitDepth === 8 ? 1 : 2 ** -(format.bitDepth - 8);
    // The constants buffer: the filters' float bits, then the tables (indices as they are, fractions' float bits).
    const constants = new Uint32Array(filters + tableWords);
    p.subarray(6, 6 + filters).forEach((v, i) => (constants[i] = f32Bits(v)));
    p.subarray(9 + filters).forEach((v, i) => (constants[filters + i] = i % 4 >= 2 ? f32Bits(v) : v));
    const [colWord, rowWord] = [filters, filters + 4 * scaledWidth];
    const words = spans.map((s) => s!.offset / 4);
    const params = [words[0]!, words[1] ?? words[0]!, first.width, scaledWidth, scaledHeight, dw, dh, aaTaps, meanTaps, f32Bits(scale), 0, 0, method, colWord, rowWord, planes];

    const d = gpu.device;
    const made: GPUBuffer[] = [];
    try {
      const work = d.createBuffer({ size: 4 * workWords, usage: GPUBufferUsage.STORAGE, label: `${name} decimated planes` });
      made.push(work);
      const taps = d.createBuffer({ size: 4 * constants.length, usage: GPUBufferUsage.STORAGE, mappedAtCreation: true, label: `${name} filters and prescale tables` });
      made.push(taps);
      new Uint32Array(taps.getMappedRange()).set(constants);
      taps.unmap();
      const code = loadWgsl(SOURCE);
      const group = aaGroup(gpu.limits);
      const compiled = await Promise.all(
        ENTRIES.map((entry) => createF32Pipeline(gpu, code, {
            label: `${name} ${entry} ${layout.bitDepth}-bit${method === 0 ? '' : ' prescaled'}`,
            entryPoint: entry,
            constants:
              entry === 'antialias'
                ? { BIT_DEPTH: layout.bitDepth, SCALED: method === 0 ? 0 : 1, DIFFERENCE: spec.difference ? 1 : 0, AA_GROUP: group }
                : { BIT_DEPTH: layout.bitDepth },
          }),
        ),
      );
      const pipelines = new Map(ENTRIES.map((e, i) => [e, compiled[i]!] as const));
      return new SpeedDecimator(name, d, pipelines, work, taps, params, { dw, dh, aaTaps, meanTaps, group, planes }, statsCount, spec.leading);
    } catch (e) {
      for (const b of made) b.destroy();
      throw e;
    }
  }

  /**
   * Records the frame's passes: the reference's side, then the distorted's (each picture's
   * samples, or with SpeedDecimateSpec.difference its samples minus `minus`'s), their
   * decimated planes written after the leading accumulators at `out`. Leaves those to the
   * caller.
   */
  encode(encoder: GPUCommandEncoder, sources: readonly [SpeedSourcePictures, SpeedSourcePictures], out: StatsSlot): void {
    if (out.offset % 8 !== 0) throw new BackendError('E_GPU', `${this.#name}: output offset ${out.offset} is not a multiple of 8`);
    // One pass: each dispatch sees the earlier ones' writes (the decimated planes in work).
    const pass = encoder.beginComputePass({ label: this.#name });
    const antialias = this.#pipelines.get('antialias')!;
    pass.setPipeline(antialias);
    sources.forEach((source, first) => {
      pass.setBindGroup(0, this.#antialiasGroup(first, source, antialias));
      pass.dispatchWorkgroups(...this.#groups.antialias);
    });
    pass.setPipeline(this.#pipelines.get('local_mean')!);
    pass.setBindGroup(0, this.#meanGroup(out));
    pass.dispatchWorkgroups(...this.#groups.mean);
    pass.end();
  }

  destroy(): void {
    for (const b of this.#buffers) b.destroy();
    this.#cache.destroy();
  }

  #antialiasGroup(first: number, source: SpeedSourcePictures, pipeline: GPUComputePipeline): GPUBindGroup {
    const cache = this.#cache;
    const words = this.#params.slice();
    words[10] = first;
    const params = cache.uniform(`a${first}`, words, `${this.#name} params`, 4 * PARAMS_WORDS);
    const pic = source.picture.buffer;
    // Without a difference pic_minus is never read (DIFFERENCE is 0): the picture itself is bound there.
    const minus = source.minus?.buffer ?? pic;
    return cache.group(`a${first},${cache.id(pic)},${cache.id(minus)}`, pipeline, `${this.#name} antialias`, { 0: pic, 1: this.#work, 3: params, 4: this.#taps, 5: minus });
  }

  #meanGroup(out: StatsSlot): GPUBindGroup {
    const cache = this.#cache;
    const word = out.offset / 4 + 2 * this.#leading;
    const words = this.#params.slice();
    words[11] = word;
    const params = cache.uniform(`m${word}`, words, `${this.#name} params`, 4 * PARAMS_WORDS);
    return cache.group(`m,${cache.id(out.buffer)},${word}`, this.#pipelines.get('local_mean')!, `${this.#name} local_mean`, { 1: this.#work, 2: out.buffer, 3: params, 4: this.#taps });
  }
}

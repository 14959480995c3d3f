/**
 * speed_chroma on the GPU (speed_chroma.wgsl). Where each stage runs:
 * - GPU: SpEED's per-pixel work, SpeedScorer::decimate() of speed-core.cpp for the U and V
 *   planes of both pictures: the samples as floats, the antialiasing Gaussian evaluated at
 *   the samples the decimation by 16 keeps, the local-mean filter of the decimated planes
 *   and the difference, in integer-exact soft float (lib/f32.wgsl) in the C++'s order. The
 *   four decimated planes are the frame's stats words (two floats an accumulator).
 * - Host: speed_chroma.cpp's finishStats, from those planes: per plane the 25x25 covariance
 *   of the 5x5 blocks (double sums), its eigenvalues and the K X = Y solve (float), the
 *   blocks' entropies and the score, the very code the cpu backend's extract() runs after
 *   its own decimate(), so both backends give the same bits. A few thousand values a frame
 *   (1/256 of the chroma), read back with the group's stats.
 * The filters come from the C++ instance (gpuParams: glibc's exp), and so, for a
 * speed_prescale that resamples the planes (nearest or bilinear: the v1 models' is bilinear),
 * does each scaled column's and row's pair of source samples and fraction, which the kernel
 * combines at the samples the antialias filter reads. Bicubic and lanczos4 resampling runs on
 * the host.
 */
import { f32Constants } from '../../kernels/gpu/f32-probe.js';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BackendError } from '../../errors.js';
import type { GpuExtractorContext, GpuExtractorInputs, GpuExtractorKernel, GpuImplementation, GpuPicture } from '../../kernels/gpu/gpu-extractor.js';
import type { StatsSlot } from '../../kernels/gpu/frame-kernel.js';
import { f32Bits, loadWgsl, WGSL_ROOT } from '../../kernels/gpu/wgsl.js';
import { loadNative, nativeGeometry } from '../../kernels/native.js';
import { BindGroupCache } from '../../kernels/gpu/bind-groups.js';

const SOURCE = relative(WGSL_ROOT, join(dirname(fileURLToPath(import.meta.url)), 'speed_chroma.wgsl'));
const PARAMS_WORDS = 16;
/** speed_chroma.wgsl's MAX_AA_TAPS: its workgroup arrays' size. */
const MAX_AA_TAPS = 35;
/** speed_chroma.wgsl's MEAN_GROUP: a local_mean workgroup's invocations; its outputs: mean_outs(). */
const MEAN_GROUP = 128;
/** antialias's invocations: 256 (every product of a 9-tap filter's 3 outputs in one round) where the adapter allows. */
const aaGroup = (limits: GPUSupportedLimits): number => Math.min(256, limits.maxComputeInvocationsPerWorkgroup, limits.maxComputeWorkgroupSizeX);
/** speed_chroma.wgsl's aa_outs() and mean_outs(): how many outputs a workgroup computes. */
const aaOuts = (group: number, taps: number): number => Math.max(1, Math.floor(group / (taps * taps)));
const meanOuts = (taps: number): number => Math.max(1, Math.floor(MEAN_GROUP / (taps * taps)));
/** U ref, U dis, V ref, V dis. */
const PLANES = 4;

type Entry = 'antialias' | 'local_mean';
const ENTRIES: readonly Entry[] = ['antialias', 'local_mean'];

export const speedChromaGpu: GpuImplementation = {
  // The kernel resamples as nearest and bilinear do (the v1 models' prescales are bilinear);
  // bicubic and lanczos4 run on the host where they change the size (at the same size
  // scalePlane copies).
  supports: (options, format) => {
    if (['nearest', 'bilinear'].includes(String(options['speed_prescale_method']))) return true;
    const prescale = Number(options['speed_prescale']);
    // The chroma plane as libvmaf sizes it (speed_chroma.ts's check), scaled as speed-core.cpp does.
    const w = format.chroma === '444' ? format.width : Math.floor(format.width / 2);
    const h = format.chroma === '420' ? Math.floor(format.height / 2) : format.height;
    return Math.trunc(w * prescale + 0.5) === w && Math.trunc(h * prescale + 0.5) === h;
  },
  create: (ctx) => SpeedChromaKernel.create(ctx),
};

class SpeedChromaKernel implements GpuExtractorKernel {
  readonly statsCount: number;
  readonly #pipelines: Map<Entry, GPUComputePipeline>;
  readonly #buffers: GPUBuffer[];
  readonly #work: GPUBuffer;
  readonly #taps: GPUBuffer;
  /** The params words (speed_chroma.wgsl's Params), but `first` (10) and `out_word` (11), set per pass. */
  readonly #params: number[];
  readonly #groups: { antialias: [number, number, number]; mean: [number, number, number] };
  readonly #cache: BindGroupCache;

  private constructor(device: GPUDevice, pipelines: Map<Entry, GPUComputePipeline>, work: GPUBuffer, taps: GPUBuffer, params: number[], dw: number, dh: number, aaTaps: number, meanTaps: number, group: number, statsCount: number) {
    this.#pipelines = pipelines;
    this.#work = work;
    this.#taps = taps;
    this.#buffers = [work, taps];
    this.#params = params;
    // A workgroup per run of aaOuts() kept samples of a row, and plane (U, V: antialias); of
    // meanOuts() decimated samples of a row, and plane (local_mean).
    this.#groups = { antialias: [Math.ceil(dw / aaOuts(group, aaTaps)), dh, 2], mean: [Math.ceil(dw / meanOuts(meanTaps)), dh, PLANES] };
    this.#cache = new BindGroupCache(device, 256);
    this.statsCount = statsCount;
  }

  static async create(ctx: GpuExtractorContext): Promise<SpeedChromaKernel> {
    const { gpu, layout, format, options } = ctx;
    const native = loadNative();
    const handle = native.createExtractor('speed_chroma', options, nativeGeometry(format));
    const statsCount = native.extractorStatsCount(handle);
    // gpuParams' layout (speed_chroma.cpp): width, height, dw, dh, the two filters' lengths,
    // the filters; the prescale's method, the scaled size, and for methods 1 and 2 a
    // (first, second, 1 - fraction, fraction) per scaled column, then per scaled row.
    const p = native.extractorGpuParams(handle);
    const [width, height, dw, dh, aaTaps, meanTaps] = [p[0]!, p[1]!, p[2]!, p[3]!, p[4]!, p[5]!];
    const filters = aaTaps + meanTaps;
    const [method, scaledWidth, scaledHeight] = [p[6 + filters]!, p[7 + filters]!, p[8 + filters]!];
    if (method === 3) throw new BackendError('E_GPU', 'speed_chroma: bicubic and lanczos4 prescales run on the host');
    const tableWords = method === 0 ? 0 : 4 * (scaledWidth + scaledHeight);
    if (p.length !== 9 + filters + tableWords) throw new BackendError('E_GPU', `speed_chroma: gpuParams holds ${p.length} numbers, ${9 + filters + tableWords} expected`);
    const [cb, cr] = [layout.planes[1], layout.planes[2]];
    if (!cb || !cr) throw new BackendError('E_GPU', 'speed_chroma: the run uploads no chroma planes');
    if (width > cb.width || height > cb.height) throw new BackendError('E_GPU', `speed_chroma: a ${width}x${height} SpEED plane in ${cb.width}x${cb.height} chroma`);
    if (2 * statsCount !== PLANES * dw * dh) throw new BackendError('E_GPU', `speed_chroma: the C++ extractor takes ${statsCount} accumulators, the kernel writes ${(PLANES * dw * dh) / 2}`);
    if (aaTaps < 3 || aaTaps > MAX_AA_TAPS) throw new BackendError('E_GPU', `speed_chroma: a ${aaTaps}-tap antialias filter (the kernel takes 3 to ${MAX_AA_TAPS})`);
    if (meanTaps * meanTaps > MEAN_GROUP) throw new BackendError('E_GPU', `speed_chroma: a ${meanTaps}-tap local-mean filter (the kernel holds ${Math.floor(Math.sqrt(MEAN_GROUP))})`);
    const maxGroups = gpu.limits.maxComputeWorkgroupsPerDimension;
    if (dw > maxGroups || dh > maxGroups) {
      throw new BackendError('E_GPU', `speed_chroma: ${dw}x${dh} decimated samples exceed the adapter's ${maxGroups} workgroups per dimension`);
    }
    const workWords = PLANES * dw * dh;
    if (4 * workWords > gpu.limits.maxStorageBufferBindingSize) throw new BackendError('E_GPU', `speed_chroma: ${4 * workWords} bytes of scratch exceed the adapter's storage binding limit`);
    const scale = format.bitDepth === 8 ? 1 : 2 ** -(format.bitDepth - 8);
    // The constants buffer: the filters' float bits, then the tables (indices as they are, fractions' float bits).
    const constants = new Uint32Array(filters + tableWords);
    p.subarray(6, 6 + filters).forEach((v, i) => (constants[i] = f32Bits(v)));
    p.subarray(9 + filters).forEach((v, i) => (constants[filters + i] = i % 4 >= 2 ? f32Bits(v) : v));
    const [colWord, rowWord] = [filters, filters + 4 * scaledWidth];
    const params = [cb.offset / 4, cr.offset / 4, cb.width, scaledWidth, scaledHeight, dw, dh, aaTaps, meanTaps, f32Bits(scale), 0, 0, method, colWord, rowWord, 0];

    const d = gpu.device;
    const made: GPUBuffer[] = [];
    try {
      const work = d.createBuffer({ size: 4 * workWords, usage: GPUBufferUsage.STORAGE, label: 'speed_chroma decimated planes' });
      made.push(work);
      const taps = d.createBuffer({ size: 4 * constants.length, usage: GPUBufferUsage.STORAGE, mappedAtCreation: true, label: 'speed_chroma filters and prescale tables' });
      made.push(taps);
      new Uint32Array(taps.getMappedRange()).set(constants);
      taps.unmap();
      const code = loadWgsl(SOURCE);
      // lib/f32.wgsl's native paths, unless this adapter's start-up probe found them inexact.
      const f32 = await f32Constants(gpu);
      const compiled = await Promise.all(
        ENTRIES.map((entry) => gpu.createComputePipeline(code, {
            label: `speed_chroma ${entry} ${layout.bitDepth}-bit${method === 0 ? '' : ' prescaled'}`,
            entryPoint: entry,
            constants: entry === 'antialias' ? { BIT_DEPTH: layout.bitDepth, SCALED: method === 0 ? 0 : 1, AA_GROUP: aaGroup(gpu.limits), ...f32 } : { BIT_DEPTH: layout.bitDepth, ...f32 },
          }),
        ),
      );
      return new SpeedChromaKernel(d, new Map(ENTRIES.map((e, i) => [e, compiled[i]!] as const)), work, taps, params, dw, dh, aaTaps, meanTaps, aaGroup(gpu.limits), statsCount);
    } catch (e) {
      for (const b of made) b.destroy();
      throw e;
    }
  }

  encode(encoder: GPUCommandEncoder, inputs: GpuExtractorInputs, out: StatsSlot): void {
    if (out.offset % 8 !== 0) throw new BackendError('E_GPU', `speed_chroma: output offset ${out.offset} is not a multiple of 8`);
    // One pass: each dispatch sees the earlier ones' writes (the decimated planes in work).
    const pass = encoder.beginComputePass({ label: 'speed_chroma' });
    const antialias = this.#pipelines.get('antialias')!;
    pass.setPipeline(antialias);
    for (const [first, picture] of [[0, inputs.ref], [1, inputs.dis]] as const) {
      pass.setBindGroup(0, this.#antialiasGroup(first, picture, antialias));
      pass.dispatchWorkgroups(...this.#groups.antialias);
    }
    pass.setPipeline(this.#pipelines.get('local_mean')!);
    pass.setBindGroup(0, this.#meanGroup(out));
    pass.dispatchWorkgroups(...this.#groups.mean);
    pass.end();
  }

  destroy(): void {
    for (const b of this.#buffers) b.destroy();
    this.#cache.destroy();
  }

  #antialiasGroup(first: number, picture: GpuPicture, pipeline: GPUComputePipeline): GPUBindGroup {
    const cache = this.#cache;
    const words = this.#params.slice();
    words[10] = first;
    const params = cache.uniform(`a${first}`, words, 'speed_chroma params', 4 * PARAMS_WORDS);
    return cache.group(`a${first},${cache.id(picture.buffer)}`, pipeline, 'speed_chroma antialias', { 0: picture.buffer, 1: this.#work, 3: params, 4: this.#taps });
  }

  #meanGroup(out: StatsSlot): GPUBindGroup {
    const cache = this.#cache;
    const word = out.offset / 4;
    const words = this.#params.slice();
    words[11] = word;
    const params = cache.uniform(`m${word}`, words, 'speed_chroma params', 4 * PARAMS_WORDS);
    return cache.group(`m,${cache.id(out.buffer)},${word}`, this.#pipelines.get('local_mean')!, 'speed_chroma local_mean', { 1: this.#work, 2: out.buffer, 3: params, 4: this.#taps });
  }
}

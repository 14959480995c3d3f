/**
 * float_vif on the GPU (float_vif.wgsl). Where each stage runs:
 * - GPU: the luma as floats (offset by -128), each scale's Gaussian blur and decimation,
 *   the five filtered quantities, the per-pixel statistic (divisions, the double steps with
 *   sigma_nsq, libvmaf's polynomial log2: float and double arithmetic only, reproduced in
 *   integer-exact soft float), and each row's float sums of the numerator and denominator
 *   terms, summed in column order by one invocation as the C++ sums a row.
 * - Host: float_vif.cpp's finishStats: the rows' sums per scale (float, row order), the
 *   double sums over scales and the scores, the very code the cpu backend's extract() ends
 *   with. The filters and the statistic's constants (glibc's exp and powf) come from the
 *   C++ instance (gpuParams).
 * The readback is one 64-bit accumulator per row of each scale (2025 at 1080p), so every
 * size runs here whose largest scratch binding (five filtered planes of the frame) fits the
 * device's storage binding limit (WebGPU's default 128 MiB: up to 6.7 million pixels, 1440p;
 * GPUs that bind 1 GiB take 2160p and beyond); larger frames, and a vif_prescale that changes
 * the size, run on the host.
 */
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BackendError } from '../../errors.js';
import { DEFAULT_BINDING_LIMITS, type GpuExtractorContext, type GpuExtractorInputs, type GpuExtractorKernel, type GpuImplementation, type GpuPicture } from '../../kernels/gpu/gpu-extractor.js';
import type { StatsSlot } from '../../kernels/gpu/frame-kernel.js';
import { f32Bits, f64Bits, loadWgsl, WGSL_ROOT } from '../../kernels/gpu/wgsl.js';
import { createF32Pipeline } from '../../kernels/gpu/f32-probe.js';
import { loadNative, nativeGeometry } from '../../kernels/native.js';
import { BindGroupCache, type Bindings } from '../../kernels/gpu/bind-groups.js';
import type { OptionValues } from '../option.js';
import type { FrameFormat } from '../../types.js';

const SOURCE = relative(WGSL_ROOT, join(dirname(fileURLToPath(import.meta.url)), 'float_vif.wgsl'));
const PARAMS_WORDS = 20;
const WORKGROUP = 16;
/** row_sums' rows per workgroup (serial-rows.wgsl's SR_ROWS). */
const ROW_WORKGROUP = 16;
/** Floats per pixel of the largest binding (the five vertically filtered quantities). */
const VERT_PER_PIXEL = 5;

type Entry = 'to_float' | 'vertical' | 'decimate' | 'statistic' | 'row_sums';
const ENTRIES: readonly Entry[] = ['to_float', 'vertical', 'decimate', 'statistic', 'row_sums'];

/** The size float_vif computes at: the frame's times vif_prescale, rounded as the C++ does. */
function scaledSize(options: OptionValues, format: FrameFormat): { width: number; height: number } {
  const prescale = Number(options['vif_prescale']);
  return { width: Math.trunc(format.width * prescale + 0.5), height: Math.trunc(format.height * prescale + 0.5) };
}

interface Pass {
  entry: Entry;
  params: Uint32Array;
  /** Invocations in x and y. */
  size: [number, number];
  /** to_float: which picture. */
  of?: 'ref' | 'dis';
  /** row_sums: its first word in the stats slot, to which the slot's is added. */
  statsWord?: number;
}

export const floatVifGpu: GpuImplementation = {
  // Every binding within the device's limit (WebGPU's default 128 MiB takes 1440p; 2160p needs more).
  supports: (options, format, limits = DEFAULT_BINDING_LIMITS) => {
    const { width, height } = scaledSize(options, format);
    return width === format.width && height === format.height && VERT_PER_PIXEL * 4 * width * height <= limits.maxStorageBufferBindingSize;
  },
  create: (ctx) => FloatVifKernel.create(ctx),
};

interface Scratch {
  images: GPUBuffer;
  vert: GPUBuffer;
  terms: GPUBuffer;
  filters: GPUBuffer;
}

export class FloatVifKernel implements GpuExtractorKernel {
  readonly statsCount: number;
  readonly #pipelines: Map<Entry, GPUComputePipeline>;
  readonly #passes: Pass[];
  readonly #buffers: Scratch;
  readonly #cache: BindGroupCache;

  private constructor(device: GPUDevice, pipelines: Map<Entry, GPUComputePipeline>, passes: Pass[], buffers: Scratch, statsCount: number) {
    this.#pipelines = pipelines;
    this.#passes = passes;
    this.#buffers = buffers;
    this.#cache = new BindGroupCache(device);
    this.statsCount = statsCount;
  }

  static async create(ctx: GpuExtractorContext): Promise<FloatVifKernel> {
    const { gpu, layout, format, options } = ctx;
    const native = loadNative();
    const handle = native.createExtractor('float_vif', options, nativeGeometry(format));
    const statsCount = native.extractorStatsCount(handle);
    // gpuParams' layout (float_vif.cpp): w, h, first scale, sigma_max_inv, gain limit, sigma_nsq, 4 lengths, the filters.
    const p = native.extractorGpuParams(handle);
    const [width, height, first, sigmaMaxInv, gainLimit, nsq] = [p[0]!, p[1]!, p[2]!, p[3]!, p[4]!, p[5]!];
    const lengths = [p[6]!, p[7]!, p[8]!, p[9]!];
    const luma = layout.planes[0]!;
    if (width !== luma.width || height !== luma.height) throw new BackendError('E_GPU', `float_vif: vif_prescale's ${width}x${height} does not run on the GPU`);
    const filterWords = new Uint32Array(p.length - 10);
    p.subarray(10).forEach((v, i) => (filterWords[i] = f32Bits(v)));
    const filterAt: number[] = [];
    lengths.reduce((at, n) => (filterAt.push(at), at + n), 0);
    const nsqWords = f64Bits(nsq);
    const scale = format.bitDepth === 10 ? 1 / 4 : format.bitDepth === 12 ? 1 / 16 : 1 / 256;

    const params = (v: Partial<Record<'src' | 'src2' | 'w' | 'h' | 'dst' | 'dst2' | 'ow' | 'oh' | 'step' | 'nq' | 'scale', number>>, s = 0): Uint32Array =>
      new Uint32Array([
        v.src ?? 0, v.src2 ?? 0, v.w ?? 0, v.h ?? 0, v.dst ?? 0, v.dst2 ?? 0, v.ow ?? 0, v.oh ?? 0, v.step ?? 1, lengths[s]!, filterAt[s]!, v.nq ?? 0,
        v.scale ?? 0, f32Bits(sigmaMaxInv), f32Bits(gainLimit), 0, nsqWords[0]!, nsqWords[1]!, 0, 0,
      ]);
    const passes: Pass[] = [];
    const n = width * height;
    // Scales alternate between two regions of `images`: [0, 2n) and [2n, 2n + 2 n/4).
    const region = (s: number, w: number, h: number): [number, number] => (s % 2 === 0 ? [0, w * h] : [2 * n, 2 * n + w * h]);
    let [ref, dis] = region(0, width, height);
    passes.push({ entry: 'to_float', of: 'ref', params: params({ src: luma.offset / 4, w: width, h: height, dst: ref, scale: f32Bits(scale) }), size: [width, height] });
    passes.push({ entry: 'to_float', of: 'dis', params: params({ src: luma.offset / 4, w: width, h: height, dst: dis, scale: f32Bits(scale) }), size: [width, height] });
    let w = width;
    let h = height;
    let statsWord = 0;
    let vertWords = 0;
    let termsWords = 0;
    for (let s = first; s < 4; s++) {
      if (s > 0) {
        const hw = Math.trunc(w / 2);
        const hh = Math.trunc(h / 2);
        const [nref, ndis] = region(s, hw, hh);
        passes.push({ entry: 'vertical', params: params({ src: ref, src2: dis, w, h, oh: hh, step: 2, nq: 2 }, s), size: [w, hh] });
        passes.push({ entry: 'decimate', params: params({ w, h, oh: hh, ow: hw, dst: nref, dst2: ndis }, s), size: [hw, hh] });
        vertWords = Math.max(vertWords, 2 * hh * w);
        [ref, dis, w, h] = [nref, ndis, hw, hh];
      }
      passes.push({ entry: 'vertical', params: params({ src: ref, src2: dis, w, h, oh: h, step: 1, nq: 5 }, s), size: [w, h] });
      passes.push({ entry: 'statistic', params: params({ w, h, oh: h }, s), size: [w, h] });
      passes.push({ entry: 'row_sums', params: params({ w, h, oh: h }, s), size: [h, 1], statsWord });
      vertWords = Math.max(vertWords, 5 * w * h);
      termsWords = Math.max(termsWords, 2 * w * h);
      statsWord += 2 * h;
    }
    if (statsWord !== 2 * statsCount) throw new BackendError('E_GPU', `float_vif: the kernel writes ${statsWord / 2} rows, the C++ extractor takes ${statsCount}`);
    const maxGroups = gpu.limits.maxComputeWorkgroupsPerDimension;
    for (const q of passes) {
      const [gx, gy] = q.entry === 'row_sums' ? [Math.ceil(q.size[0] / ROW_WORKGROUP), 1] : [Math.ceil(q.size[0] / WORKGROUP), Math.ceil(q.size[1] / WORKGROUP)];
      if (gx > maxGroups || gy > maxGroups) throw new BackendError('E_GPU', `float_vif: ${q.size.join('x')} exceeds the adapter's ${maxGroups} workgroups per dimension`);
    }
    const imagesWords = 2 * n + 2 * Math.trunc(width / 2) * Math.trunc(height / 2);
    const limit = gpu.limits.maxStorageBufferBindingSize;
    for (const words of [imagesWords, vertWords, termsWords]) {
      if (4 * words > limit) throw new BackendError('E_GPU', `float_vif: ${4 * words} bytes of scratch exceed the adapter's storage binding limit (${limit})`);
    }

    const d = gpu.device;
    const made: GPUBuffer[] = [];
    const buffer = (words: number, label: string, usage = GPUBufferUsage.STORAGE): GPUBuffer => {
      const b = d.createBuffer({ size: Math.max(16, 4 * words), usage, label });
      made.push(b);
      return b;
    };
    try {
      const images = buffer(imagesWords, 'float_vif planes');
      const vert = buffer(vertWords, 'float_vif vertical filter');
      const terms = buffer(termsWords, 'float_vif terms');
      const filters = buffer(filterWords.length, 'float_vif filters', GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST);
      d.queue.writeBuffer(filters, 0, filterWords);
      const code = loadWgsl(SOURCE);
      const compiled = await Promise.all(
        ENTRIES.map((entry) => createF32Pipeline(gpu, code, { label: `float_vif ${entry} ${layout.bitDepth}-bit`, entryPoint: entry, constants: { BIT_DEPTH: layout.bitDepth } })),
      );
      const pipelines = new Map(ENTRIES.map((e, i) => [e, compiled[i]!] as const));
      return new FloatVifKernel(d, pipelines, passes, { images, vert, terms, filters }, statsCount);
    } catch (e) {
      for (const b of made) b.destroy();
      throw e;
    }
  }

  encode(encoder: GPUCommandEncoder, inputs: GpuExtractorInputs, out: StatsSlot): void {
    if (out.offset % 8 !== 0) throw new BackendError('E_GPU', `float_vif: output offset ${out.offset} is not a multiple of 8`);
    // Each dispatch is its own usage scope: the later passes see the earlier ones' writes.
    const pass = encoder.beginComputePass({ label: 'float_vif' });
    this.#passes.forEach((p, i) => {
      pass.setPipeline(this.#pipelines.get(p.entry)!);
      pass.setBindGroup(0, this.#bindGroup(i, p, inputs, out));
      if (p.entry === 'row_sums') pass.dispatchWorkgroups(Math.ceil(p.size[0] / ROW_WORKGROUP));
      else pass.dispatchWorkgroups(Math.ceil(p.size[0] / WORKGROUP), Math.ceil(p.size[1] / WORKGROUP));
    });
    pass.end();
  }

  destroy(): void {
    for (const b of Object.values(this.#buffers)) b.destroy();
    this.#cache.destroy();
  }

  #bindGroup(index: number, p: Pass, inputs: GpuExtractorInputs, out: StatsSlot): GPUBindGroup {
    const { images, vert, terms, filters } = this.#buffers;
    const cache = this.#cache;
    const params = (values: Uint32Array, key = String(index)): GPUBuffer => cache.uniform(key, values, 'float_vif params', 4 * PARAMS_WORDS);
    const group = (key: string, bindings: Bindings): GPUBindGroup => cache.group(key, this.#pipelines.get(p.entry)!, `float_vif ${p.entry}`, bindings);
    switch (p.entry) {
      case 'to_float': {
        const picture: GpuPicture = p.of === 'ref' ? inputs.ref : inputs.dis;
        return group(`${index},${cache.id(picture.buffer)}`, { 0: picture.buffer, 1: images, 5: params(p.params) });
      }
      case 'vertical':
      case 'decimate':
        return group(String(index), { 1: images, 2: vert, 5: params(p.params), 6: filters });
      case 'statistic':
        return group(String(index), { 2: vert, 3: terms, 5: params(p.params), 6: filters });
      case 'row_sums': {
        const dst = out.offset / 4 + p.statsWord!;
        const values = p.params.slice();
        values[4] = dst;
        return group(`${index},${cache.id(out.buffer)},${dst}`, { 3: terms, 4: out.buffer, 5: params(values, `${index},${dst}`) });
      }
    }
  }
}

/**
 * float_adm on the GPU (float_adm.wgsl). Where each stage runs:
 * - GPU: the luma as floats (offset by -128), each scale's db2 step, the decoupling into
 *   restored and additive detail (the gain's division as rcpss plus a Newton step, rcpss
 *   from the host's own table), the CSF weights and masking shares, per scored sample the
 *   p-norm terms (cubes) of the denominator and the two masked numerators, and each scored
 *   row's float sums of them, summed in column order by one invocation as the C++ sums a
 *   row: float and double arithmetic reproduced in integer-exact soft float.
 * - Host: float_adm.cpp's finishStats: the rows' sums per scale (float, row order), the
 *   p-th roots and noise floors (glibc's powf), the double sums over scales and the scores,
 *   the very code the cpu backend's extract() ends with. The CSF factors, the gain limit and
 *   the rcp table come from the C++ instance (gpuParams).
 * The readback is five 64-bit accumulators per scored row of each scale (about 800 rows at
 * 1080p). Runs here: adm_p_norm 3 (other p-norms take powf per sample, which only the host
 * gives exactly), a host whose rcpss float_adm.cpp could tabulate (Intel's, so far), and
 * every size whose bindings fit the device's storage binding limit (the planes buffer, scale
 * 0's two planes and every scale's eight bands, some 4.7 floats a pixel: WebGPU's default
 * 128 MiB allows 7.1 million pixels, 1440p; GPUs that give 1 GiB or more take 2160p and
 * beyond); the rest runs on the host.
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

const SOURCE = relative(WGSL_ROOT, join(dirname(fileURLToPath(import.meta.url)), 'float_adm.wgsl'));
const PARAMS_WORDS = 20;
const WORKGROUP = 16;
/** row_sums' rows per workgroup (serial-rows.wgsl's SR_ROWS). */
const ROW_WORKGROUP = 16;
/** Words a scored row takes in the stats (float_adm.cpp's kRowWords). */
const ROW_WORDS = 10;
/** gpuParams' fixed part (float_adm.cpp): table bits, gain limit, cos^2 1deg, skip scale 0, bypass CM, p-norm, 12 factors. */
const FIXED_PARAMS = 18;

type Entry = 'to_float' | 'dwt' | 'decouple' | 'terms_pass' | 'row_sums';
const ENTRIES: readonly Entry[] = ['to_float', 'dwt', 'decouple', 'terms_pass', 'row_sums'];

/** float_adm.cpp's regions (libvmaf truncates toward zero). */
interface Region {
  left: number;
  top: number;
  right: number;
  bottom: number;
}
function scoredRegion(w: number, h: number): Region {
  const left = Math.trunc(w * 0.1 - 0.5);
  const top = Math.trunc(h * 0.1 - 0.5);
  return { left, top, right: w - left, bottom: h - top };
}
function tapRegion(w: number, h: number): Region {
  const left = Math.trunc(w * 0.1 - 0.5 - 1);
  const top = Math.trunc(h * 0.1 - 0.5 - 1);
  return { left: Math.max(left, 0), top: Math.max(top, 0), right: Math.min(w - left + 2, w), bottom: Math.min(h - top + 2, h) };
}

/** The words of the planes buffer: scale 0's ref and dis, then 8 bands per scale. */
function planeWords(width: number, height: number): { total: number; bandsAt: number[] } {
  let at = 2 * width * height;
  const bandsAt: number[] = [];
  let [w, h] = [width, height];
  for (let s = 0; s < 4; s++) {
    [w, h] = [Math.trunc((w + 1) / 2), Math.trunc((h + 1) / 2)];
    bandsAt.push(at);
    at += 8 * w * h;
  }
  return { total: at, bandsAt };
}

/** The host's gpuParams for these options (the table does not depend on the size). */
let tableUsable: boolean | undefined;
function hostParams(options: OptionValues, format: FrameFormat): Float64Array {
  const native = loadNative();
  const handle = native.createExtractor('float_adm', options, nativeGeometry(format));
  return native.extractorGpuParams(handle);
}

export const floatAdmGpu: GpuImplementation = {
  supports: (options, format, limits = DEFAULT_BINDING_LIMITS) => {
    if (Number(options['adm_p_norm']) !== 3) return false;
    if (tableUsable === undefined) tableUsable = hostParams(options, format)[0]! >= 0;
    if (!tableUsable) return false;
    const n = format.width * format.height;
    const m = Math.trunc((format.width + 1) / 2) * Math.trunc((format.height + 1) / 2);
    return 4 * Math.max(planeWords(format.width, format.height).total, 12 * m, 9 * m) <= limits.maxStorageBufferBindingSize && n > 0;
  },
  create: (ctx) => FloatAdmKernel.create(ctx),
};

interface Pass {
  entry: Entry;
  params: Uint32Array;
  /** Invocations in x and y. */
  size: [number, number];
  /** to_float: which picture. */
  of?: 'ref' | 'dis';
}

interface Scratch {
  planes: GPUBuffer;
  csf: GPUBuffer;
  terms: GPUBuffer;
  table: GPUBuffer;
}

type ParamValues = Partial<Record<'src' | 'src2' | 'w' | 'h' | 'dst' | 'ow' | 'oh' | 'x0' | 'y0' | 'scale' | 'stats', number>>;

export class FloatAdmKernel implements GpuExtractorKernel {
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

  static async create(ctx: GpuExtractorContext): Promise<FloatAdmKernel> {
    const { gpu, layout, format, options } = ctx;
    const native = loadNative();
    const handle = native.createExtractor('float_adm', options, nativeGeometry(format));
    const statsCount = native.extractorStatsCount(handle);
    const p = native.extractorGpuParams(handle);
    const [tableBits, gainLimit, cos1, skipScale0, bypassCm, pNorm] = [p[0]!, p[1]!, p[2]!, p[3]!, p[4]!, p[5]!];
    if (tableBits < 0 || pNorm !== 3) throw new BackendError('E_GPU', 'float_adm: this host\'s rcpss or adm_p_norm does not run on the GPU');
    const factors = Array.from(p.subarray(6, FIXED_PARAMS), f32Bits);
    const tableWords = Uint32Array.from(p.subarray(FIXED_PARAMS));
    if (tableWords.length !== (tableBits === 0 ? 0 : 1 << tableBits)) throw new BackendError('E_GPU', `float_adm: an rcp table of ${tableWords.length} entries for ${tableBits} bits`);
    const limitWords = f64Bits(gainLimit);
    const luma = layout.planes[0]!;
    const width = format.width;
    const height = format.height;
    if (width !== luma.width || height !== luma.height) throw new BackendError('E_GPU', 'float_adm: the uploaded luma is not the frame\'s size');
    const depthScale = format.bitDepth === 10 ? 1 / 4 : format.bitDepth === 12 ? 1 / 16 : 1 / 256;

    const params = (v: ParamValues, scale = 0): Uint32Array =>
      new Uint32Array([
        v.src ?? 0, v.src2 ?? 0, v.w ?? 0, v.h ?? 0, v.dst ?? 0, v.ow ?? 0, v.oh ?? 0, v.x0 ?? 0, v.y0 ?? 0, v.scale ?? 0,
        factors[3 * scale]!, factors[3 * scale + 1]!, factors[3 * scale + 2]!, f32Bits(cos1), tableBits, bypassCm,
        limitWords[0]!, limitWords[1]!, v.stats ?? 0, 0,
      ]);
    const n = width * height;
    const { total: planesWords, bandsAt } = planeWords(width, height);
    const passes: Pass[] = [];
    passes.push({ entry: 'to_float', of: 'ref', params: params({ src: luma.offset / 4, w: width, h: height, dst: 0, scale: f32Bits(depthScale) }), size: [width, height] });
    passes.push({ entry: 'to_float', of: 'dis', params: params({ src: luma.offset / 4, w: width, h: height, dst: n, scale: f32Bits(depthScale) }), size: [width, height] });
    let [ref, dis, w, h] = [0, n, width, height];
    let statsWord = 0;
    let termsWords = 0;
    for (let s = 0; s < 4; s++) {
      const [ow, oh] = [Math.trunc((w + 1) / 2), Math.trunc((h + 1) / 2)];
      const base = bandsAt[s]!;
      // Scale 0 skipped: its bands are computed all the same (only band a is read).
      passes.push({ entry: 'dwt', params: params({ src: ref, src2: dis, w, h, dst: base, ow, oh }, s), size: [ow, oh] });
      [ref, dis, w, h] = [base, base + 4 * ow * oh, ow, oh];
      if (s === 0 && skipScale0 !== 0) continue;
      const tap = tapRegion(w, h);
      passes.push({ entry: 'decouple', params: params({ w, h, dst: base, x0: tap.left, y0: tap.top, ow: tap.right - tap.left, oh: tap.bottom - tap.top }, s), size: [tap.right - tap.left, tap.bottom - tap.top] });
      const g = scoredRegion(w, h);
      const [sw, sh] = [g.right - g.left, g.bottom - g.top];
      passes.push({ entry: 'terms_pass', params: params({ w, h, dst: base, x0: g.left, y0: g.top, ow: sw, oh: sh }, s), size: [sw, sh] });
      passes.push({ entry: 'row_sums', params: params({ w, h, ow: sw, oh: sh, stats: statsWord }, s), size: [sh, 1] });
      termsWords = Math.max(termsWords, 9 * sw * sh);
      statsWord += ROW_WORDS * sh;
    }
    if (statsWord !== 2 * statsCount) throw new BackendError('E_GPU', `float_adm: the kernel writes ${statsWord / 2} accumulators, the C++ extractor takes ${statsCount}`);
    const maxGroups = gpu.limits.maxComputeWorkgroupsPerDimension;
    for (const q of passes) {
      const [gx, gy] = q.entry === 'row_sums' ? [Math.ceil(q.size[0] / ROW_WORKGROUP), 1] : [Math.ceil(q.size[0] / WORKGROUP), Math.ceil(q.size[1] / WORKGROUP)];
      if (gx > maxGroups || gy > maxGroups) throw new BackendError('E_GPU', `float_adm: ${q.size.join('x')} exceeds the adapter's ${maxGroups} workgroups per dimension`);
    }
    const m0 = Math.trunc((width + 1) / 2) * Math.trunc((height + 1) / 2);
    const csfWords = 12 * m0;
    const limit = gpu.limits.maxStorageBufferBindingSize;
    for (const words of [planesWords, csfWords, termsWords]) {
      if (4 * words > limit) throw new BackendError('E_GPU', `float_adm: ${4 * words} bytes of scratch exceed the adapter's storage binding limit (${limit})`);
    }

    const d = gpu.device;
    const made: GPUBuffer[] = [];
    const buffer = (words: number, label: string, usage = GPUBufferUsage.STORAGE): GPUBuffer => {
      const b = d.createBuffer({ size: Math.max(16, 4 * words), usage, label });
      made.push(b);
      return b;
    };
    try {
      const planes = buffer(planesWords, 'float_adm planes');
      const csf = buffer(csfWords, 'float_adm csf');
      const terms = buffer(termsWords, 'float_adm terms');
      // Uploaded once per instance: 2^11 words on the hosts seen so far.
      const table = buffer(tableWords.length, 'float_adm rcp table', GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST);
      if (tableWords.length > 0) d.queue.writeBuffer(table, 0, tableWords);
      const code = loadWgsl(SOURCE);
      const compiled = await Promise.all(
        ENTRIES.map((entry) => createF32Pipeline(gpu, code, { label: `float_adm ${entry} ${layout.bitDepth}-bit`, entryPoint: entry, constants: { BIT_DEPTH: layout.bitDepth } })),
      );
      const pipelines = new Map(ENTRIES.map((e, i) => [e, compiled[i]!] as const));
      return new FloatAdmKernel(d, pipelines, passes, { planes, csf, terms, table }, statsCount);
    } catch (e) {
      for (const b of made) b.destroy();
      throw e;
    }
  }

  encode(encoder: GPUCommandEncoder, inputs: GpuExtractorInputs, out: StatsSlot): void {
    if (out.offset % 8 !== 0) throw new BackendError('E_GPU', `float_adm: output offset ${out.offset} is not a multiple of 8`);
    // Each dispatch is its own usage scope: the later passes see the earlier ones' writes.
    const pass = encoder.beginComputePass({ label: 'float_adm' });
    this.#passes.forEach((p, i) => {
      pass.setPipeline(this.#pipelines.get(p.entry)!);
      pass.setBindGroup(0, this.#bindGroup(i, p, inputs, out));
      if (p.entry === 'row_sums') pass.dispatchWorkgroups(Math.ceil(p.size[0] / ROW_WORKGROUP), 9);
      else pass.dispatchWorkgroups(Math.ceil(p.size[0] / WORKGROUP), Math.ceil(p.size[1] / WORKGROUP));
    });
    pass.end();
  }

  destroy(): void {
    for (const b of Object.values(this.#buffers)) b.destroy();
    this.#cache.destroy();
  }

  #bindGroup(index: number, p: Pass, inputs: GpuExtractorInputs, out: StatsSlot): GPUBindGroup {
    const { planes, csf, terms, table } = this.#buffers;
    const cache = this.#cache;
    const params = (values: Uint32Array, key = String(index)): GPUBuffer => cache.uniform(key, values, 'float_adm params', 4 * PARAMS_WORDS);
    const group = (key: string, bindings: Bindings): GPUBindGroup => cache.group(key, this.#pipelines.get(p.entry)!, `float_adm ${p.entry}`, bindings);
    switch (p.entry) {
      case 'to_float': {
        const picture: GpuPicture = p.of === 'ref' ? inputs.ref : inputs.dis;
        return group(`${index},${cache.id(picture.buffer)}`, { 0: picture.buffer, 1: planes, 5: params(p.params) });
      }
      case 'dwt':
        return group(String(index), { 1: planes, 5: params(p.params) });
      case 'decouple':
        return group(String(index), { 1: planes, 2: csf, 5: params(p.params), 6: table });
      case 'terms_pass':
        return group(String(index), { 1: planes, 2: csf, 3: terms, 5: params(p.params) });
      case 'row_sums': {
        const dst = out.offset / 4 + p.params[18]!;
        const values = p.params.slice();
        values[18] = dst;
        return group(`${index},${cache.id(out.buffer)},${dst}`, { 3: terms, 4: out.buffer, 5: params(values, `${index},${dst}`) });
      }
    }
  }
}

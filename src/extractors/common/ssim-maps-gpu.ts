/**
 * The SSIM extractors' gpu kernel (ssim-maps.wgsl): the luma as floats, optional
 * decimations, and at the scales asked for the five Gaussian-filtered maps SSIM pools
 * (ssim::meanSsimFromMaps's layout), written as the instance's accumulators, two floats
 * per 64-bit slot. The C++ extractor's finishStats pools them in libvmaf's order (the
 * double sums are order-sensitive, so they stay sequential on the host), giving the cpu
 * backend's bits.
 *
 * The maps are large (1080p's are 41 MB, 2160p's 165 MB for one scale), so they are made
 * in bands of output rows: each band's row scratch and each band's part of the stats
 * buffer (bound alone, at an aligned offset) stay far below the storage binding limit,
 * and the stats buffer as a whole is bound nowhere. Only the float images are bound whole
 * (fitsOnGpu: at most WebGPU's guaranteed 128 MiB binding, which 2160p's fit).
 */
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BackendError } from '../../errors.js';
import type { GpuExtractorContext, GpuExtractorInputs, GpuExtractorKernel, GpuPicture } from '../../kernels/gpu/gpu-extractor.js';
import type { StatsSlot } from '../../kernels/gpu/frame-kernel.js';
import { loadWgsl, WGSL_ROOT } from '../../kernels/gpu/wgsl.js';
import { SSIM_WINDOW } from './ssim-options.js';

const SOURCE = relative(WGSL_ROOT, join(dirname(fileURLToPath(import.meta.url)), 'ssim-maps.wgsl'));
const QUANTITIES = 5;
const PARAMS_BYTES = 48;
const WORKGROUP = 16;
/** Row scratch per band (bytes): bands of a few hundred rows at 1080p and 2160p. */
const BAND_SCRATCH_BYTES = 16 << 20;
/** WebGPU's guaranteed limits: every adapter binds 128 MiB and makes 256 MiB buffers. */
const GUARANTEED_BINDING_BYTES = 128 << 20;
const GUARANTEED_BUFFER_BYTES = 256 << 20;

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

/** Floats of the maps of a w x h pair (ssim::filteredMapFloats). */
export function mapFloats(width: number, height: number): number {
  return width < SSIM_WINDOW || height < SSIM_WINDOW ? 0 : QUANTITIES * (width - SSIM_WINDOW + 1) * (height - SSIM_WINDOW + 1);
}

/** The float images' and the maps' sizes (words) for a w x h luma through `scales`; undefined where a map scale is under 11x11. */
function footprint(width: number, height: number, scales: readonly SsimScale[]): { images: number; maps: number } | undefined {
  let [w, h] = [width, height];
  let images = 2 * w * h;
  let maps = 0;
  for (const s of scales) {
    if (s.decimate) {
      [w, h] = [decimatedSize(w, s.decimate.factor), decimatedSize(h, s.decimate.factor)];
      images += 2 * w * h;
    }
    if (s.maps) {
      const n = mapFloats(w, h);
      if (n === 0) return undefined;
      maps += n;
    }
  }
  return { images, maps };
}

/**
 * Whether the kernel runs on every adapter for a w x h luma: the float images within the
 * guaranteed binding size and one instance's maps within the guaranteed buffer size
 * (2160p with every MS-SSIM scale is 220 MB). Larger pictures stay on the host.
 */
export function fitsOnGpu(width: number, height: number, scales: readonly SsimScale[]): boolean {
  const f = footprint(width, height, scales);
  return f !== undefined && 4 * f.images <= GUARANTEED_BINDING_BYTES && 4 * f.maps <= GUARANTEED_BUFFER_BYTES;
}

const f32 = new Float32Array(1);
const f32Bits = new Uint32Array(f32.buffer);
function floatBits(x: number): number {
  f32[0] = x;
  return f32Bits[0]!;
}

interface Pass {
  entry: 'to_float' | 'decimate' | 'filter_rows' | 'filter_columns';
  params: Uint32Array;
  /** Invocations in x and y. */
  size: [number, number];
  /** decimate: its weights buffer. */
  weights?: GPUBuffer;
  /** filter_columns: its band's word offset in the maps, to which the slot's is added, and its words. */
  mapsWord?: number;
  mapsWords?: number;
  /** to_float: which picture. */
  of?: 'ref' | 'dis';
}

export class SsimMapsKernel implements GpuExtractorKernel {
  readonly statsCount: number;
  readonly #device: GPUDevice;
  readonly #pipelines: Map<Pass['entry'], GPUComputePipeline>;
  readonly #passes: Pass[];
  readonly #work: GPUBuffer;
  readonly #rows: GPUBuffer;
  readonly #alignment: number;
  readonly #buffers: GPUBuffer[];
  /** Params buffers: static ones per pass, filter_columns' per output offset too. */
  readonly #params = new Map<string, GPUBuffer>();
  readonly #bindGroups = new Map<string, GPUBindGroup>();
  readonly #ids = new WeakMap<GPUBuffer, number>();
  #nextId = 0;

  private constructor(device: GPUDevice, pipelines: Map<Pass['entry'], GPUComputePipeline>, passes: Pass[], work: GPUBuffer, rows: GPUBuffer, alignment: number, buffers: GPUBuffer[], statsCount: number) {
    this.#device = device;
    this.#pipelines = pipelines;
    this.#passes = passes;
    this.#work = work;
    this.#rows = rows;
    this.#alignment = alignment;
    this.#buffers = buffers;
    this.statsCount = statsCount;
  }

  static async create(ctx: GpuExtractorContext, scales: readonly SsimScale[]): Promise<SsimMapsKernel> {
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
      const params = (values: Partial<Record<'src' | 'src2' | 'sw' | 'sh' | 'dst' | 'dw' | 'dh' | 'factor' | 'taps' | 'scale' | 'row0', number>>): Uint32Array =>
        new Uint32Array([values.src ?? 0, values.src2 ?? 0, values.sw ?? 0, values.sh ?? 0, values.dst ?? 0, values.dw ?? 0, values.dh ?? 0, values.factor ?? 0, values.taps ?? 0, values.scale ?? 0, values.row0 ?? 0, 0]);
      // Scale 0's float images, then each later scale's; the row-filter scratch is its own buffer.
      let ref = words;
      let dis = ref + w * h;
      words = dis + w * h;
      for (const of of ['ref', 'dis'] as const) {
        passes.push({ entry: 'to_float', of, params: params({ src: luma.offset / 4, sw: w, sh: h, dst: of === 'ref' ? ref : dis, scale: floatBits(scale) }), size: [w, h] });
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
          new Uint32Array(buffer.getMappedRange()).set(weights.map(floatBits));
          buffer.unmap();
          const nref = words;
          const ndis = nref + dw * dh;
          words = ndis + dw * dh;
          for (const [src, dst] of [[ref, nref], [dis, ndis]] as const) {
            passes.push({ entry: 'decimate', params: params({ src, sw: w, sh: h, dst, dw, dh, factor, taps }), size: [dw, dh], weights: buffer });
          }
          [ref, dis, w, h] = [nref, ndis, dw, dh];
        }
        if (s.maps) {
          if (w < SSIM_WINDOW || h < SSIM_WINDOW) throw new BackendError('E_GPU', `ssim maps: ${w}x${h} is smaller than the ${SSIM_WINDOW}x${SSIM_WINDOW} window`);
          mapScales.push({ ref, dis, w, h });
        }
      });
      // Bands of output rows: each band's five filtered source rows (its output rows and the
      // 10 below them) fit the scratch, and its maps (a subset of those bytes) one binding.
      const budget = Math.min(BAND_SCRATCH_BYTES, gpu.limits.maxStorageBufferBindingSize - gpu.limits.minStorageBufferOffsetAlignment);
      let rowsWords = 0;
      let mapsWord = 0;
      for (const s of mapScales) {
        const ow = s.w - SSIM_WINDOW + 1;
        const oh = s.h - SSIM_WINDOW + 1;
        const perRow = 4 * QUANTITIES * ow;
        const band = Math.max(1, Math.min(oh, Math.floor(budget / perRow) - (SSIM_WINDOW - 1)));
        if (perRow * (band + SSIM_WINDOW - 1) > gpu.limits.maxStorageBufferBindingSize) {
          throw new BackendError('E_GPU', `ssim maps: ${s.w}-sample rows exceed the adapter's storage binding limit (${gpu.limits.maxStorageBufferBindingSize})`);
        }
        for (let y0 = 0; y0 < oh; y0 += band) {
          const out = Math.min(band, oh - y0);
          const sourceRows = out + SSIM_WINDOW - 1;
          rowsWords = Math.max(rowsWords, QUANTITIES * sourceRows * ow);
          passes.push({ entry: 'filter_rows', params: params({ src: s.ref, src2: s.dis, sw: s.w, dh: sourceRows, row0: y0 }), size: [ow, sourceRows] });
          const bandWords = QUANTITIES * out * ow;
          passes.push({ entry: 'filter_columns', params: params({ sw: s.w, sh: sourceRows, dh: out }), size: [ow, out], mapsWord: mapsWord + QUANTITIES * y0 * ow, mapsWords: bandWords });
        }
        mapsWord += mapFloats(s.w, s.h);
      }
      const maxGroups = gpu.limits.maxComputeWorkgroupsPerDimension;
      for (const p of passes) {
        if (Math.ceil(p.size[0] / WORKGROUP) > maxGroups || Math.ceil(p.size[1] / WORKGROUP) > maxGroups) {
          throw new BackendError('E_GPU', `ssim maps: ${p.size.join('x')} exceeds the adapter's ${maxGroups} workgroups per dimension`);
        }
      }
      if (4 * words > gpu.limits.maxStorageBufferBindingSize) {
        throw new BackendError('E_GPU', `ssim maps: ${4 * words} bytes of scratch exceed the adapter's storage binding limit (${gpu.limits.maxStorageBufferBindingSize})`);
      }
      const work = d.createBuffer({ size: Math.max(16, 4 * words), usage: GPUBufferUsage.STORAGE, label: 'ssim maps work' });
      buffers.push(work);
      const rows = d.createBuffer({ size: Math.max(16, 4 * rowsWords), usage: GPUBufferUsage.STORAGE, label: 'ssim maps row scratch' });
      buffers.push(rows);
      const code = loadWgsl(SOURCE);
      const entries = ['to_float', 'decimate', 'filter_rows', 'filter_columns'] as const;
      const made = await Promise.all(
        entries.map((entry) => gpu.createComputePipeline(code, { label: `ssim ${entry} ${layout.bitDepth}-bit`, entryPoint: entry, constants: { BIT_DEPTH: layout.bitDepth } })),
      );
      const pipelines = new Map(entries.map((e, i) => [e, made[i]!] as const));
      return new SsimMapsKernel(d, pipelines, passes, work, rows, gpu.limits.minStorageBufferOffsetAlignment, buffers, Math.ceil(mapsWord / 2));
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
      pass.dispatchWorkgroups(Math.ceil(p.size[0] / WORKGROUP), Math.ceil(p.size[1] / WORKGROUP));
    });
    pass.end();
  }

  destroy(): void {
    for (const b of this.#buffers) b.destroy();
    for (const b of this.#params.values()) b.destroy();
    this.#params.clear();
    this.#bindGroups.clear();
  }

  #id(b: GPUBuffer): number {
    let id = this.#ids.get(b);
    if (id === undefined) this.#ids.set(b, (id = this.#nextId++));
    return id;
  }

  #paramsBuffer(key: string, values: Uint32Array): GPUBuffer {
    let b = this.#params.get(key);
    if (!b) {
      b = this.#device.createBuffer({ size: PARAMS_BYTES, usage: GPUBufferUsage.UNIFORM, mappedAtCreation: true, label: 'ssim maps params' });
      new Uint32Array(b.getMappedRange()).set(values);
      b.unmap();
      this.#params.set(key, b);
    }
    return b;
  }

  #bindGroup(index: number, p: Pass, inputs: GpuExtractorInputs, out: StatsSlot): GPUBindGroup {
    let key = String(index);
    let params: GPUBuffer;
    const entries: GPUBindGroupEntry[] = [];
    if (p.entry === 'to_float') {
      const picture: GpuPicture = p.of === 'ref' ? inputs.ref : inputs.dis;
      key += `,${this.#id(picture.buffer)}`;
      params = this.#paramsBuffer(String(index), p.params);
      entries.push({ binding: 0, resource: { buffer: picture.buffer } }, { binding: 1, resource: { buffer: this.#work } });
    } else if (p.entry === 'filter_columns') {
      // The band's maps alone: bound from the aligned offset at or below them.
      const start = out.offset + 4 * p.mapsWord!;
      const offset = start - (start % this.#alignment);
      const dst = (start - offset) / 4;
      key += `,${this.#id(out.buffer)},${start}`;
      const values = p.params.slice();
      values[4] = dst;
      params = this.#paramsBuffer(`${index},${dst}`, values);
      entries.push({ binding: 5, resource: { buffer: this.#rows } }, { binding: 2, resource: { buffer: out.buffer, offset, size: start - offset + 4 * p.mapsWords! } });
    } else {
      params = this.#paramsBuffer(String(index), p.params);
      entries.push({ binding: 1, resource: { buffer: this.#work } });
      if (p.weights) entries.push({ binding: 4, resource: { buffer: p.weights } });
      if (p.entry === 'filter_rows') entries.push({ binding: 5, resource: { buffer: this.#rows } });
    }
    let group = this.#bindGroups.get(key);
    if (group) return group;
    entries.push({ binding: 3, resource: { buffer: params } });
    group = this.#device.createBindGroup({ label: `ssim ${p.entry}`, layout: this.#pipelines.get(p.entry)!.getBindGroupLayout(0), entries });
    // The rings a backend cycles through are small; a stray caller's buffers are not kept forever.
    if (this.#bindGroups.size >= 1024) this.#bindGroups.clear();
    this.#bindGroups.set(key, group);
    return group;
  }
}

/**
 * Integer ADM on the GPU: the 60 int64 accumulators of src/kernels/cpu/adm.h, bit for bit,
 * for one frame pair per encode(): admStats' (default options: gain limits 100 and 1; or,
 * createWithoutEgl1, gain limit 100 alone, the egl_1 slots 0, as the cpu's parts bit 4) or,
 * for a kernel created with an instance's AdmKernelParams, admStatsWithOptions' at those
 * options (CSF weights of any adm_csf_mode / viewing distance / display height, any
 * adm_enhn_gain_limit, adm_skip_aim, adm_skip_scale0). The per-option constants (fixed-point
 * weights, the gain limit's binary64 bits) come from the host as uniforms; the options that
 * act after the pixel loops (noise and dlm weights, min_val) belong to the shared host
 * finish (src/kernels/adm-options.ts finishAdm), as on the cpu backend.
 *
 * Passes (one compute pass, six dispatches, in order):
 *   1. adm-dwt0.wgsl   scale 0: DWT of ref and dis (32 x 8 band positions per workgroup,
 *                      input window and vertical results in workgroup memory), LL bands,
 *                      and on the scored rect grown by one: angle test, decouple, CSF of both
 *                      gain-limit variants -> F, F' (neighbour terms of DLM and AIM), C, C',
 *                      restored, impairment and ref bands.
 *   2. adm-dwtn.wgsl   scales 1, 2, 3: the same on the previous LL bands (64-bit sums).
 *   3. adm-mask.wgsl   all scales at once, one workgroup per scored row: 3x3 threshold,
 *                      masked cubes (6 DLM and 6 AIM numerators) and denominator cubes (3), exact 64-bit
 *                      row sums, the per-row rounding shift -> one value per (stat, row).
 *   4. adm-final.wgsl  60 workgroups: each stat's row values summed in a fixed order,
 *                      written as (lo, hi) words into the frame's stats slot.
 * Every sum is exact modulo 2^64 (carry on every add), so results do not depend on order.
 * A kernel with one gain limit (createWithoutEgl1, an instance at options alone) compiles
 * the passes without variant 1 (adm-variants.wgsl): less work per position and less scratch.
 */
import { BackendError } from '../../../errors.js';
import type { GpuDevice } from '../device.js';
import type { FrameGeometry, FrameKernel, LumaPlanes, StatsSlot } from '../frame-kernel.js';
import type { AdmKernelParams } from '../../native.js';
import { f64Bits, loadWgsl } from '../wgsl.js';

/**
 * kAdmStatsLen: 4 scales x (3 numerators, 3 numerators at gain limit 1, 3 denominators),
 * then 4 scales x (3 AIM numerators, 3 at gain limit 1).
 */
export const ADM_STATS_LENGTH = 60;
/** Row values per scored band row (adm-mask.wgsl, adm-variants.wgsl), by variant count. */
const ROW_STATS = { 1: 9, 2: 15 } as const;
/** vec4 words of M per band position (adm-variants.wgsl): scale 0, scales 1..3, by variant count. */
const M_STRIDE = { 1: [2, 3], 2: [3, 5] } as const;
/** kAdmMinSize: smaller frames give all-zero stats, as admStats does. */
export const ADM_MIN_SIZE = 33;

const SCALES = 4;
const TILE_W = 32; // ADM_TW in adm-common.wgsl
const TILE_H = 8; // ADM_TH
const MASK_PARAM_BYTES = 80; // MaskScale in adm-mask.wgsl: 5 x vec4<u32>
const DLM_STATS_PER_SCALE = 9; // adm.h kAdmStatsPerScale
const AIM_BASE = SCALES * DLM_STATS_PER_SCALE; // kAdmAimBase
const AIM_STATS_PER_SCALE = 6; // kAdmAimPerScale

// libvmaf's fixed scale-0 CSF weights at default options: h and v in Q21, d in Q23.
const BASE_WEIGHT_HV = 36453;
const BASE_WEIGHT_D = 49417;
// Scales 1..3 (index s - 1): CSF weights in Q32 (uint32(kCsfWeight * 2^32)) for h/v and d,
// the denominator's square shift, the DWT's vertical and horizontal shifts.
const DETAIL_WEIGHT_HV = [137373792, 186284160, 196165808];
const DETAIL_WEIGHT_D = [61414028, 104783920, 134487184];
const DETAIL_DEN_SQUARE_SHIFT = [31, 30, 31];
const DETAIL_VERTICAL_SHIFT = [0, 16, 16];
const DETAIL_HORIZONTAL_SHIFT = [15, 16, 15];

/**
 * What one kernel computes: the CSF weights, the gain limits of its two variants, and which
 * of the 60 stats it writes as computed (the rest are written as 0).
 */
interface AdmKernelConfig {
  /** Scale 0: h/v (Q21), d (Q23). */
  baseWeight: [number, number];
  /** Scales 1..3 (index s - 1): h/v, d in Q32. */
  detailWeight: [number, number][];
  /** Gain limits of variants 0 and 1. */
  gainLimit: [number, number];
  /** Whether variant 1 is computed at all (2), or its gain limit is variant 0's and nothing reads it (1). */
  variants: 1 | 2;
  /** Bits 0..59: the stats written as computed. */
  keep: [number, number];
}

const DEFAULT_CONFIG: AdmKernelConfig = {
  baseWeight: [BASE_WEIGHT_HV, BASE_WEIGHT_D],
  detailWeight: DETAIL_WEIGHT_HV.map((hv, i) => [hv, DETAIL_WEIGHT_D[i]!] as [number, number]),
  gainLimit: [100, 1],
  variants: 2,
  keep: [0xffffffff, 0x0fffffff],
};

/** The stats of variant 0 (numerators, denominators, AIM numerators) at the scales from `firstScale`, with AIM or not. */
function variant0Stats(firstScale: number, aim: boolean): [number, number] {
  const words: [number, number] = [0, 0];
  for (let s = firstScale; s < SCALES; s++) {
    const keep = [0, 1, 2, 6, 7, 8].map((k) => DLM_STATS_PER_SCALE * s + k);
    if (aim) keep.push(...[0, 1, 2].map((b) => AIM_BASE + AIM_STATS_PER_SCALE * s + b));
    for (const k of keep) words[k >> 5] = (words[k >> 5]! | (1 << (k & 31))) >>> 0;
  }
  return words;
}

/** Default options, gain limit 100 alone: the egl_1 slots written as 0 (a run no NEG model is in). */
const DEFAULT_WITHOUT_EGL1: AdmKernelConfig = {
  ...DEFAULT_CONFIG,
  gainLimit: [100, 100],
  variants: 1,
  keep: variant0Stats(0, true),
};

/**
 * The configuration of an instance at options (the addon's admKernelParams): one variant
 * (variant 1 repeats variant 0's gain limit and is not written), as admStatsWithOptions.
 * With `secondGainLimit`, variant 1 is computed at that limit and every stat is written:
 * two instances whose CSF weights agree share the passes (adm-instances.ts).
 */
function configOf(p: AdmKernelParams, secondGainLimit?: number): AdmKernelConfig {
  const [bh, bv, bd] = p.baseWeight;
  const dw = p.detailWeight;
  if (bh === undefined || bv === undefined || bd === undefined || dw.length !== 9) {
    throw new BackendError('E_GPU', 'adm: kernel parameters need 3 scale-0 and 9 detail weights');
  }
  // adm.h: the horizontal and vertical bands share one weight (the "hv" CSF factor).
  for (let s = 0; s < SCALES; s++) {
    const hv = s === 0 ? [bh, bv] : [dw[3 * (s - 1)]!, dw[3 * (s - 1) + 1]!];
    if (hv[0] !== hv[1]) throw new BackendError('E_GPU', `adm: scale ${s} has different h and v weights (${hv[0]}, ${hv[1]}); the kernel shares one`);
  }
  const g = p.gainLimit;
  const g1 = secondGainLimit ?? g;
  for (const x of [g, g1]) if (!(x >= 1 && x <= 100)) throw new BackendError('E_GPU', `adm: gain limit ${x} outside [1, 100]`);
  return {
    baseWeight: [bh, bd],
    detailWeight: [0, 1, 2].map((i) => [dw[3 * i]!, dw[3 * i + 2]!] as [number, number]),
    gainLimit: [g, g1],
    variants: secondGainLimit === undefined ? 1 : 2,
    keep: secondGainLimit === undefined ? variant0Stats(p.scale0 ? 0 : 1, p.aim) : DEFAULT_CONFIG.keep,
  };
}

/** A gain limit as adm-decouple.wgsl takes it: (1, g) when integral, else (0, 0, its binary64 bits). */
function gainWords(g: number): number[] {
  if (Number.isInteger(g)) return [1, g, 0, 0];
  const [lo, hi] = f64Bits(g);
  return [0, 0, lo, hi];
}

/** One scale's geometry and shifts, as makePlan in adm.cpp derives them. */
export interface AdmScalePlan {
  /** Size of the plane the scale filters (the frame, or the previous LL band). */
  inWidth: number;
  inHeight: number;
  /** Detail band size. */
  width: number;
  height: number;
  /** The scored rect (half-open). */
  left: number;
  right: number;
  top: number;
  bottom: number;
  /** The scored rect grown by one on each side, clipped: where decouple/CSF are needed. */
  grownLeft: number;
  grownRight: number;
  grownTop: number;
  grownBottom: number;
  cubeShift: [number, number, number];
  rowShift: number;
  denCubeShift: number;
  denRowShift: number;
}

/** ceil(log2(n)) for n >= 1, exactly (what libvmaf's double-precision log2 gives for ints). */
function ceilLog2(n: number): number {
  return n <= 1 ? 0 : 32 - Math.clz32(n - 1);
}

function log2Shift(n: number, bias: number): number {
  return Math.max(0, ceilLog2(n) - bias);
}

/** The four scales' plans for a width x height frame. */
export function admPlan(width: number, height: number): AdmScalePlan[] {
  const plans: AdmScalePlan[] = [];
  let inWidth = width;
  let inHeight = height;
  for (let s = 0; s < SCALES; s++) {
    const w = (inWidth + 1) >> 1;
    const h = (inHeight + 1) >> 1;
    const left = Math.trunc(w * 0.1 - 0.5) | 0; // C's (int) truncation; | 0 turns -0 into 0
    const top = Math.trunc(h * 0.1 - 0.5) | 0;
    const right = w - left;
    const bottom = h - top;
    const plan: AdmScalePlan = {
      inWidth, inHeight, width: w, height: h, left, right, top, bottom,
      grownLeft: Math.max(left - 1, 0), grownRight: Math.min(right + 1, w),
      grownTop: Math.max(top - 1, 0), grownBottom: Math.min(bottom + 1, h),
      cubeShift: s === 0 ? [log2Shift(w, 4), log2Shift(w, 4), log2Shift(w, 3)] : [log2Shift(w, 0), log2Shift(w, 0), log2Shift(w, 0)],
      rowShift: log2Shift(h, 0),
      denCubeShift: s === 0 ? 0 : log2Shift(right - left, 0),
      denRowShift: s === 0 ? log2Shift((bottom - top) * (right - left), 20) : log2Shift(bottom - top, 0),
    };
    plans.push(plan);
    inWidth = w;
    inHeight = h;
  }
  return plans;
}

// Pipelines depend only on the device (and the bit depth for scale 0): shared by kernels.
const pipelineCache = new WeakMap<GPUDevice, Map<string, Promise<GPUComputePipeline>>>();

function pipeline(gpu: GpuDevice, file: string, constants?: Record<string, number>): Promise<GPUComputePipeline> {
  let byKey = pipelineCache.get(gpu.device);
  if (!byKey) pipelineCache.set(gpu.device, (byKey = new Map()));
  const key = `${file}${constants ? JSON.stringify(constants) : ''}`;
  let p = byKey.get(key);
  if (!p) {
    const created = gpu.createComputePipeline(loadWgsl(`adm/${file}`), { label: `adm ${file}`, ...(constants ? { constants } : {}) });
    byKey.set(key, created);
    created.catch(() => byKey!.delete(key));
    p = created;
  }
  return p;
}

interface Pipelines {
  dwt0: GPUComputePipeline;
  dwtn: GPUComputePipeline;
  mask: GPUComputePipeline;
  final: GPUComputePipeline;
}

/** The per-scale dispatch labels, made once rather than per frame (only encodeProfiled reads them). */
const DWT_LABELS = Array.from({ length: SCALES }, (_, s) => `dwt ${s}`);

export class AdmKernel implements FrameKernel {
  readonly statsLength = ADM_STATS_LENGTH;
  readonly geometry: Readonly<FrameGeometry>;
  readonly plans: readonly AdmScalePlan[];
  /** False below ADM_MIN_SIZE: encode() then only writes zeros. */
  readonly active: boolean;
  /** Gain-limit variants computed per position: 2, or 1 (createWithoutEgl1, one gain limit). */
  readonly variants: 1 | 2;
  /** Bytes of the per-frame scratch the passes write and read (F, M, row sums, LL bands). */
  readonly scratchBytes: number;

  readonly #gpu: GpuDevice;
  readonly #p: Pipelines;
  readonly #owned: GPUBuffer[];
  readonly #dwtParams: GPUBuffer[] = [];
  readonly #ll: GPUBuffer[] = [];
  readonly #dummyLl: GPUBuffer;
  readonly #fbuf: GPUBuffer;
  readonly #mbuf: GPUBuffer;
  readonly #rowvals: GPUBuffer;
  readonly #detailGroups: (GPUBindGroup | undefined)[] = [];
  readonly #maskGroup: GPUBindGroup | undefined;
  readonly #dispatch: [number, number][] = [];
  readonly #totalRows: number;
  readonly #finalWords: Uint32Array;
  readonly #scale0Groups = new WeakMap<GPUBuffer, WeakMap<GPUBuffer, GPUBindGroup>>();
  readonly #finalGroups = new WeakMap<GPUBuffer, Map<number, GPUBindGroup>>();
  readonly #finalParams = new Map<number, GPUBuffer>(); // by stats slot offset
  readonly #lumaBytes: number;
  #destroyed = false;

  /**
   * Compiles (or reuses) the pipelines and allocates the scratch buffers for one geometry.
   * Without `params`: libvmaf's default options, both gain-limit variants (admStats). With
   * an instance's params (adm-options.ts admKernelParams, checked there): that instance
   * (admStatsWithOptions, one variant computed). Each kernel is its own set of passes; several instances run
   * side by side in one command buffer, each writing its own stats slot. With
   * `secondGainLimit` as well: the params' weights at two gain limits, both variants
   * written in admStats' layout whatever the params' aim / scale0 (adm-instances.ts takes
   * each instance's stats out of it).
   */
  static async create(gpu: GpuDevice, geometry: FrameGeometry, params?: AdmKernelParams, secondGainLimit?: number): Promise<AdmKernel> {
    if (!params && secondGainLimit !== undefined) throw new BackendError('E_GPU', 'adm: a second gain limit needs kernel parameters');
    return AdmKernel.#build(gpu, geometry, params ? configOf(params, secondGainLimit) : DEFAULT_CONFIG);
  }

  /**
   * libvmaf's default options at adm_enhn_gain_limit=100 alone: admStats' default-variant
   * stats, bit for bit, and 0 in the egl_1 slots, which are not computed (the gpu backend's
   * core ADM for a plan without an egl_1 instance: core-parts.ts admEgl1 false).
   */
  static async createWithoutEgl1(gpu: GpuDevice, geometry: FrameGeometry): Promise<AdmKernel> {
    return AdmKernel.#build(gpu, geometry, DEFAULT_WITHOUT_EGL1);
  }

  static async #build(gpu: GpuDevice, geometry: FrameGeometry, config: AdmKernelConfig): Promise<AdmKernel> {
    const { width, height, bitDepth } = geometry;
    if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) {
      throw new BackendError('E_GPU', `adm: bad frame size ${width}x${height}`);
    }
    if (![8, 10, 12, 16].includes(bitDepth)) throw new BackendError('E_GPU', `adm: bad bit depth ${bitDepth}`);
    // The binary64 gain-limit code only in the pipelines of kernels that need it; variant 1's
    // work only in those of kernels that compute it.
    const gainF64 = config.gainLimit.some((g) => !Number.isInteger(g)) ? 1 : 0;
    const twoVariants = config.variants === 2 ? 1 : 0;
    const [dwt0, dwtn, mask, final] = await Promise.all([
      pipeline(gpu, 'adm-dwt0.wgsl', { BITDEPTH: bitDepth, ADM_GAIN_F64: gainF64, ADM_TWO_VARIANTS: twoVariants }),
      pipeline(gpu, 'adm-dwtn.wgsl', { ADM_GAIN_F64: gainF64, ADM_TWO_VARIANTS: twoVariants }),
      pipeline(gpu, 'adm-mask.wgsl', { ADM_TWO_VARIANTS: twoVariants }),
      pipeline(gpu, 'adm-final.wgsl', { ADM_TWO_VARIANTS: twoVariants }),
    ]);
    const owned: GPUBuffer[] = [];
    try {
      return await gpu.withErrorScopes('adm: allocating', () => new AdmKernel(gpu, geometry, config, { dwt0, dwtn, mask, final }, owned));
    } catch (e) {
      for (const b of owned) b.destroy(); // what a failed construction allocated
      throw e;
    }
  }

  private constructor(gpu: GpuDevice, geometry: FrameGeometry, config: AdmKernelConfig, p: Pipelines, owned: GPUBuffer[]) {
    this.#owned = owned;
    this.#gpu = gpu;
    this.#p = p;
    this.geometry = Object.freeze({ ...geometry });
    const { width, height, bitDepth } = geometry;
    this.#lumaBytes = width * height * (bitDepth === 8 ? 1 : 2);
    const plans = admPlan(width, height);
    this.plans = plans;
    this.active = width >= ADM_MIN_SIZE && height >= ADM_MIN_SIZE;
    this.variants = config.variants;
    const d = gpu.device;
    const maxBinding = gpu.limits.maxStorageBufferBindingSize;
    const storage = (size: number, label: string): GPUBuffer => {
      const bytes = Math.max(16, Math.ceil(size / 16) * 16);
      if (bytes > maxBinding) {
        throw new BackendError('E_GPU', `adm: ${width}x${height} needs a ${bytes}-byte ${label} buffer, over this adapter's maxStorageBufferBindingSize (${maxBinding})`);
      }
      const b = d.createBuffer({ size: bytes, usage: GPUBufferUsage.STORAGE, label: `adm ${label}` });
      this.#owned.push(b);
      return b;
    };
    const uniform = (words: Uint32Array, label: string): GPUBuffer => {
      const b = d.createBuffer({ size: Math.max(16, words.byteLength), usage: GPUBufferUsage.UNIFORM, mappedAtCreation: true, label: `adm ${label}` });
      new Uint32Array(b.getMappedRange()).set(words);
      b.unmap();
      this.#owned.push(b);
      return b;
    };

    // Scratch layout: per scale, F (vec4) and M (vec4: 3 per position at scale 0, 5 above;
    // 2 and 3 with one variant) over the whole band; rowvals: per scale 15 stats (9) x
    // scored rows.
    const [mStride0, mStride] = M_STRIDE[config.variants];
    const rowStats = ROW_STATS[config.variants];
    const fBase: number[] = [];
    const mBase: number[] = [];
    const rowBase: number[] = [];
    const firstRow: number[] = [];
    let fCount = 0;
    let mCount = 0;
    let rows = 0;
    let rowCount = 0;
    for (let s = 0; s < SCALES; s++) {
      const pl = plans[s]!;
      const n = this.active ? pl.width * pl.height : 0;
      fBase.push(fCount);
      mBase.push(mCount);
      fCount += n;
      mCount += (s === 0 ? mStride0 : mStride) * n;
      const r = this.active ? pl.bottom - pl.top : 0;
      firstRow.push(rows);
      rows += r;
      rowBase.push(rowCount);
      rowCount += rowStats * r;
    }
    this.#totalRows = rows;
    const maxGroups = gpu.limits.maxComputeWorkgroupsPerDimension;
    if (rows > maxGroups) {
      throw new BackendError('E_GPU', `adm: ${width}x${height} has ${rows} scored band rows, over this adapter's maxComputeWorkgroupsPerDimension (${maxGroups})`);
    }
    this.#fbuf = storage(fCount * 16, 'F');
    this.#mbuf = storage(mCount * 16, 'M');
    this.#rowvals = storage(rowCount * 8, 'row sums');
    this.#dummyLl = storage(16, 'unused LL');
    for (let s = 0; s < SCALES - 1; s++) {
      const pl = plans[s]!;
      this.#ll.push(storage(this.active ? 2 * pl.width * pl.height * 4 : 16, `LL ${s}`));
    }
    this.scratchBytes = [this.#fbuf, this.#mbuf, this.#rowvals, ...this.#ll].reduce((n, b) => n + b.size, 0);

    // CSF weights per scale (h/v, d), the gain limits' words.
    const weights: [number, number][] = [config.baseWeight, ...config.detailWeight];
    const gains = [...gainWords(config.gainLimit[0]), ...gainWords(config.gainLimit[1])];

    // Pass 1 parameters and dispatch sizes. Scales 0..2 cover the whole band (their LL is
    // the next scale's input); scale 3 only its grown rect.
    for (let s = 0; s < SCALES; s++) {
      const pl = plans[s]!;
      const wholeBand = s < SCALES - 1;
      const orgX = wholeBand ? 0 : pl.grownLeft;
      const orgY = wholeBand ? 0 : pl.grownTop;
      const endX = wholeBand ? pl.width : pl.grownRight;
      const endY = wholeBand ? pl.height : pl.grownBottom;
      this.#dispatch.push([Math.ceil((endX - orgX) / TILE_W), Math.ceil((endY - orgY) / TILE_H)]);
      const words = new Uint32Array([
        pl.inWidth, pl.inHeight, pl.width, pl.height,
        orgX, orgY, wholeBand ? 1 : 0, s,
        pl.grownLeft, pl.grownRight, pl.grownTop, pl.grownBottom,
        fBase[s]!, mBase[s]!, weights[s]![0], weights[s]![1],
        s > 0 ? DETAIL_VERTICAL_SHIFT[s - 1]! : 0, s > 0 ? DETAIL_HORIZONTAL_SHIFT[s - 1]! : 0, 0, 0,
        ...gains,
      ]);
      this.#dwtParams.push(uniform(words, `dwt ${s} params`));
    }

    // Pass 2 parameters.
    const maskWords = new Uint32Array((SCALES * MASK_PARAM_BYTES) / 4);
    for (let s = 0; s < SCALES; s++) {
      const pl = plans[s]!;
      maskWords.set([
        pl.width, pl.height, fBase[s]!, mBase[s]!,
        pl.left, pl.right, pl.top, pl.bottom,
        pl.cubeShift[0], pl.cubeShift[1], pl.cubeShift[2], pl.rowShift,
        pl.denCubeShift, pl.denRowShift, firstRow[s]!, rowBase[s]!,
        weights[s]![0], weights[s]![1], s > 0 ? DETAIL_DEN_SQUARE_SHIFT[s - 1]! : 0, 0,
      ], s * (MASK_PARAM_BYTES / 4));
    }
    // (The mask pass finds a workgroup's scale as the last one with first_row <= its index:
    // every scale of an active kernel has at least one scored row.)
    const maskParams = uniform(maskWords, 'mask params');

    // Pass 3 parameters (the output word offset is added per stats slot).
    this.#finalWords = new Uint32Array(16);
    this.#finalWords[12] = config.keep[0];
    this.#finalWords[13] = config.keep[1];
    for (let s = 0; s < SCALES; s++) {
      const pl = plans[s]!;
      this.#finalWords[s] = this.active ? pl.bottom - pl.top : 0;
      this.#finalWords[4 + s] = rowBase[s]!;
    }

    if (this.active) {
      for (let s = 1; s < SCALES; s++) {
        this.#detailGroups[s] = d.createBindGroup({
          label: `adm dwt ${s}`,
          layout: p.dwtn.getBindGroupLayout(0),
          entries: [
            { binding: 0, resource: { buffer: this.#ll[s - 1]! } },
            { binding: 2, resource: { buffer: s < SCALES - 1 ? this.#ll[s]! : this.#dummyLl } },
            { binding: 3, resource: { buffer: this.#fbuf } },
            { binding: 4, resource: { buffer: this.#mbuf } },
            { binding: 5, resource: { buffer: this.#dwtParams[s]! } },
          ],
        });
      }
      this.#maskGroup = d.createBindGroup({
        label: 'adm mask',
        layout: p.mask.getBindGroupLayout(0),
        entries: [
          { binding: 0, resource: { buffer: this.#fbuf } },
          { binding: 1, resource: { buffer: this.#mbuf } },
          { binding: 2, resource: { buffer: this.#rowvals } },
          { binding: 3, resource: { buffer: maskParams } },
        ],
      });
    }
  }

  /**
   * Records the ADM passes for one frame pair into `encoder` (one compute pass, 6
   * dispatches). planes.ref and planes.dis: luma as lib/luma.wgsl lays it out, usage
   * STORAGE (the same buffer may be both). out.buffer: usage STORAGE; 60 x 8 bytes are
   * written at out.offset (a multiple of 4), nothing else.
   */
  encode(encoder: GPUCommandEncoder, planes: LumaPlanes, out: StatsSlot): void {
    this.#check(planes, out);
    const pass = encoder.beginComputePass({ label: 'adm' });
    this.#record(planes, out, pass, undefined);
    pass.end();
  }

  /** As encode(), into a compute pass the caller has begun (and ends): the backend records all core kernels in one. */
  encodeInPass(pass: GPUComputePassEncoder, planes: LumaPlanes, out: StatsSlot): void {
    this.#check(planes, out);
    this.#record(planes, out, pass, undefined);
  }

  /**
   * For profiling: records the same dispatches as encode(), each in a compute pass of its
   * own with timestamps written to querySet[first + 2 i] (begin) and [first + 2 i + 1]
   * (end) for dispatch i; returns the dispatches' labels (at most 6, so 12 queries).
   */
  encodeProfiled(encoder: GPUCommandEncoder, planes: LumaPlanes, out: StatsSlot, querySet: GPUQuerySet, first = 0): string[] {
    this.#check(planes, out);
    const labels: string[] = [];
    this.#record(planes, out, undefined, (label) => {
      const i = labels.length;
      labels.push(label);
      return encoder.beginComputePass({
        label: `adm ${label}`,
        timestampWrites: { querySet, beginningOfPassWriteIndex: first + 2 * i, endOfPassWriteIndex: first + 2 * i + 1 },
      });
    });
    return labels;
  }

  #check(planes: LumaPlanes, out: StatsSlot): void {
    if (this.#destroyed) throw new BackendError('E_GPU', 'adm: kernel used after destroy()');
    if (out.offset % 4 !== 0 || out.offset < 0 || out.offset + ADM_STATS_LENGTH * 8 > out.buffer.size) {
      throw new BackendError('E_GPU', `adm: stats slot at byte ${out.offset} does not fit ${ADM_STATS_LENGTH} int64 in a ${out.buffer.size}-byte buffer (or is not 4-byte aligned)`);
    }
    if (this.active) {
      // Checked one by one: this runs per frame, and an array of pairs per frame is waste.
      if (planes.ref.size < this.#lumaBytes) throw new BackendError('E_GPU', `adm: ref luma buffer holds ${planes.ref.size} bytes, the frame needs ${this.#lumaBytes}`);
      if (planes.dis.size < this.#lumaBytes) throw new BackendError('E_GPU', `adm: dis luma buffer holds ${planes.dis.size} bytes, the frame needs ${this.#lumaBytes}`);
    }
  }

  /**
   * The dispatches, in order: all into `shared`, or (profiling) each into a pass of its own
   * from `own`, ended after it. No closure per dispatch (this runs per frame), and the
   * detail scales' shared pipeline is set once in a shared pass.
   */
  #record(planes: LumaPlanes, out: StatsSlot, shared: GPUComputePassEncoder | undefined, own: ((label: string) => GPUComputePassEncoder) | undefined): void {
    if (this.active) {
      let pass = shared ?? own!(DWT_LABELS[0]!);
      pass.setPipeline(this.#p.dwt0);
      pass.setBindGroup(0, this.#scale0Group(planes.ref, planes.dis));
      pass.dispatchWorkgroups(this.#dispatch[0]![0], this.#dispatch[0]![1]);
      if (!shared) pass.end();
      for (let s = 1; s < SCALES; s++) {
        pass = shared ?? own!(DWT_LABELS[s]!);
        if (!shared || s === 1) pass.setPipeline(this.#p.dwtn);
        pass.setBindGroup(0, this.#detailGroups[s]!);
        pass.dispatchWorkgroups(this.#dispatch[s]![0], this.#dispatch[s]![1]);
        if (!shared) pass.end();
      }
      pass = shared ?? own!('mask');
      pass.setPipeline(this.#p.mask);
      pass.setBindGroup(0, this.#maskGroup!);
      pass.dispatchWorkgroups(this.#totalRows);
      if (!shared) pass.end();
    }
    const pass = shared ?? own!('final');
    pass.setPipeline(this.#p.final);
    pass.setBindGroup(0, this.#finalGroup(out));
    pass.dispatchWorkgroups(ADM_STATS_LENGTH);
    if (!shared) pass.end();
  }

  destroy(): void {
    if (this.#destroyed) return;
    this.#destroyed = true;
    for (const b of this.#owned.splice(0)) b.destroy();
  }

  #scale0Group(ref: GPUBuffer, dis: GPUBuffer): GPUBindGroup {
    let byDis = this.#scale0Groups.get(ref);
    if (!byDis) this.#scale0Groups.set(ref, (byDis = new WeakMap()));
    let g = byDis.get(dis);
    if (!g) {
      g = this.#gpu.device.createBindGroup({
        label: 'adm dwt 0',
        layout: this.#p.dwt0.getBindGroupLayout(0),
        entries: [
          { binding: 0, resource: { buffer: ref } },
          { binding: 1, resource: { buffer: dis } },
          { binding: 2, resource: { buffer: this.#ll[0]! } },
          { binding: 3, resource: { buffer: this.#fbuf } },
          { binding: 4, resource: { buffer: this.#mbuf } },
          { binding: 5, resource: { buffer: this.#dwtParams[0]! } },
        ],
      });
      byDis.set(dis, g);
    }
    return g;
  }

  #finalGroup(out: StatsSlot): GPUBindGroup {
    let byOffset = this.#finalGroups.get(out.buffer);
    if (!byOffset) this.#finalGroups.set(out.buffer, (byOffset = new Map()));
    let g = byOffset.get(out.offset);
    if (!g) {
      const d = this.#gpu.device;
      let params = this.#finalParams.get(out.offset);
      if (!params) {
        const words = this.#finalWords.slice();
        words[8] = out.offset / 4;
        params = d.createBuffer({ size: words.byteLength, usage: GPUBufferUsage.UNIFORM, mappedAtCreation: true, label: 'adm final params' });
        new Uint32Array(params.getMappedRange()).set(words);
        params.unmap();
        this.#owned.push(params);
        this.#finalParams.set(out.offset, params);
      }
      g = d.createBindGroup({
        label: 'adm final',
        layout: this.#p.final.getBindGroupLayout(0),
        entries: [
          { binding: 0, resource: { buffer: this.#rowvals } },
          { binding: 1, resource: { buffer: out.buffer } },
          { binding: 2, resource: { buffer: params } },
        ],
      });
      byOffset.set(out.offset, g);
    }
    return g;
  }
}

/**
 * Integer VIF on the GPU: the kVifStatsLen (20) int64 accumulators of src/kernels/cpu/vif.h,
 * bit for bit the values the cpu backend's vifStats computes, for 8/10/12/16-bit luma of any
 * size (frames under kVifMinWidth x kVifMinHeight give zeros, as vifStats does).
 *
 * Passes, all recorded into one compute pass of the frame's encoder (6 dispatches):
 *   scale 0..3  vif-stats.wgsl, one workgroup (256 invocations) per 32 x 16 tile of the
 *               scale's image: separable filtering through workgroup memory, the integer
 *               per-pixel contributions, a fixed workgroup tree, one partial per tile for
 *               stats 2..4; the pixels that need the gain are queued in the tile's region of
 *               the gain queue; the same pass decimates the tile into the next scale's image.
 *   gain        vif-gain-pass.wgsl, one workgroup per tile of all scales: the per-pixel
 *               double arithmetic of the gain over the tile's queue, partials of stats 0 and 1.
 *               Each pixel first takes a fast path that encloses the doubles r and P in
 *               intervals (exact 64-bit integer division plus f32 corrections with proven error
 *               bounds) and is exact whenever the log2 terms are constant on those intervals;
 *               the rest (about 1 in 1000) runs the software binary64 of lib/f64.wgsl
 *               (vif-gain.wgsl explains both).
 *   reduce      vif-reduce.wgsl, 20 workgroups: each sums one accumulator's partials in a
 *               fixed order and writes it to the stats slot.
 *
 * Scratch (per kernel, i.e. per geometry): the images of scales 1..3 (one u32 per pixel,
 * ref | dis << 16), the gain queue (12 bytes per pixel of all scales, about 16 bytes per
 * input pixel: 33 MB at 1080p), the partials, the log2 table and small uniform buffers. Bind
 * groups are cached per input plane pair and per stats slot.
 */
import { BackendError } from '../../../errors.js';
import type { GpuDevice } from '../device.js';
import type { FrameGeometry, FrameKernel, LumaPlanes, StatsSlot } from '../frame-kernel.js';
import { composeWgsl } from '../wgsl.js';

/** Accumulators written (vif.h kVifStatsLen): stats[5 * scale + k], k as in VifStat. */
export const VIF_STATS_LEN = 20;
const SCALES = 4;
const STATS_PER_SCALE = 5;
/** vif.h kVifMinWidth / kVifMinHeight: smaller frames get all-zero stats. */
export const VIF_MIN_WIDTH = 16;
export const VIF_MIN_HEIGHT = 16;

/** libvmaf's VIF filters (each sums to 65536), centre tap first. */
export const VIF_FILTERS: readonly (readonly number[])[] = [
  [7784, 7455, 6547, 5274, 3896, 2640, 1640, 935, 489],
  [14692, 12590, 7925, 3663, 1244],
  [26386, 16004, 3571],
  [43728, 10904],
];

/** Tile and workgroup shape of the statistics passes. */
export interface VifTileConfig {
  /** Invocations per workgroup (a power of two). */
  workgroupSize: number;
  /** Tile width and height in pixels of the scale's image (even; product a multiple of workgroupSize, at most 32 pixels per invocation). */
  tileWidth: number;
  tileHeight: number;
}

/** The default: 256 invocations, 32 x 16 tiles (about 20 KB of workgroup memory at scale 0). */
export const VIF_DEFAULT_TILE: VifTileConfig = { workgroupSize: 256, tileWidth: 32, tileHeight: 16 };
/** For adapters with only WebGPU's default 16 KB of workgroup memory. */
export const VIF_SMALL_TILE: VifTileConfig = { workgroupSize: 256, tileWidth: 32, tileHeight: 8 };

export interface VifKernelOptions {
  /** Overrides the tile shape (default: VIF_DEFAULT_TILE, or VIF_SMALL_TILE where it does not fit). */
  tile?: VifTileConfig;
}

// ---- the log2 table ---------------------------------------------------------------------

let log2TableWords: Uint32Array | undefined;

/**
 * vif.cpp's Log2Table: T[i - 32768] = round(float(log2(i)) * 2048) for i in [32768, 65535],
 * with float(.) the binary32 rounding of log2 (std::round: halves away from zero; all values
 * are positive, so floor(v + 0.5), exact in doubles here). Math.log2 then Math.fround: the
 * same expression as the C++ (static_cast<float>(std::log2(double))); test/gpu-vif.test.mjs
 * checks every entry against log2 computed to 100 bits, i.e. against the correctly rounded
 * binary32, which no entry lies close enough to a rounding boundary to miss.
 */
export function vifLog2Table(): Uint16Array {
  const t = new Uint16Array(32768);
  for (let i = 0; i < 32768; i++) {
    t[i] = Math.floor(Math.fround(Math.log2(32768 + i)) * 2048 + 0.5);
  }
  return t;
}

function log2Words(): Uint32Array {
  if (!log2TableWords) {
    const t = vifLog2Table();
    log2TableWords = new Uint32Array(t.buffer.slice(0)); // entry i in half (i & 1) of word i >> 1 (little endian)
  }
  return log2TableWords;
}

// ---- shader text ------------------------------------------------------------------------

type InputKind = 'luma8' | 'luma16' | 'packed';

interface StatsVariant {
  scale: number;
  bitDepth: number; // only matters at scale 0
  tile: VifTileConfig;
}

/**
 * The four filters of a statistics pass, unrolled with literal taps (vif-stats.wgsl's
 * v_filter, h_filter, dv_filter, dh_filter): no tap table for a backend to index at run time.
 */
function filterFunctions(taps: readonly number[], dtaps: readonly number[] | undefined): string {
  const pairs = (t: readonly number[], line: (k: number, tap: number) => string): string =>
    t.slice(1).map((tap, i) => line(i + 1, tap)).join('\n');
  const down = (name: string, stride: string): string => (dtaps
    ? [
      `fn ${name}(c: u32) -> vec2<u32> {`,
      `  var a = ${dtaps[0]}u * unpack2(smem[c]);`,
      pairs(dtaps, (k, t) => `  a = a + ${t}u * (unpack2(smem[c - ${k}u${stride}]) + unpack2(smem[c + ${k}u${stride}]));`),
      '  return a;',
      '}',
    ]
    : [`fn ${name}(c: u32) -> vec2<u32> {`, '  return vec2<u32>(0u);', '}']).join('\n');
  return [
    'fn v_filter(c: u32) -> VAcc {',
    `  var a = v_centre(smem[c], ${taps[0]}u);`,
    pairs(taps, (k, t) => `  v_pair(&a, smem[c - ${k}u * IN_W], smem[c + ${k}u * IN_W], ${t}u);`),
    '  return a;',
    '}',
    'fn h_filter(c: u32) -> VAcc {',
    `  var a = h_centre(h_load(c), ${taps[0]}u);`,
    pairs(taps, (k, t) => `  h_pair(&a, h_load(c - ${k}u), h_load(c + ${k}u), ${t}u);`),
    '  return a;',
    '}',
    down('dv_filter', ' * IN_W'),
    down('dh_filter', ''),
  ].join('\n');
}

/** Workgroup memory words of a statistics pass (the largest of its phases). */
function smemWords(scale: number, tile: VifTileConfig): number {
  const half = VIF_FILTERS[scale]!.length - 1;
  const dhalf = scale + 1 < SCALES ? VIF_FILTERS[scale + 1]!.length - 1 : 0;
  const inW = tile.tileWidth + 2 * half;
  const inH = tile.tileHeight + 2 * half;
  const filtering = inW * inH + 4 * inW * tile.tileHeight + (dhalf > 0 ? (tile.tileWidth + 2 * dhalf) * (tile.tileHeight / 2) : 0);
  return Math.max(filtering, 4 * tile.workgroupSize);
}

/** Bytes of workgroup memory the largest pass of this tile shape needs. */
export function vifWorkgroupBytes(tile: VifTileConfig = VIF_DEFAULT_TILE): number {
  let max = 0;
  for (let s = 0; s < SCALES; s++) max = Math.max(max, smemWords(s, tile) * 4 + 4);
  return max;
}

function statsShader(v: StatsVariant): string {
  const { scale, bitDepth, tile } = v;
  const taps = VIF_FILTERS[scale]!;
  const hasDown = scale + 1 < SCALES;
  const dtaps = hasDown ? VIF_FILTERS[scale + 1]! : undefined;
  const input: InputKind = scale > 0 ? 'packed' : bitDepth === 8 ? 'luma8' : 'luma16';
  const wide = !(scale === 0 && bitDepth === 8);
  const muShift = scale === 0 ? bitDepth : 16;
  const sqShift = scale === 0 ? 2 * (bitDepth - 8) : 16;
  const downShift = scale === 0 ? bitDepth : 16;
  const pix = (tile.tileWidth * tile.tileHeight) / tile.workgroupSize;
  const lines = [
    `// ---- generated by vif-kernel.ts: scale ${scale}, ${bitDepth}-bit input, ${tile.tileWidth}x${tile.tileHeight} tiles ----`,
    `const WG: u32 = ${tile.workgroupSize}u;`,
    `const TW: u32 = ${tile.tileWidth}u;`,
    `const TH: u32 = ${tile.tileHeight}u;`,
    `const PIX: u32 = ${pix}u;`,
    `const HALF: u32 = ${taps.length - 1}u;`,
    `const HAS_DOWN: bool = ${hasDown};`,
    `const DHALF: u32 = ${dtaps ? dtaps.length - 1 : 0}u;`,
    `const WIDE: bool = ${wide};`,
    `const MU_SHIFT: u32 = ${muShift}u;`,
    `const MU_ROUND: u32 = ${2 ** (muShift - 1)}u;`,
    `const SQ_SHIFT: u32 = ${sqShift}u;`,
    `const SQ_ROUND: u32 = ${sqShift > 0 ? 2 ** (sqShift - 1) : 0}u;`,
    `const SQ_HI_SHIFT: u32 = ${wide ? 16 - sqShift : 0}u;`,
    `const DOWN_SHIFT: u32 = ${downShift}u;`,
    `const DOWN_ROUND: u32 = ${2 ** (downShift - 1)}u;`,
    `const SMEM: u32 = ${smemWords(scale, tile)}u;`,
    filterFunctions(taps, dtaps),
  ];
  if (input === 'packed') {
    lines.push(
      '@group(0) @binding(0) var<storage, read> in_img: array<u32>;',
      'fn load_pair(i: u32) -> u32 { return in_img[i]; }',
    );
  } else {
    const f = input === 'luma8' ? 'luma_sample_8' : 'luma_sample_16';
    lines.push(
      '@group(0) @binding(0) var<storage, read> in_ref: array<u32>;',
      '@group(0) @binding(1) var<storage, read> in_dis: array<u32>;',
      `fn load_pair(i: u32) -> u32 { return ${f}(&in_ref, i) | (${f}(&in_dis, i) << 16u); }`,
    );
  }
  if (hasDown) {
    lines.push(
      '@group(0) @binding(2) var<storage, read_write> next_img: array<u32>;',
      'fn store_next(i: u32, v: u32) { next_img[i] = v; }',
    );
  } else {
    lines.push('fn store_next(i: u32, v: u32) {}');
  }
  lines.push(
    '@group(0) @binding(3) var<storage, read_write> partials: array<vec2<u32>>;',
    '@group(0) @binding(4) var<storage, read> log2_tab: array<u32>;',
    '@group(0) @binding(5) var<uniform> P: VifParams;',
    '@group(0) @binding(6) var<storage, read_write> gain_queue: array<u32>;',
    '@group(0) @binding(7) var<storage, read_write> gain_count: array<u32>;',
  );
  return composeWgsl(['vif/vif-stats.wgsl'], lines.join('\n'));
}

// Pipelines are per device and variant, shared by every kernel instance (all geometry is in
// uniforms).
const pipelineCache = new WeakMap<GpuDevice, Map<string, Promise<GPUComputePipeline>>>();

function cachedPipeline(gpu: GpuDevice, key: string, make: () => Promise<GPUComputePipeline>): Promise<GPUComputePipeline> {
  let byKey = pipelineCache.get(gpu);
  if (!byKey) pipelineCache.set(gpu, (byKey = new Map()));
  let p = byKey.get(key);
  if (!p) {
    p = make();
    byKey.set(key, p);
    p.catch(() => byKey!.delete(key));
  }
  return p;
}

function statsPipeline(gpu: GpuDevice, v: StatsVariant): Promise<GPUComputePipeline> {
  const depthKey = v.scale === 0 ? v.bitDepth : 0;
  const key = `stats:${v.scale}:${depthKey}:${v.tile.workgroupSize}:${v.tile.tileWidth}x${v.tile.tileHeight}`;
  return cachedPipeline(gpu, key, () =>
    gpu.createComputePipeline(statsShader(v), { label: `vif-stats s${v.scale} ${v.scale === 0 ? `${v.bitDepth}-bit` : ''}`.trim() }),
  );
}

function gainPipeline(gpu: GpuDevice): Promise<GPUComputePipeline> {
  return cachedPipeline(gpu, 'gain', () => gpu.createComputePipeline(composeWgsl(['vif/vif-gain-pass.wgsl']), { label: 'vif-gain' }));
}

function reducePipeline(gpu: GpuDevice): Promise<GPUComputePipeline> {
  return cachedPipeline(gpu, 'reduce', () => gpu.createComputePipeline(composeWgsl(['vif/vif-reduce.wgsl']), { label: 'vif-reduce' }));
}

/** The full WGSL of a statistics pass (for tests and inspection). */
export function vifStatsShaderSource(scale: number, bitDepth: FrameGeometry['bitDepth'], tile: VifTileConfig = VIF_DEFAULT_TILE): string {
  return statsShader({ scale, bitDepth, tile });
}

/** Bytes of the gain queue of one frame size: 12 per pixel of every scale, tiles rounded up. */
export function vifGainQueueBytes(width: number, height: number, tile: VifTileConfig = VIF_DEFAULT_TILE): number {
  if (width < VIF_MIN_WIDTH || height < VIF_MIN_HEIGHT) return 0;
  let tiles = 0;
  for (let s = 0; s < SCALES; s++) tiles += Math.ceil((width >> s) / tile.tileWidth) * Math.ceil((height >> s) / tile.tileHeight);
  return tiles * 12 * tile.tileWidth * tile.tileHeight;
}

// ---- the kernel -------------------------------------------------------------------------

interface ScaleGeometry {
  w: number;
  h: number;
  tilesX: number;
  tilesY: number;
  partBase: number; // in i64 values
  tileBase: number; // first tile among all scales' tiles
}

const PARAM_STRIDE = 256; // bytes between the scales' uniform blocks (minUniformBufferOffsetAlignment)

function validateTile(tile: VifTileConfig): void {
  const { workgroupSize: wg, tileWidth: tw, tileHeight: th } = tile;
  const ok = Number.isInteger(wg) && wg >= 32 && (wg & (wg - 1)) === 0 &&
    Number.isInteger(tw) && Number.isInteger(th) && tw >= 2 && th >= 2 && tw % 2 === 0 && th % 2 === 0 &&
    (tw * th) % wg === 0 && (tw * th) / wg <= 32 && tw * th <= 1 << 14;
  if (!ok) throw new BackendError('E_GPU', `vif: bad tile shape ${JSON.stringify(tile)}`);
}

/** The per-scale dispatch labels, made once rather than per frame (only encodeProfiled reads them). */
const SCALE_LABELS = Array.from({ length: SCALES }, (_, s) => `scale ${s}`);

export class VifKernel implements FrameKernel {
  readonly statsLength = VIF_STATS_LEN;
  readonly geometry: Readonly<FrameGeometry>;
  readonly tile: Readonly<VifTileConfig>;

  readonly #gpu: GpuDevice;
  readonly #active: boolean; // false below the minimum size: the stats are all zero
  readonly #scales: ScaleGeometry[];
  readonly #statsPipelines: GPUComputePipeline[];
  readonly #gainPipeline: GPUComputePipeline;
  readonly #gainGroup: GPUBindGroup | undefined;
  readonly #gainGroups: [number, number];
  readonly #reducePipeline: GPUComputePipeline;
  readonly #owned: GPUBuffer[] = [];
  readonly #images: GPUBuffer[] = []; // scales 1..3 at [0..2]
  readonly #partials: GPUBuffer;
  readonly #gainQueue: GPUBuffer;
  readonly #gainCount: GPUBuffer;
  readonly #log2: GPUBuffer;
  readonly #params: GPUBuffer;
  readonly #scaleGroups: (GPUBindGroup | undefined)[] = []; // scales 1..3 (fixed inputs)
  readonly #inputGroups = new WeakMap<GPUBuffer, WeakMap<GPUBuffer, GPUBindGroup>>();
  readonly #reduceGroups = new WeakMap<GPUBuffer, Map<number, GPUBindGroup>>();
  #destroyed = false;

  private constructor(gpu: GpuDevice, geometry: FrameGeometry, tile: VifTileConfig, pipelines: GPUComputePipeline[], gain: GPUComputePipeline, reduce: GPUComputePipeline) {
    this.#gpu = gpu;
    this.geometry = Object.freeze({ ...geometry });
    this.tile = Object.freeze({ ...tile });
    this.#statsPipelines = pipelines;
    this.#gainPipeline = gain;
    this.#reducePipeline = reduce;
    const d = gpu.device;
    const { width, height } = geometry;
    this.#active = width >= VIF_MIN_WIDTH && height >= VIF_MIN_HEIGHT;

    this.#scales = [];
    let partBase = 0;
    let tileBase = 0;
    for (let s = 0; s < SCALES; s++) {
      const w = this.#active ? width >> s : 0;
      const h = this.#active ? height >> s : 0;
      const tilesX = Math.ceil(w / tile.tileWidth);
      const tilesY = Math.ceil(h / tile.tileHeight);
      this.#scales.push({ w, h, tilesX, tilesY, partBase, tileBase });
      partBase += STATS_PER_SCALE * tilesX * tilesY;
      tileBase += tilesX * tilesY;
    }
    const totalTiles = tileBase;
    const queueStride = 3 * tile.tileWidth * tile.tileHeight;

    const buffer = (size: number, usage: number, label: string): GPUBuffer => {
      const b = d.createBuffer({ size: Math.max(16, Math.ceil(size / 4) * 4), usage, label });
      this.#owned.push(b);
      return b;
    };
    for (let s = 1; s < SCALES; s++) {
      const g = this.#scales[s]!;
      this.#images.push(buffer(g.w * g.h * 4, GPUBufferUsage.STORAGE, `vif scale ${s} image`));
    }
    this.#partials = buffer(partBase * 8, GPUBufferUsage.STORAGE, 'vif partials');
    this.#gainQueue = buffer(totalTiles * queueStride * 4, GPUBufferUsage.STORAGE, 'vif gain queue');
    this.#gainCount = buffer(totalTiles * 4, GPUBufferUsage.STORAGE, 'vif gain counts');

    const words = log2Words();
    this.#log2 = buffer(words.byteLength, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST, 'vif log2 table');
    d.queue.writeBuffer(this.#log2, 0, words);

    const params = new Uint32Array((PARAM_STRIDE / 4) * SCALES);
    for (let s = 0; s < SCALES; s++) {
      const g = this.#scales[s]!;
      const next = this.#scales[s + 1];
      params.set([g.w, g.h, next ? next.w : 0, next ? next.h : 0, g.tilesX, g.partBase, g.tilesX * g.tilesY, g.tileBase], (PARAM_STRIDE / 4) * s);
    }
    this.#params = buffer(params.byteLength, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, 'vif params');
    d.queue.writeBuffer(this.#params, 0, params);

    const groupsX = Math.min(totalTiles, 32768);
    this.#gainGroups = [groupsX, Math.ceil(totalTiles / groupsX)];
    if (this.#active) {
      const gp = new Uint32Array(16);
      for (let s = 0; s < SCALES; s++) {
        const g = this.#scales[s]!;
        gp[s] = g.tileBase;
        gp[4 + s] = g.partBase;
        gp[8 + s] = g.tilesX * g.tilesY;
      }
      gp[12] = totalTiles;
      gp[13] = groupsX;
      gp[14] = queueStride;
      const gainParams = buffer(gp.byteLength, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, 'vif gain params');
      d.queue.writeBuffer(gainParams, 0, gp);
      this.#gainGroup = d.createBindGroup({
        label: 'vif gain',
        layout: gain.getBindGroupLayout(0),
        entries: [
          { binding: 0, resource: { buffer: this.#gainQueue } },
          { binding: 1, resource: { buffer: this.#gainCount } },
          { binding: 2, resource: { buffer: this.#partials } },
          { binding: 3, resource: { buffer: this.#log2 } },
          { binding: 4, resource: { buffer: gainParams } },
        ],
      });
      for (let s = 1; s < SCALES; s++) {
        const entries: GPUBindGroupEntry[] = [{ binding: 0, resource: { buffer: this.#images[s - 1]! } }];
        if (s + 1 < SCALES) entries.push({ binding: 2, resource: { buffer: this.#images[s]! } });
        entries.push(...this.#commonEntries(s));
        this.#scaleGroups[s] = d.createBindGroup({ label: `vif scale ${s}`, layout: pipelines[s]!.getBindGroupLayout(0), entries });
      }
    }
  }

  /**
   * Compiles (or reuses) the pipelines and allocates the scratch for one frame geometry.
   * The adapter needs vifWorkgroupBytes(tile) of workgroup memory (the default tile falls
   * back to VIF_SMALL_TILE when the device has less).
   */
  static async create(gpu: GpuDevice, geometry: FrameGeometry, options: VifKernelOptions = {}): Promise<VifKernel> {
    const { width, height, bitDepth } = geometry;
    if (![8, 10, 12, 16].includes(bitDepth)) throw new BackendError('E_GPU', `vif: unsupported bit depth ${bitDepth}`);
    if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) {
      throw new BackendError('E_GPU', `vif: bad frame size ${width}x${height}`);
    }
    const limit = gpu.limits.maxComputeWorkgroupStorageSize;
    let tile = options.tile;
    if (!tile) tile = vifWorkgroupBytes(VIF_DEFAULT_TILE) <= limit ? VIF_DEFAULT_TILE : VIF_SMALL_TILE;
    validateTile(tile);
    if (vifWorkgroupBytes(tile) > limit) {
      throw new BackendError('E_GPU', `vif: ${tile.tileWidth}x${tile.tileHeight} tiles need ${vifWorkgroupBytes(tile)} bytes of workgroup memory; the adapter has ${limit}`);
    }
    if (tile.workgroupSize > gpu.limits.maxComputeInvocationsPerWorkgroup) {
      throw new BackendError('E_GPU', `vif: workgroups of ${tile.workgroupSize} exceed the adapter's ${gpu.limits.maxComputeInvocationsPerWorkgroup}`);
    }
    const queueBytes = vifGainQueueBytes(width, height, tile);
    const maxBinding = Math.min(gpu.limits.maxStorageBufferBindingSize, gpu.limits.maxBufferSize);
    if (queueBytes > maxBinding) {
      throw new BackendError('E_GPU', `vif: a ${width}x${height} frame needs a ${queueBytes}-byte gain queue; the adapter binds at most ${maxBinding} bytes`);
    }
    const stats = Promise.all([0, 1, 2, 3].map((scale) => statsPipeline(gpu, { scale, bitDepth, tile })));
    const [pipelines, gain, reduce] = await Promise.all([stats, gainPipeline(gpu), reducePipeline(gpu)]);
    return gpu.withErrorScopes('vif: allocating', () => new VifKernel(gpu, geometry, tile, pipelines, gain, reduce));
  }

  #commonEntries(s: number): GPUBindGroupEntry[] {
    return [
      { binding: 3, resource: { buffer: this.#partials } },
      { binding: 4, resource: { buffer: this.#log2 } },
      { binding: 5, resource: { buffer: this.#params, offset: PARAM_STRIDE * s, size: 32 } },
      { binding: 6, resource: { buffer: this.#gainQueue } },
      { binding: 7, resource: { buffer: this.#gainCount } },
    ];
  }

  #inputGroup(ref: GPUBuffer, dis: GPUBuffer): GPUBindGroup {
    let byDis = this.#inputGroups.get(ref);
    if (!byDis) this.#inputGroups.set(ref, (byDis = new WeakMap()));
    let group = byDis.get(dis);
    if (!group) {
      group = this.#gpu.device.createBindGroup({
        label: 'vif scale 0',
        layout: this.#statsPipelines[0]!.getBindGroupLayout(0),
        entries: [
          { binding: 0, resource: { buffer: ref } },
          { binding: 1, resource: { buffer: dis } },
          { binding: 2, resource: { buffer: this.#images[0]! } },
          ...this.#commonEntries(0),
        ],
      });
      byDis.set(dis, group);
    }
    return group;
  }

  #reduceGroup(out: StatsSlot): GPUBindGroup {
    if (out.offset % 4 !== 0 || out.offset < 0 || out.offset + VIF_STATS_LEN * 8 > out.buffer.size) {
      throw new BackendError('E_GPU', `vif: stats slot at byte ${out.offset} does not fit ${VIF_STATS_LEN} values in a ${out.buffer.size}-byte buffer (offsets are multiples of 4)`);
    }
    let byOffset = this.#reduceGroups.get(out.buffer);
    if (!byOffset) this.#reduceGroups.set(out.buffer, (byOffset = new Map()));
    let group = byOffset.get(out.offset);
    if (!group) {
      const d = this.#gpu.device;
      const u = new Uint32Array(12);
      for (let s = 0; s < SCALES; s++) {
        const g = this.#scales[s]!;
        u[s] = g.partBase;
        u[4 + s] = g.tilesX * g.tilesY;
      }
      u[8] = out.offset / 4;
      const uniform = d.createBuffer({ size: u.byteLength, usage: GPUBufferUsage.UNIFORM, mappedAtCreation: true, label: 'vif reduce params' });
      new Uint32Array(uniform.getMappedRange()).set(u);
      uniform.unmap();
      this.#owned.push(uniform);
      group = d.createBindGroup({
        label: 'vif reduce',
        layout: this.#reducePipeline.getBindGroupLayout(0),
        entries: [
          { binding: 0, resource: { buffer: this.#partials } },
          { binding: 1, resource: { buffer: out.buffer } },
          { binding: 2, resource: { buffer: uniform } },
        ],
      });
      byOffset.set(out.offset, group);
    }
    return group;
  }

  encode(encoder: GPUCommandEncoder, planes: LumaPlanes, out: StatsSlot): void {
    const pass = encoder.beginComputePass({ label: 'vif' });
    this.#record(planes, out, pass, undefined);
    pass.end();
  }

  /** As encode(), into a compute pass the caller has begun (and ends): the backend records all core kernels in one. */
  encodeInPass(pass: GPUComputePassEncoder, planes: LumaPlanes, out: StatsSlot): void {
    this.#record(planes, out, pass, undefined);
  }

  /**
   * As encode(), with each dispatch in a compute pass of its own that writes its begin and end
   * timestamps to querySet[first + 2i], [first + 2i + 1] (needs 'timestamp-query'); returns the
   * dispatches' labels in order (at most 6, so 12 queries).
   */
  encodeProfiled(encoder: GPUCommandEncoder, planes: LumaPlanes, out: StatsSlot, querySet: GPUQuerySet, first = 0): string[] {
    const labels: string[] = [];
    this.#record(planes, out, undefined, (label) => {
      const i = labels.length;
      labels.push(label);
      return encoder.beginComputePass({
        label: `vif ${label}`,
        timestampWrites: { querySet, beginningOfPassWriteIndex: first + 2 * i, endOfPassWriteIndex: first + 2 * i + 1 },
      });
    });
    return labels;
  }

  /**
   * The dispatches, in order: all into `shared`, or (profiling) each into a pass of its own
   * from `own`, ended after it. No closure per dispatch: this runs per frame.
   */
  #record(planes: LumaPlanes, out: StatsSlot, shared: GPUComputePassEncoder | undefined, own: ((label: string) => GPUComputePassEncoder) | undefined): void {
    if (this.#destroyed) throw new BackendError('E_GPU', 'vif: kernel used after destroy()');
    const reduceGroup = this.#reduceGroup(out);
    if (this.#active) {
      const { width, height, bitDepth } = this.geometry;
      const bytes = width * height * (bitDepth === 8 ? 1 : 2);
      // Checked one by one: this runs per frame, and an array of pairs per frame is waste.
      if (planes.ref.size < bytes) throw new BackendError('E_GPU', `vif: ref luma buffer holds ${planes.ref.size} bytes, the frame needs ${bytes}`);
      if (planes.dis.size < bytes) throw new BackendError('E_GPU', `vif: dis luma buffer holds ${planes.dis.size} bytes, the frame needs ${bytes}`);
      const input = this.#inputGroup(planes.ref, planes.dis);
      for (let s = 0; s < SCALES; s++) {
        const g = this.#scales[s]!;
        const pass = shared ?? own!(SCALE_LABELS[s]!);
        pass.setPipeline(this.#statsPipelines[s]!);
        pass.setBindGroup(0, s === 0 ? input : this.#scaleGroups[s]!);
        pass.dispatchWorkgroups(g.tilesX, g.tilesY);
        if (!shared) pass.end();
      }
      const pass = shared ?? own!('gain');
      pass.setPipeline(this.#gainPipeline);
      pass.setBindGroup(0, this.#gainGroup!);
      pass.dispatchWorkgroups(this.#gainGroups[0], this.#gainGroups[1]);
      if (!shared) pass.end();
    }
    const pass = shared ?? own!('reduce');
    pass.setPipeline(this.#reducePipeline);
    pass.setBindGroup(0, reduceGroup);
    pass.dispatchWorkgroups(VIF_STATS_LEN);
    if (!shared) pass.end();
  }

  destroy(): void {
    if (this.#destroyed) return;
    this.#destroyed = true;
    for (const b of this.#owned) b.destroy();
    this.#owned.length = 0;
  }
}

/**
 * integer_adm at options the fused core does not take (integer_adm_options.cpp: VMAF v1's
 * adm3 instances, `--feature adm=...`) on the GPU: the WGSL ADM at the instance's
 * admKernelParams (src/kernels/gpu/adm/) writes admStatsWithOptions' 60 accumulators,
 * which integer_adm_options.cpp's finishStats turns into values with extract()'s own tail,
 * so both backends give the same bits.
 *
 * Instances of one run share passes where they can (adm-instances.ts: same CSF weights, up
 * to two gain limits per set of passes): the instances a GpuExtractorSet creates together
 * (its compile() calls create() for all of them in one synchronous loop, with one reducer)
 * form a batch. The batch's passes write every kernel's stats into a scratch buffer once per
 * rendition, and each instance copies its own stats out of it, in admStatsWithOptions'
 * layout (instanceStats' mapping, as buffer copies). An instance alone writes its slot
 * directly.
 */
import type { GpuExtractorContext, GpuExtractorInputs, GpuExtractorKernel, GpuImplementation } from '../../kernels/gpu/gpu-extractor.js';
import type { FrameGeometry, StatsSlot } from '../../kernels/gpu/frame-kernel.js';
import type { I64Reducer } from '../../kernels/gpu/reduce-i64.js';
import { AdmKernel, ADM_STATS_LENGTH } from '../../kernels/gpu/adm/adm-kernel.js';
import { AdmInstancesKernel } from '../../kernels/gpu/adm/adm-instances.js';
import { admKernelParams } from '../../kernels/adm-options.js';
import { loadNative, type AdmKernelParams, type NativeAdmOptions } from '../../kernels/native.js';
import type { OptionValues } from '../option.js';
import type { FrameFormat } from '../../types.js';

// adm.h's stats layout (as adm-instances.ts): per scale 9 DLM stats (3 numerators per
// variant, then 3 denominators), then per scale 6 AIM numerators (3 per variant).
const SCALES = 4;
const DLM_PER_SCALE = 9;
const DEN_AT = 6;
const AIM_BASE = SCALES * DLM_PER_SCALE;
const AIM_PER_SCALE = 6;
const STATS_BYTES = 8 * ADM_STATS_LENGTH;

/** The registry's option values (libvmaf's names) as the addon's ADM options. */
function admOptionsOf(o: OptionValues): NativeAdmOptions {
  return {
    csfMode: o['adm_csf_mode'] as number,
    csfScale: o['adm_csf_scale'] as number,
    csfDiagScale: o['adm_csf_diag_scale'] as number,
    normViewDist: o['adm_norm_view_dist'] as number,
    refDisplayHeight: o['adm_ref_display_height'] as number,
    noiseWeight: o['adm_noise_weight'] as number,
    dlmWeight: o['adm_dlm_weight'] as number,
    minVal: o['adm_min_val'] as number,
    enhnGainLimit: o['adm_enhn_gain_limit'] as number,
    skipAim: o['adm_skip_aim'] === true,
    skipScale0: o['adm_skip_scale0'] === true,
  };
}

function paramsOf(options: OptionValues): AdmKernelParams {
  return admKernelParams(loadNative(), admOptionsOf(options));
}

/** The kernel shares one weight for the h and v bands (adm.h); params where they differ stay on the host. */
function kernelTakes(p: AdmKernelParams): boolean {
  if (p.baseWeight[0] !== p.baseWeight[1]) return false;
  for (let s = 0; s < 3; s++) if (p.detailWeight[3 * s] !== p.detailWeight[3 * s + 1]) return false;
  return true;
}

const geometryOf = (format: FrameFormat): FrameGeometry => ({ width: format.width, height: format.height, bitDepth: format.bitDepth });

/** The instances created together for one GpuExtractorSet, and their shared passes. */
interface Batch {
  ctx: GpuExtractorContext;
  params: AdmKernelParams[];
  /** Set once the batch is closed (a microtask after its first create()). */
  shared?: Promise<SharedPasses | AdmKernel>;
}

const openBatches = new WeakMap<I64Reducer, Batch>();

/** One batch's passes, recorded once per rendition, and the scratch they write. */
class SharedPasses {
  readonly kernel: AdmInstancesKernel;
  readonly scratch: GPUBuffer;
  readonly members: number;
  #encodedInRound = 0;
  #live: number;

  constructor(kernel: AdmInstancesKernel, scratch: GPUBuffer, members: number) {
    this.kernel = kernel;
    this.scratch = scratch;
    this.members = members;
    this.#live = members;
  }

  /**
   * Called by each member's encode(): the first of a round (every member encodes once per
   * rendition, GpuExtractorSet.encode) records the passes into the scratch; the command
   * buffer runs them before the copies that follow.
   */
  enter(encoder: GPUCommandEncoder, inputs: GpuExtractorInputs): void {
    if (this.#encodedInRound === 0) this.kernel.encode(encoder, { ref: inputs.ref.buffer, dis: inputs.dis.buffer }, { buffer: this.scratch, offset: 0 });
    this.#encodedInRound = (this.#encodedInRound + 1) % this.members;
  }

  release(): void {
    if (--this.#live > 0) return;
    this.kernel.destroy();
    this.scratch.destroy();
  }
}

/** The (source byte, target byte, bytes) copies that put instance `i`'s stats in admStatsWithOptions' layout. */
function copiesOf(kernel: AdmInstancesKernel, i: number): [number, number, number][] {
  const src = kernel.sources[i]!;
  const base = src.kernel * ADM_STATS_LENGTH;
  const copies: [number, number, number][] = [];
  const three = (from: number, to: number): void => void copies.push([8 * (base + from), 8 * to, 24]);
  for (let s = src.scale0 ? 0 : 1; s < SCALES; s++) {
    three(DLM_PER_SCALE * s + 3 * src.variant, DLM_PER_SCALE * s);
    three(DLM_PER_SCALE * s + DEN_AT, DLM_PER_SCALE * s + DEN_AT);
    if (src.aim) three(AIM_BASE + AIM_PER_SCALE * s + 3 * src.variant, AIM_BASE + AIM_PER_SCALE * s);
  }
  return copies;
}

/** A member of a shared batch: its stats copied out of the batch's scratch. */
class SharedInstance implements GpuExtractorKernel {
  readonly statsCount = ADM_STATS_LENGTH;
  readonly #shared: SharedPasses;
  readonly #copies: [number, number, number][];
  #destroyed = false;

  constructor(shared: SharedPasses, index: number) {
    this.#shared = shared;
    this.#copies = copiesOf(shared.kernel, index);
  }

  encode(encoder: GPUCommandEncoder, inputs: GpuExtractorInputs, out: StatsSlot): void {
    this.#shared.enter(encoder, inputs);
    // The stats admStatsWithOptions leaves 0 (the other variant, skipped scales and aim).
    encoder.clearBuffer(out.buffer, out.offset, STATS_BYTES);
    for (const [from, to, bytes] of this.#copies) encoder.copyBufferToBuffer(this.#shared.scratch, from, out.buffer, out.offset + to, bytes);
  }

  destroy(): void {
    if (this.#destroyed) return;
    this.#destroyed = true;
    this.#shared.release();
  }
}

/** An instance alone: its kernel writes admStatsWithOptions' stats straight into its slot. */
class SoleInstance implements GpuExtractorKernel {
  readonly statsCount = ADM_STATS_LENGTH;
  readonly #kernel: AdmKernel;

  constructor(kernel: AdmKernel) {
    this.#kernel = kernel;
  }

  encode(encoder: GPUCommandEncoder, inputs: GpuExtractorInputs, out: StatsSlot): void {
    this.#kernel.encode(encoder, { ref: inputs.ref.buffer, dis: inputs.dis.buffer }, out);
  }

  destroy(): void {
    this.#kernel.destroy();
  }
}

async function closeBatch(batch: Batch): Promise<SharedPasses | AdmKernel> {
  const { gpu, format } = batch.ctx;
  if (batch.params.length === 1) return AdmKernel.create(gpu, geometryOf(format), batch.params[0]!);
  const kernel = await AdmInstancesKernel.create(gpu, geometryOf(format), batch.params);
  try {
    const scratch = gpu.device.createBuffer({ size: 8 * kernel.statsLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC, label: 'integer_adm instances stats' });
    return new SharedPasses(kernel, scratch, batch.params.length);
  } catch (e) {
    kernel.destroy();
    throw e;
  }
}

export const integerAdmGpu: GpuImplementation = {
  supports(options) {
    try {
      return kernelTakes(paramsOf(options));
    } catch {
      return false; // options libvmaf refuses: the native instance reports them, as on the cpu backend
    }
  },
  async create(ctx) {
    const params = paramsOf(ctx.options);
    let batch = openBatches.get(ctx.reducer);
    if (!batch) {
      const fresh: Batch = { ctx, params: [] };
      openBatches.set(ctx.reducer, (batch = fresh));
      // Closed once the set's synchronous create() loop is over.
      fresh.shared = Promise.resolve().then(() => {
        openBatches.delete(ctx.reducer);
        return closeBatch(fresh);
      });
    }
    const index = batch.params.push(params) - 1;
    const made = await batch.shared!;
    return made instanceof AdmKernel ? new SoleInstance(made) : new SharedInstance(made, index);
  },
};

/**
 * Several integer_adm instances (libvmaf's ADM at different options, e.g. the default one
 * and VMAF v1's `integer_adm3_csf_2_dlmw_0.7_egl_1_min_0.5_nw_0.02`) on the GPU in one
 * command buffer, each instance's 60 stats exactly admStatsWithOptions' at its options, to
 * be finished by the host step both backends share (adm-options.ts finishAdm).
 *
 * Sharing: the pixel passes depend only on the CSF weights and the gain limit. The noise
 * weight, dlm weight and min_val act in the host finish, and skip_aim / skip_scale0 only
 * leave stats out (admStatsWithOptions writes them as 0). So instances with the same
 * weights share kernels, one per two distinct gain limits (an AdmKernel's variants 0 and 1,
 * as the default kernel computes gain limits 100 and 1 in one set of passes; a kernel left
 * with one gain limit compiles its passes without variant 1), and
 * instances that differ only in those host-side options share a kernel's variant outright.
 * instanceStats() takes an instance's stats out of its kernel's block.
 */
import { BackendError } from '../../../errors.js';
import type { AdmKernelParams } from '../../native.js';
import type { GpuDevice } from '../device.js';
import type { FrameGeometry, FrameKernel, LumaPlanes, StatsSlot } from '../frame-kernel.js';
import { AdmKernel, ADM_STATS_LENGTH } from './adm-kernel.js';

// adm.h's layout: per scale 9 DLM stats (3 numerators per variant, then 3 denominators),
// then per scale 6 AIM numerators (3 per variant).
const SCALES = 4;
const DLM_PER_SCALE = 9;
const DEN_AT = 6;
const AIM_BASE = SCALES * DLM_PER_SCALE;
const AIM_PER_SCALE = 6;

/** Where one instance's stats come from. */
export interface AdmInstanceSource {
  /** Index of the kernel (and of its stats block). */
  kernel: number;
  /** The kernel's variant computed at this instance's gain limit. */
  variant: 0 | 1;
  aim: boolean;
  scale0: boolean;
}

/** One kernel of the plan: weights (from params) at one or two gain limits. */
export interface AdmKernelSpec {
  params: AdmKernelParams;
  gainLimits: [number] | [number, number];
}

/** Which kernels a list of instances needs, and where each instance's stats come from. */
export function planAdmInstances(instances: readonly AdmKernelParams[]): { kernels: AdmKernelSpec[]; sources: AdmInstanceSource[] } {
  const kernels: AdmKernelSpec[] = [];
  const sources: AdmInstanceSource[] = [];
  // per weight set: the kernels holding its gain limits, by limit
  const byWeights = new Map<string, Map<number, { kernel: number; variant: 0 | 1 }>>();
  const open = new Map<string, number>(); // weight set -> kernel with one gain limit so far
  for (const p of instances) {
    const key = JSON.stringify([p.baseWeight, p.detailWeight]);
    let limits = byWeights.get(key);
    if (!limits) byWeights.set(key, (limits = new Map()));
    let at = limits.get(p.gainLimit);
    if (!at) {
      const half = open.get(key);
      if (half !== undefined) {
        kernels[half]!.gainLimits = [kernels[half]!.gainLimits[0], p.gainLimit];
        open.delete(key);
        at = { kernel: half, variant: 1 };
      } else {
        kernels.push({ params: p, gainLimits: [p.gainLimit] });
        open.set(key, kernels.length - 1);
        at = { kernel: kernels.length - 1, variant: 0 };
      }
      limits.set(p.gainLimit, at);
    }
    sources.push({ ...at, aim: p.aim, scale0: p.scale0 });
  }
  return { kernels, sources };
}

export class AdmInstancesKernel implements FrameKernel {
  readonly statsLength: number;
  /** Per instance, in the order given to create(). */
  readonly sources: readonly AdmInstanceSource[];
  readonly #kernels: AdmKernel[];

  /** The kernels for `instances` (each the addon's admKernelParams of one instance's options). */
  static async create(gpu: GpuDevice, geometry: FrameGeometry, instances: readonly AdmKernelParams[]): Promise<AdmInstancesKernel> {
    if (instances.length === 0) throw new BackendError('E_GPU', 'adm: no instances');
    const { kernels, sources } = planAdmInstances(instances);
    const made = await Promise.allSettled(
      kernels.map((k) =>
        k.gainLimits.length === 2
          ? AdmKernel.create(gpu, geometry, k.params, k.gainLimits[1])
          : // every stat written: instances sharing it may differ in skip_aim / skip_scale0
            AdmKernel.create(gpu, geometry, { ...k.params, aim: true, scale0: true }),
      ),
    );
    const ok = made.flatMap((m) => (m.status === 'fulfilled' ? [m.value] : []));
    const failed = made.find((m): m is PromiseRejectedResult => m.status === 'rejected');
    if (failed) {
      for (const k of ok) k.destroy();
      throw failed.reason;
    }
    return new AdmInstancesKernel(ok, sources);
  }

  private constructor(kernels: AdmKernel[], sources: AdmInstanceSource[]) {
    this.#kernels = kernels;
    this.sources = sources;
    this.statsLength = ADM_STATS_LENGTH * kernels.length;
  }

  /** How many kernels (sets of passes) the instances take. */
  get kernelCount(): number {
    return this.#kernels.length;
  }

  /** Records every kernel's passes; kernel i's 60 stats go to out.offset + 480 i. */
  encode(encoder: GPUCommandEncoder, planes: LumaPlanes, out: StatsSlot): void {
    this.#kernels.forEach((k, i) => k.encode(encoder, planes, { buffer: out.buffer, offset: out.offset + 8 * ADM_STATS_LENGTH * i }));
  }

  /** Instance i's stats (admStatsWithOptions' layout) from the statsLength values encode() wrote. */
  instanceStats(block: BigInt64Array, i: number): BigInt64Array {
    const src = this.sources[i];
    if (!src) throw new BackendError('E_GPU', `adm: no instance ${i}`);
    if (block.length !== this.statsLength) throw new BackendError('E_GPU', `adm: ${block.length} stats given, the instances' kernels write ${this.statsLength}`);
    const k = src.kernel * ADM_STATS_LENGTH;
    const out = new BigInt64Array(ADM_STATS_LENGTH);
    for (let s = src.scale0 ? 0 : 1; s < SCALES; s++) {
      for (let b = 0; b < 3; b++) {
        out[DLM_PER_SCALE * s + b] = block[k + DLM_PER_SCALE * s + 3 * src.variant + b]!;
        out[DLM_PER_SCALE * s + DEN_AT + b] = block[k + DLM_PER_SCALE * s + DEN_AT + b]!;
        if (src.aim) out[AIM_BASE + AIM_PER_SCALE * s + b] = block[k + AIM_BASE + AIM_PER_SCALE * s + 3 * src.variant + b]!;
      }
    }
    return out;
  }

  destroy(): void {
    for (const k of this.#kernels) k.destroy();
  }
}

/**
 * The parts of the fused core (integer VIF, ADM at the core's options, motion) a run
 * computes: only those its plan has instances of. A VMAF v1 model reads only motion from the
 * core (its adm3 runs at options of its own), so a v1 run computes no VIF and no core ADM.
 * Resolved once from the plan (planCoreParts) and handed to the backend, which computes,
 * lays out and finishes only these parts.
 */
import type { RunPlan } from '../extractors/plan.js';
import { integerVif } from '../extractors/integer_vif/integer_vif.js';
import { integerAdm } from '../extractors/integer_adm/integer_adm.js';
import { integerMotion } from '../extractors/integer_motion/integer_motion.js';

export interface CoreParts {
  /** Integer VIF (default options and vif_enhn_gain_limit=1 from the same stats). */
  readonly vif: boolean;
  /** Integer ADM at the core's options (default and adm_enhn_gain_limit=1). */
  readonly adm: boolean;
  /** The motion SADs (every motion instance reads them). */
  readonly motion: boolean;
  /**
   * With adm: whether its adm_enhn_gain_limit=1 variant (the _egl_1 keys) is wanted; absent
   * means it is. False (createPlanBackend, for a plan without that instance): neither
   * backend computes that variant (the cpu skips its masking work, the gpu compiles its ADM
   * passes without it: AdmKernel.createWithoutEgl1) nor emits its values.
   */
  readonly admEgl1?: boolean;
}

export const ALL_CORE_PARTS: CoreParts = Object.freeze({ vif: true, adm: true, motion: true });
export const NO_CORE_PARTS: CoreParts = Object.freeze({ vif: false, adm: false, motion: false });

/** The core parts the plan's core instances need (integer_adm at other options is a native instance, not the core's). */
export function planCoreParts(plan: RunPlan): CoreParts {
  const core = plan.instances.filter((x) => x.definition.implementation.kind === 'core');
  const has = (name: string): boolean => core.some((x) => x.definition.name === name);
  return { vif: has(integerVif.name), adm: has(integerAdm.name), motion: has(integerMotion.name) };
}

/** Whether the plan has a core ADM instance at adm_enhn_gain_limit=1 (the _egl_1 keys). */
export function planAdmEgl1(plan: RunPlan): boolean {
  return plan.instances.some((x) => x.definition.implementation.kind === 'core' && x.definition.name === integerAdm.name && x.options['adm_enhn_gain_limit'] === 1);
}

export function anyCorePart(parts: CoreParts): boolean {
  return parts.vif || parts.adm || parts.motion;
}

/** The addon's mask of the stats parts (computeFrameStats, finishFeatures: 1 VIF, 2 ADM, 4 beside 2: ADM without egl_1). */
export function statsPartsMask(parts: CoreParts): number {
  return (parts.vif ? 1 : 0) | (parts.adm ? 2 : 0) | (parts.adm && parts.admEgl1 === false ? 4 : 0);
}

/** Whether a frame pair's stats (VIF or ADM, which read the distorted frame) are computed at all. */
export function hasStatsParts(parts: CoreParts): boolean {
  return parts.vif || parts.adm;
}

/** How many times each core part was computed: one per rendition frame (VIF, ADM), one per SAD (motion). */
export interface CoreRuns {
  vif: number;
  adm: number;
  motion: number;
}

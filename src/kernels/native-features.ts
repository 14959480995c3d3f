/**
 * Shared by both backends: turns the 22 values of finishFeatures (the gpu backend
 * produces the same stats array and finishes it the same way) and a frame's motion SADs
 * into FeatureValues keyed and ordered as libvmaf 3.2.0 logs them.
 *
 * libvmaf's log order for the default instances, less what the core does not compute
 * (psnr_*, float_ssim, ...):
 *   integer_adm2, integer_aim, integer_adm3, integer_adm_scale0..3,
 *   VMAF_integer_feature_motion_sad_score, integer_vif_scale0..3, integer_adm2_egl_1,
 *   integer_aim_egl_1, integer_adm3_egl_1, integer_adm_scale0..3_egl_1,
 *   integer_vif_scale0..3_egl_1, integer_motion2, integer_motion3.
 * Each planned motion instance's SAD score (and, with debug, integer_motion) takes the
 * place of VMAF_integer_feature_motion_sad_score; motion2 and motion3 need later frames:
 * pipeline/motion-finish.ts appends them.
 */
import type { FeatureValues } from '../types.js';
import type { MotionEntry, MotionGroup } from '../pipeline/motion-finish.js';
import type { NativeAddon } from './native.js';
import { DEFAULT_MOTION_INSTANCE, sadDistance, type MotionInstance } from '../extractors/integer_motion/motion-options.js';
import { motionSadScore } from '../pipeline/motion-series.js';
import { ALL_CORE_PARTS, hasStatsParts, statsPartsMask, type CoreParts } from './core-parts.js';
import { ADM_VALUE_KEYS } from './adm-options.js';

/** libvmaf's name for a frame's own motion score (the SAD against the previous frame). */
export const MOTION_SAD_KEY = 'VMAF_integer_feature_motion_sad_score';
export const MOTION2_KEY = 'integer_motion2';
export const MOTION3_KEY = 'integer_motion3';

/** libvmaf's motion_max_val default: larger motion scores are clipped to it. */
export const MOTION_MAX_VAL = 10000;

const VIF_KEYS = ['integer_vif_scale0', 'integer_vif_scale1', 'integer_vif_scale2', 'integer_vif_scale3'] as const;
/** The keys of the instances with enhn_gain_limit 1 (libvmaf's "_egl_1" suffix). */
const egl1 = (keys: readonly string[]): string[] => keys.map((k) => `${k}_egl_1`);

/** Names of finishFeatures' values, by position: VIF, VIF egl_1, ADM, ADM egl_1. */
export const FINISHED_FEATURE_KEYS: readonly string[] = [...VIF_KEYS, ...egl1(VIF_KEYS), ...ADM_VALUE_KEYS, ...egl1(ADM_VALUE_KEYS)];

/** Every key a backend emits per frame with the default motion instance, in libvmaf's log order. */
export const FEATURE_KEYS: readonly string[] = [
  ...ADM_VALUE_KEYS,
  MOTION_SAD_KEY,
  ...VIF_KEYS,
  ...egl1(ADM_VALUE_KEYS),
  ...egl1(VIF_KEYS),
  MOTION2_KEY,
  MOTION3_KEY,
];

/** finishFeatures' VIF values (the first 8); the ADM ones follow. */
const VIF_FINISHED = 2 * VIF_KEYS.length;

/** The ADM keys of the egl_1 variant: not emitted where it was not computed (parts.admEgl1 false). */
const ADM_EGL1_KEYS: ReadonlySet<string> = new Set(egl1(ADM_VALUE_KEYS));

/**
 * Where each key sits in finishFeatures' values for these parts (VIF's 8 first, then ADM's
 * 14, a part left out taking no room); keys of parts left out are absent, and so are the
 * ADM egl_1 keys where that variant was not computed (their 7 values are still there).
 */
function finishedIndex(parts: CoreParts): Map<string, number> {
  const index = new Map<string, number>();
  let at = 0;
  FINISHED_FEATURE_KEYS.forEach((key, i) => {
    if (!(i < VIF_FINISHED ? parts.vif : parts.adm)) return;
    if (parts.admEgl1 === false && ADM_EGL1_KEYS.has(key)) at++;
    else index.set(key, at++);
  });
  return index;
}

/** Values finishFeatures returns for these parts. */
function finishedCount(parts: CoreParts): number {
  return (parts.vif ? VIF_FINISHED : 0) + (parts.adm ? FINISHED_FEATURE_KEYS.length - VIF_FINISHED : 0);
}

/** finishedIndex by statsPartsMask (eight at most). */
const FINISHED_INDEX = new Map<number, Map<string, number>>();

function finishedIndexOf(parts: CoreParts): Map<string, number> {
  const mask = statsPartsMask(parts);
  let index = FINISHED_INDEX.get(mask);
  if (!index) FINISHED_INDEX.set(mask, (index = finishedIndex(parts)));
  return index;
}

/**
 * libvmaf's motion score from a SAD at the default options: min(sad / 256 / (width *
 * height), 10000), the same double operations in the same order.
 */
export function motionScoreFromSad(sad: bigint, width: number, height: number): number {
  return motionSadScore(sad, width, height, DEFAULT_MOTION_INSTANCE.options);
}

/**
 * FeatureValues for one frame in libvmaf's key order, without the delayed motion values:
 * `finished` is finishFeatures' values for `parts` (the keys of the parts left out are not
 * there), `motion` each motion instance's (key, score) pairs, which take the place of
 * VMAF_integer_feature_motion_sad_score.
 */
export function featureValues(finished: ArrayLike<number>, motion: ReadonlyArray<readonly [string, number]>, parts: CoreParts = ALL_CORE_PARTS): FeatureValues {
  const index = finishedIndexOf(parts);
  if (finished.length !== finishedCount(parts)) {
    throw new RangeError(`expected ${finishedCount(parts)} finished feature values, got ${finished.length}`);
  }
  const features: FeatureValues = {};
  for (const key of FEATURE_KEYS) {
    if (key === MOTION2_KEY || key === MOTION3_KEY) continue;
    if (key === MOTION_SAD_KEY) {
      for (const [k, v] of motion) features[k] = v;
    } else {
      const at = index.get(key);
      if (at !== undefined) features[key] = finished[at]!;
    }
  }
  return features;
}

/** finishFeatures for the computed parts; no call at all when the pair's stats had none. */
export function finishStats(native: Pick<NativeAddon, 'finishFeatures'>, stats: BigInt64Array, geometry: GroupStats['geometry'], parts: CoreParts): Float64Array {
  if (!hasStatsParts(parts)) return new Float64Array(0);
  const { width, height, bitDepth } = geometry;
  return native.finishFeatures(stats, width, height, bitDepth, statsPartsMask(parts));
}

/**
 * One group's statistics as a backend's job leaves them (the gpu backend reads back the
 * same stats arrays the cpu backend computes), before finishFeatures.
 */
export interface GroupStats {
  index: number;
  refPts: number | undefined;
  geometry: { width: number; height: number; bitDepth: number };
  /**
   * Per rendition: its stats (scored; the computed parts' only, empty with neither VIF nor
   * ADM), null (present, not scored), undefined (absent).
   */
  renditions: ReadonlyArray<{ stats: BigInt64Array; disPts: number | undefined } | null | undefined>;
  /** The reference's SAD against the previous reference; null for the first frame. */
  sad: bigint | null;
  /**
   * The reference's SAD against the reference two frames back (null for the first two
   * frames); only where a motion instance uses the five-frame window.
   */
  sad2?: bigint | null;
}

/** Whether any of these instances reads SADs two frames apart (the backends compute those only then). */
export function needsSad2(instances: readonly MotionInstance[]): boolean {
  return instances.some((x) => sadDistance(x.options) === 2 && !x.options.forceZero);
}

/** Each instance's SAD score for a group. */
export function motionScores(r: Pick<GroupStats, 'index' | 'geometry' | 'sad' | 'sad2'>, instances: readonly MotionInstance[]): number[] {
  const { width, height } = r.geometry;
  return instances.map((x) => {
    if (x.options.forceZero) return 0;
    const sad = sadDistance(x.options) === 2 ? r.sad2 : r.sad;
    if (sad === undefined) throw new RangeError(`frame ${r.index}: no SAD two frames apart for a five-frame-window motion instance`);
    return motionSadScore(sad, width, height, x.options);
  });
}

/**
 * A group's features, shared by both backends: each motion instance's score from its SAD
 * (0 for the first frames), each scored rendition's stats of the computed `parts` through
 * finishFeatures, keyed by featureValues; null and undefined renditions as they are.
 */
export function finishGroup(
  native: Pick<NativeAddon, 'finishFeatures'>,
  r: GroupStats,
  instances: readonly MotionInstance[] = [DEFAULT_MOTION_INSTANCE],
  parts: CoreParts = ALL_CORE_PARTS,
): MotionGroup {
  const scores = motionScores(r, instances);
  const motion = instances.flatMap((x, j): Array<readonly [string, number]> =>
    x.keys.motion === undefined ? [[x.keys.sad, scores[j]!]] : [[x.keys.sad, scores[j]!], [x.keys.motion, scores[j]!]],
  );
  const renditions = r.renditions.map((x): MotionEntry | null | undefined => {
    if (!x) return x;
    const entry: MotionEntry = { features: featureValues(finishStats(native, x.stats, r.geometry, parts), motion, parts) };
    if (x.disPts !== undefined) entry.disPts = x.disPts;
    return entry;
  });
  const group: MotionGroup = { index: r.index, scores, renditions };
  if (r.refPts !== undefined) group.refPts = r.refPts;
  return group;
}

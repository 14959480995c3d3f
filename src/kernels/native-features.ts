/**
 * Shared by both backends: turns the 22 values of finishFeatures (the gpu backend
 * produces the same stats array and finishes it the same way) and a frame's motion score
 * into FeatureValues keyed and ordered as libvmaf 3.2.0 logs them.
 *
 * libvmaf's log order, less what vmaf-stream does not compute (integer_motion3, psnr_*,
 * float_ssim, ...):
 *   integer_adm2, integer_aim, integer_adm3, integer_adm_scale0..3,
 *   VMAF_integer_feature_motion_sad_score, integer_vif_scale0..3, integer_adm2_egl_1,
 *   integer_aim_egl_1, integer_adm3_egl_1, integer_adm_scale0..3_egl_1,
 *   integer_vif_scale0..3_egl_1, integer_motion2.
 * integer_motion2 needs the next frame; pipeline/motion2.ts appends it.
 */
import type { FeatureValues } from '../types.js';
import type { MotionEntry, MotionGroup } from '../pipeline/motion2.js';
import { FINISHED_FEATURE_COUNT, type NativeAddon } from './native.js';

/** libvmaf's name for a frame's own motion score (the SAD against the previous frame). */
export const MOTION_SAD_KEY = 'VMAF_integer_feature_motion_sad_score';
export const MOTION2_KEY = 'integer_motion2';

/** libvmaf's motion_max_val default: larger motion scores are clipped to it. */
export const MOTION_MAX_VAL = 10000;

/** Names of finishFeatures' values, by position. */
export const FINISHED_FEATURE_KEYS: readonly string[] = [
  'integer_vif_scale0',
  'integer_vif_scale1',
  'integer_vif_scale2',
  'integer_vif_scale3',
  'integer_vif_scale0_egl_1',
  'integer_vif_scale1_egl_1',
  'integer_vif_scale2_egl_1',
  'integer_vif_scale3_egl_1',
  'integer_adm2',
  'integer_aim',
  'integer_adm3',
  'integer_adm_scale0',
  'integer_adm_scale1',
  'integer_adm_scale2',
  'integer_adm_scale3',
  'integer_adm2_egl_1',
  'integer_aim_egl_1',
  'integer_adm3_egl_1',
  'integer_adm_scale0_egl_1',
  'integer_adm_scale1_egl_1',
  'integer_adm_scale2_egl_1',
  'integer_adm_scale3_egl_1',
];

/** Every key a backend emits per frame, in libvmaf's log order. */
export const FEATURE_KEYS: readonly string[] = [
  'integer_adm2',
  'integer_aim',
  'integer_adm3',
  'integer_adm_scale0',
  'integer_adm_scale1',
  'integer_adm_scale2',
  'integer_adm_scale3',
  MOTION_SAD_KEY,
  'integer_vif_scale0',
  'integer_vif_scale1',
  'integer_vif_scale2',
  'integer_vif_scale3',
  'integer_adm2_egl_1',
  'integer_aim_egl_1',
  'integer_adm3_egl_1',
  'integer_adm_scale0_egl_1',
  'integer_adm_scale1_egl_1',
  'integer_adm_scale2_egl_1',
  'integer_adm_scale3_egl_1',
  'integer_vif_scale0_egl_1',
  'integer_vif_scale1_egl_1',
  'integer_vif_scale2_egl_1',
  'integer_vif_scale3_egl_1',
  MOTION2_KEY,
];

const FINISHED_INDEX = new Map(FINISHED_FEATURE_KEYS.map((key, i) => [key, i]));

/**
 * libvmaf's motion score from a SAD: min(sad / 256 / (width * height), 10000), the same
 * double operations in the same order. Exact: a SAD is below 2^53.
 */
export function motionScoreFromSad(sad: bigint, width: number, height: number): number {
  return Math.min(Number(sad) / 256 / (width * height), MOTION_MAX_VAL);
}

/**
 * FeatureValues for one frame in libvmaf's key order, without integer_motion2.
 * `motionScore` is 0 for the first frame of a stream.
 */
export function featureValues(finished: ArrayLike<number>, motionScore: number): FeatureValues {
  if (finished.length !== FINISHED_FEATURE_COUNT) {
    throw new RangeError(`expected ${FINISHED_FEATURE_COUNT} finished feature values, got ${finished.length}`);
  }
  const features: FeatureValues = {};
  for (const key of FEATURE_KEYS) {
    if (key === MOTION2_KEY) continue;
    features[key] = key === MOTION_SAD_KEY ? motionScore : finished[FINISHED_INDEX.get(key)!]!;
  }
  return features;
}

/**
 * One group's statistics as a backend's job leaves them (the gpu backend reads back the
 * same stats arrays the cpu backend computes), before finishFeatures.
 */
export interface GroupStats {
  index: number;
  refPts: number | undefined;
  geometry: { width: number; height: number; bitDepth: number };
  /** Per rendition: its stats (scored), null (present, not scored), undefined (absent). */
  renditions: ReadonlyArray<{ stats: BigInt64Array; disPts: number | undefined } | null | undefined>;
  /** The reference's SAD against the previous reference; null for the first frame. */
  sad: bigint | null;
}

/**
 * A group's features, shared by both backends: the motion score from the SAD (0 for the
 * first frame), each scored rendition's stats through finishFeatures, keyed by
 * featureValues; null and undefined renditions as they are.
 */
export function finishGroup(native: Pick<NativeAddon, 'finishFeatures'>, r: GroupStats): MotionGroup {
  const { width, height, bitDepth } = r.geometry;
  const motionScore = r.sad === null ? 0 : motionScoreFromSad(r.sad, width, height);
  const renditions = r.renditions.map((x): MotionEntry | null | undefined => {
    if (!x) return x;
    const entry: MotionEntry = { features: featureValues(native.finishFeatures(x.stats, width, height, bitDepth), motionScore) };
    if (x.disPts !== undefined) entry.disPts = x.disPts;
    return entry;
  });
  const group: MotionGroup = { index: r.index, motionScore, renditions };
  if (r.refPts !== undefined) group.refPts = r.refPts;
  return group;
}

/**
 * integer_motion's options as numbers (libvmaf 3.2.0's integer_motion.c MotionState), what
 * they make an instance read, and the keys one instance logs. The core backends receive
 * the run plan's motion instances in this form (MotionInstance): they compute each SAD
 * once, whatever the number of instances, and finish it per instance
 * (pipeline/motion-series.ts).
 */
import type { NeighbourFrames } from '../extractor.js';
import { featureKey } from '../feature-name.js';
import type { OptionDef, OptionValue, OptionValues } from '../option.js';

export const MOTION_OPTION_TABLE: readonly OptionDef[] = [
  { name: 'motion_force_zero', alias: 'force_0', type: 'bool', default: false, param: true, help: 'force the motion scores to zero' },
  { name: 'motion_blend_factor', alias: 'mbf', type: 'double', default: 1.0, min: 0, max: 1, param: true, help: 'blend factor of motion3' },
  { name: 'motion_blend_offset', alias: 'mbo', type: 'double', default: 40.0, min: 0, max: 1000, param: true, help: 'blend offset of motion3' },
  { name: 'motion_fps_weight', alias: 'mfw', type: 'double', default: 1.0, min: 0, max: 5, param: true, help: 'frame-rate weight of the SAD score' },
  { name: 'motion_max_val', alias: 'mmxv', type: 'double', default: 10000.0, min: 0, max: 10000, param: true, help: 'maximum motion score (larger scores are clipped)' },
  { name: 'motion_five_frame_window', alias: 'mffw', type: 'bool', default: false, param: true, help: 'five-frame window: SADs two frames apart (high frame rates)' },
  { name: 'motion_moving_average', alias: 'mma', type: 'bool', default: false, param: true, help: 'motion3 as the mean of this and the previous frame' },
  { name: 'debug', type: 'bool', default: false, param: false, help: 'debug mode: also log the score as integer_motion' },
];

export interface MotionOptions {
  forceZero: boolean;
  blendFactor: number;
  blendOffset: number;
  fpsWeight: number;
  maxVal: number;
  fiveFrameWindow: boolean;
  movingAverage: boolean;
  debug: boolean;
}

/** An instance's option values (parsed, checked against the table) as MotionOptions. */
export function motionOptions(values: OptionValues): MotionOptions {
  const v: Record<string, OptionValue> = {};
  for (const opt of MOTION_OPTION_TABLE) v[opt.name] = values[opt.name] ?? opt.default;
  return {
    forceZero: v['motion_force_zero'] === true,
    blendFactor: v['motion_blend_factor'] as number,
    blendOffset: v['motion_blend_offset'] as number,
    fpsWeight: v['motion_fps_weight'] as number,
    maxVal: v['motion_max_val'] as number,
    fiveFrameWindow: v['motion_five_frame_window'] === true,
    movingAverage: v['motion_moving_average'] === true,
    debug: v['debug'] === true,
  };
}

/**
 * How many frames apart the two reference frames of a SAD are: 1, or 2 with the
 * five-frame window. It is also the first frame with a SAD (earlier frames score 0).
 */
export function sadDistance(o: MotionOptions): 1 | 2 {
  return o.fiveFrameWindow ? 2 : 1;
}

/**
 * The frames a frame's values read, by libvmaf's flush (see motion-series.ts). With d the
 * SAD distance: motion2 of frame i reads the SADs of frames i - (d - 1) and i + 1, each
 * reaching d frames back, so frames i - (2d - 1) .. i + 1; the moving average adds the
 * previous frame's motion2 (one more frame back). The first frames' motion3 is the blend
 * of frame d's SAD: d frames ahead. Forced to zero, nothing is read.
 */
export function motionNeighbours(o: MotionOptions): NeighbourFrames {
  if (o.forceZero) return { previous: 0, next: 0 };
  const d = sadDistance(o);
  return { previous: 2 * d - 1 + (o.movingAverage ? 1 : 0), next: d };
}

/** The provided features one instance appends, in libvmaf's order. */
export function motionOutputs(o: Pick<MotionOptions, 'debug'>): string[] {
  return [
    'VMAF_integer_feature_motion_sad_score',
    ...(o.debug ? ['VMAF_integer_feature_motion_score'] : []),
    'VMAF_integer_feature_motion2_score',
    'VMAF_integer_feature_motion3_score',
  ];
}

/** One planned motion instance as the core computes it: its options and its log keys. */
export interface MotionInstance {
  readonly options: MotionOptions;
  readonly keys: {
    /** The SAD score (VMAF_integer_feature_motion_sad_score + suffix). */
    readonly sad: string;
    /** integer_motion + suffix: the same score, with debug=true only. */
    readonly motion?: string;
    readonly motion2: string;
    readonly motion3: string;
  };
}

export function motionInstance(values: OptionValues = {}): MotionInstance {
  const options = motionOptions(values);
  const key = (name: string): string => featureKey(name, MOTION_OPTION_TABLE, values);
  const keys: MotionInstance['keys'] = {
    sad: key('VMAF_integer_feature_motion_sad_score'),
    ...(options.debug ? { motion: key('VMAF_integer_feature_motion_score') } : {}),
    motion2: key('VMAF_integer_feature_motion2_score'),
    motion3: key('VMAF_integer_feature_motion3_score'),
  };
  return { options, keys };
}

/** The instance at libvmaf's defaults: VMAF_integer_feature_motion_sad_score, integer_motion2, integer_motion3. */
export const DEFAULT_MOTION_INSTANCE: MotionInstance = motionInstance();

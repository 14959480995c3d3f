/**
 * libvmaf's "float_motion" (float_motion.c, motion.c): temporal activity of the reference in
 * floating point. motion is the mean absolute difference between this blurred reference
 * frame and the previous one; motion2 the smaller of this frame's and the next frame's
 * (0 for the first frame), so it waits one frame; motion3 a blend of motion2 with an offset.
 * The C++ (float_motion.cpp) gives each frame's own score; finishFrame completes motion2 and
 * motion3 once the next frame's score is known (the plan backend's lookahead stage; on the
 * gpu backend, float_motion-gpu.ts and gpu/extractor-lookahead.ts).
 */
import type { ExtractorDefinition } from '../extractor.js';
import type { OptionDef, OptionValues } from '../option.js';

const OPTIONS: readonly OptionDef[] = [
  { name: 'debug', type: 'bool', default: true, param: false, help: 'debug mode: enable additional output' },
  { name: 'motion_force_zero', alias: 'force_0', type: 'bool', default: false, param: true, help: 'forcing motion score to zero' },
  { name: 'motion_fps_weight', alias: 'mfw', type: 'double', default: 1, min: 0, max: 5, param: true, help: 'fps-aware multiplicative weight/correction' },
  { name: 'motion_blend_factor', alias: 'mbf', type: 'double', default: 1, min: 0, max: 1, param: true, help: 'blend motion score given an offset' },
  { name: 'motion_blend_offset', alias: 'mbo', type: 'double', default: 40, min: 0, max: 1000, param: true, help: 'blend motion score starting from this offset' },
  { name: 'motion_add_scale1', alias: 'mdc', type: 'bool', default: false, param: true, help: 'add motion score from scale1' },
  { name: 'motion_filter_size', alias: 'mfs', type: 'int', default: 5, min: 0, max: 9, param: true, help: 'filtering size' },
  { name: 'motion_add_uv', alias: 'mau', type: 'bool', default: false, param: true, help: 'include U and V terms' },
  { name: 'motion_max_val', alias: 'mmxv', type: 'double', default: 10000, min: 0, max: 10000, param: true, help: 'maximum value allowed; larger values will be clipped to this value' },
];

const MOTION = 'VMAF_feature_motion_score';
const MOTION2 = 'VMAF_feature_motion2_score';
const MOTION3 = 'VMAF_feature_motion3_score';

/** libvmaf's motion_blend: the score, or past `offset` a mix of it and the offset. */
function blend(score: number, factor: number, offset: number): number {
  return score * factor + (1 - factor) * Math.min(offset, score);
}

function outputs(options: OptionValues): string[] {
  // With force_0 libvmaf appends motion2 and motion3 at once, then motion.
  if (options['motion_force_zero'] === true) return options['debug'] === true ? [MOTION2, MOTION3, MOTION] : [MOTION2, MOTION3];
  return options['debug'] === true ? [MOTION2, MOTION, MOTION3] : [MOTION2, MOTION3];
}

export const floatMotion: ExtractorDefinition = {
  name: 'float_motion',
  summary: 'motion (temporal activity of the reference) in floating point: motion, motion2, motion3',
  options: OPTIONS,
  provides: [MOTION, MOTION2, MOTION3],
  planes: (options) => (options['motion_add_uv'] === true ? 'all' : 'luma'),
  neighbours: (options) => (options['motion_force_zero'] === true ? { previous: 0, next: 0 } : { previous: 1, next: 1 }),
  outputs,
  // Appended from the second frame on (for frame 0 at frame 1): after every other feature;
  // under force_0 libvmaf appends it at once, with motion2.
  delayedOutputs: (options) => (options['motion_force_zero'] === true ? [] : [MOTION3]),
  finishFrame(own, next, first, options) {
    if (options['motion_force_zero'] === true) return [...own];
    const names = outputs(options);
    const at = (name: string): number => names.indexOf(name);
    const weight = Number(options['motion_fps_weight']);
    const max = Number(options['motion_max_val']);
    const factor = Number(options['motion_blend_factor']);
    const offset = Number(options['motion_blend_offset']);
    // The raw scores: this frame's against the previous, and the next frame's against this.
    const score = own[at(MOTION2)]!;
    const nextScore = next?.[at(MOTION2)];
    const out = [...own];
    if (first) {
      out[at(MOTION2)] = 0;
      out[at(MOTION3)] = nextScore === undefined ? 0 : Math.min(blend(nextScore * weight, factor, offset), max);
      return out;
    }
    const low = nextScore === undefined || score < nextScore ? score : nextScore;
    out[at(MOTION2)] = Math.min(low * weight, max);
    out[at(MOTION3)] = Math.min(blend(low * weight, factor, offset), max);
    return out;
  },
  implementation: { kind: 'native', native: 'float_motion', gpu: () => import('./float_motion-gpu.js').then((m) => m.floatMotionGpu) },
};

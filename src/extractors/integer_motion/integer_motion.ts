/**
 * libvmaf's integer motion ("motion"; integer_motion.c): the mean absolute difference of
 * the blurred luma against the previous frame's (the SAD score), and motion2, the smaller
 * of a frame's and the next frame's, so a frame's motion2 waits one frame. Computed by the
 * fused core at the default options.
 */
import type { ExtractorDefinition } from '../extractor.js';
import type { OptionDef } from '../option.js';
import { assertCoreOptions } from '../core-options.js';

const OPTIONS: readonly OptionDef[] = [
  { name: 'motion_force_zero', alias: 'force_0', type: 'bool', default: false, param: true, help: 'force the motion score to zero' },
  { name: 'motion_blend_factor', alias: 'mbf', type: 'double', default: 1.0, min: 0, max: 1, param: true, help: 'blend factor of motion3' },
  { name: 'motion_blend_offset', alias: 'mbo', type: 'double', default: 40.0, min: 0, max: 1000, param: true, help: 'blend offset of motion3' },
  { name: 'motion_fps_weight', alias: 'mfw', type: 'double', default: 1.0, min: 0, max: 5, param: true, help: 'frame-rate weight of motion3' },
  { name: 'motion_max_val', alias: 'mmxv', type: 'double', default: 10000.0, min: 0, max: 10000, param: true, help: 'maximum motion score' },
  { name: 'motion_five_frame_window', alias: 'mffw', type: 'bool', default: false, param: true, help: 'five-frame window for motion3 (high frame rates)' },
  { name: 'motion_moving_average', alias: 'mma', type: 'bool', default: false, param: true, help: 'moving average for motion3' },
  { name: 'debug', type: 'bool', default: false, param: false, help: 'debug mode: enable additional output' },
];

export const integerMotion: ExtractorDefinition = {
  name: 'motion',
  summary: 'integer motion (temporal activity of the reference): integer_motion2',
  options: OPTIONS,
  provides: [
    'VMAF_integer_feature_motion_sad_score', 'VMAF_integer_feature_motion_score',
    'VMAF_integer_feature_motion2_score', 'VMAF_integer_feature_motion3_score',
  ],
  planes: () => 'luma',
  neighbours: () => ({ previous: 1, next: 1 }),
  // libvmaf 3.2.0 also appends integer_motion3 after integer_motion2: not computed yet.
  outputs: () => ['VMAF_integer_feature_motion_sad_score', 'VMAF_integer_feature_motion2_score'],
  delayedOutputs: ['VMAF_integer_feature_motion2_score', 'VMAF_integer_feature_motion3_score'],
  check: (options) => assertCoreOptions('motion', OPTIONS, options, []),
  implementation: { kind: 'core' },
};

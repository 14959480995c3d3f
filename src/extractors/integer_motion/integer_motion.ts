/**
 * libvmaf's integer motion ("motion"; integer_motion.c): the mean absolute value of the
 * blurred difference between a reference frame and the one before (two before with the
 * five-frame window), its SAD score; motion2, the smaller of neighbouring scores; motion3,
 * motion2 blended, clipped and optionally averaged over two frames. Computed by the fused
 * core: both backends compute each SAD once for all of a run's motion instances, and the
 * shared finish (pipeline/motion-series.ts) gives each instance its values.
 */
import type { ExtractorDefinition } from '../extractor.js';
import { MOTION_OPTION_TABLE, motionNeighbours, motionOptions, motionOutputs } from './motion-options.js';

export const integerMotion: ExtractorDefinition = {
  name: 'motion',
  summary: 'integer motion (temporal activity of the reference): integer_motion2, integer_motion3',
  options: MOTION_OPTION_TABLE,
  provides: [
    'VMAF_integer_feature_motion_sad_score', 'VMAF_integer_feature_motion_score',
    'VMAF_integer_feature_motion2_score', 'VMAF_integer_feature_motion3_score',
  ],
  planes: () => 'luma',
  neighbours: (options) => motionNeighbours(motionOptions(options)),
  outputs: (options) => motionOutputs(motionOptions(options)),
  delayedOutputs: ['VMAF_integer_feature_motion2_score', 'VMAF_integer_feature_motion3_score'],
  implementation: { kind: 'core' },
};

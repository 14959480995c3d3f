/**
 * libvmaf's "speed_temporal" (speed.c): SpEED-QA's temporal entropic difference, the SpEED
 * score (see speed_chroma) of the luma frame differences: the previous reference frame minus
 * this one against the previous distorted frame minus this one (or, with
 * speed_use_ref_diff, minus this reference frame). 0 for the first frame. libvmaf takes
 * speed_max_val but does not clip this score, and always weighs by the variances in mode 0.
 * C++: speed_temporal.cpp over ../common/speed-core; on the gpu backend the per-pixel
 * decimation of the differences runs on the GPU (speed_temporal-gpu.ts), the per-block
 * statistics on the host from its planes.
 */
import type { ExtractorDefinition } from '../extractor.js';
import type { OptionDef } from '../option.js';
import { SPEED_COMMON_OPTIONS, checkSpeedPlane } from '../common/speed-options.js';

const OPTIONS: readonly OptionDef[] = [
  ...SPEED_COMMON_OPTIONS,
  { name: 'speed_use_ref_diff', alias: 'urd', type: 'bool', default: false, param: true, help: 'debug mode: enable additional output' },
];

const SCORE = 'Speed_temporal_feature_speed_temporal_score';

export const speedTemporal: ExtractorDefinition = {
  name: 'speed_temporal',
  summary: 'SpEED temporal entropic difference of the luma frame differences: speed_temporal',
  options: OPTIONS,
  provides: [SCORE],
  planes: () => 'luma',
  neighbours: () => ({ previous: 1, next: 0 }),
  outputs: () => [SCORE],
  check(options, format) {
    checkSpeedPlane('speed_temporal', options, format.width, format.height, 'the luma plane');
  },
  implementation: { kind: 'native', native: 'speed_temporal', gpu: () => import('./speed_temporal-gpu.js').then((m) => m.speedTemporalGpu) },
};

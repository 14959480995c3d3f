/**
 * libvmaf's "speed_chroma" (speed.c): SpEED-QA's spatial entropic differences of the two
 * chroma planes, each decimated by 16 after an antialiasing Gaussian, minus its local mean,
 * modelled as a Gaussian scale mixture over 5x5 blocks: per block the entropy of the
 * reference and the distorted weighted by their variances (speed_weight_var_mode), the mean
 * absolute difference over the blocks. speed_chroma_u, speed_chroma_v and their mean
 * speed_chroma_uv (one channel alone where the other's covariance is singular), each
 * clipped to speed_max_val. C++: speed_chroma.cpp over ../common/speed-core; on the gpu
 * backend the per-pixel decimation runs on the GPU (speed_chroma-gpu.ts), the per-block
 * statistics on the host from its planes.
 */
import type { ExtractorDefinition } from '../extractor.js';
import type { OptionDef } from '../option.js';
import { refuseGray, refuseOddSubsampled } from '../common/chroma-refusals.js';
import { SPEED_COMMON_OPTIONS, checkSpeedPlane } from '../common/speed-options.js';

const OPTIONS: readonly OptionDef[] = [
  ...SPEED_COMMON_OPTIONS,
  {
    name: 'speed_weight_var_mode', alias: 'wvm', type: 'int', default: 0, min: 0, max: 6, param: true,
    help: 'different approaches to perform variance-absed weighting',
  },
];

const U = 'Speed_chroma_feature_speed_chroma_u_score';
const V = 'Speed_chroma_feature_speed_chroma_v_score';
const UV = 'Speed_chroma_feature_speed_chroma_uv_score';

export const speedChroma: ExtractorDefinition = {
  name: 'speed_chroma',
  summary: 'SpEED spatial entropic differences of the chroma planes: speed_chroma_u, speed_chroma_v, speed_chroma_uv',
  options: OPTIONS,
  provides: [U, V, UV],
  planes: () => 'all',
  neighbours: () => ({ previous: 0, next: 0 }),
  outputs: () => [U, V, UV],
  check(options, format) {
    refuseGray('speed_chroma', format);
    refuseOddSubsampled('speed_chroma', format);
    // libvmaf sizes the chroma plane by truncating halves.
    const w = format.chroma === '444' ? format.width : Math.floor(format.width / 2);
    const h = format.chroma === '420' ? Math.floor(format.height / 2) : format.height;
    checkSpeedPlane('speed_chroma', options, w, h, `the ${format.width}x${format.height} frame's chroma plane`);
  },
  implementation: { kind: 'native', native: 'speed_chroma', gpu: () => import('./speed_chroma-gpu.js').then((m) => m.speedChromaGpu) },
};

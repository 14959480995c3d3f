/**
 * libvmaf's "float_vif" (float_vif.c, vif.c, vif_tools.c): visual information fidelity at
 * four scales in floating point (the features of the vmaf_float_* models: vif_scale0..3).
 * C++: float_vif.cpp; gpu: float_vif-gpu.ts (the per-pixel work and per-row sums, finished by
 * the C++).
 */
import { VmafError } from '../../errors.js';
import type { ExtractorDefinition } from '../extractor.js';
import type { OptionDef, OptionValues } from '../option.js';
import type { FrameFormat } from '../../types.js';

const OPTIONS: readonly OptionDef[] = [
  { name: 'debug', type: 'bool', default: false, param: false, help: 'debug mode: enable additional output' },
  { name: 'vif_enhn_gain_limit', alias: 'egl', type: 'double', default: 100, min: 1, max: 100, param: true, help: 'enhancement gain imposed on vif, must be >= 1.0, where 1.0 means the gain is completely disabled' },
  { name: 'vif_kernelscale', alias: 'ks', type: 'double', default: 1, min: 0.1, max: 4, param: true, help: 'scaling factor for the gaussian kernel (2.0 means multiplying the standard deviation by 2 and enlarge the kernel size accordingly' },
  { name: 'vif_prescale', alias: 'ps', type: 'double', default: 1, min: 0.1, max: 4, param: true, help: 'scaling factor for the frame (2.0 means making the image twice as large on each dimension)' },
  { name: 'vif_scale1_min_val', alias: 's1miv', type: 'double', default: 0, min: 0, max: 1, param: true, help: 'minimum value allowed; smaller values will be set to this value' },
  { name: 'vif_scale2_min_val', alias: 's2miv', type: 'double', default: 0, min: 0, max: 1, param: true, help: 'minimum value allowed; smaller values will be set to this value' },
  { name: 'vif_scale3_min_val', alias: 's3miv', type: 'double', default: 0, min: 0, max: 1, param: true, help: 'minimum value allowed; smaller values will be set to this value' },
  { name: 'vif_prescale_method', alias: 'pm', type: 'string', default: 'nearest', param: true, help: 'scaling method for the frame, supported options: [nearest, bilinear, bicubic, lanczos4]' },
  { name: 'vif_sigma_nsq', alias: 'snsq', type: 'double', default: 2, min: 0, max: 5, param: true, help: 'neural noise variance' },
  { name: 'vif_skip_scale0', alias: 'ssclz', type: 'bool', default: false, param: true, help: 'when set, skip scale 0 calculations' },
];

const SCALES = ['VMAF_feature_vif_scale0_score', 'VMAF_feature_vif_scale1_score', 'VMAF_feature_vif_scale2_score', 'VMAF_feature_vif_scale3_score'];
const DEBUG = ['vif', 'vif_num', 'vif_den', 'vif_num_scale0', 'vif_den_scale0', 'vif_num_scale1', 'vif_den_scale1', 'vif_num_scale2', 'vif_den_scale2', 'vif_num_scale3', 'vif_den_scale3'];

/** libvmaf's Gaussian length for a scale (vif_get_filter_size), in its float arithmetic. */
function filterSize(scale: number, kernelScale: number): number {
  const n = (1 << (4 - scale)) + 1;
  let ceiling = Math.ceil(Math.fround(n * Math.fround(kernelScale)));
  if (ceiling % 2 === 0) ceiling += 1;
  return Math.max(ceiling, 3);
}

const PRESCALE_METHODS = ['nearest', 'bilinear', 'bicubic', 'lanczos4'];

export const floatVif: ExtractorDefinition = {
  name: 'float_vif',
  summary: 'VIF at four scales in floating point: vif_scale0..3',
  options: OPTIONS,
  provides: [...SCALES, ...DEBUG],
  planes: () => 'luma',
  neighbours: () => ({ previous: 0, next: 0 }),
  outputs: (options) => (options['debug'] === true ? [...SCALES, ...DEBUG] : SCALES),
  check(options: OptionValues, format: FrameFormat) {
    const method = String(options['vif_prescale_method']);
    if (!PRESCALE_METHODS.includes(method)) {
      throw new VmafError('E_USAGE', `float_vif: invalid vif_prescale_method ${method} (supported: ${PRESCALE_METHODS.join(', ')})`);
    }
    // Each scale's filter mirrors about the edges, so a scale must be longer than the filter's radius.
    const prescale = Number(options['vif_prescale']);
    let w = Math.trunc(format.width * prescale + 0.5);
    let h = Math.trunc(format.height * prescale + 0.5);
    for (let scale = 0; scale < 4; scale++) {
      if (scale > 0) {
        w = Math.trunc(w / 2);
        h = Math.trunc(h / 2);
      }
      const need = Math.trunc(filterSize(scale, Number(options['vif_kernelscale'])) / 2) + 1;
      if (w < need || h < need) {
        throw new VmafError('E_FRAME_TOO_SMALL', `float_vif: frames of ${format.width}x${format.height} are too small: scale ${scale} is ${w}x${h}, its filter needs at least ${need}x${need}`);
      }
    }
  },
  implementation: { kind: 'native', native: 'float_vif', gpu: () => import('./float_vif-gpu.js').then((m) => m.floatVifGpu) },
};

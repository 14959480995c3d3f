/**
 * libvmaf's "float_adm" (float_adm.c, adm.c, adm_tools.c): the detail loss measure (adm2),
 * additive impairments (aim) and their blend (adm3) at four wavelet scales in floating point
 * (the features of the vmaf_float_* models). C++: float_adm.cpp; gpu: float_adm-gpu.ts (the
 * per-sample work and per-row sums, finished by the C++).
 */
import type { ExtractorDefinition } from '../extractor.js';
import type { OptionDef } from '../option.js';

const factor = (kind: 1 | 2, scale: number): OptionDef => ({
  name: `adm_f${kind}s${scale}`,
  alias: `f${kind}s${scale}`,
  type: 'double',
  default: -1,
  min: -1,
  max: 10,
  param: true,
  help: `factor${kind} scale${scale}`,
});

const OPTIONS: readonly OptionDef[] = [
  { name: 'debug', type: 'bool', default: false, param: false, help: 'debug mode: enable additional output' },
  { name: 'adm_enhn_gain_limit', alias: 'egl', type: 'double', default: 100, min: 1, max: 100, param: true, help: 'enhancement gain imposed on adm, must be >= 1.0, where 1.0 means the gain is completely disabled' },
  { name: 'adm_norm_view_dist', alias: 'nvd', type: 'double', default: 3, min: 0.75, max: 24, param: true, help: "normalized viewing distance = viewing distance / ref display's physical height" },
  { name: 'adm_noise_weight', alias: 'nw', type: 'double', default: 0.03125, min: 0, max: 1500, param: true, help: 'noise weight' },
  { name: 'adm_csf_scale', alias: 'scf', type: 'double', default: 1, min: 0, max: 50, param: true, help: 'scale factor for the CSF' },
  { name: 'adm_csf_diag_scale', alias: 'scfd', type: 'double', default: 1, min: 0, max: 50, param: true, help: 'scale factor for the CSF diag' },
  { name: 'adm_ref_display_height', alias: 'rdf', type: 'int', default: 1080, min: 1, max: 4320, param: true, help: 'reference display height in pixels' },
  { name: 'adm_csf_mode', alias: 'csf', type: 'int', default: 0, min: 0, max: 9, param: true, help: 'contrast sensitivity function' },
  { name: 'adm_bypass_cm', alias: 'bcm', type: 'int', default: 0, min: 0, max: 1, param: true, help: 'bypass contrast masking (CM)' },
  { name: 'adm_adm3_apply_hm', alias: 'aah', type: 'bool', default: false, param: true, help: 'apply harmonic mean to combine DLM and AIM' },
  { name: 'adm_p_norm', alias: 'apn', type: 'double', default: 3, min: 1, max: 20, param: true, help: 'p-norm for energy vector' },
  { name: 'adm_dlm_weight', alias: 'dlmw', type: 'double', default: 0.5, min: 0, max: 1, param: true, help: 'linear weighting between DLM and AIM; 1 corresponds to DLM-only' },
  { name: 'adm_min_val', alias: 'min', type: 'double', default: 0, min: 0, max: 1, param: true, help: 'minimum value allowed; lower values will be clipped to this value' },
  factor(1, 0), factor(1, 1), factor(1, 2), factor(1, 3),
  factor(2, 0), factor(2, 1), factor(2, 2), factor(2, 3),
  // libvmaf's default (-1, no scale skipped) lies below the range a value may be given in.
  { name: 'adm_skip_aim_scale', alias: 'sasc', type: 'int', default: -1, min: 0, max: 3, param: true, help: 'when set, skip AIM calculations for that scale' },
  { name: 'adm_skip_scale0', alias: 'ssz', type: 'bool', default: false, param: true, help: 'skip the calculation of scale 0' },
];

const MAIN = [
  'VMAF_feature_adm2_score', 'VMAF_feature_aim_score', 'VMAF_feature_adm3_score',
  'VMAF_feature_adm_scale0_score', 'VMAF_feature_adm_scale1_score', 'VMAF_feature_adm_scale2_score', 'VMAF_feature_adm_scale3_score',
];
const DEBUG = [
  'adm', 'adm_num', 'adm_den',
  'adm_num_scale0', 'adm_den_scale0', 'adm_num_scale1', 'adm_den_scale1',
  'adm_num_scale2', 'adm_den_scale2', 'adm_num_scale3', 'adm_den_scale3',
];

export const floatAdm: ExtractorDefinition = {
  name: 'float_adm',
  summary: 'ADM (detail loss, additive impairments) at four scales in floating point: adm2, aim, adm3, adm_scale0..3',
  options: OPTIONS,
  // libvmaf's provided_features, as it lists them.
  provides: [
    ...MAIN, 'adm_num', 'adm_den', 'adm_scale0',
    'adm_num_scale0', 'adm_den_scale0', 'adm_num_scale1', 'adm_den_scale1',
    'adm_num_scale2', 'adm_den_scale2', 'adm_num_scale3', 'adm_den_scale3',
  ],
  planes: () => 'luma',
  neighbours: () => ({ previous: 0, next: 0 }),
  outputs: (options) => (options['debug'] === true ? [...MAIN, ...DEBUG] : MAIN),
  implementation: { kind: 'native', native: 'float_adm', gpu: () => import('./float_adm-gpu.js').then((m) => m.floatAdmGpu) },
};

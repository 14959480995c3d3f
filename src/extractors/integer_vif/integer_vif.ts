/**
 * libvmaf's integer VIF ("vif"; integer_vif.c): visual information fidelity over four
 * scales. Computed by the fused core, which gives the default options and
 * vif_enhn_gain_limit=1 (the NEG models' "_egl_1" features) from one set of statistics.
 */
import type { ExtractorDefinition } from '../extractor.js';
import type { OptionDef } from '../option.js';
import { assertCoreOptions } from '../core-options.js';

const OPTIONS: readonly OptionDef[] = [
  { name: 'debug', type: 'bool', default: false, param: false, help: 'debug mode: enable additional output' },
  { name: 'vif_enhn_gain_limit', alias: 'egl', type: 'double', default: 100.0, min: 1, max: 100, param: true, help: 'enhancement gain imposed on vif, must be >= 1.0 (1.0: no enhancement gain)' },
  { name: 'vif_skip_scale0', alias: 'ssclz', type: 'bool', default: false, param: true, help: 'skip scale 0' },
];

export const integerVif: ExtractorDefinition = {
  name: 'vif',
  summary: 'integer VIF (visual information fidelity): integer_vif_scale0..3',
  options: OPTIONS,
  provides: [
    'VMAF_integer_feature_vif_scale0_score', 'VMAF_integer_feature_vif_scale1_score',
    'VMAF_integer_feature_vif_scale2_score', 'VMAF_integer_feature_vif_scale3_score',
    'integer_vif', 'integer_vif_num', 'integer_vif_den', 'integer_vif_num_scale0',
    'integer_vif_den_scale0', 'integer_vif_num_scale1', 'integer_vif_den_scale1',
    'integer_vif_num_scale2', 'integer_vif_den_scale2', 'integer_vif_num_scale3',
    'integer_vif_den_scale3',
  ],
  planes: () => 'luma',
  neighbours: () => ({ previous: 0, next: 0 }),
  outputs: () => [
    'VMAF_integer_feature_vif_scale0_score', 'VMAF_integer_feature_vif_scale1_score',
    'VMAF_integer_feature_vif_scale2_score', 'VMAF_integer_feature_vif_scale3_score',
  ],
  check: (options) => assertCoreOptions('vif', OPTIONS, options, ['vif_enhn_gain_limit']),
  implementation: { kind: 'core' },
};

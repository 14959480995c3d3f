/**
 * libvmaf's integer ADM ("adm"; integer_adm.c): the detail-loss and additive-impairment
 * measures over four DWT scales. Computed by the fused core (src/kernels/cpu/adm.cpp,
 * src/kernels/gpu/adm/), which gives the default options and adm_enhn_gain_limit=1 (the
 * NEG models' "_egl_1" features) from one set of statistics. Other option sets (VMAF v1's
 * adm3 instances) run one native instance each (integer_adm_options.cpp, the cpu ADM at those
 * options); on the gpu backend in its command buffers (integer_adm-gpu.ts), finished by the
 * same C++.
 */
import type { ExtractorDefinition } from '../extractor.js';
import { UsageError } from '../../errors.js';
import { formatG, type OptionDef, type OptionValues } from '../option.js';
import { assertCoreOptions, coreTakesOptions } from '../core-options.js';

const OPTIONS: readonly OptionDef[] = [
  { name: 'debug', type: 'bool', default: false, param: false, help: 'debug mode: enable additional output' },
  { name: 'adm_csf_scale', alias: 'scf', type: 'double', default: 1.0, min: 0, max: 50, param: true, help: 'scale of the contrast sensitivity function' },
  { name: 'adm_csf_diag_scale', alias: 'scfd', type: 'double', default: 1.0, min: 0, max: 50, param: true, help: 'scale of the CSF for the diagonal band' },
  { name: 'adm_dlm_weight', alias: 'dlmw', type: 'double', default: 0.5, min: 0, max: 1, param: true, help: 'weight of the detail-loss measure in adm3' },
  { name: 'adm_enhn_gain_limit', alias: 'egl', type: 'double', default: 100.0, min: 1, max: 100, param: true, help: 'enhancement gain imposed on adm, must be >= 1.0 (1.0: no enhancement gain)' },
  { name: 'adm_norm_view_dist', alias: 'nvd', type: 'double', default: 3.0, min: 0.75, max: 24, param: true, help: 'normalized viewing distance: viewing distance over display height' },
  { name: 'adm_ref_display_height', alias: 'rdh', type: 'int', default: 1080, min: 1, max: 4320, param: true, help: 'reference display height in pixels' },
  { name: 'adm_csf_mode', alias: 'csf', type: 'int', default: 0, min: 0, max: 3, param: true, help: 'contrast sensitivity function: 0 default, 1..3 Barten variants' },
  { name: 'adm_noise_weight', alias: 'nw', type: 'double', default: 0.03125, min: 0, max: 1500, param: true, help: 'weight of the additive-noise term' },
  { name: 'adm_skip_aim', type: 'bool', default: false, param: false, help: 'skip the additive impairment measure' },
  { name: 'adm_skip_scale0', alias: 'ssz', type: 'bool', default: false, param: true, help: 'skip scale 0' },
  { name: 'adm_min_val', alias: 'min', type: 'double', default: 0.0, min: 0, max: 1, param: true, help: 'lower clip of the adm scores' },
];

export const integerAdm: ExtractorDefinition = {
  name: 'adm',
  summary: 'integer ADM (detail loss, additive impairment): integer_adm2, integer_aim, integer_adm3 and four scales',
  options: OPTIONS,
  provides: [
    'VMAF_integer_feature_adm2_score', 'VMAF_integer_feature_aim_score', 'VMAF_integer_feature_adm3_score',
    'integer_adm_scale0', 'integer_adm_scale1', 'integer_adm_scale2', 'integer_adm_scale3',
    'integer_adm', 'integer_adm_num', 'integer_adm_den',
    'integer_adm_num_scale0', 'integer_adm_den_scale0', 'integer_adm_num_scale1', 'integer_adm_den_scale1',
    'integer_adm_num_scale2', 'integer_adm_den_scale2', 'integer_adm_num_scale3', 'integer_adm_den_scale3',
  ],
  planes: () => 'luma',
  neighbours: () => ({ previous: 0, next: 0 }),
  outputs: () => [
    'VMAF_integer_feature_adm2_score', 'VMAF_integer_feature_aim_score', 'VMAF_integer_feature_adm3_score',
    'integer_adm_scale0', 'integer_adm_scale1', 'integer_adm_scale2', 'integer_adm_scale3',
  ],
  check: (options) => assertCoreOptions('adm', OPTIONS, options, ['adm_enhn_gain_limit']),
  implementation: { kind: 'core' },
  forOptions: (options) => (coreTakesOptions(OPTIONS, options, ['adm_enhn_gain_limit']) ? integerAdm : integerAdmAtOptions),
};

/** The CSF tables of libvmaf's blended modes (2, 3): [display height, viewing distance]. */
const BLEND_TABLES: ReadonlyArray<readonly [number, number]> = [
  [1080, 3], [1080, 5], [2160, 1.5], [2160, 3], [2160, 5], [720, 3], [720, 5], [480, 3], [480, 5],
];

/**
 * Option values libvmaf accepts one by one but cannot compute with, refused before any
 * frame, naming the options. libvmaf itself fails on the first frame when the viewing
 * distance times the display height is below 3 x 1080 (its 16-bit pipeline's limit), and
 * in a blended CSF mode without a table it weights the bands with its error code (-22).
 */
function checkAdmOptions(options: OptionValues): void {
  const distance = Number(options['adm_norm_view_dist'] ?? 3);
  const height = Number(options['adm_ref_display_height'] ?? 1080);
  const shown = `adm_norm_view_dist=${formatG(distance)} x adm_ref_display_height=${height}`;
  if (distance * height < 3 * 1080) {
    throw new UsageError(`adm: ${shown} = ${formatG(distance * height)} is below 3 x 1080 = 3240, which libvmaf 3.2.0 refuses (its 16-bit ADM cannot resolve finer angular frequencies)`);
  }
  const mode = Number(options['adm_csf_mode'] ?? 0);
  if ((mode === 2 || mode === 3) && !BLEND_TABLES.some(([h, d]) => h === height && d === distance)) {
    throw new UsageError(`adm: adm_csf_mode=${mode} has no CSF table for ${shown} (tables: ${BLEND_TABLES.map(([h, d]) => `${h} lines at ${formatG(d)}H`).join(', ')}); libvmaf 3.2.0 would weight the bands with its error code`);
  }
}

/** integer_adm at options the core does not take: a native instance of its own. */
const integerAdmAtOptions: ExtractorDefinition = {
  ...integerAdm,
  check: checkAdmOptions,
  forOptions: undefined,
  implementation: { kind: 'native', native: 'integer_adm_options', gpu: () => import('./integer_adm-gpu.js').then((m) => m.integerAdmGpu) },
};

/**
 * libvmaf's "cambi" (cambi.c): Netflix's contrast-aware multiscale banding index of the
 * distorted luma, measured at the encode's size and bit depth: `cambi`; with full_ref also
 * the reference's (`cambi_source`, at src_width x src_height) and how much more banding the
 * distorted has (`cambi_full_reference`). Each frame alone. C++: cambi.cpp; GPU: cambi-gpu.ts
 * with cambi-picture.ts per picture (the per-pixel stages and pooling, finished by cambi.cpp).
 */
import { UsageError, VmafError } from '../../errors.js';
import type { FrameFormat } from '../../types.js';
import type { ExtractorDefinition } from '../extractor.js';
import type { OptionDef, OptionValues } from '../option.js';
import { cambiGeometry } from './cambi-geometry.js';

export { cambiGeometry };

/** libvmaf refuses pictures (encode or source size) narrower and lower than this. */
export const CAMBI_MIN_SIDE = 216;
/** The adjusted window's area must stay below libvmaf's reciprocal table (4226 entries). */
const RECIPROCALS = 4226;

const OPTIONS: readonly OptionDef[] = [
  { name: 'cambi_max_val', alias: 'cmxv', type: 'double', default: 1000, min: 0, max: 1000, param: true, help: 'maximum value allowed; larger values will be clipped to this value' },
  { name: 'enc_width', alias: 'encw', type: 'int', default: 0, min: 180, max: 7680, param: true, help: 'Encoding width' },
  { name: 'enc_height', alias: 'ench', type: 'int', default: 0, min: 150, max: 7680, param: true, help: 'Encoding height' },
  { name: 'enc_bitdepth', alias: 'encbd', type: 'int', default: 0, min: 6, max: 16, param: true, help: 'Encoding bitdepth' },
  { name: 'src_width', alias: 'srcw', type: 'int', default: 0, min: 320, max: 7680, param: true, help: 'Source width. Only used when full_ref=true.' },
  { name: 'src_height', alias: 'srch', type: 'int', default: 0, min: 200, max: 4320, param: true, help: 'Source height. Only used when full_ref=true.' },
  { name: 'window_size', alias: 'ws', type: 'int', default: 65, min: 15, max: 127, param: true, help: 'Window size to compute CAMBI: 65 corresponds to ~1 degree at 4k' },
  { name: 'topk', type: 'double', default: 0.6, min: 0.0001, max: 1, param: true, help: 'Ratio of pixels for the spatial pooling computation, must be 0 < topk <= 1.0' },
  { name: 'cambi_topk', alias: 'ctpk', type: 'double', default: 0.6, min: 0.0001, max: 1, param: true, help: 'Ratio of pixels for the spatial pooling computation, must be 0 < cambi_topk <= 1.0' },
  { name: 'tvi_threshold', alias: 'tvit', type: 'double', default: 0.019, min: 0.0001, max: 1, param: true, help: 'Visibilty threshold for luminance ΔL < tvi_threshold*L_mean' },
  { name: 'cambi_vis_lum_threshold', alias: 'vlt', type: 'double', default: 0, min: 0, max: 300, param: true, help: 'Luminance value below which we assume any banding is not visible' },
  { name: 'max_log_contrast', alias: 'mlc', type: 'int', default: 2, min: 0, max: 5, param: true, help: 'Maximum contrast in log luma level (2^max_log_contrast) at 10-bits' },
  // libvmaf's default is NULL (no heatmaps); '' stands for it.
  { name: 'heatmaps_path', type: 'string', default: '', param: false, help: 'Path where heatmaps will be dumped' },
  { name: 'full_ref', type: 'bool', default: false, param: false, help: 'If true, CAMBI will be run in full-reference mode and will be computed on both the reference and distorted inputs' },
  { name: 'eotf', type: 'string', default: 'bt1886', param: true, help: "Determines the EOTF used to compute the visibility thresholds. Possible values: ['bt1886', 'pq']" },
  { name: 'cambi_eotf', alias: 'ceot', type: 'string', default: 'bt1886', param: true, help: 'The EOTF, as eotf; takes precedence over eotf when set' },
  { name: 'cambi_high_res_speedup', alias: 'hrs', type: 'int', default: 0, min: 0, max: 2160, param: true, help: 'Speed up by downsampling after the spatial mask for resolutions >= 1080p: [1080, 1440, 2160, 0]' },
];

const FULL_REF_OUTPUTS = ['cambi_source', 'cambi_full_reference'];

function effectiveEotf(options: OptionValues): string {
  return options['cambi_eotf'] !== 'bt1886' ? (options['cambi_eotf'] as string) : (options['eotf'] as string);
}

export const cambi: ExtractorDefinition = {
  name: 'cambi',
  summary: 'CAMBI banding index of the distorted luma: cambi (cambi_source, cambi_full_reference with full_ref)',
  options: OPTIONS,
  provides: ['Cambi_feature_cambi_score'],
  planes: () => 'luma',
  neighbours: () => ({ previous: 0, next: 0 }),
  outputs: (options) => (options['full_ref'] ? ['Cambi_feature_cambi_score', ...FULL_REF_OUTPUTS] : ['Cambi_feature_cambi_score']),
  // libvmaf logs these under their bare names whatever the options (two full_ref instances collide).
  unsuffixedOutputs: FULL_REF_OUTPUTS,
  check(options, format) {
    const eotf = effectiveEotf(options);
    if (eotf !== 'bt1886' && eotf !== 'pq') {
      throw new UsageError(`cambi: eotf "${eotf}" is not one of bt1886, pq`);
    }
    const g = cambiGeometry(options, format);
    for (const [what, w, h] of [['encode', g.encWidth, g.encHeight], ['source', g.srcWidth, g.srcHeight]] as const) {
      if (w < CAMBI_MIN_SIDE && h < CAMBI_MIN_SIDE) {
        throw new VmafError(
          'E_FRAME_TOO_SMALL',
          `cambi: frames of ${format.width}x${format.height} are too small (${what} size ${w}x${h}): CAMBI needs at least ` +
            `${CAMBI_MIN_SIDE} pixels in width or height; libvmaf refuses these frames too`,
        );
      }
    }
    if ((g.srcWidth > g.encWidth && g.srcHeight < g.encHeight) || (g.srcWidth < g.encWidth && g.srcHeight > g.encHeight)) {
      throw new UsageError(
        `cambi: source size ${g.srcWidth}x${g.srcHeight} and encode size ${g.encWidth}x${g.encHeight} must not be larger in one dimension and smaller in the other`,
      );
    }
    const widest = Math.max(g.window, g.srcWindow);
    if (widest * widest >= RECIPROCALS) {
      throw new UsageError(
        `cambi: window_size=${options['window_size'] as number} becomes a ${widest}-pixel window at this size, larger than libvmaf allows ` +
          `(at most ${Math.floor(Math.sqrt(RECIPROCALS - 1))})`,
      );
    }
  },
  implementation: { kind: 'native', native: 'cambi', gpu: () => import('./cambi-gpu.js').then((m) => m.cambiGpu) },
};

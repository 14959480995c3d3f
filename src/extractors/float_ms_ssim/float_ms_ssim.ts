/**
 * libvmaf's "float_ms_ssim" (float_ms_ssim.c, ms_ssim.c, iqa/): Wang's multi-scale SSIM of
 * the luma over 5 scales; with enable_lcs also each scale's mean luminance, contrast and
 * structure terms. C++: float_ms_ssim.cpp over common/ssim-core.cpp; gpu: float_ms_ssim-gpu.ts.
 */
import { VmafError } from '../../errors.js';
import type { FrameFormat } from '../../types.js';
import type { ExtractorDefinition } from '../extractor.js';
import type { OptionValues } from '../option.js';
import { SSIM_WINDOW, ssimOutputOptions } from '../common/ssim-options.js';

const SCALES = 5;

/**
 * libvmaf refuses a frame unless the 11x11 window fits at every scale, each half the last
 * (rounded down): min(w, h) / 16 >= 11, i.e. at least 176 pixels a side.
 */
export const MS_SSIM_MIN_SIDE = SSIM_WINDOW * 2 ** (SCALES - 1);

const PARTS = ['l', 'c', 's'];
const LCS_OUTPUTS = PARTS.flatMap((p) => Array.from({ length: SCALES }, (_, i) => `float_ms_ssim_${p}_scale${i}`));

export const floatMsSsim: ExtractorDefinition = {
  name: 'float_ms_ssim',
  summary: 'multi-scale SSIM of the luma: float_ms_ssim (per-scale l, c, s with enable_lcs; dB with enable_db)',
  options: ssimOutputOptions('MS-SSIM'),
  provides: ['float_ms_ssim'],
  planes: () => 'luma',
  neighbours: () => ({ previous: 0, next: 0 }),
  outputs: (options: OptionValues) => (options['enable_lcs'] ? ['float_ms_ssim', ...LCS_OUTPUTS] : ['float_ms_ssim']),
  check(_options: OptionValues, format: FrameFormat) {
    if (format.width < MS_SSIM_MIN_SIDE || format.height < MS_SSIM_MIN_SIDE) {
      throw new VmafError(
        'E_FRAME_TOO_SMALL',
        `float_ms_ssim: frames of ${format.width}x${format.height} are too small: MS-SSIM needs at least ` +
          `${MS_SSIM_MIN_SIDE}x${MS_SSIM_MIN_SIDE} (its ${SSIM_WINDOW}x${SSIM_WINDOW} window at each of ${SCALES} scales, ` +
          'each half the last); libvmaf refuses these frames too',
      );
    }
  },
  implementation: { kind: 'native', native: 'float_ms_ssim', gpu: () => import('./float_ms_ssim-gpu.js').then((m) => m.floatMsSsimGpu) },
};

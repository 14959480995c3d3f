/**
 * libvmaf's "float_ssim" (float_ssim.c, ssim.c, iqa/): mean SSIM of the luma with an 11x11
 * Gaussian window, after box decimation by `scale` (0: round(min(w, h) / 256)); with
 * enable_lcs also its mean luminance, contrast and structure terms. C++: float_ssim.cpp
 * over common/ssim-core.cpp; gpu: float_ssim-gpu.ts.
 */
import { VmafError } from '../../errors.js';
import type { FrameFormat } from '../../types.js';
import type { ExtractorDefinition } from '../extractor.js';
import type { OptionDef, OptionValues } from '../option.js';
import { SSIM_WINDOW, ssimOutputOptions } from '../common/ssim-options.js';

const OPTIONS: readonly OptionDef[] = [
  ...ssimOutputOptions('SSIM'),
  { name: 'scale', type: 'int', default: 0, min: 0, max: 10, param: false, help: 'decimation scale factor (0=auto, 1=no downscaling, 2-10=explicit)' },
];

/** libvmaf's automatic factor: min(w, h) / 256 rounded half up (in float), at least 1. */
export function automaticSsimScale(width: number, height: number): number {
  const a = Math.fround(Math.min(width, height) / 256);
  const whole = Math.trunc(a);
  return Math.max(1, a - whole >= 0.5 ? whole + 1 : whole);
}

/** The decimated size libvmaf computes SSIM at: w / scale, plus 1 when w is odd. */
function decimated(size: number, scale: number): number {
  return scale > 1 ? Math.trunc(size / scale) + (size & 1) : size;
}

export const floatSsim: ExtractorDefinition = {
  name: 'float_ssim',
  summary: 'SSIM of the luma: float_ssim (float_ssim_l, _c, _s with enable_lcs; dB with enable_db)',
  options: OPTIONS,
  provides: ['float_ssim'],
  planes: () => 'luma',
  neighbours: () => ({ previous: 0, next: 0 }),
  outputs: (options: OptionValues) => (options['enable_lcs'] ? ['float_ssim', 'float_ssim_l', 'float_ssim_c', 'float_ssim_s'] : ['float_ssim']),
  check(options: OptionValues, format: FrameFormat) {
    // An explicit scale can shrink small frames below the window, where libvmaf's result is undefined.
    const given = options['scale'] as number;
    const scale = given > 0 ? given : automaticSsimScale(format.width, format.height);
    const w = decimated(format.width, scale);
    const h = decimated(format.height, scale);
    if (w < SSIM_WINDOW || h < SSIM_WINDOW) {
      throw new VmafError(
        'E_FRAME_TOO_SMALL',
        `float_ssim: frames of ${format.width}x${format.height} are too small at scale=${scale}: decimated to ${w}x${h}, ` +
          `SSIM needs at least ${SSIM_WINDOW}x${SSIM_WINDOW} (its window); use a smaller scale`,
      );
    }
  },
  implementation: { kind: 'native', native: 'float_ssim', gpu: () => import('./float_ssim-gpu.js').then((m) => m.floatSsimGpu) },
};

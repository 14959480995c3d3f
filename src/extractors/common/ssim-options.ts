/**
 * What libvmaf's float_ssim and float_ms_ssim share on the TypeScript side: their common
 * options (none is a FEATURE_PARAM, so options never suffix their feature names) and the
 * smallest picture the 11x11 SSIM window fits. The C++ core is common/ssim-core.cpp.
 */
import type { OptionDef } from '../option.js';

/** The side of SSIM's Gaussian window: every scale SSIM is computed at must be this large. */
export const SSIM_WINDOW = 11;

/** enable_lcs, enable_db, clip_db, as both extractors declare them (`what`: 'SSIM' or 'MS-SSIM'). */
export function ssimOutputOptions(what: string): OptionDef[] {
  return [
    { name: 'enable_lcs', type: 'bool', default: false, param: false, help: 'enable luminance, contrast and structure intermediate output' },
    { name: 'enable_db', type: 'bool', default: false, param: false, help: `write ${what} values as dB` },
    { name: 'clip_db', type: 'bool', default: false, param: false, help: 'clip dB scores' },
  ];
}

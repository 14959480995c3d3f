/**
 * Every feature extractor vmaf-stream has, one line each (as libvmaf's
 * feature_extractor.c lists them). Adding an extractor: a folder under src/extractors/
 * with its definition (and its C++ and WGSL), and one line here.
 */
import type { ExtractorDefinition } from './extractor.js';
import { floatMsSsim } from './float_ms_ssim/float_ms_ssim.js';
import { floatSsim } from './float_ssim/float_ssim.js';
import { integerAdm } from './integer_adm/integer_adm.js';
import { integerMotion } from './integer_motion/integer_motion.js';
import { integerVif } from './integer_vif/integer_vif.js';
import { floatAdm } from './float_adm/float_adm.js';
import { floatAnsnr } from './float_ansnr/float_ansnr.js';
import { floatMoment } from './float_moment/float_moment.js';
import { floatMotion } from './float_motion/float_motion.js';
import { floatPsnr } from './float_psnr/float_psnr.js';
import { floatVif } from './float_vif/float_vif.js';
import { psnr } from './psnr/psnr.js';
import { psnrHvs } from './psnr_hvs/psnr_hvs.js';
import { ciede } from './ciede/ciede.js';
import { speedChroma } from './speed_chroma/speed_chroma.js';
import { speedTemporal } from './speed_temporal/speed_temporal.js';
import { cambi } from './cambi/cambi.js';

export const EXTRACTORS: readonly ExtractorDefinition[] = [
  integerAdm,
  integerMotion,
  integerVif,
  psnr,
  floatPsnr,
  floatSsim,
  floatMsSsim,
  floatMoment,
  floatVif,
  floatAdm,
  floatMotion,
  floatAnsnr,
  ciede,
  psnrHvs,
  speedChroma,
  speedTemporal,
  cambi,
];

const BY_NAME = new Map(EXTRACTORS.map((x) => [x.name, x]));

/** The extractor `--feature NAME` names, if vmaf-stream has it. */
export function extractorByName(name: string): ExtractorDefinition | undefined {
  return BY_NAME.get(name);
}

/** The extractor that provides a feature (a model's feature name), if vmaf-stream has it. */
export function extractorProviding(feature: string): ExtractorDefinition | undefined {
  return EXTRACTORS.find((x) => x.provides.includes(feature));
}

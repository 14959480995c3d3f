/**
 * libvmaf's common-test-condition presets (tools/cli_parse.c of libvmaf 3.2.0):
 * `--aom_ctc v1.0`..`v7.0` and `--nflx_ctc v1.0`, as the models and `--feature` requests
 * they stand for, in libvmaf's order.
 */
import { UsageError } from '../errors.js';

export interface Preset {
  models: string[];
  features: string[];
}

const AOM_V1: Preset = {
  models: ['version=vmaf_v0.6.1:name=vmaf', 'version=vmaf_v0.6.1neg:name=vmaf_neg'],
  features: [
    'psnr=reduced_hbd_peak=true:enable_apsnr=true:min_sse=0.5',
    'ciede',
    'float_ssim=enable_db=true:clip_db=true',
    'float_ms_ssim=enable_db=true:clip_db=true',
    'psnr_hvs',
  ],
};

/** v3.0 adds CAMBI; v7.0 replaces float_ssim's request in place with scale=1. (v6.0's common bit depth: see the README.) */
function aom(version: number): Preset {
  const features = [...AOM_V1.features];
  if (version >= 3) features.push('cambi');
  if (version >= 7) features[features.findIndex((f) => f.startsWith('float_ssim='))] = 'float_ssim=scale=1:enable_db=true:clip_db=true';
  return { models: [...AOM_V1.models], features };
}

export function aomCtc(text: string): Preset {
  if (text === 'proposed') throw new UsageError('--aom_ctc proposed is deprecated (as in libvmaf): use v1.0 to v7.0');
  const m = /^v([1-7])\.0$/.exec(text);
  if (!m) throw new UsageError(`--aom_ctc: bad version "${text}" (v1.0 to v7.0)`);
  return aom(Number(m[1]));
}

export function nflxCtc(text: string): Preset {
  if (text !== 'v1.0') throw new UsageError(`--nflx_ctc: bad version "${text}" (v1.0)`);
  return {
    models: ['version=vmaf_4k_v0.6.1:name=vmaf', 'version=vmaf_4k_v0.6.1neg:name=vmaf_neg'],
    features: ['psnr=enable_chroma=true:enable_apsnr=true', 'float_ssim=enable_db=true:clip_db=true', 'cambi'],
  };
}

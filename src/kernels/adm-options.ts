/**
 * ADM at any of libvmaf 3.2.0's integer_adm options, one instance per option set: what a
 * feature-extractor registry maps `-m`/`--feature adm=...` options onto. The default
 * instance (and its adm_enhn_gain_limit = 1 twin) is what both backends compute per frame
 * anyway (finishFeatures); this is for the others, e.g. VMAF v1's
 * `integer_adm3_csf_2_dlmw_0.7_egl_1_min_0.5_nw_0.02`.
 *
 * The numbers come from the native addon (src/kernels/cpu/adm.h: admStatsWithOptions,
 * admFinishWithOptions), bit-exact with libvmaf's C code at those options. The gpu kernel
 * computes the same stats at any options from admKernelParams (gpu/adm/adm-kernel.ts, one
 * instance; gpu/adm/adm-instances.ts, several sharing passes), and finishAdm finishes
 * either backend's stats: one host finish for both.
 */
import { UsageError } from '../errors.js';
import type { AdmKernelParams, Luma, NativeAddon, NativeAdmOptions } from './native.js';

/**
 * libvmaf's integer_adm options (its names: adm_csf_mode, adm_csf_scale, ...; aliases csf,
 * scf, scfd, nvd, rdh, nw, dlmw, min, egl, ssz). Absent fields keep libvmaf's defaults.
 */
export type AdmOptions = NativeAdmOptions;

/** libvmaf's defaults. */
export const ADM_DEFAULT_OPTIONS: Readonly<Required<AdmOptions>> = Object.freeze({
  csfMode: 0,
  csfScale: 1,
  csfDiagScale: 1,
  normViewDist: 3,
  refDisplayHeight: 1080,
  noiseWeight: 0.03125,
  dlmWeight: 0.5,
  minVal: 0,
  enhnGainLimit: 100,
  skipAim: false,
  skipScale0: false,
});

/** One instance's values, named after libvmaf's keys (before any option suffix). */
export interface AdmValues {
  integer_adm2: number;
  integer_aim: number;
  integer_adm3: number;
  integer_adm_scale0: number;
  integer_adm_scale1: number;
  integer_adm_scale2: number;
  integer_adm_scale3: number;
}

/** The order of finishAdm's values. */
export const ADM_VALUE_KEYS = [
  'integer_adm2',
  'integer_aim',
  'integer_adm3',
  'integer_adm_scale0',
  'integer_adm_scale1',
  'integer_adm_scale2',
  'integer_adm_scale3',
] as const satisfies readonly (keyof AdmValues)[];

type AdmNative = Pick<NativeAddon, 'computeAdmStats' | 'finishAdm' | 'admKernelParams'>;

/** A RangeError from the addon (an option out of range) as a UsageError; others as they are. */
function rethrow(err: unknown): never {
  if (err instanceof RangeError) throw new UsageError(`adm: ${err.message}`);
  throw err;
}

/**
 * Checks `options` against libvmaf's ranges (and its refusals: nvd * rdh below 3 x 1080, a
 * blend mode without a table for the display) and returns the fixed-point parameters the
 * pixel loops use. Throws UsageError naming the option.
 */
export function admKernelParams(native: AdmNative, options: AdmOptions = {}): AdmKernelParams {
  try {
    return native.admKernelParams(options);
  } catch (err) {
    rethrow(err);
  }
}

/** The 7 values from one instance's stats (computeAdmStats's, or a gpu kernel's at the same options). */
export function finishAdm(native: AdmNative, stats: BigInt64Array, width: number, height: number, options: AdmOptions = {}): AdmValues {
  let values: Float64Array;
  try {
    values = native.finishAdm(stats, width, height, options);
  } catch (err) {
    rethrow(err);
  }
  const out = {} as AdmValues;
  ADM_VALUE_KEYS.forEach((key, i) => (out[key] = values[i]!));
  return out;
}

/**
 * ADM of one frame pair at `options`, on the cpu (the addon's threadpool). Lumas as for
 * computeFrameStats. Options are checked before anything runs (UsageError).
 */
export async function computeAdm(
  native: AdmNative,
  ref: Luma,
  dis: Luma,
  geometry: { width: number; height: number; bitDepth: number },
  options: AdmOptions = {},
): Promise<AdmValues> {
  const { width, height, bitDepth } = geometry;
  let pending: Promise<BigInt64Array>;
  try {
    pending = native.computeAdmStats(ref, dis, width, height, bitDepth, options);
  } catch (err) {
    rethrow(err);
  }
  return finishAdm(native, await pending, width, height, options);
}

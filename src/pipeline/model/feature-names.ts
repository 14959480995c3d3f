/**
 * From a model's feature name ("VMAF_integer_feature_adm2_score") and its options
 * ({ adm_enhn_gain_limit: 1.0 }) to the key libvmaf logs the value under
 * ("integer_adm2_egl_1"), which is the key vmaf-stream's FeatureValues use.
 *
 * libvmaf's rule: the feature's short alias, then, for each option of its extractor that
 * is marked as a feature parameter and is set to something other than its default, in
 * alphabetical order of the option's name, "_<alias>" for booleans and
 * "_<alias>_<value>" otherwise (doubles printed with %g, ints with %d). Option values go
 * through two text round trips on the way (the model file's number is read as a C float
 * and printed with %g; the option parser then reads that text back), reproduced here.
 */
import { ModelError } from '../../errors.js';

/** libvmaf's long feature names and the short names its logs use. */
const ALIASES: ReadonlyMap<string, string> = new Map([
  ['VMAF_feature_adm2_score', 'adm2'],
  ['VMAF_feature_aim_score', 'aim'],
  ['VMAF_feature_adm3_score', 'adm3'],
  ['VMAF_feature_adm_scale0_score', 'adm_scale0'],
  ['VMAF_feature_adm_scale1_score', 'adm_scale1'],
  ['VMAF_feature_adm_scale2_score', 'adm_scale2'],
  ['VMAF_feature_adm_scale3_score', 'adm_scale3'],
  ['VMAF_feature_motion_score', 'motion'],
  ['VMAF_feature_motion2_score', 'motion2'],
  ['VMAF_feature_motion3_score', 'motion3'],
  ['VMAF_feature_vif_scale0_score', 'vif_scale0'],
  ['VMAF_feature_vif_scale1_score', 'vif_scale1'],
  ['VMAF_feature_vif_scale2_score', 'vif_scale2'],
  ['VMAF_feature_vif_scale3_score', 'vif_scale3'],
  ['VMAF_integer_feature_adm2_score', 'integer_adm2'],
  ['VMAF_integer_feature_aim_score', 'integer_aim'],
  ['VMAF_integer_feature_adm3_score', 'integer_adm3'],
  ['VMAF_integer_feature_motion_score', 'integer_motion'],
  ['VMAF_integer_feature_motion2_score', 'integer_motion2'],
  ['VMAF_integer_feature_motion3_score', 'integer_motion3'],
  ['VMAF_integer_feature_vif_scale0_score', 'integer_vif_scale0'],
  ['VMAF_integer_feature_vif_scale1_score', 'integer_vif_scale1'],
  ['VMAF_integer_feature_vif_scale2_score', 'integer_vif_scale2'],
  ['VMAF_integer_feature_vif_scale3_score', 'integer_vif_scale3'],
  ['Cambi_feature_cambi_score', 'cambi'],
  ['Speed_chroma_feature_speed_chroma_u_score', 'speed_chroma_u'],
  ['Speed_chroma_feature_speed_chroma_v_score', 'speed_chroma_v'],
  ['Speed_chroma_feature_speed_chroma_uv_score', 'speed_chroma_uv'],
  ['Speed_temporal_feature_speed_temporal_score', 'speed_temporal'],
]);

export function featureAlias(name: string): string {
  return ALIASES.get(name) ?? name;
}

type OptionSpec =
  | { name: string; alias?: string; type: 'bool'; default: boolean; param: boolean }
  | { name: string; alias?: string; type: 'int'; default: number; min: number; max: number; param: boolean }
  | { name: string; alias?: string; type: 'double'; default: number; min: number; max: number; param: boolean };

interface ExtractorSpec {
  /** The extractor's name, which `-m ...:<name>.<option>=<value>` overrides address. */
  readonly name: string;
  readonly features: readonly string[];
  readonly options: readonly OptionSpec[];
}

/** The integer extractors vmaf-stream computes, with their options as libvmaf 3.2.0 declares them. */
const EXTRACTORS: readonly ExtractorSpec[] = [
  {
    name: 'adm',
    features: [
      'VMAF_integer_feature_adm2_score', 'VMAF_integer_feature_aim_score', 'VMAF_integer_feature_adm3_score',
      'integer_adm_scale0', 'integer_adm_scale1', 'integer_adm_scale2', 'integer_adm_scale3',
      'integer_adm', 'integer_adm_num', 'integer_adm_den',
      'integer_adm_num_scale0', 'integer_adm_den_scale0', 'integer_adm_num_scale1', 'integer_adm_den_scale1',
      'integer_adm_num_scale2', 'integer_adm_den_scale2', 'integer_adm_num_scale3', 'integer_adm_den_scale3',
    ],
    options: [
      { name: 'debug', type: 'bool', default: false, param: false },
      { name: 'adm_csf_scale', alias: 'scf', type: 'double', default: 1.0, min: 0, max: 50, param: true },
      { name: 'adm_csf_diag_scale', alias: 'scfd', type: 'double', default: 1.0, min: 0, max: 50, param: true },
      { name: 'adm_dlm_weight', alias: 'dlmw', type: 'double', default: 0.5, min: 0, max: 1, param: true },
      { name: 'adm_enhn_gain_limit', alias: 'egl', type: 'double', default: 100.0, min: 1, max: 100, param: true },
      { name: 'adm_norm_view_dist', alias: 'nvd', type: 'double', default: 3.0, min: 0.75, max: 24, param: true },
      { name: 'adm_ref_display_height', alias: 'rdh', type: 'int', default: 1080, min: 1, max: 4320, param: true },
      { name: 'adm_csf_mode', alias: 'csf', type: 'int', default: 0, min: 0, max: 3, param: true },
      { name: 'adm_noise_weight', alias: 'nw', type: 'double', default: 0.03125, min: 0, max: 1500, param: true },
      { name: 'adm_skip_aim', type: 'bool', default: false, param: false },
      { name: 'adm_skip_scale0', alias: 'ssz', type: 'bool', default: false, param: true },
      { name: 'adm_min_val', alias: 'min', type: 'double', default: 0.0, min: 0, max: 1, param: true },
    ],
  },
  {
    name: 'vif',
    features: [
      'VMAF_integer_feature_vif_scale0_score', 'VMAF_integer_feature_vif_scale1_score',
      'VMAF_integer_feature_vif_scale2_score', 'VMAF_integer_feature_vif_scale3_score',
      'integer_vif', 'integer_vif_num', 'integer_vif_den', 'integer_vif_num_scale0',
      'integer_vif_den_scale0', 'integer_vif_num_scale1', 'integer_vif_den_scale1',
      'integer_vif_num_scale2', 'integer_vif_den_scale2', 'integer_vif_num_scale3',
      'integer_vif_den_scale3',
    ],
    options: [
      { name: 'debug', type: 'bool', default: false, param: false },
      { name: 'vif_enhn_gain_limit', alias: 'egl', type: 'double', default: 100.0, min: 1, max: 100, param: true },
      { name: 'vif_skip_scale0', alias: 'ssclz', type: 'bool', default: false, param: true },
    ],
  },
  {
    name: 'motion',
    features: [
      'VMAF_integer_feature_motion_sad_score', 'VMAF_integer_feature_motion_score',
      'VMAF_integer_feature_motion2_score', 'VMAF_integer_feature_motion3_score',
    ],
    options: [
      { name: 'motion_force_zero', alias: 'force_0', type: 'bool', default: false, param: true },
      { name: 'motion_blend_factor', alias: 'mbf', type: 'double', default: 1.0, min: 0, max: 1, param: true },
      { name: 'motion_blend_offset', alias: 'mbo', type: 'double', default: 40.0, min: 0, max: 1000, param: true },
      { name: 'motion_fps_weight', alias: 'mfw', type: 'double', default: 1.0, min: 0, max: 5, param: true },
      { name: 'motion_max_val', alias: 'mmxv', type: 'double', default: 10000.0, min: 0, max: 10000, param: true },
      { name: 'motion_five_frame_window', alias: 'mffw', type: 'bool', default: false, param: true },
      { name: 'motion_moving_average', alias: 'mma', type: 'bool', default: false, param: true },
      { name: 'debug', type: 'bool', default: false, param: false },
    ],
  },
];

function extractorFor(featureName: string): ExtractorSpec | undefined {
  return EXTRACTORS.find((x) => x.features.includes(featureName));
}

/** The extractor name ('adm', 'vif', 'motion') providing a feature, if vmaf-stream knows it. */
export function extractorName(featureName: string): string | undefined {
  return extractorFor(featureName)?.name;
}

// ---- C number text -------------------------------------------------------------------

/** printf("%g", x): six significant digits, trailing zeros dropped. */
export function formatG(x: number): string {
  if (Number.isNaN(x)) return x < 0 ? '-nan' : 'nan';
  if (!Number.isFinite(x)) return x < 0 ? '-inf' : 'inf';
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const exp = x.toExponential(5); // d.ddddde±X, rounded to 6 significant digits
  const m = /^(-?)(\d)\.(\d{5})e([+-]\d+)$/.exec(exp)!;
  const e = Number(m[4]);
  const sign = m[1]!;
  const digits = (m[2]! + m[3]!).replace(/0+$/, '');
  if (e < -4 || e >= 6) {
    const mant = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const ee = Math.abs(e) < 10 ? `0${Math.abs(e)}` : String(Math.abs(e));
    return `${sign}${mant}e${e < 0 ? '-' : '+'}${ee}`;
  }
  if (e >= 0) {
    const intPart = digits.slice(0, e + 1).padEnd(e + 1, '0');
    const frac = digits.slice(e + 1);
    return `${sign}${intPart}${frac ? '.' + frac : ''}`;
  }
  return `${sign}0.${'0'.repeat(-e - 1)}${digits}`;
}

/** C's strtod/strtof-prefix parse: the longest leading decimal number, or NaN if none. */
function parseNumberPrefix(text: string): { value: number; length: number } {
  const m = /^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/.exec(text);
  if (!m) return { value: NaN, length: 0 };
  return { value: Number(m[0].trim()), length: m[0].length };
}

/**
 * libvmaf stores a numeric option value as text normalised through a C float:
 * strtof, then "%g". Non-numeric text is kept as it is.
 */
export function normaliseNumericText(text: string): string {
  const { value, length } = parseNumberPrefix(text);
  if (length === 0) return text; // strtof found no number: kept verbatim
  return formatG(Math.fround(value));
}

/** A value from a model file's feature_opts_dicts, as the text libvmaf keeps for it. */
export function optionTextFromJson(value: unknown): string | undefined {
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') return normaliseNumericText(String(value));
  if (typeof value === 'string') return value;
  return undefined;
}

/** A value given on the command line (`-m ...:adm.adm_enhn_gain_limit=1.0`), as libvmaf keeps it. */
export function optionTextFromCli(text: string): string {
  return /^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*$/.test(text) ? normaliseNumericText(text) : text;
}

/** C's atoi: leading integer, 0 when there is none. */
function atoi(text: string): number {
  const m = /^\s*([+-]?\d+)/.exec(text);
  if (!m) return 0;
  const n = Number(m[1]);
  return Math.trunc(n) | 0;
}

/** C's atof: leading number, 0 when there is none. */
function atof(text: string): number {
  const { value, length } = parseNumberPrefix(text);
  return length === 0 ? 0 : value;
}

/**
 * The log key for one model feature under its options. Throws ModelError where libvmaf
 * would refuse the options (a value out of range, a malformed boolean) or where the
 * feature comes from an extractor vmaf-stream does not have and options were given.
 */
export function featureLogKey(
  featureName: string,
  options: ReadonlyMap<string, string>,
  where: string,
): string {
  const extractor = extractorFor(featureName);
  if (!extractor) {
    if (options.size > 0) {
      throw new ModelError(`${where}: feature '${featureName}' has options, but vmaf-stream does not compute that feature`);
    }
    return featureAlias(featureName);
  }
  const suffixes: Array<{ option: string; text: string }> = [];
  for (const opt of extractor.options) {
    if (!options.has(opt.name)) continue;
    const text = options.get(opt.name)!;
    const bad = (why: string): ModelError =>
      new ModelError(`${where}: feature '${featureName}': option ${opt.name}=${text} ${why}`);
    let suffix: string | undefined;
    switch (opt.type) {
      case 'bool': {
        if (text !== 'true' && text !== 'false') throw bad('is not true or false');
        const v = text === 'true';
        if (v !== opt.default) suffix = `_${opt.alias ?? opt.name}`;
        break;
      }
      case 'int': {
        const n = atoi(text);
        if (n === 0 && text[0] !== '0') throw bad('is not an integer');
        if (n < opt.min || n > opt.max) throw bad(`is out of range [${opt.min}, ${opt.max}]`);
        if (n !== opt.default) suffix = `_${opt.alias ?? opt.name}_${n}`;
        break;
      }
      case 'double': {
        const n = atof(text);
        if (n === 0 && text[0] !== '0') throw bad('is not a number');
        if (n < opt.min || n > opt.max) throw bad(`is out of range [${opt.min}, ${opt.max}]`);
        if (n !== opt.default) suffix = `_${opt.alias ?? opt.name}_${formatG(n)}`;
        break;
      }
    }
    if (suffix !== undefined && opt.param) suffixes.push({ option: opt.name, text: suffix });
  }
  suffixes.sort((a, b) => (a.option < b.option ? -1 : a.option > b.option ? 1 : 0));
  return featureAlias(featureName) + suffixes.map((s) => s.text).join('');
}

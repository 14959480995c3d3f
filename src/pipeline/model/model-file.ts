/**
 * libvmaf's JSON model format: reading and validating it.
 *
 * A model file is either one model, `{ "model_dict": {...}, ... }`, or a bootstrap
 * collection, `{ "0": { "model_dict": ... }, "1": ..., ... }`, whose model "0" gives the
 * main score and "1".."n" the bootstrap spread. A model_dict holds:
 *   feature_names        libvmaf feature names, in the order of the SVM's inputs
 *   feature_opts_dicts   per feature, extractor options (change the features' log keys)
 *   norm_type            "linear_rescale" (x' = slope*x + intercept) or "none"
 *   slopes, intercepts   [for the score, then one per feature]
 *   model                a libsvm model as text
 *   score_transform      optional polynomial / piecewise-linear mapping, applied when enabled
 *   score_clip           optional [min, max]
 *   model_type           LIBSVMNUSVR, BOOTSTRAP_LIBSVMNUSVR or RESIDUEBOOTSTRAP_LIBSVMNUSVR
 * Unknown keys are ignored, as libvmaf ignores them. Where libvmaf would silently read
 * garbage (too few slopes, say) this reader refuses the file instead.
 */
import { ModelError } from '../../errors.js';
import { optionTextFromJson } from '../../extractors/option.js';
import { parseSvrModel, SvmFormatError, type SvrModel } from './svm.js';

export type ModelType = 'LIBSVMNUSVR' | 'BOOTSTRAP_LIBSVMNUSVR' | 'RESIDUEBOOTSTRAP_LIBSVMNUSVR';

export interface ModelFeature {
  /** libvmaf's feature name, e.g. VMAF_integer_feature_adm2_score. */
  readonly name: string;
  readonly slope: number;
  readonly intercept: number;
  /** Extractor options from feature_opts_dicts, as the text libvmaf keeps for them. */
  readonly options: ReadonlyMap<string, string>;
}

export interface KnotPoint {
  readonly x: number;
  readonly y: number;
}

export interface ScoreTransform {
  /** The file's "enabled" (false when absent); `enable_transform` turns it on. */
  readonly enabled: boolean;
  readonly p0?: number;
  readonly p1?: number;
  readonly p2?: number;
  /** Present (possibly empty) when the file gives "knots". */
  readonly knots?: readonly KnotPoint[];
  readonly outLteIn: boolean;
  readonly outGteIn: boolean;
}

export interface ModelDefinition {
  readonly modelType?: ModelType;
  readonly normType: 'linear_rescale' | 'none';
  /** Score denormalisation: score = (prediction - intercept) / slope under linear_rescale. */
  readonly slope: number;
  readonly intercept: number;
  readonly features: readonly ModelFeature[];
  readonly scoreTransform?: ScoreTransform;
  readonly scoreClip?: { readonly min: number; readonly max: number };
  readonly chromaCorrectionParameter?: number;
  readonly svm: SvrModel;
}

export type ModelFile =
  | { readonly kind: 'single'; readonly model: ModelDefinition }
  | { readonly kind: 'bootstrap'; readonly models: readonly ModelDefinition[] };

const MAX_FEATURES = 64;
const MAX_KNOTS = 10;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function isObject(v: unknown): v is Record<string, Json> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Parses a model file's text. `label` (the path, or the built-in's version) goes into every message. */
export function parseModelFile(text: string, label: string): ModelFile {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ModelError(`${label}: not valid JSON (${(err as Error).message})`, { cause: err });
  }
  if (!isObject(json)) throw new ModelError(`${label}: not a VMAF model (the top level is not a JSON object)`);
  if ('model_dict' in json) return { kind: 'single', model: parseModel(json, label) };
  if ('0' in json) {
    const models: ModelDefinition[] = [];
    for (let i = 0; String(i) in json; i++) {
      const entry = json[String(i)];
      if (!isObject(entry) || !('model_dict' in entry)) {
        throw new ModelError(`${label}: bootstrap model "${i}" has no model_dict`);
      }
      models.push(parseModel(entry, `${label} (model "${i}")`));
    }
    if (models.length < 2) throw new ModelError(`${label}: a bootstrap model file needs models "0" and at least "1"`);
    const type = models[1]!.modelType;
    for (let i = 2; i < models.length; i++) {
      if (models[i]!.modelType !== type) {
        throw new ModelError(`${label}: bootstrap models "1".."${models.length - 1}" must share one model_type`);
      }
    }
    if (type !== 'BOOTSTRAP_LIBSVMNUSVR' && type !== 'RESIDUEBOOTSTRAP_LIBSVMNUSVR') {
      throw new ModelError(`${label}: bootstrap models need model_type BOOTSTRAP_LIBSVMNUSVR or RESIDUEBOOTSTRAP_LIBSVMNUSVR, not ${type ?? '(none)'}`);
    }
    return { kind: 'bootstrap', models };
  }
  throw new ModelError(`${label}: not a VMAF model (no "model_dict", and no bootstrap models "0", "1", ...)`);
}

function parseModel(top: Record<string, Json>, label: string): ModelDefinition {
  const dict = top['model_dict'];
  if (!isObject(dict)) throw new ModelError(`${label}: model_dict is not an object`);
  const fail = (msg: string): never => {
    throw new ModelError(`${label}: ${msg}`);
  };

  // feature_names
  const names = dict['feature_names'];
  if (!Array.isArray(names) || names.length === 0 || !names.every((n) => typeof n === 'string' && n.length > 0)) {
    fail('feature_names must be a non-empty array of strings');
  }
  const featureNames = names as string[];
  if (featureNames.length > MAX_FEATURES) fail(`more than ${MAX_FEATURES} features`);
  const n = featureNames.length;

  // model_type
  let modelType: ModelType | undefined;
  if ('model_type' in dict) {
    const t = dict['model_type'];
    if (t !== 'LIBSVMNUSVR' && t !== 'BOOTSTRAP_LIBSVMNUSVR' && t !== 'RESIDUEBOOTSTRAP_LIBSVMNUSVR') {
      fail(`unknown model_type ${JSON.stringify(t)}`);
    }
    modelType = t as ModelType;
  }

  // norm_type, slopes, intercepts
  const norm = dict['norm_type'];
  if (norm !== 'linear_rescale' && norm !== 'none') {
    fail(`norm_type must be "linear_rescale" or "none", not ${norm === undefined ? '(missing)' : JSON.stringify(norm)}`);
  }
  const normType = norm as 'linear_rescale' | 'none';
  const numbers = (key: string): number[] | undefined => {
    if (!(key in dict)) return undefined;
    const v = dict[key];
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'number')) fail(`${key} must be an array of numbers`);
    const arr = v as number[];
    if (arr.length !== n + 1) fail(`${key} has ${arr.length} values; ${n} features need ${n + 1}`);
    return arr;
  };
  const slopes = numbers('slopes');
  const intercepts = numbers('intercepts');
  if (normType === 'linear_rescale' && (!slopes || !intercepts)) fail('norm_type linear_rescale needs slopes and intercepts');

  // feature_opts_dicts
  const optsList: Array<Map<string, string>> = featureNames.map(() => new Map());
  if ('feature_opts_dicts' in dict) {
    const v = dict['feature_opts_dicts'];
    if (!Array.isArray(v) || v.length > n) fail(`feature_opts_dicts must be an array of at most ${n} objects`);
    (v as Json[]).forEach((entry, i) => {
      if (!isObject(entry)) fail(`feature_opts_dicts[${i}] is not an object`);
      for (const [key, value] of Object.entries(entry as Record<string, Json>)) {
        const text = optionTextFromJson(value);
        if (text === undefined) fail(`feature_opts_dicts[${i}].${key} must be a number, boolean or string`);
        optsList[i]!.set(key, text!);
      }
    });
  }
  const features: ModelFeature[] = featureNames.map((name, i) => ({
    name,
    slope: slopes ? slopes[i + 1]! : 0,
    intercept: intercepts ? intercepts[i + 1]! : 0,
    options: optsList[i]!,
  }));

  // score_transform
  let scoreTransform: ScoreTransform | undefined;
  if ('score_transform' in dict) {
    const st = dict['score_transform'];
    if (!isObject(st)) fail('score_transform must be an object');
    scoreTransform = parseTransform(st as Record<string, Json>, fail);
  }

  // score_clip
  let scoreClip: { min: number; max: number } | undefined;
  if ('score_clip' in dict) {
    const c = dict['score_clip'];
    if (!Array.isArray(c) || c.length !== 2 || typeof c[0] !== 'number' || typeof c[1] !== 'number') {
      fail('score_clip must be [min, max]');
    }
    scoreClip = { min: (c as number[])[0]!, max: (c as number[])[1]! };
  }

  // chroma_correction_parameter
  let chromaCorrectionParameter: number | undefined;
  if ('chroma_correction_parameter' in dict) {
    const p = dict['chroma_correction_parameter'];
    if (typeof p !== 'number') fail('chroma_correction_parameter must be a number');
    chromaCorrectionParameter = p as number;
  }

  // model (libsvm)
  const svmText = dict['model'];
  if (typeof svmText !== 'string') fail('model (the libsvm model text) is missing');
  let svm: SvrModel;
  try {
    svm = parseSvrModel(svmText as string, n);
  } catch (err) {
    if (err instanceof SvmFormatError) throw new ModelError(`${label}: libsvm model: ${err.message}`, { cause: err });
    throw err;
  }
  if (svm.dimension > n) fail(`the libsvm model uses feature index ${svm.dimension}, but there are ${n} features`);

  return {
    ...(modelType !== undefined ? { modelType } : {}),
    normType,
    slope: slopes ? slopes[0]! : 0,
    intercept: intercepts ? intercepts[0]! : 0,
    features,
    ...(scoreTransform ? { scoreTransform } : {}),
    ...(scoreClip ? { scoreClip } : {}),
    ...(chromaCorrectionParameter !== undefined ? { chromaCorrectionParameter } : {}),
    svm,
  };
}

function parseTransform(st: Record<string, Json>, fail: (msg: string) => never): ScoreTransform {
  let enabled = false;
  if ('enabled' in st) {
    if (typeof st['enabled'] !== 'boolean') fail('score_transform.enabled must be true or false');
    enabled = st['enabled'] as boolean;
  }
  const coef = (key: string): number | undefined => {
    if (!(key in st) || st[key] === null) return undefined;
    if (typeof st[key] !== 'number') fail(`score_transform.${key} must be a number or null`);
    return st[key] as number;
  };
  const p0 = coef('p0');
  const p1 = coef('p1');
  const p2 = coef('p2');
  let knots: KnotPoint[] | undefined;
  if ('knots' in st && st['knots'] !== null) {
    const k = st['knots'];
    if (!Array.isArray(k)) fail('score_transform.knots must be an array of [x, y] pairs');
    const list = k as Json[];
    if (list.length > MAX_KNOTS) fail(`score_transform.knots: at most ${MAX_KNOTS} knots`);
    knots = list.map((pt, i) => {
      if (!Array.isArray(pt) || pt.length !== 2 || typeof pt[0] !== 'number' || typeof pt[1] !== 'number') {
        fail(`score_transform.knots[${i}] must be [x, y]`);
      }
      return { x: (pt as number[])[0]!, y: (pt as number[])[1]! };
    });
    for (let i = 0; i + 1 < knots.length; i++) {
      if (!(knots[i]!.x < knots[i + 1]!.x && knots[i]!.y <= knots[i + 1]!.y)) {
        fail('score_transform.knots must have increasing x and non-decreasing y');
      }
    }
  }
  const flag = (key: string): boolean => {
    if (!(key in st)) return false;
    if (typeof st[key] !== 'string') fail(`score_transform.${key} must be the string "true" or "false"`);
    return st[key] === 'true';
  };
  return {
    enabled,
    ...(p0 !== undefined ? { p0 } : {}),
    ...(p1 !== undefined ? { p1 } : {}),
    ...(p2 !== undefined ? { p2 } : {}),
    ...(knots ? { knots } : {}),
    outLteIn: flag('out_lte_in'),
    outGteIn: flag('out_gte_in'),
  };
}

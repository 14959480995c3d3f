/**
 * loadModel: a ModelSpec (from `-m` or from code) to a ready Model, built-in or from a file.
 */
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { ModelError, UsageError } from '../../errors.js';
import { extractorByName } from '../../extractors/registry.js';
import { BootstrapModel } from './bootstrap.js';
import { parseModelFile } from './model-file.js';
import type { ModelSpec } from './model-spec.js';
import { Predictor, SingleModel, type Model, type PredictorSettings } from './model.js';

/** The models built in, by `version=` name (the same names libvmaf uses). */
export const BUILTIN_MODELS: readonly string[] = Object.freeze([
  'vmaf_v0.6.1',
  'vmaf_v0.6.1neg',
  'vmaf_4k_v0.6.1',
  'vmaf_4k_v0.6.1neg',
  'vmaf_b_v0.6.3',
  'vmaf_float_v0.6.1',
  'vmaf_float_v0.6.1neg',
  'vmaf_float_b_v0.6.3',
  'vmaf_float_4k_v0.6.1',
  'vmaf_v1.0.16_3d0h',
  'vmaf_v1.0.16_5d0h',
  'vmaf_v1.0.16_1d5h_2160',
  'vmaf_v1.0.16_3d0h_2160',
  'vmaf_v1.0.16_hfr_3d0h',
  'vmaf_v1.0.16_hfr_5d0h',
  'vmaf_v1.0.16_hfr_1d5h_2160',
  'vmaf_v1.0.16_hfr_3d0h_2160',
]);

/** The model used when a spec names neither a version nor a path. */
export const DEFAULT_MODEL_VERSION = 'vmaf_v0.6.1';

/** libvmaf's log name for a model's score when `name=` is not given. */
export const DEFAULT_MODEL_NAME = 'vmaf';


/**
 * Loads a model: `spec.version` (a built-in; it wins over `path`, as in libvmaf), else
 * `spec.path`, else the default vmaf_v0.6.1. The score's log name is `spec.name`, else
 * "vmaf" as in libvmaf. Throws ModelError naming the file when it cannot be read or is
 * not a valid model, UsageError for an unknown built-in or extractor override.
 */
export async function loadModel(spec: ModelSpec): Promise<Model> {
  for (const o of spec.overrides ?? []) {
    if (!extractorByName(o.extractor)) {
      throw new UsageError(`model option ${o.extractor}.${o.option}: unknown feature extractor "${o.extractor}" (vmaf-stream --list shows them)`);
    }
  }
  let text: string;
  let label: string;
  let version: string;
  if (spec.version !== undefined || spec.path === undefined) {
    version = spec.version ?? DEFAULT_MODEL_VERSION;
    if (!BUILTIN_MODELS.includes(version)) {
      throw new UsageError(`no built-in model "${version}"; built in: ${BUILTIN_MODELS.join(', ')} (use path= for a model file)`);
    }
    const url = new URL(`./builtin/${version}.json`, import.meta.url);
    label = `built-in model ${version}`;
    try {
      text = await readFile(url, 'utf8');
    } catch (err) {
      throw new ModelError(`${label}: cannot read ${url.pathname}: ${(err as Error).message}`, { cause: err });
    }
  } else {
    label = spec.path;
    version = basename(spec.path).replace(/\.json$/i, '');
    try {
      text = await readFile(spec.path, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : (err as Error).message;
      throw new ModelError(`${label}: cannot read model file: ${why}`, { cause: err });
    }
  }
  return buildModel(text, label, spec, version);
}

/** loadModel's second half, for model text already in hand. */
export function buildModel(text: string, label: string, spec: ModelSpec, version: string): Model {
  const name = spec.name ?? DEFAULT_MODEL_NAME;
  const settings: PredictorSettings = {
    ...(spec.enableTransform !== undefined ? { enableTransform: spec.enableTransform } : {}),
    ...(spec.disableClip !== undefined ? { disableClip: spec.disableClip } : {}),
    ...(spec.overrides !== undefined ? { overrides: spec.overrides } : {}),
  };
  const file = parseModelFile(text, label);
  if (file.kind === 'single') {
    return new SingleModel(name, version, new Predictor(file.model, settings, label));
  }
  const [first, ...rest] = file.models;
  return new BootstrapModel(
    name,
    version,
    new Predictor(first!, settings, `${label} (model "0")`),
    rest.map((m, i) => new Predictor(m, settings, `${label} (model "${i + 1}")`)),
  );
}

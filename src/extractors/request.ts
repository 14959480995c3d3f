/**
 * What a run asks of the registry: an extractor with option values, from a model's
 * feature (its name and feature_opts_dicts, with `-m` overrides) or from `--feature
 * NAME=opt=value:opt=value` (libvmaf's CLI syntax).
 */
import { ModelError, UsageError, VmafError } from '../errors.js';
import type { ExtractorDefinition } from './extractor.js';
import { featureKey } from './feature-name.js';
import { optionTextFromCli, resolveOptions, type OptionValues } from './option.js';
import { extractorByName, extractorProviding, EXTRACTORS } from './registry.js';

export interface ExtractorRequest {
  readonly definition: ExtractorDefinition;
  readonly options: OptionValues;
}

/** A model's feature: the extractor instance that computes it and the key it is logged under. */
export interface FeatureRequest extends ExtractorRequest {
  readonly key: string;
}

/**
 * A model feature by libvmaf's name ("VMAF_integer_feature_adm2_score") with its option
 * texts (as libvmaf keeps them: see optionTextFromJson / optionTextFromCli).
 */
export function resolveModelFeature(featureName: string, optionTexts: ReadonlyMap<string, string>, where: string): FeatureRequest {
  const definition = extractorProviding(featureName);
  if (!definition) throw new ModelError(`${where}: feature '${featureName}' is not one vmaf-stream computes (vmaf-stream --list shows them)`);
  const options = withErrors(() => resolveOptions(definition.name, definition.options, optionTexts, `${where}: feature '${featureName}'`), ModelError);
  return { definition, options, key: featureKey(featureName, definition.options, options) };
}

/** `--feature NAME` or `--feature NAME=opt=value:opt=value`. */
export function parseFeatureArg(text: string): ExtractorRequest {
  const eq = text.indexOf('=');
  const name = eq < 0 ? text : text.slice(0, eq);
  const definition = extractorByName(name);
  if (!definition) {
    throw new UsageError(`--feature ${text}: no feature extractor named "${name}" (known: ${EXTRACTORS.map((x) => x.name).join(', ')})`);
  }
  const texts = new Map<string, string>();
  if (eq >= 0) {
    for (const item of text.slice(eq + 1).split(':')) {
      const parts = item.split('=');
      if (parts.length !== 2 || parts[0] === '') throw new UsageError(`--feature ${text}: bad option "${item}" (expected option=value)`);
      texts.set(parts[0]!, optionTextFromCli(parts[1]!));
    }
  }
  return { definition, options: resolveOptions(name, definition.options, texts, `--feature ${text}`) };
}

/** Runs `fn`, turning its UsageErrors into `Kind` errors (a model's options are the model's fault). */
function withErrors<T>(fn: () => T, Kind: new (message: string) => VmafError): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof UsageError) throw new Kind(error.message);
    throw error;
  }
}

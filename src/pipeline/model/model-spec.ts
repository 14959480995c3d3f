/**
 * The `-m/--model` option, with libvmaf's syntax: ':'-separated items, each `key=value`
 * or a bare flag.
 *
 *   version=<built-in>     a built-in model (vmaf_v0.6.1, vmaf_v0.6.1neg, ...)
 *   path=<file.json>       a model file
 *   name=<key>             the score's name in logs (default "vmaf")
 *   enable_transform       apply the model's score_transform even where it is not enabled
 *   disable_clip           skip score_clip
 *   <extractor>.<option>=<value>
 *                          override an option of the extractor that computes some of the
 *                          model's features, e.g. adm.adm_enhn_gain_limit=1.2
 *
 * Like libvmaf, `version` wins over `path` when both are given, and a later key replaces
 * an earlier one. Unlike libvmaf, values it would silently ignore (`disable_clip=yes`,
 * `path=a=b`) are refused.
 */
import { UsageError } from '../../errors.js';

export interface FeatureOverride {
  /** The extractor's name: adm, vif or motion. */
  readonly extractor: string;
  readonly option: string;
  readonly value: string;
}

export interface ModelSpec {
  version?: string;
  path?: string;
  name?: string;
  enableTransform?: boolean;
  disableClip?: boolean;
  /** `<extractor>.<option>=<value>` items, in order. */
  overrides?: FeatureOverride[];
}

export function parseModelSpec(text: string): ModelSpec {
  const bad = (why: string): UsageError => new UsageError(`--model "${text}": ${why}`);
  if (text.length === 0) throw bad('empty');
  const spec: ModelSpec = {};
  for (const item of text.split(':')) {
    if (item.length === 0) throw bad('empty item (a stray ":"?)');
    const eq = item.indexOf('=');
    const key = eq < 0 ? item : item.slice(0, eq);
    const value = eq < 0 ? undefined : item.slice(eq + 1);
    if (value !== undefined && value.includes('=')) throw bad(`"${item}" has more than one "="`);
    if (key.length === 0) throw bad(`"${item}" has no key`);
    const flag = (): boolean => {
      if (value === undefined || value === 'true') return true;
      if (value === 'false') return false;
      throw bad(`${key} takes true or false, not "${value}"`);
    };
    switch (key) {
      case 'enable_transform':
        spec.enableTransform = flag();
        break;
      case 'disable_clip':
        spec.disableClip = flag();
        break;
      case 'version':
      case 'path':
      case 'name': {
        if (value === undefined) throw bad(`${key} needs a value (${key}=...)`);
        if (value.length === 0) throw bad(`${key} is empty`);
        spec[key] = value;
        break;
      }
      default: {
        if (value === undefined) throw bad(`unknown item "${item}"`);
        const dot = key.indexOf('.');
        if (dot <= 0 || dot === key.length - 1 || key.indexOf('.', dot + 1) >= 0) {
          throw bad(`unknown key "${key}" (expected version, path, name, enable_transform, disable_clip or <extractor>.<option>)`);
        }
        if (value.length === 0) throw bad(`${key} is empty`);
        (spec.overrides ??= []).push({ extractor: key.slice(0, dot), option: key.slice(dot + 1), value });
      }
    }
  }
  return spec;
}

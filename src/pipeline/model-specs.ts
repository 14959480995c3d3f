import { parseModelSpec, type ModelSpec } from './model/index.js';

/** libvmaf's default model, as `-m` gives it. */
export const DEFAULT_MODEL = 'version=vmaf_v0.6.1:name=vmaf';

/** `-m` strings or specs as specs; the default model when none is given. */
export function resolveModelSpecs(models: ReadonlyArray<string | ModelSpec> | undefined): ModelSpec[] {
  const list = models && models.length > 0 ? models : [DEFAULT_MODEL];
  return list.map((m) => (typeof m === 'string' ? parseModelSpec(m) : m));
}

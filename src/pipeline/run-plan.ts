/**
 * A run's plan from its options, the one way every runner (a local run, a queued title's
 * coordinator and its workers) resolves it: the models (libvmaf adds its default model only
 * when it predicts), their features and the `--feature` requests, planned once.
 */
import { planRun, type RunPlan } from '../extractors/plan.js';
import { parseFeatureArg, type ExtractorRequest } from '../extractors/request.js';
import { ModelError, UsageError } from '../errors.js';
import { loadModel, type Model, type ModelSpec } from './model/index.js';
import { resolveModelSpecs } from './model-specs.js';

export interface PlanOptions {
  models?: Array<string | ModelSpec> | undefined;
  features?: Array<string | ExtractorRequest> | undefined;
  noPrediction?: boolean | undefined;
}

export interface ResolvedRun {
  plan: RunPlan;
  /** The models that score each frame: none with noPrediction. */
  models: Model[];
}

/** The model specs a run loads: the given ones, else the default model unless noPrediction. */
export function runModelSpecs(options: PlanOptions): ModelSpec[] {
  const given = options.models !== undefined && options.models.length > 0;
  return options.noPrediction && !given ? [] : resolveModelSpecs(options.models);
}

export async function resolveRun(options: PlanOptions): Promise<ResolvedRun> {
  const loaded = await Promise.all(runModelSpecs(options).map(loadModel));
  assertUniqueNames(loaded);
  if (!options.noPrediction) {
    const scoreless = loaded.find((m) => m.scoreless !== undefined);
    if (scoreless) throw new ModelError(scoreless.scoreless!);
  }
  const requests = (options.features ?? []).map((f) => (typeof f === 'string' ? parseFeatureArg(f) : f));
  const plan = planRun([...loaded.flatMap((m) => m.features), ...requests]);
  return { plan, models: options.noPrediction ? [] : loaded };
}

function assertUniqueNames(models: Model[]): void {
  const seen = new Set<string>();
  for (const model of models) {
    if (seen.has(model.name)) throw new UsageError(`two models are named "${model.name}": give each its own name= (e.g. -m version=${model.version}:name=other)`);
    seen.add(model.name);
  }
}

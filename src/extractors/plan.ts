/**
 * The run plan: resolved once at the start of a run from its models and `--feature`
 * requests, and read by decode (which planes), the backends (which extractor instances)
 * and the writers (which keys, in which order).
 *
 * Instances are libvmaf's: requests for the same extractor with the same option values
 * share one instance; models' features come first, in model and feature order, then
 * `--feature` requests in the order given. A frame's features are logged instance by
 * instance in that order, each in its extractor's append order, with the outputs that
 * come one frame late (motion2) after all the others, as libvmaf's logs have them.
 */
import type { FrameFormat } from '../types.js';
import type { ExtractorDefinition, NeighbourFrames, PlaneNeed } from './extractor.js';
import { featureKey, optionSuffix } from './feature-name.js';
import type { OptionValues } from './option.js';
import type { ExtractorRequest } from './request.js';

export interface ExtractorInstance {
  readonly definition: ExtractorDefinition;
  readonly options: OptionValues;
  /** The extractor's name and every non-default option: equal ids share an instance. */
  readonly id: string;
}

/** An instance's outputs for one input format: provided names and the keys they are logged under. */
export interface InstanceOutputs {
  readonly instance: ExtractorInstance;
  /** The provided names, in the order the extractor gives them. */
  readonly outputs: readonly string[];
  /** The log keys, by position in `outputs`. */
  readonly keys: readonly string[];
}

export interface RunPlan {
  readonly instances: readonly ExtractorInstance[];
  /** Planes the frames must carry. */
  readonly planes: PlaneNeed;
  /** The most any instance needs of neighbouring frames. */
  readonly neighbours: NeighbourFrames;
  /** Checks the format against every instance and gives each one's outputs and keys. */
  outputsFor(format: FrameFormat): readonly InstanceOutputs[];
  /** Every feature key a frame is logged with, in libvmaf's order. */
  featureKeys(format: FrameFormat): readonly string[];
}

function instanceId(request: ExtractorRequest): string {
  // Every option, param or not, distinguishes an instance; the suffix rule orders them.
  const all = request.definition.options.map((o) => ({ ...o, param: true }));
  return request.definition.name + optionSuffix(all, request.options);
}

export function planRun(requests: readonly ExtractorRequest[]): RunPlan {
  const instances: ExtractorInstance[] = [];
  const seen = new Set<string>();
  for (const request of requests) {
    const id = instanceId(request);
    if (seen.has(id)) continue;
    seen.add(id);
    const definition = request.definition.forOptions?.(request.options) ?? request.definition;
    instances.push({ definition, options: request.options, id });
  }
  const planes: PlaneNeed = instances.some((x) => x.definition.planes(x.options) === 'all') ? 'all' : 'luma';
  const neighbours = instances.reduce(
    (acc, x) => {
      const n = x.definition.neighbours(x.options);
      return { previous: Math.max(acc.previous, n.previous), next: Math.max(acc.next, n.next) };
    },
    { previous: 0, next: 0 },
  );
  const outputsFor = (format: FrameFormat): InstanceOutputs[] =>
    instances.map((instance) => {
      const { definition, options } = instance;
      definition.check?.(options, format);
      const outputs = definition.outputs(options, format);
      return { instance, outputs, keys: outputs.map((name) => (definition.unsuffixedOutputs?.includes(name) ? name : featureKey(name, definition.options, options))) };
    });
  const featureKeys = (format: FrameFormat): string[] => {
    const all = outputsFor(format);
    const late = (o: InstanceOutputs, name: string): boolean => o.instance.definition.delayedOutputs?.includes(name) === true;
    const pick = (wantLate: boolean): string[] => all.flatMap((o) => o.keys.filter((_, i) => late(o, o.outputs[i]!) === wantLate));
    return [...new Set([...pick(false), ...pick(true)])];
  };
  return { instances, planes, neighbours, outputsFor, featureKeys };
}

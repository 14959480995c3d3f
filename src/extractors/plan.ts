/**
 * The run plan: resolved once at the start of a run from its models and `--feature`
 * requests, and read by decode (which planes), the backends (which extractor instances)
 * and the writers (which keys, in which order).
 *
 * Instances are libvmaf's: requests for the same extractor with the same feature-param
 * option values share one instance, the first one's (libvmaf keeps the first and drops the
 * rest, even where their other options differ); two instances that would write the same
 * log key are refused; models' features come first, in model and feature order, then
 * `--feature` requests in the order given. A frame's features are logged instance by
 * instance in that order, each in its extractor's append order, with the outputs that
 * come one frame late (motion2) after all the others, as libvmaf's logs have them.
 */
import { UsageError } from '../errors.js';
import type { FrameFormat } from '../types.js';
import type { ExtractorDefinition, NeighbourFrames, PlaneNeed } from './extractor.js';
import { featureKey, optionSuffix } from './feature-name.js';
import { optionValueText, type OptionValues } from './option.js';
import type { ExtractorRequest } from './request.js';

export interface ExtractorInstance {
  readonly definition: ExtractorDefinition;
  readonly options: OptionValues;
  /** The extractor's name and every non-default feature-param option: equal ids share an instance. */
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
  /** The requests the plan was made from, as given: planRun(requests) makes the same plan again (on another thread). */
  readonly requests: readonly ExtractorRequest[];
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
  // libvmaf's rule: an instance is its extractor's name suffixed with its feature-param
  // options; a later request with the same name is dropped, whatever its other options.
  return request.definition.name + optionSuffix(request.definition.options, request.options);
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
  const outputsFor = (format: FrameFormat): InstanceOutputs[] => {
    const all = instances.map((instance) => {
      const { definition, options } = instance;
      definition.check?.(options, format);
      const outputs = definition.outputs(options, format);
      return { instance, outputs, keys: outputs.map((name) => (definition.unsuffixedOutputs?.includes(name) ? name : featureKey(name, definition.options, options))) };
    });
    refuseSharedKeys(all);
    return all;
  };
  const featureKeys = (format: FrameFormat): string[] => {
    const all = outputsFor(format);
    const late = (o: InstanceOutputs, name: string): boolean => delayedOutputs(o.instance).includes(name);
    const pick = (wantLate: boolean): string[] => all.flatMap((o) => o.keys.filter((_, i) => late(o, o.outputs[i]!) === wantLate));
    return [...new Set([...pick(false), ...pick(true)])];
  };
  return { instances, requests: [...requests], planes, neighbours, outputsFor, featureKeys };
}

/** Whether some instance of the plan is of an extractor with a gpu part (which runs in the gpu backend's command buffers). */
export function planHasGpuKernels(plan: RunPlan): boolean {
  return plan.instances.some((x) => x.definition.implementation.kind === 'native' && x.definition.implementation.gpu !== undefined);
}

function delayedOutputs(instance: ExtractorInstance): readonly string[] {
  const delayed = instance.definition.delayedOutputs;
  return typeof delayed === 'function' ? delayed(instance.options) : delayed ?? [];
}

/** The request as one would write it: the name and every option not at its default. */
export function describeInstance(instance: ExtractorInstance): string {
  const { definition, options } = instance;
  const set = definition.options.filter((o) => options[o.name] !== undefined && options[o.name] !== o.default);
  return set.length === 0 ? definition.name : `${definition.name}=${set.map((o) => `${o.name}=${optionValueText(o, options[o.name]!)}`).join(':')}`;
}

/**
 * Two instances writing the same key would each write every frame's value: libvmaf's
 * collector refuses the second write ("cannot be overwritten") and the run fails after
 * reading the first frame; refuse the plan before any frame instead.
 */
function refuseSharedKeys(all: readonly InstanceOutputs[]): void {
  const writer = new Map<string, ExtractorInstance>();
  for (const o of all) {
    for (const key of o.keys) {
      const first = writer.get(key);
      if (first !== undefined && first !== o.instance) {
        throw new UsageError(
          `the feature requests '${describeInstance(first)}' and '${describeInstance(o.instance)}' both write '${key}' (libvmaf 3.2.0 refuses to overwrite a feature); run them separately, or give them options that name their keys apart`,
        );
      }
      writer.set(key, o.instance);
    }
  }
}

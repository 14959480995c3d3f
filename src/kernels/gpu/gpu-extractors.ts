/**
 * The registered extractors (gpu-extractor.ts) one gpu-backend stream computes: which of a
 * run plan's instances run on the GPU, their kernels, where each writes in a rendition's
 * block of the group's stats buffer, and their values from the readback.
 *
 * An instance runs on the GPU when its extractor has a gpu part that supports the options
 * and format, and it reads no neighbouring frames, or its gpu part is referenceOnly (at most
 * the previous reference, and one next frame's values through finishFrame) or previousDis
 * (the previous frame's reference and distorted picture, no next frame: the backend then keeps
 * a distorted history per rendition, `previousDis` below); the others run on the host
 * (native-extractors.ts).
 * referenceOnly instances run once per frame into the first rendition's block, and every
 * rendition reads its values there. Values are finished per
 * rendition through that rendition's own C++ instance (finishExtractor), so what an
 * instance accumulates over the run (APSNR) is per input, as on the cpu backend.
 */
import { VmafError } from '../../errors.js';
import type { ExtractorInstance, InstanceOutputs } from '../../extractors/plan.js';
import type { FeatureValues, FrameFormat } from '../../types.js';
import type { ExtractorDefinition } from '../../extractors/extractor.js';
import type { OptionValues } from '../../extractors/option.js';
import { loadNative, nativeGeometry, type NativeAddon, type NativeExtractorHandle } from '../native.js';
import type { GpuDevice } from './device.js';
import { DEFAULT_BINDING_LIMITS, statsAt, type GpuBindingLimits, type GpuExtractorInputs, type GpuExtractorKernel, type GpuImplementation, type GpuPicture } from './gpu-extractor.js';
import type { StatsSlot } from './frame-kernel.js';
import { pictureLayout, type PictureLayout } from './picture-planes.js';
import { I64Reducer } from './reduce-i64.js';

/**
 * The gpu parts of a plan's extractors (ExtractorImplementation.gpu), loaded: their modules
 * are loaded by the gpu backend only, once it opens for a plan that has such extractors.
 */
export class GpuParts {
  private constructor(private readonly parts: ReadonlyMap<ExtractorDefinition, GpuImplementation>) {}

  /** Loads the gpu parts of these instances' extractors. */
  static async load(instances: readonly ExtractorInstance[]): Promise<GpuParts> {
    const parts = new Map<ExtractorDefinition, GpuImplementation>();
    await Promise.all(
      [...new Set(instances.map((x) => x.definition))].map(async (definition) => {
        const impl = definition.implementation;
        if (impl.kind === 'native' && impl.gpu) parts.set(definition, await impl.gpu());
      }),
    );
    return new GpuParts(parts);
  }

  /** The gpu part an instance runs with on `format`, or undefined when it runs on the host. */
  for(instance: ExtractorInstance, format: FrameFormat, limits: GpuBindingLimits = DEFAULT_BINDING_LIMITS): GpuImplementation | undefined {
    const { definition, options } = instance;
    const gpu = this.parts.get(definition);
    if (!gpu) return undefined;
    const n = definition.neighbours(options);
    if (n.previous > 0 || n.next > 0) {
      const referenceOnly = gpu.referenceOnly === true && n.previous <= 1 && n.next <= 1 && (n.next === 0 || definition.finishFrame !== undefined);
      const previousDis = gpu.previousDis === true && n.previous <= 1 && n.next === 0;
      if (!referenceOnly && !previousDis) return undefined;
    }
    return gpu.supports(options, format, limits) ? gpu : undefined;
  }

  /** The set computing these outputs (instances for(format) accepts) on the GPU. */
  set(outputs: readonly InstanceOutputs[], format: FrameFormat, limits: GpuBindingLimits = DEFAULT_BINDING_LIMITS): GpuExtractorSet {
    return new GpuExtractorSet(outputs, format, this, limits);
  }
}

interface Member {
  outputs: InstanceOutputs;
  gpu: GpuImplementation;
  /** The C++ instance per rendition (made on first use), which finishes the values. */
  handles: NativeExtractorHandle[];
  create(): NativeExtractorHandle;
  statsCount: number;
  /** Its first word in a rendition's block (referenceOnly ones: in the first rendition's only). */
  wordAt: number;
  kernel?: GpuExtractorKernel;
  /** Run once per frame on the reference alone (GpuImplementation.referenceOnly). */
  referenceOnly: boolean;
  /** Its values wait for the next frame's (finishFrame). */
  lookahead: boolean;
  /** It reads the previous frame's distorted picture (GpuImplementation.previousDis). */
  previousDis: boolean;
  definition: ExtractorDefinition;
  options: OptionValues;
}

export class GpuExtractorSet {
  readonly format: FrameFormat;
  /** The planes uploaded per picture: chroma too when an instance reads it and the input has it. */
  readonly layout: PictureLayout;
  /** u32 words all instances write per rendition (an even number: 64-bit accumulators). */
  readonly blockWords: number;
  readonly #native: NativeAddon;
  readonly #members: Member[];
  #reducer: I64Reducer | undefined;
  #compiled: Promise<void> | undefined;

  /** `outputs`: the plan's instances for this format that `parts.for` accepts. */
  constructor(outputs: readonly InstanceOutputs[], format: FrameFormat, parts: GpuParts, limits: GpuBindingLimits = DEFAULT_BINDING_LIMITS) {
    this.#native = loadNative();
    this.format = format;
    const geometry = nativeGeometry(format);
    let words = 0;
    this.#members = outputs.map((o) => {
      const { definition, options } = o.instance;
      const gpu = parts.for(o.instance, format, limits);
      if (!gpu || definition.implementation.kind !== 'native') throw new TypeError(`${definition.name} has no gpu implementation for this input`);
      const name = definition.implementation.native;
      const create = (): NativeExtractorHandle => {
        try {
          return this.#native.createExtractor(name, options, geometry);
        } catch (error) {
          throw new VmafError('E_NATIVE', `${definition.name}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
        }
      };
      const first = create();
      const statsCount = this.#native.extractorStatsCount(first);
      if (statsCount === 0) throw new VmafError('E_NATIVE', `${definition.name}: the C++ extractor cannot finish GPU accumulators (no statsCount)`);
      const n = definition.neighbours(options);
      const m: Member = { outputs: o, gpu, handles: [first], create, statsCount, wordAt: words, referenceOnly: gpu.referenceOnly === true, lookahead: n.next > 0, previousDis: gpu.previousDis === true, definition, options };
      words += 2 * statsCount;
      return m;
    });
    this.blockWords = words;
    const readsChroma = outputs.some((o) => o.instance.definition.planes(o.instance.options) === 'all');
    this.layout = pictureLayout(format, readsChroma);
  }

  get size(): number {
    return this.#members.length;
  }

  /** Compiles every instance's kernels (once; later calls share the first). */
  compile(gpu: GpuDevice): Promise<void> {
    this.#compiled ??= (async () => {
      // The reducer compiles beside the kernels (they only encode with it later).
      const reducer = (this.#reducer = I64Reducer.compiling(gpu));
      const made = await Promise.allSettled(
        this.#members.map((m) => m.gpu.create({ gpu, options: m.outputs.instance.options, format: this.format, layout: this.layout, reducer })),
      );
      made.forEach((r, i) => {
        if (r.status === 'fulfilled') this.#members[i]!.kernel = r.value;
      });
      await reducer.ready;
      const failed = made.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
      for (const m of this.#members) {
        if (m.kernel!.statsCount !== m.statsCount) {
          throw new VmafError('E_NATIVE', `${m.outputs.instance.definition.name}: its gpu kernel writes ${m.kernel!.statsCount} accumulators, the C++ extractor takes ${m.statsCount}`);
        }
      }
    })();
    return this.#compiled;
  }

  /** Whether some instance runs once per frame on the reference alone (encodeReference). */
  get referenceOnly(): boolean {
    return this.#members.some((m) => m.referenceOnly);
  }

  /**
   * Whether some instance reads the previous frame's distorted picture: the backend then
   * uploads every rendition's distorted picture on every frame into a history per rendition
   * (encode's inputs.previousDis).
   */
  get previousDis(): boolean {
    return this.#members.some((m) => m.previousDis);
  }

  /** Whether some instance's values wait for the next frame's (finishLookahead). */
  get lookahead(): boolean {
    return this.#members.some((m) => m.lookahead);
  }

  /**
   * Records the per-rendition instances' passes for one rendition's scored frame (its
   * pictures, the previous reference and, with previousDis instances, its previous distorted
   * picture); `out` is the start of its block.
   */
  encode(encoder: GPUCommandEncoder, inputs: GpuExtractorInputs, out: StatsSlot): void {
    for (const m of this.#members) if (!m.referenceOnly) m.kernel!.encode(encoder, inputs, { buffer: out.buffer, offset: out.offset + 4 * m.wordAt });
  }

  /**
   * Records the referenceOnly instances' passes, once per frame, scored or not; `out` is the
   * start of the first rendition's block.
   */
  encodeReference(encoder: GPUCommandEncoder, inputs: { ref: GpuPicture; previousRef?: GpuPicture | undefined }, out: StatsSlot): void {
    const given: GpuExtractorInputs = inputs.previousRef ? { ref: inputs.ref, dis: inputs.ref, previousRef: inputs.previousRef } : { ref: inputs.ref, dis: inputs.ref };
    for (const m of this.#members) if (m.referenceOnly) m.kernel!.encode(encoder, given, { buffer: out.buffer, offset: out.offset + 4 * m.wordAt });
  }

  /**
   * The lookahead instances' own values for a frame (every rendition's: they read the
   * reference alone), from the first rendition's block (word `firstAt`), scored or not; per
   * instance, undefined for the others.
   */
  ownValues(words: Uint32Array, firstAt: number): Array<number[] | undefined> {
    return this.#members.map((m) => (m.lookahead ? Array.from(this.#native.finishExtractor(m.handles[0]!, statsAt(words, firstAt + m.wordAt, m.statsCount))) : undefined));
  }

  /**
   * The lookahead instances' final values for a frame, keyed by log key, from its own values,
   * the next frame's of the same input (undefined: it was the last) and whether it is the
   * input's first frame (the definitions' finishFrame, as the cpu backend finishes them).
   */
  finishLookahead(own: ReadonlyArray<number[] | undefined>, next: ReadonlyArray<number[] | undefined> | undefined, first: boolean): FeatureValues {
    const values: FeatureValues = {};
    this.#members.forEach((m, i) => {
      const mine = own[i];
      if (!m.lookahead || !mine) return;
      const out = m.definition.finishFrame!(mine, next?.[i], first, m.options);
      m.outputs.keys.forEach((key, j) => (values[key] = out[j]!));
    });
    return values;
  }

  /**
   * Rendition `k`'s values, keyed by log key, from its block of the readback (`words`, at
   * word `at`; the referenceOnly instances' from the first rendition's, at `firstAt`). The
   * C++ finishing runs on the addon's worker pool: for cambi (top-k pooling) it is
   * milliseconds a frame, and frames in flight
   * finish beside each other instead of one after another on the JS thread.
   */
  async finish(k: number, words: Uint32Array, at: number, firstAt: number): Promise<FeatureValues> {
    for (const m of this.#members) while (m.handles.length <= k) m.handles.push(m.create());
    const outs = await Promise.all(
      this.#members.map((m) => {
        const stats = statsAt(words, (m.referenceOnly ? firstAt : at) + m.wordAt, m.statsCount);
        const finishNative = (s: BigUint64Array): Promise<Float64Array> => this.#native.finishExtractorAsync(m.handles[k]!, s);
        return m.kernel!.finish ? m.kernel!.finish(stats, finishNative) : finishNative(stats);
      }),
    );
    const values: FeatureValues = {};
    this.#members.forEach((m, i) => {
      const out = outs[i]!;
      const keys = m.outputs.keys;
      if (out.length !== keys.length) {
        throw new VmafError('E_NATIVE', `${m.outputs.instance.definition.name}: the native extractor gave ${out.length} values for ${keys.length} outputs`);
      }
      keys.forEach((key, j) => (values[key] = out[j]!));
    });
    return values;
  }

  /** Rendition `k`'s aggregate metrics over the run, once all its frames are done. */
  aggregates(k: number): Record<string, number> {
    const metrics: Record<string, number> = {};
    for (const m of this.#members) {
      const handle = m.handles[k];
      if (handle) for (const [name, value] of this.#native.aggregateExtractor(handle)) metrics[name] = value;
    }
    return metrics;
  }

  /** How many renditions have had frames. */
  get renditions(): number {
    return Math.max(0, ...this.#members.map((m) => m.handles.length));
  }

  destroy(): void {
    for (const m of this.#members) m.kernel?.destroy();
    this.#reducer?.destroy();
  }
}

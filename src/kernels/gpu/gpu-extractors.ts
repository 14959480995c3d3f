/**
 * The registered extractors (gpu-extractor.ts) one gpu-backend stream computes: which of a
 * run plan's instances run on the GPU, their kernels, where each writes in a rendition's
 * block of the group's stats buffer, and their values from the readback.
 *
 * An instance runs on the GPU when its extractor has a gpu part that supports the options
 * and format, and it reads no neighbouring frames (the gpu backend keeps no distorted
 * history); the others run on the host (native-extractors.ts). Values are finished per
 * rendition through that rendition's own C++ instance (finishExtractor), so what an
 * instance accumulates over the run (APSNR) is per input, as on the cpu backend.
 */
import { VmafError } from '../../errors.js';
import type { ExtractorInstance, InstanceOutputs } from '../../extractors/plan.js';
import type { FeatureValues, FrameFormat } from '../../types.js';
import { chromaSize } from '../../decode/frame-layout.js';
import { loadNative, type NativeAddon, type NativeExtractorHandle } from '../native.js';
import type { GpuDevice } from './device.js';
import { statsAt, type GpuExtractorInputs, type GpuExtractorKernel, type GpuImplementation } from './gpu-extractor.js';
import type { StatsSlot } from './frame-kernel.js';
import { pictureLayout, type PictureLayout } from './picture-planes.js';
import { I64Reducer } from './reduce-i64.js';

/** The gpu part an instance runs with on `format`, or undefined when it runs on the host. */
export function gpuImplementationFor(instance: ExtractorInstance, format: FrameFormat): GpuImplementation | undefined {
  const { definition, options } = instance;
  const impl = definition.implementation;
  if (impl.kind !== 'native' || !impl.gpu) return undefined;
  const n = definition.neighbours(options);
  if (n.previous > 0 || n.next > 0) return undefined;
  return impl.gpu.supports(options, format) ? impl.gpu : undefined;
}

interface Member {
  outputs: InstanceOutputs;
  gpu: GpuImplementation;
  /** The C++ instance per rendition (made on first use), which finishes the values. */
  handles: NativeExtractorHandle[];
  create(): NativeExtractorHandle;
  statsCount: number;
  /** Its first word in a rendition's block. */
  wordAt: number;
  kernel?: GpuExtractorKernel;
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

  /** `outputs`: the plan's instances for this format that gpuImplementationFor accepts. */
  constructor(outputs: readonly InstanceOutputs[], format: FrameFormat) {
    this.#native = loadNative();
    this.format = format;
    const chroma = chromaSize(format) ?? { width: 0, height: 0 };
    const geometry = { width: format.width, height: format.height, bitDepth: format.bitDepth, chromaWidth: chroma.width, chromaHeight: chroma.height };
    let words = 0;
    this.#members = outputs.map((o) => {
      const { definition, options } = o.instance;
      const gpu = gpuImplementationFor(o.instance, format);
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
      const m: Member = { outputs: o, gpu, handles: [first], create, statsCount, wordAt: words };
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
      const reducer = (this.#reducer = await I64Reducer.create(gpu));
      const made = await Promise.allSettled(
        this.#members.map((m) => m.gpu.create({ gpu, options: m.outputs.instance.options, format: this.format, layout: this.layout, reducer })),
      );
      made.forEach((r, i) => {
        if (r.status === 'fulfilled') this.#members[i]!.kernel = r.value;
      });
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

  /** Records every instance's passes for one rendition; `out` is the start of its block. */
  encode(encoder: GPUCommandEncoder, inputs: GpuExtractorInputs, out: StatsSlot): void {
    for (const m of this.#members) m.kernel!.encode(encoder, inputs, { buffer: out.buffer, offset: out.offset + 4 * m.wordAt });
  }

  /** Rendition `k`'s values, keyed by log key, from its block of the readback (`words`, at word `at`). */
  finish(k: number, words: Uint32Array, at: number): FeatureValues {
    const values: FeatureValues = {};
    for (const m of this.#members) {
      while (m.handles.length <= k) m.handles.push(m.create());
      const out = this.#native.finishExtractor(m.handles[k]!, statsAt(words, at + m.wordAt, m.statsCount));
      const keys = m.outputs.keys;
      if (out.length !== keys.length) {
        throw new VmafError('E_NATIVE', `${m.outputs.instance.definition.name}: the native extractor gave ${out.length} values for ${keys.length} outputs`);
      }
      keys.forEach((key, j) => (values[key] = out[j]!));
    }
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

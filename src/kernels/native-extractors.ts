/**
 * Runs a plan's 'native' extractor instances (C++ extractors registered in the addon, see
 * src/kernels/cpu/extractor.h) on a group's frames: one worker-thread job per instance and
 * rendition, their values keyed by the plan's log keys. Used by both backends; on the gpu
 * backend these instances run on the host (the plan says which, and the run warns).
 */
import { VmafError, InputError } from '../errors.js';
import type { InstanceOutputs } from '../extractors/plan.js';
import type { FeatureValues, Frame, FrameFormat } from '../types.js';
import { chromaSize } from '../decode/frame-layout.js';
import { loadNative, type Luma, type NativeAddon, type NativeExtractorHandle } from './native.js';

interface NativeInstance {
  outputs: InstanceOutputs;
  /** One native instance per rendition: what an instance accumulates (APSNR) is per input. */
  handles: NativeExtractorHandle[];
  create(): NativeExtractorHandle;
  chroma: boolean;
}

export class NativeExtractors {
  private readonly native: NativeAddon;
  private readonly instances: NativeInstance[];

  /** `outputs`: the plan's native instances for this format (plan.outputsFor(format) filtered). */
  constructor(outputs: readonly InstanceOutputs[], format: FrameFormat) {
    this.native = loadNative();
    const chroma = chromaSize(format) ?? { width: 0, height: 0 };
    const geometry = { width: format.width, height: format.height, bitDepth: format.bitDepth, chromaWidth: chroma.width, chromaHeight: chroma.height };
    this.instances = outputs.map((o) => {
      const { definition, options } = o.instance;
      if (definition.implementation.kind !== 'native') throw new TypeError(`${definition.name} is not a native extractor`);
      const n = definition.neighbours(options);
      if (n.previous > 0 || n.next > 0) throw new TypeError(`${definition.name}: native extractors with neighbouring frames are not wired yet`);
      const name = definition.implementation.native;
      const create = (): NativeExtractorHandle => {
        try {
          return this.native.createExtractor(name, options, geometry);
        } catch (error) {
          throw new VmafError('E_NATIVE', `${definition.name}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
        }
      };
      // The first is made at once, so that what the extractor refuses fails before any frame.
      return { outputs: o, handles: [create()], create, chroma: definition.planes(options) === 'all' && format.chroma !== '400' };
    });
  }

  get size(): number {
    return this.instances.length;
  }

  /**
   * Every instance's values for rendition `k`'s pair, keyed by log key. Frames are only
   * read, not released.
   */
  async extract(ref: Frame, dis: Frame, k: number, index: number, label: string): Promise<FeatureValues> {
    const results = await Promise.all(
      this.instances.map((x) => {
        const planes = (frame: Frame, which: string): Luma[] => {
          if (!x.chroma) return [frame.luma];
          if (!frame.chroma) {
            throw new InputError('E_INPUT_FORMAT', which, `${x.outputs.instance.definition.name} reads chroma, but the frame carries only luma`, index);
          }
          return [frame.luma, frame.chroma[0], frame.chroma[1]];
        };
        while (x.handles.length <= k) x.handles.push(x.create());
        return this.native.runExtractor(x.handles[k]!, planes(ref, 'reference'), planes(dis, label), [], []);
      }),
    );
    const values: FeatureValues = {};
    results.forEach((out, k) => {
      const keys = this.instances[k]!.outputs.keys;
      if (out.length !== keys.length) {
        throw new VmafError('E_NATIVE', `${this.instances[k]!.outputs.instance.definition.name}: the native extractor gave ${out.length} values for ${keys.length} outputs`);
      }
      keys.forEach((key, i) => (values[key] = out[i]!));
    });
    return values;
  }

  /** Rendition `k`'s aggregate metrics over the run, once all its frames are done. */
  aggregates(k: number): Record<string, number> {
    const metrics: Record<string, number> = {};
    for (const x of this.instances) {
      const handle = x.handles[k];
      if (handle) for (const [name, value] of this.native.aggregateExtractor(handle)) metrics[name] = value;
    }
    return metrics;
  }

  /** How many renditions have had frames. */
  get renditions(): number {
    return Math.max(0, ...this.instances.map((x) => x.handles.length));
  }
}

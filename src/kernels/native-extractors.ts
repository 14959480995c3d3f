/**
 * Runs a plan's 'native' extractor instances (C++ extractors registered in the addon, see
 * src/kernels/cpu/extractor.h) on a group's frames: one worker-thread job per instance and
 * rendition, their values keyed by the plan's log keys. Used by both backends; on the gpu
 * backend these instances run on the host (the plan says which, and the run warns).
 *
 * Temporal instances (neighbours() > 0) get the previous frames of their input, nearest
 * first, and run on every frame, unscored (--subsample) ones included, as libvmaf runs
 * its TEMPORAL extractors. Those that wait for the next frame give each frame's own values
 * ("pending"); finish() turns them into the frame's final values once the next frame's are
 * known (the plan backend's lookahead stage).
 */
import { VmafError, InputError, UsageError } from '../errors.js';
import type { InstanceOutputs } from '../extractors/plan.js';
import type { FeatureValues, Frame, FrameFormat } from '../types.js';
import { loadNative, nativeGeometry, type Luma, type NativeAddon, type NativeExtractorHandle } from './native.js';

interface NativeInstance {
  outputs: InstanceOutputs;
  /** Earlier frames it reads. */
  previous: number;
  /** Whether its values wait for the next frame (its definition has finishFrame). */
  lookahead: boolean;
  /** One native instance per rendition: what an instance accumulates (APSNR) is per input. */
  handles: NativeExtractorHandle[];
  create(): NativeExtractorHandle;
  chroma: boolean;
}

/** One frame's native values (see NativeExtractors.extract). */
export interface NativeFrameValues {
  values: FeatureValues;
  /** Per instance: a lookahead instance's own values, waiting for the next frame's. */
  pending: Array<number[] | undefined>;
}

export class NativeExtractors {
  private readonly native: NativeAddon;
  private readonly instances: NativeInstance[];

  /** `outputs`: the plan's native instances for this format (plan.outputsFor(format) filtered). */
  constructor(outputs: readonly InstanceOutputs[], format: FrameFormat) {
    this.native = loadNative();
    const geometry = nativeGeometry(format);
    this.instances = outputs.map((o) => {
      const { definition, options } = o.instance;
      if (definition.implementation.kind !== 'native') throw new TypeError(`${definition.name} is not a native extractor`);
      const n = definition.neighbours(options);
      if (n.next > 1 || (n.next > 0 && !definition.finishFrame)) {
        throw new TypeError(`${definition.name}: a native extractor may wait for one next frame, through finishFrame`);
      }
      const name = definition.implementation.native;
      const create = (): NativeExtractorHandle => {
        try {
          return this.native.createExtractor(name, options, geometry);
        } catch (error) {
          throw new VmafError('E_NATIVE', `${definition.name}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
        }
      };
      // The first is made at once, so that what the extractor refuses fails before any frame.
      const readsChroma = definition.planes(options) === 'all' && format.chroma !== '400';
      return { outputs: o, previous: n.previous, lookahead: n.next > 0, handles: [create()], create, chroma: readsChroma };
    });
  }

  /** The most previous frames any instance reads. */
  get previousFrames(): number {
    return Math.max(0, ...this.instances.map((x) => x.previous));
  }

  /** Whether some instance must also run on unscored frames (it reads or waits for neighbours). */
  get temporal(): boolean {
    return this.instances.some((x) => x.previous > 0 || x.lookahead);
  }

  /** Whether some instance's values wait for the next frame. */
  get lookahead(): boolean {
    return this.instances.some((x) => x.lookahead);
  }

  get size(): number {
    return this.instances.length;
  }

  /**
   * Every instance's values for rendition `k`'s pair, keyed by log key; `previousRef` and
   * `previousDis` are the input's earlier frames, nearest first (as many as the history
   * holds). With `scored` false only the temporal instances run (their values feed the
   * neighbouring frames). Lookahead instances' keys carry their own values until finish();
   * `pending` has those per instance (undefined for the others). Frames are only read, not
   * released.
   */
  async extract(
    frames: { ref: Frame; dis: Frame; previousRef: readonly Frame[]; previousDis: readonly Frame[] },
    k: number,
    index: number,
    label: string,
    scored = true,
  ): Promise<NativeFrameValues> {
    const { ref, dis } = frames;
    const results = await Promise.all(
      this.instances.map((x) => {
        if (!scored && x.previous === 0 && !x.lookahead) return undefined;
        const planes = (frame: Frame, which: string): Luma[] => {
          if (!x.chroma) return [frame.luma];
          if (!frame.chroma) {
            throw new InputError('E_INPUT_FORMAT', which, `${x.outputs.instance.definition.name} reads chroma, but the frame carries only luma`, index);
          }
          return [frame.luma, frame.chroma[0], frame.chroma[1]];
        };
        if (x.handles.length <= k && x.outputs.instance.options['heatmaps_path']) {
          // One set of heatmap files per run, as libvmaf writes them: a second rendition would write over it.
          throw new UsageError(`${x.outputs.instance.definition.name}: heatmaps_path writes one set of files per run; score one rendition at a time with it`);
        }
        while (x.handles.length <= k) x.handles.push(x.create());
        const prevRef = frames.previousRef.slice(0, x.previous).map((f) => planes(f, 'reference'));
        const prevDis = frames.previousDis.slice(0, x.previous).map((f) => planes(f, label));
        return this.native.runExtractor(x.handles[k]!, planes(ref, 'reference'), planes(dis, label), prevRef, prevDis, index);
      }),
    );
    const values: FeatureValues = {};
    const pending: Array<number[] | undefined> = [];
    results.forEach((out, i) => {
      const x = this.instances[i]!;
      pending.push(out && x.lookahead ? Array.from(out) : undefined);
      if (!out) return;
      const keys = x.outputs.keys;
      if (out.length !== keys.length) {
        throw new VmafError('E_NATIVE', `${x.outputs.instance.definition.name}: the native extractor gave ${out.length} values for ${keys.length} outputs`);
      }
      keys.forEach((key, j) => (values[key] = out[j]!));
    });
    return { values, pending };
  }

  /**
   * The final values of the lookahead instances for a frame, from its pending values, the
   * next frame's of the same input (undefined: it was the last) and whether it is the
   * input's first frame.
   */
  finish(pending: ReadonlyArray<number[] | undefined>, next: ReadonlyArray<number[] | undefined> | undefined, first: boolean): FeatureValues {
    const values: FeatureValues = {};
    this.instances.forEach((x, i) => {
      const own = pending[i];
      if (!x.lookahead || !own) return;
      const { definition, options } = x.outputs.instance;
      const out = definition.finishFrame!(own, next?.[i], first, options);
      x.outputs.keys.forEach((key, j) => (values[key] = out[j]!));
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

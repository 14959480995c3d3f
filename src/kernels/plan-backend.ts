/**
 * The backend a run talks to: it computes a run plan's extractor instances, each where it
 * is implemented, and gives each frame the plan's features in the plan's key order.
 *
 *   groups ─┬─ core (integer VIF/ADM/motion: cpu or gpu backend) ─┬─ merged, keyed and
 *           └─ native extractors (C++ on worker threads) ──────────┘  ordered by the plan
 *
 * The core runs only when the plan has a core instance; native instances run on the
 * host's threads with either backend, except that on the gpu backend those whose extractor
 * has a gpu kernel for the input (gpu/gpu-extractors.ts) run in its command buffers, their
 * values arriving with the core's (the run warns, naming the ones left on the host). Each frame is released once the core and the native jobs that read it
 * have all let go of it: temporal native instances read earlier frames too, so a group's
 * frames stay held (the history) until the jobs of the groups after it that read them are
 * done. Native values that wait for the next frame (motion2) are finished once the next
 * group's native job is done: with a core, when the core hands the group back (it has
 * already read the next group for its own motion2); without, in a small lookahead stage
 * (finishLookahead) that holds one group.
 */
import { Observable, concatMap, finalize, map, tap, type OperatorFunction } from '../rx.js';
import type { BackendKind, FeatureBackend } from './backend.js';
import { extractPairs } from './backend.js';
import type { RunPlan, InstanceOutputs } from '../extractors/plan.js';
import type { FeatureValues, Frame, FrameFeatures, FrameFormat, FrameGroup, FramePair, GroupFeatures } from '../types.js';
import { NativeExtractors, type NativeFrameValues } from './native-extractors.js';
import type { GpuExtractorSet, GpuParts } from './gpu/gpu-extractors.js';
import type { GpuBindingLimits } from './gpu/gpu-extractor.js';
import { orderedMergeMap } from '../pipeline/ordered-merge-map.js';
import { VmafError } from '../errors.js';
import { sameFormat } from '../decode/frame-layout.js';
import type { GpuDevice } from './gpu/device.js';
import type { CoreRuns } from './core-parts.js';

export interface PlanBackendOptions {
  /** Native jobs at once. */
  threads: number;
  onWarning?: ((message: string) => void) | undefined;
  /**
   * Rendition k's aggregate metrics (libvmaf's aggregate_metrics: APSNR), once its last
   * frame is done and before the stream completes; only where an extractor has some.
   */
  onAggregate?: ((k: number, metrics: Record<string, number>) => void) | undefined;
  /** On the gpu backend: the plan's extractors' gpu parts, loaded (absent: every native instance runs on the host). */
  gpuParts?: GpuParts | undefined;
}

/**
 * A frame with several readers, counted: it starts with one (the arrival's), each reader
 * takes one (retain, or a view the core releases), and the original is released when the
 * count drops to 0.
 */
class SharedFrame {
  private count = 1;
  constructor(readonly frame: Frame) {}
  retain(): this {
    this.count++;
    return this;
  }
  release(): void {
    if (--this.count === 0) this.frame.release();
  }
  /** A view of the frame whose release() gives back the reference taken for it (once). */
  view(): Frame {
    this.retain();
    let released = false;
    return Object.create(this.frame, {
      release: {
        value: () => {
          if (released) return;
          released = true;
          this.release();
        },
      },
    }) as Frame;
  }
}

/** A group's distinct frames, one reference taken on each (for a job or the history). */
class HeldGroup {
  private readonly frames: SharedFrame[];
  constructor(
    readonly ref: SharedFrame,
    readonly dis: ReadonlyArray<SharedFrame | undefined>,
  ) {
    this.frames = [...new Set([ref, ...dis.filter((d): d is SharedFrame => d !== undefined)])];
    for (const f of this.frames) f.retain();
  }
  /** Another hold on the same frames. */
  retain(): HeldGroup {
    return new HeldGroup(this.ref, this.dis);
  }
  release(): void {
    for (const f of this.frames) f.release();
  }
}

/** One group's native values per rendition (undefined where it has no frame or no job). */
type NativeGroupValues = Array<NativeFrameValues | undefined>;

/** A group's merged features, with the lookahead instances' own values per rendition. */
interface MergedGroup {
  out: GroupFeatures;
  pending: Array<Array<number[] | undefined> | undefined>;
}

/**
 * The lookahead stage: holds each group until the next one arrives (or the stream ends),
 * then finishes the lookahead instances' values of its scored frames from the next group's
 * own values of the same rendition (a rendition absent from the next group has ended).
 * Unscored groups pass through it too: they are neighbours. Groups arrive in order.
 * Without lookahead instances it holds nothing.
 */
function finishLookahead(nativeOf: () => NativeExtractors | undefined): OperatorFunction<MergedGroup, GroupFeatures> {
  return (source) =>
    new Observable<GroupFeatures>((subscriber) => {
      let held: MergedGroup | undefined;
      const seen: boolean[] = [];
      const emit = (group: MergedGroup, next: MergedGroup | undefined): void => {
        const native = nativeOf()!;
        const renditions = group.out.renditions.map((frame, k) => {
          const own = group.pending[k];
          if (!own) return frame;
          const first = seen[k] !== true;
          seen[k] = true;
          if (!frame) return undefined;
          const finished = native.finish(own, next?.pending[k], first);
          return { ...frame, features: { ...frame.features, ...finished } };
        });
        subscriber.next({ ...group.out, renditions });
      };
      const subscription = source.subscribe({
        next(group) {
          // The native instances are known from the first group on; without lookahead ones
          // the stage passes each group straight through.
          if (!nativeOf()?.lookahead) {
            subscriber.next(group.out);
            return;
          }
          const previous = held;
          held = group;
          if (previous) emit(previous, group);
        },
        error(error) {
          held = undefined;
          subscriber.error(error);
        },
        complete() {
          const last = held;
          held = undefined;
          if (last) emit(last, undefined);
          subscriber.complete();
        },
      });
      return () => {
        held = undefined;
        subscription.unsubscribe();
      };
    });
}

/** The gpu backend's extractMany, which also computes registered extractors with gpu kernels. */
interface GpuCore {
  /** The open device's limits: a gpu part sizes itself by them (supports). */
  readonly gpu: { readonly limits: GpuBindingLimits };
  extractMany(groups: Observable<FrameGroup>, extractors: () => GpuExtractorSet | undefined): Observable<GroupFeatures>;
}

export class PlanBackend implements FeatureBackend {
  readonly kind: BackendKind;
  readonly description: string;
  private readonly hasNative: boolean;
  /** The gpu extractors prepare() made, compiling, until a stream of their format takes them. */
  #prepared: { format: FrameFormat; set: GpuExtractorSet } | undefined;

  /** `core`: the cpu or gpu backend computing the core instances; undefined when the plan has none. */
  constructor(
    private readonly plan: RunPlan,
    private readonly core: FeatureBackend | undefined,
    kind: BackendKind,
    private readonly options: PlanBackendOptions,
  ) {
    this.kind = core?.kind ?? kind;
    const native = plan.instances.filter((x) => x.definition.implementation.kind === 'native');
    this.hasNative = native.length > 0;
    const hostThreads = `${options.threads} host thread${options.threads === 1 ? '' : 's'}`;
    this.description = core ? (this.hasNative && kind === 'gpu' ? `${core.description}, ${hostThreads}` : core.description) : `cpu, ${hostThreads}`;
  }

  /** The gpu backend's core, inside whose command buffers registered extractors with gpu kernels run; undefined on the cpu backend. */
  private get gpuCore(): GpuCore | undefined {
    return this.core?.kind === 'gpu' ? (this.core as unknown as GpuCore) : undefined;
  }

  extract(pairs: Observable<FramePair>): Observable<FrameFeatures> {
    return extractPairs(this, pairs);
  }

  extractMany(groups: Observable<FrameGroup>): Observable<GroupFeatures> {
    return new Observable<GroupFeatures>((subscriber) => {
      let keys: readonly string[] | undefined;
      let native: NativeExtractors | undefined;
      let onGpu: GpuExtractorSet | undefined;
      const prepare = (format: FrameFormat): void => {
        if (keys) return;
        const outputs = this.plan.outputsFor(format);
        keys = this.plan.featureKeys(format);
        // On the gpu backend, instances with a gpu kernel for this format join its command
        // buffers; the others run on the host, and the run says which.
        const gpuOutputs = this.#gpuOutputs(outputs, format);
        const nativeOutputs = outputs.filter((o: InstanceOutputs) => o.instance.definition.implementation.kind === 'native' && !gpuOutputs.includes(o));
        if (gpuOutputs.length > 0) onGpu = this.#takePrepared(format) ?? this.options.gpuParts!.set(gpuOutputs, format, this.gpuCore!.gpu.limits);
        if (nativeOutputs.length > 0) native = new NativeExtractors(nativeOutputs, format);
        if (this.kind === 'gpu' && nativeOutputs.length > 0) {
          const names = [...new Set(nativeOutputs.map((o) => o.instance.definition.name))];
          this.options.onWarning?.(`gpu backend: ${names.join(', ')} run${names.length === 1 ? 's' : ''} on the host's cpu (no gpu kernel for this input; the values are the same)`);
        }
      };
      const flushAggregates = (): void => {
        if (!this.options.onAggregate) return;
        const renditions = Math.max(native?.renditions ?? 0, onGpu?.renditions ?? 0);
        for (let k = 0; k < renditions; k++) {
          const metrics = { ...onGpu?.aggregates(k), ...native?.aggregates(k) };
          if (Object.keys(metrics).length > 0) this.options.onAggregate(k, metrics);
        }
      };
      const merge = (core: FrameFeatures | undefined, extra: FeatureValues | undefined, base: Omit<FrameFeatures, 'features'>): FrameFeatures => {
        const features: FeatureValues = {};
        for (const key of keys!) {
          const value = extra?.[key] ?? core?.features[key];
          if (value === undefined) throw new VmafError('E_NATIVE', `frame ${base.index}: no value for feature ${key}`);
          features[key] = value;
        }
        return { ...base, features };
      };

      // Earlier groups' frames, nearest first, held for the temporal native instances.
      const history: HeldGroup[] = [];
      const releaseHistory = (): void => {
        for (const held of history.splice(0)) held.release();
      };

      /**
       * Takes over a group's frames and starts its native job (undefined when it has none):
       * every distinct frame is counted once per reader (the core, this job, the history)
       * and released when the last lets go. Returns the group to hand to the core (its
       * frames the core's own shares) and the job.
       */
      const start = (group: FrameGroup, withCore: boolean): { group: FrameGroup; job: (() => Promise<NativeGroupValues>) | undefined } => {
        prepare(group.ref.format);
        const scored = group.scored !== false;
        const runs = native !== undefined && (scored || native.temporal);
        if (!runs && withCore) return { group, job: undefined };
        const shares = new Map<Frame, SharedFrame>();
        const share = (frame: Frame): SharedFrame => {
          let s = shares.get(frame);
          if (!s) shares.set(frame, (s = new SharedFrame(frame)));
          return s;
        };
        const ref = share(group.ref);
        const dis = group.dis.map((f) => (f ? share(f) : undefined));
        const out: FrameGroup = withCore ? { ...group, ref: ref.view(), dis: dis.map((f) => f?.view()) } : group;
        let job: (() => Promise<NativeGroupValues>) | undefined;
        if (runs) {
          const nat = native!;
          // This job reads the group's frames and the held earlier ones until it is done.
          const read = new HeldGroup(ref, dis);
          const earlier = history.map((held) => held.retain());
          // Started by the caller (at once with a core, within the thread limit without).
          job = () => Promise.all(
            group.dis.map((frame, k) => {
              if (!frame) return undefined;
              const previousRef = earlier.map((h) => h.ref.frame);
              const previousDis: Frame[] = [];
              for (const h of earlier) {
                const d = h.dis[k];
                if (!d) break; // the input had no frame there: nothing earlier either
                previousDis.push(d.frame);
              }
              return nat.extract({ ref: group.ref, dis: frame, previousRef, previousDis }, k, group.index, `distorted ${k + 1}`, scored);
            }),
          ).finally(() => {
            read.release();
            for (const h of earlier) h.release();
          });
          if (nat.previousFrames > 0) {
            history.unshift(new HeldGroup(ref, dis));
            for (const held of history.splice(nat.previousFrames)) held.release();
          }
        }
        // The arrival share: the frames were handed over once.
        for (const s of shares.values()) s.release();
        return { group: out, job };
      };

      const base = (group: FrameGroup, frame: Frame): Omit<FrameFeatures, 'features'> => {
        const b: Omit<FrameFeatures, 'features'> = { index: group.index };
        if (group.ref.pts !== undefined) b.refPts = group.ref.pts;
        if (frame.pts !== undefined) b.disPts = frame.pts;
        return b;
      };

      let merged: Observable<GroupFeatures>;
      if (this.core) {
        const core = this.core;
        const pending = new Map<number, Promise<NativeGroupValues>>();
        // The lookahead values are finished here, once the core hands a group back: the core
        // itself waits for the next group (integer motion2), so that group's native job has
        // started by then and no further group needs to be held (nor another credit).
        const nextIndex = new Map<number, number>();
        let lastFanned: number | undefined;
        let ended = false;
        let waiters: Array<() => void> = [];
        const wake = (): void => {
          const all = waiters;
          waiters = [];
          for (const w of all) w();
        };
        const nextGroupKnown = (index: number): Promise<void> =>
          new Promise((resolve) => {
            const check = (): void => (nextIndex.has(index) || ended ? resolve() : void waiters.push(check));
            check();
          });
        const seen: boolean[] = [];
        const fanOut = (group: FrameGroup): FrameGroup => {
          const { group: out, job } = start(group, true);
          if (job) {
            const running = job();
            running.catch(() => undefined); // awaited below, in frame order
            pending.set(group.index, running);
          }
          if (lastFanned !== undefined) nextIndex.set(lastFanned, group.index);
          lastFanned = group.index;
          wake();
          return out;
        };
        const sourceEnded = (): void => {
          ended = true;
          wake();
        };
        const fanned = groups.pipe(map(fanOut), tap({ complete: sourceEnded }), finalize(releaseHistory));
        // The gpu backend takes the instances with gpu kernels (made by fanOut's prepare, before it sees a group).
        const gpuCore = this.gpuCore;
        const fromCore = gpuCore ? gpuCore.extractMany(fanned, () => onGpu) : core.extractMany(fanned);
        merged = fromCore.pipe(
          concatMap(async (group): Promise<GroupFeatures> => {
            const job = pending.get(group.index);
            pending.delete(group.index);
            const extra = job ? await job : [];
            let next: NativeGroupValues | undefined;
            if (native?.lookahead) {
              await nextGroupKnown(group.index);
              const following = nextIndex.get(group.index);
              nextIndex.delete(group.index);
              const nextJob = following === undefined ? undefined : pending.get(following);
              next = nextJob ? await nextJob : undefined;
            }
            return {
              ...group,
              renditions: group.renditions.map((frame, k) => {
                const own = extra[k]?.pending;
                const first = own !== undefined && seen[k] !== true;
                if (own) seen[k] = true;
                if (!frame) return undefined;
                const { features: _core, ...rest } = frame;
                const merged = merge(frame, extra[k]?.values, rest);
                if (own && native?.lookahead) Object.assign(merged.features, native.finish(own, next?.[k]?.pending, first));
                return merged;
              }),
            };
          }),
        );
      } else {
        // Native instances only: no core backend (and no GPU) at all.
        merged = groups.pipe(
          map((group) => ({ group, job: start(group, false).job })),
          finalize(releaseHistory),
          orderedMergeMap(async ({ group, job }): Promise<MergedGroup> => {
            const extra = job ? await job() : [];
            const scored = group.scored !== false;
            const renditions = group.dis.map((frame, k) => (frame && scored ? merge(undefined, extra[k]?.values, base(group, frame)) : undefined));
            const out: GroupFeatures = { index: group.index, renditions };
            if (group.ref.pts !== undefined) out.refPts = group.ref.pts;
            return { out, pending: extra.map((v) => v?.pending) };
          }, this.options.threads),
          finishLookahead(() => native),
        );
      }
      const subscription = merged.pipe(tap({ complete: flushAggregates })).subscribe(subscriber);
      return () => {
        subscription.unsubscribe();
        releaseHistory();
      };
    });
  }

  gpuDevice(): GpuDevice | undefined {
    return this.core?.gpuDevice?.();
  }

  coreRuns(): CoreRuns | undefined {
    return this.core?.coreRuns?.();
  }

  /**
   * Starts compiling the kernels for frames of this format: the core's, and on the gpu
   * backend the registered extractors' too, in a set that the first stream of this format
   * takes over (extractMany), so that their compilation overlaps the device's other start-up
   * work rather than beginning with the first frame.
   */
  prepare(format: FrameFormat): void {
    this.core?.prepare?.(format);
    const gpu = this.gpuDevice();
    if (this.#prepared || !gpu || !this.gpuCore) return;
    try {
      const gpuOutputs = this.#gpuOutputs(this.plan.outputsFor(format), format);
      if (gpuOutputs.length === 0) return;
      const set = this.options.gpuParts!.set(gpuOutputs, format, gpu.limits);
      // A failure is the first frame's to report, from the stream's own compile() of the set.
      set.compile(gpu).catch(() => undefined);
      this.#prepared = { format, set };
    } catch {
      // options or a size the extractors refuse: the stream makes the set again and says why
    }
  }

  /** Located frames go to the core alone: where it reads them and no instance of this format runs on the host. */
  async readsLocatedFrames(format: FrameFormat): Promise<boolean> {
    if (!this.core?.readsLocatedFrames || !(await this.core.readsLocatedFrames(format))) return false;
    const native = this.plan.outputsFor(format).filter((o) => o.instance.definition.implementation.kind === 'native');
    return this.#gpuOutputs(native, format).length === native.length;
  }

  async close(): Promise<void> {
    const prepared = this.#prepared;
    this.#prepared = undefined;
    if (prepared) {
      await prepared.set.compile(this.gpuDevice()!).catch(() => undefined);
      prepared.set.destroy();
    }
    await this.core?.close();
  }

  /** The instances that run inside the gpu backend's command buffers (none on the cpu backend). */
  #gpuOutputs(outputs: readonly InstanceOutputs[], format: FrameFormat): InstanceOutputs[] {
    const limits = this.gpuCore?.gpu.limits;
    const parts = this.options.gpuParts;
    return limits && parts ? outputs.filter((o) => parts.for(o.instance, format, limits) !== undefined) : [];
  }

  /** The set prepare() made for this format, once. */
  #takePrepared(format: FrameFormat): GpuExtractorSet | undefined {
    const prepared = this.#prepared;
    if (!prepared || !sameFormat(prepared.format, format)) return undefined;
    this.#prepared = undefined;
    return prepared.set;
  }
}

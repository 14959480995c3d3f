/**
 * The backend a run talks to: it computes a run plan's extractor instances, each where it
 * is implemented, and gives each frame the plan's features in the plan's key order.
 *
 *   groups ─┬─ core (integer VIF/ADM/motion: cpu or gpu backend) ─┬─ merged, keyed and
 *           └─ native extractors (C++ on worker threads) ──────────┘  ordered by the plan
 *
 * The core runs only when the plan has a core instance; native instances run on the
 * host's threads with either backend (on the gpu backend the run says so with a warning,
 * naming them). Each frame is released once the core and the native jobs that read it
 * have both let go of it.
 */
import { Observable, concatMap, map, tap, type Subscription } from 'rxjs';
import type { BackendKind, FeatureBackend } from './backend.js';
import { extractPairs } from './backend.js';
import type { RunPlan, InstanceOutputs } from '../extractors/plan.js';
import type { FeatureValues, Frame, FrameFeatures, FrameFormat, FrameGroup, FramePair, GroupFeatures } from '../types.js';
import { NativeExtractors } from './native-extractors.js';
import { orderedMergeMap } from '../pipeline/ordered-merge-map.js';
import { VmafError } from '../errors.js';

export interface PlanBackendOptions {
  /** Native jobs at once. */
  threads: number;
  onWarning?: ((message: string) => void) | undefined;
  /**
   * Rendition k's aggregate metrics (libvmaf's aggregate_metrics: APSNR), once its last
   * frame is done and before the stream completes; only where an extractor has some.
   */
  onAggregate?: ((k: number, metrics: Record<string, number>) => void) | undefined;
}

/** A frame shared by several readers: the original is released when the last lets go. */
function shareFrame(frame: Frame, readers: number): Frame {
  let left = readers;
  return Object.create(frame, {
    release: {
      value: () => {
        if (--left === 0) frame.release();
      },
    },
  }) as Frame;
}

export class PlanBackend implements FeatureBackend {
  readonly kind: BackendKind;
  readonly description: string;
  private readonly hasNative: boolean;

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
    if (kind === 'gpu' && this.hasNative) {
      options.onWarning?.(`gpu backend: ${native.map((x) => x.definition.name).join(', ')} run${native.length === 1 ? 's' : ''} on the host's cpu (no gpu kernel yet)`);
    }
  }

  extract(pairs: Observable<FramePair>): Observable<FrameFeatures> {
    return extractPairs(this, pairs);
  }

  extractMany(groups: Observable<FrameGroup>): Observable<GroupFeatures> {
    return new Observable<GroupFeatures>((subscriber) => {
      let keys: readonly string[] | undefined;
      let native: NativeExtractors | undefined;
      const prepare = (format: FrameFormat): void => {
        if (keys) return;
        const outputs = this.plan.outputsFor(format);
        keys = this.plan.featureKeys(format);
        const nativeOutputs = outputs.filter((o: InstanceOutputs) => o.instance.definition.implementation.kind === 'native');
        if (nativeOutputs.length > 0) native = new NativeExtractors(nativeOutputs, format);
      };
      const nativeValues = (group: FrameGroup): Promise<Array<FeatureValues | undefined>> =>
        Promise.all(group.dis.map((frame, k) => (frame && native ? native.extract(group.ref, frame, k, group.index, `distorted ${k + 1}`) : undefined)));
      const flushAggregates = (): void => {
        if (!native || !this.options.onAggregate) return;
        for (let k = 0; k < native.renditions; k++) {
          const metrics = native.aggregates(k);
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

      let subscription: Subscription;
      if (this.core) {
        const core = this.core;
        const pending = new Map<number, Promise<Array<FeatureValues | undefined>>>();
        const fanOut = (group: FrameGroup): FrameGroup => {
          prepare(group.ref.format);
          if (!native || group.scored === false) return group;
          // One share per distinct frame: the core releases it once, the native job once.
          const shared = new Map<Frame, Frame>();
          const share = (frame: Frame): Frame => {
            let s = shared.get(frame);
            if (!s) shared.set(frame, (s = shareFrame(frame, 2)));
            return s;
          };
          const out: FrameGroup = { ...group, ref: share(group.ref), dis: group.dis.map((f) => (f ? share(f) : undefined)) };
          const job = nativeValues(group).finally(() => {
            for (const frame of shared.values()) frame.release();
          });
          job.catch(() => undefined); // awaited below, in frame order
          pending.set(group.index, job);
          return out;
        };
        subscription = core
          .extractMany(groups.pipe(map(fanOut)))
          .pipe(
            concatMap(async (group): Promise<GroupFeatures> => {
              const job = pending.get(group.index);
              pending.delete(group.index);
              const extra = job ? await job : [];
              return {
                ...group,
                renditions: group.renditions.map((frame, k) => {
                  if (!frame) return undefined;
                  const { features: _core, ...base } = frame;
                  return merge(frame, extra[k], base);
                }),
              };
            }),
            tap({ complete: flushAggregates }),
          )
          .subscribe(subscriber);
      } else {
        // Native instances only: no core backend (and no GPU) at all.
        subscription = groups
          .pipe(
            orderedMergeMap(async (group): Promise<GroupFeatures> => {
              const frames = new Set<Frame>([group.ref, ...group.dis.filter((f): f is Frame => f !== undefined)]);
              try {
                prepare(group.ref.format);
                const scored = group.scored !== false;
                const extra = scored ? await nativeValues(group) : [];
                const renditions = group.dis.map((frame, k) => {
                  if (!frame || !scored) return undefined;
                  const base: Omit<FrameFeatures, 'features'> = { index: group.index };
                  if (group.ref.pts !== undefined) base.refPts = group.ref.pts;
                  if (frame.pts !== undefined) base.disPts = frame.pts;
                  return merge(undefined, extra[k], base);
                });
                const out: GroupFeatures = { index: group.index, renditions };
                if (group.ref.pts !== undefined) out.refPts = group.ref.pts;
                return out;
              } finally {
                for (const frame of frames) frame.release();
              }
            }, this.options.threads),
            tap({ complete: flushAggregates }),
          )
          .subscribe(subscriber);
      }
      return () => subscription.unsubscribe();
    });
  }

  async close(): Promise<void> {
    await this.core?.close();
  }
}

import { map, mergeMap, type Observable } from '../rx.js';
import type { FrameFeatures, FrameFormat, FrameGroup, FramePair, GroupFeatures } from '../types.js';
import type { GpuDevice } from './gpu/device.js';
import type { CoreRuns } from './core-parts.js';

export type BackendKind = 'cpu' | 'gpu';

/**
 * Turns a stream of frame pairs into a stream of per-frame features, in frame order.
 * A backend owns the release of each pair's frames once it has read them.
 * integer_motion2 and integer_motion3 need the next frame, so frame N's features are
 * emitted when frame N+1 has been computed (or when the stream ends): one frame of latency
 * (two for the first frames of a five-frame-window motion instance).
 */
export interface FeatureBackend {
  readonly kind: BackendKind;
  /** For messages: the adapter or the thread count. */
  readonly description: string;
  /** One distorted input: extractMany with groups of one, its pairs' features. */
  extract(pairs: Observable<FramePair>): Observable<FrameFeatures>;
  /**
   * One reference against several distorted inputs (a ladder's renditions): each group's
   * reference frame is read once for all of them; the gpu backend uploads it once, both
   * backends compute its motion once. Every group must have as many `dis` entries as the
   * first. One GroupFeatures comes out per group, in order, with each rendition's features
   * exactly as extract() would give for that rendition's pairs alone (a rendition that ends
   * early gets its last frame's integer_motion2 as if its own stream had ended there).
   * The backend releases every frame of every group it receives, exactly once.
   */
  extractMany(groups: Observable<FrameGroup>): Observable<GroupFeatures>;
  /**
   * A hint that frames of this format will come: the gpu backend starts compiling their
   * kernels now, so that they are ready sooner than if they waited for the first frame.
   * Never required, never an error (a failure shows when the frames come).
   */
  prepare?(format: FrameFormat): void;
  /**
   * Whether frames of this format may come located (Frame.located, their planes empty):
   * every part of the backend that reads a frame's samples reads them itself from where a
   * located frame says (the gpu backend's upload). Absent or false: frames carry their planes.
   */
  readsLocatedFrames?(format: FrameFormat): Promise<boolean>;
  close(): Promise<void>;
  /** The GPU device the backend computes on, if any (the fault tests' hooks reach it here). */
  gpuDevice?(): GpuDevice | undefined;
  /** How often each core part was computed (undefined without a core): a diagnostic, for tests. */
  coreRuns?(): CoreRuns | undefined;
  /** The fault tests' hooks (pipeline/backend-fault.ts) where the device is on another thread. */
  testFault?(fault: 'lose' | 'hang'): void;
}

/** A pair as a group of one. */
export function pairToGroup(pair: FramePair): FrameGroup {
  const group: FrameGroup = { index: pair.index, ref: pair.ref, dis: [pair.dis] };
  if (pair.scored !== undefined) group.scored = pair.scored;
  return group;
}

/** FeatureBackend.extract on top of extractMany: pairs as groups of one, their features out. */
export function extractPairs(backend: Pick<FeatureBackend, 'extractMany'>, pairs: Observable<FramePair>): Observable<FrameFeatures> {
  return backend.extractMany(pairs.pipe(map(pairToGroup))).pipe(mergeMap((group) => (group.renditions[0] ? [group.renditions[0]] : [])));
}

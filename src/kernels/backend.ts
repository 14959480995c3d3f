import type { Observable } from 'rxjs';
import type { FrameFeatures, FramePair } from '../types.js';

export type BackendKind = 'cpu' | 'gpu';

/**
 * Turns a stream of frame pairs into a stream of per-frame features, in frame order.
 * A backend owns the release of each pair's frames once it has read them.
 * integer_motion2 needs the next frame, so frame N's features are emitted when frame
 * N+1 has been computed (or when the stream ends): one frame of latency.
 */
export interface FeatureBackend {
  readonly kind: BackendKind;
  /** For messages: the adapter or the thread count. */
  readonly description: string;
  extract(pairs: Observable<FramePair>): Observable<FrameFeatures>;
  close(): Promise<void>;
}

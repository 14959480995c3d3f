import { Observable, map } from 'rxjs';
import type { FeatureBackend, BackendKind } from '../kernels/backend.js';
import type { FrameInput } from '../decode/open-source.js';
import type { ModelSpec } from './model/index.js';
import type { FrameResult } from './writers/types.js';
import type { FrameFormat } from '../types.js';
import { labelOf, runLadder, type Delivery, type ResolvedRendition } from './ladder.js';
import type { QcOptions } from './qc.js';
import type { QueueOptions } from '../queue/queue-options.js';

export type { FrameResult } from './writers/types.js';

/**
 * The options of a run. Besides libvmaf's, the live QC options (QcOptions: `windows`,
 * `alerts`, `align`, `alignRange`, `drift` and their callbacks onWindow, onAlert,
 * onAlignment, onDrift) work with every view of a run; scoreEvents() and
 * scoreLadderEvents() also emit them as `window`, `alert`, `alignment` and `drift` events.
 */
export interface ScoreOptions extends QcOptions {
  /** Which feature backend computes VIF, ADM and motion. Default 'auto'. */
  backend?: BackendKind | 'auto';
  /** Frames computed at once by the cpu backend. Default: the number of cores. */
  threads?: number;
  /** Models as `-m` strings or specs. Default: vmaf_v0.6.1, logged as "vmaf". */
  models?: Array<string | ModelSpec>;
  /** Features only, no model prediction (libvmaf's --no_prediction). */
  noPrediction?: boolean;
  frameSkipRef?: number;
  frameSkipDist?: number;
  /** At most this many frames are scored. */
  frameCnt?: number;
  /** Score every Nth frame. */
  subsample?: number;
  /** Raw .yuv geometry (both inputs), as libvmaf's -w -h -p -b. */
  width?: number;
  height?: number;
  pixelFormat?: '420' | '422' | '444' | '400';
  bitDepth?: number;
  /** ffmpeg binary; default FFMPEG_PATH, then @ffmpeg-installer/ffmpeg. */
  ffmpegPath?: string;
  /**
   * Scale the distorted input to the reference's size (bicubic) instead of failing on a size
   * mismatch. Default false for score(), true for scoreLadder().
   */
  scale?: boolean;
  /** WebGPU adapter name (substring) for the gpu backend. */
  gpuAdapter?: string;
  /** Frames in flight: decoded, computing or awaiting a slow consumer. Bounds memory. */
  maxFramesInFlight?: number;
  /** Non-fatal conditions (inputs of different lengths, software GPU adapter). */
  onWarning?: (message: string) => void;
  /** Called once the reference's format is known, before the first frame. */
  onFormat?: (format: FrameFormat) => void;
  /** Called once the backend is open, with its description. */
  onBackend?: (backend: FeatureBackend) => void;
  /**
   * Score on a BullMQ queue in Redis (a URL, or QueueOptions): the title is cut into
   * segments that `vmaf-stream worker` processes score, and their results are merged into
   * exactly this run's results, in order. Inputs must be paths or URLs the workers can read.
   */
  queue?: QueueOptions | string;
}

export { DEFAULT_MODEL, resolveModelSpecs } from './ladder.js';
export type { Delivery } from './ladder.js';

/**
 * Scores `distorted` against `reference` frame by frame. Cold: each subscription decodes
 * and scores anew. Each frame's result is emitted as soon as it is known (one frame after
 * it is decoded, because motion2 looks one frame ahead). Memory stays bounded however
 * long the inputs are: at most `maxFramesInFlight` frames exist at once.
 */
export function score(reference: FrameInput, distorted: FrameInput, options: ScoreOptions = {}): Observable<FrameResult> {
  return scoreDeliveries(reference, distorted, options).pipe(
    map((delivery) => {
      delivery.delivered();
      return delivery.result;
    }),
  );
}

/**
 * score() for consumers that take results at their own pace (async iterator, Readable):
 * a frame's credit comes back only when `delivered()` is called, so a slow consumer
 * pauses decoding instead of queueing results. The ladder engine with one rendition.
 */
export function scoreDeliveries(reference: FrameInput, distorted: FrameInput, options: ScoreOptions = {}): Observable<Delivery> {
  const rendition: ResolvedRendition = { input: distorted, name: 'distorted', label: labelOf(distorted, 'distorted') };
  return runLadder(reference, [rendition], { ...options, scale: options.scale === true }, true).pipe(
    map((delivery): Delivery => ({ result: delivery.result.result, delivered: delivery.delivered })),
  );
}

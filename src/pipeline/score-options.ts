/**
 * ScoreOptions: what a run takes, in one module of its own (score() and the ladder engine
 * both read it; the ladder's types build on it) so that neither imports the other for it.
 */
import type { FeatureBackend, BackendKind } from '../kernels/backend.js';
import type { ModelSpec } from './model/index.js';
import type { FrameFormat, PlaneSelection } from '../types.js';
import type { QcOptions } from './qc.js';
import type { ExtractorRequest } from '../extractors/request.js';
import type { QueueOptions } from '../queue/queue-options.js';

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
  /**
   * Feature extractors besides the models' (libvmaf's --feature): `'psnr'`,
   * `'float_ssim=enable_db=true:clip_db=true'`, or a parsed request.
   */
  features?: Array<string | ExtractorRequest>;
  /**
   * libvmaf's cpumask: SIMD paths the cpu backend must not use (bit 3 AVX2, bit 4 AVX-512:
   * the portable C++ runs instead, with the same results). Process-wide.
   */
  cpumask?: number;
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
  /**
   * Which planes the decoded frames carry: 'luma' (default; what VIF, ADM and motion read:
   * the luma-only fast paths) or 'all' (luma, Cb and Cr, for features that read chroma; a
   * 4:0:0 input, or a FrameSource whose frames lack `chroma`, is then an error naming it).
   */
  planes?: PlaneSelection;
  /** ffmpeg binary; default FFMPEG_PATH, then @ffmpeg-installer/ffmpeg. */
  ffmpegPath?: string;
  /**
   * ffmpeg options before `-i` for every input ffmpeg decodes: hardware decoding with your
   * own ffmpeg (ffmpegPath), e.g. ['-hwaccel', 'cuda'].
   */
  ffmpegInputOptions?: readonly string[];
  /**
   * ffmpeg decoders per compressed local file, each over segments cut at keyframes (frames
   * identical to one decoder's). Default 'auto': half the cores, at most 4, where the file
   * has keyframes enough; pipes, URLs, y4m and raw always use one.
   */
  decoders?: number | 'auto';
  /**
   * An input that sends no frame for this many milliseconds (a stalled live source, a
   * stopped ffmpeg, a named pipe or standard input whose writer went quiet) ends the run
   * with E_INPUT_STALLED naming it and the frame; ffmpeg is stopped. Default: no limit.
   */
  stallTimeoutMs?: number;
  /**
   * The protocols inputs given as strings may use: 'file' (local paths), 'pipe' ('-'),
   * URL schemes such as 'https'. Also ffmpeg's -protocol_whitelist. An input outside the list
   * is E_INPUT_NOT_ALLOWED. Default: anything ffmpeg reads. See the README's security notes.
   */
  protocols?: readonly string[];
  /**
   * Scale the distorted input to the reference's size (bicubic) instead of failing on a size
   * mismatch. Default false for score(), true for scoreLadder().
   */
  scale?: boolean;
  /** WebGPU adapter name (substring) for the gpu backend. */
  gpuAdapter?: string;
  /**
   * The gpu backend's bound on one wait for the GPU (a frame's fences), in milliseconds: a
   * device that stops answering ends the run with E_GPU naming the input and the frame.
   * Default 300000 (five minutes: far above a frame's work even on a software adapter).
   */
  gpuTimeoutMs?: number;
  /** Frames in flight: decoded, computing or awaiting a slow consumer. Bounds memory. */
  maxFramesInFlight?: number;
  /**
   * Non-fatal conditions (inputs of different lengths, a distorted input of lower bit depth
   * widened to the reference's, software GPU adapter).
   */
  onWarning?: (message: string) => void;
  /** Called once the reference's format is known, before the first frame. */
  onFormat?: (format: FrameFormat) => void;
  /**
   * A rendition's aggregate metrics over the whole run (libvmaf's aggregate_metrics, e.g.
   * psnr's apsnr_y with enable_apsnr), after its last frame and before the run completes.
   * A single pair's rendition is named 'distorted'.
   */
  onAggregate?: (rendition: string, metrics: Record<string, number>) => void;
  /** Called once the backend is open, with its description. */
  onBackend?: (backend: FeatureBackend) => void;
  /**
   * @internal The process exits as soon as the run ends (the command line's one-shot run):
   * the backend is left open for the exit to free. Closing a GPU device frees each of its
   * buffers and waits for the device first, which took 20-40 ms at the end of every run.
   */
  exitAfterRun?: boolean;
  /**
   * @internal Called as the run ends (completed, failed or stopped) with a promise that
   * settles once every input is closed (its ffmpeg gone): the command line waits for it
   * before it exits, so that it leaves no decoder behind.
   */
  onInputsClosed?: (closed: Promise<void>) => void;
  /**
   * Score on a BullMQ queue in Redis (a URL, or QueueOptions): the title is cut into
   * segments that `vmaf-stream worker` processes score, and their results are merged into
   * exactly this run's results, in order. Inputs must be paths or URLs the workers can read.
   */
  queue?: QueueOptions | string;
}

import { availableParallelism } from 'node:os';
import { Observable, defer, finalize, map, mergeMap } from 'rxjs';
import type { FeatureBackend, BackendKind } from '../kernels/backend.js';
import { createBackend } from '../kernels/create-backend.js';
import { openFrameSource, type FrameInput, type SourceOptions } from '../decode/open-source.js';
import { pairFrames } from '../decode/pair-frames.js';
import { loadModel, type Model, type ModelSpec, parseModelSpec } from './model/index.js';
import type { FrameResult } from './writers/types.js';
import type { FrameFormat, FramePair } from '../types.js';
import { Credits } from './credits.js';
import { pullWithCredits } from './pull-observable.js';
import { MIN_FRAME_DIMENSION } from '../kernels/limits.js';
import { UsageError } from '../errors.js';

export type { FrameResult } from './writers/types.js';

export interface ScoreOptions {
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
  /** Scale the distorted input to the reference's size (bicubic) instead of failing on a size mismatch. */
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
}

/** What score() needs once the models are loaded and the backend is open. */
interface ScoreRun {
  backend: FeatureBackend;
  models: Model[];
}

export const DEFAULT_MODEL = 'version=vmaf_v0.6.1:name=vmaf';

export function resolveModelSpecs(models: ScoreOptions['models']): ModelSpec[] {
  const list = models && models.length > 0 ? models : [DEFAULT_MODEL];
  return list.map((m) => (typeof m === 'string' ? parseModelSpec(m) : m));
}

/** One frame's result and the hand-back of its credit, called once the consumer has it. */
export interface Delivery {
  result: FrameResult;
  delivered(): void;
}

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
 * pauses decoding instead of queueing results.
 */
export function scoreDeliveries(reference: FrameInput, distorted: FrameInput, options: ScoreOptions = {}): Observable<Delivery> {
  return defer(() => {
    const threads = options.threads ?? defaultThreads();
    const inFlight = options.maxFramesInFlight ?? Math.max(4, threads * 2 + 2);
    const credits = new Credits(inFlight);
    const sourceOptions: SourceOptions = {
      width: options.width,
      height: options.height,
      pixelFormat: options.pixelFormat,
      bitDepth: options.bitDepth,
      ffmpegPath: options.ffmpegPath,
      poolSlots: inFlight + 2,
    };
    const ref = openFrameSource(reference, { ...sourceOptions, label: labelOf(reference, 'reference') });
    let dis = openFrameSource(distorted, { ...sourceOptions, label: labelOf(distorted, 'distorted') });

    const run = (async (): Promise<ScoreRun> => {
      const models = options.noPrediction ? [] : await Promise.all(resolveModelSpecs(options.models).map(loadModel));
      assertUniqueNames(models);
      options.onFormat?.(await ref.format());
      if (options.scale) {
        const refFormat = await ref.format();
        const disFormat = await dis.format();
        if (refFormat.width !== disFormat.width || refFormat.height !== disFormat.height) {
          await dis.close();
          dis = openFrameSource(distorted, {
            ...sourceOptions,
            label: labelOf(distorted, 'distorted'),
            scaleTo: { width: refFormat.width, height: refFormat.height },
          });
        }
      }
      const backend = await createBackend(options.backend ?? 'auto', {
        threads,
        gpuAdapter: options.gpuAdapter,
        onWarning: options.onWarning,
      });
      options.onBackend?.(backend);
      return { backend, models };
    })();

    let backend: FeatureBackend | undefined;
    const pairs: AsyncIterable<FramePair> = {
      [Symbol.asyncIterator]: () =>
        pairFrames(ref, dis, {
          frameSkipRef: options.frameSkipRef,
          frameSkipDist: options.frameSkipDist,
          frameCnt: options.frameCnt,
          subsample: options.subsample,
          minDimension: MIN_FRAME_DIMENSION,
          onWarning: options.onWarning,
        })[Symbol.asyncIterator](),
    };

    return defer(() => run).pipe(
      mergeMap((opened) => {
        backend = opened.backend;
        return opened.backend.extract(pullWithCredits(pairs, credits)).pipe(
          map((frame): Delivery => ({
            result: {
              index: frame.index,
              features: frame.features,
              scores: predictAll(opened.models, frame.features),
              refPts: frame.refPts,
              disPts: frame.disPts,
            },
            // The frame's result is out: the pipeline may pull one more pair.
            delivered: once(() => credits.release()),
          })),
        );
      }),
      finalize(() => {
        void ref.close().catch(() => undefined);
        void dis.close().catch(() => undefined);
        void backend?.close().catch(() => undefined);
      }),
    );
  });
}

function assertUniqueNames(models: Model[]): void {
  const seen = new Set<string>();
  for (const model of models) {
    if (seen.has(model.name)) throw new UsageError(`two models are named "${model.name}": give each its own name= (e.g. -m version=${model.version}:name=other)`);
    seen.add(model.name);
  }
}

function predictAll(models: Model[], features: FrameResult['features']): Record<string, number> {
  const scores: Record<string, number> = {};
  for (const model of models) Object.assign(scores, model.predict(features));
  return scores;
}

function labelOf(input: FrameInput, fallback: string): string {
  if (typeof input === 'string') return input;
  if (typeof input === 'object' && input !== null && 'label' in input && typeof input.label === 'string') return input.label;
  return fallback;
}

function defaultThreads(): number {
  const fromEnv = Number(process.env.VMAF_THREADS);
  return Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : availableParallelism();
}

function once(fn: () => void): () => void {
  let called = false;
  return () => {
    if (!called) {
      called = true;
      fn();
    }
  };
}

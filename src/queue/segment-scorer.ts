/**
 * Scores one segment of a title on this machine: opens each input near the segment's first
 * frame (openInputAt), decodes the neighbours its features need (neighbourFrames) along with
 * its own frames, and keeps the results of its own frames only. The neighbours go through
 * the backend as frames that are not scored (motion only, as --subsample's left-out frames),
 * so each kept frame's features are those of the single run: same previous reference, same
 * next motion score, and the title's first frame still starts a stream.
 */
import { availableParallelism } from 'node:os';
import { lastValueFrom, map } from '../rx.js';
import { createPlanBackend } from '../kernels/create-backend.js';
import type { BackendKind, FeatureBackend } from '../kernels/backend.js';
import { groupFrames } from '../decode/pair-frames.js';
import { MIN_FRAME_DIMENSION } from '../kernels/limits.js';
import { resolveRun } from '../pipeline/run-plan.js';
import { Credits } from '../pipeline/credits.js';
import { pullWithCredits } from '../pipeline/pull-observable.js';
import type { FrameResult } from '../pipeline/writers/types.js';
import type { FrameGroup, FrameSource } from '../types.js';
import { openInputAt } from './open-at.js';
import { backendKey, planKey, type BackendCache } from './backend-cache.js';
import type { SegmentJobData } from './jobs.js';

export interface SegmentScorerOptions {
  backend?: BackendKind | 'auto';
  threads?: number;
  ffmpegPath?: string;
  gpuAdapter?: string;
  onWarning?: (message: string) => void;
  /** Backends kept between segments (the worker's); without it each segment opens and closes its own. */
  backends?: BackendCache;
  /** Called once the segment has decoded its last frame (the rest is the backend's): the worker may start its next one. */
  onDecoded?: () => void;
}

export interface ScoredSegment {
  /** Per rendition, its frames in [start, end) that are scored, in order. */
  renditions: FrameResult[][];
  /** Frames decoded that the segment does not keep. */
  extraFrames: number;
}

export async function scoreSegment(job: SegmentJobData, options: SegmentScorerOptions = {}): Promise<ScoredSegment> {
  const { title, start, end } = job;
  const { previous, next } = title.neighbours;
  const first = Math.max(0, start - previous);
  // The last segment reads on to the end of the inputs, as the single run does.
  const stop = job.last ? undefined : Math.min(title.frames, end + next);
  const frameCnt = stop !== undefined ? stop - first : title.frameCntGiven ? title.frames - first : 0;
  const threads = options.threads ?? availableParallelism();
  const inFlight = Math.max(4, threads * 2 + 2);
  // Every worker plans the same run from the title: its models and --feature requests.
  const resolve = () => resolveRun({ models: title.models, features: title.features, noPrediction: title.noPrediction });
  const { plan, models } = await (options.backends ? options.backends.plan(planKey(title), resolve) : resolve());
  const open = (input: SegmentJobData['title']['reference'], scaleTo?: { width: number; height: number }) =>
    openInputAt(input.input, input.index, first + input.skip, {
      label: input.label,
      poolSlots: inFlight + 2,
      planes: plan.planes,
      ...(title.raw ? { raw: title.raw } : {}),
      ...(options.ffmpegPath !== undefined ? { ffmpegPath: options.ffmpegPath } : {}),
      ...(scaleTo ? { scaleTo } : {}),
    });
  const ref = open(title.reference);
  const dis = title.renditions.map((r) => open(r, r.scaleTo));
  const sources: FrameSource[] = [ref.source, ...dis.map((d) => d.source)];
  let backend: FeatureBackend | undefined;
  const key = backendKey(title);
  let healthy = false;
  try {
    const open = () =>
      createPlanBackend(plan, options.backend ?? 'cpu', {
        threads,
        ...(options.gpuAdapter !== undefined ? { gpuAdapter: options.gpuAdapter } : {}),
        ...(options.onWarning ? { onWarning: options.onWarning } : {}),
      });
    backend = options.backends ? await options.backends.acquire(key, open) : await open();
    const subsample = title.subsample > 1 ? title.subsample : 1;
    let decoded = 0;
    async function* groups(): AsyncGenerator<FrameGroup> {
      for await (const group of groupFrames(ref.source, dis.map((d) => d.source), {
        frameSkipRef: ref.skip,
        frameSkipDist: dis.map((d) => d.skip),
        frameCnt,
        minDimension: MIN_FRAME_DIMENSION,
        countRemaining: false,
      })) {
        decoded++;
        const index = first + group.index;
        const scored = index >= start && (job.last || index < end) && index % subsample === 0;
        yield { ...group, index, scored };
      }
      // A cpu backend serves the next segment beside this one's last frames (BackendCache);
      // a gpu backend serves one segment at a time, so its worker waits for the end.
      if (backend!.kind === 'cpu') options.onDecoded?.();
    }
    const credits = new Credits(inFlight);
    const kept: FrameResult[][] = title.renditions.map(() => []);
    await lastValueFrom(
      backend.extractMany(pullWithCredits({ [Symbol.asyncIterator]: groups }, credits)).pipe(
        map((group) => {
          credits.release();
          group.renditions.forEach((frame, k) => {
            if (!frame) return;
            const scores: Record<string, number> = {};
            for (const model of models) Object.assign(scores, model.predict(frame.features));
            const result: FrameResult = { index: frame.index, features: frame.features, scores };
            if (frame.refPts !== undefined) result.refPts = frame.refPts;
            if (frame.disPts !== undefined) result.disPts = frame.disPts;
            kept[k]!.push(result);
          });
        }),
      ),
      { defaultValue: undefined },
    );
    const own = (job.last ? Math.max(0, first + decoded - start) : end - start);
    healthy = true;
    return { renditions: kept, extraFrames: ref.skip + Math.max(0, decoded - own) };
  } finally {
    await Promise.all(sources.map((s) => s.close().catch(() => undefined)));
    if (backend && options.backends) await options.backends.release(backend, healthy);
    else await backend?.close().catch(() => undefined);
  }
}

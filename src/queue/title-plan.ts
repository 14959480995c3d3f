/**
 * A title ready for the queue: its inputs indexed (frame counts, where decoding can start),
 * the renditions that need scaling found, its length after skips and --frame_cnt, its
 * segments planned. Done once, by the submitting process; the workers only read.
 */
import { UsageError, VmafError } from '../errors.js';
import type { LadderOptions, ResolvedRendition } from '../pipeline/ladder-types.js';
import { resolveRun, runModelSpecs } from '../pipeline/run-plan.js';
import type { ExtractorRequest } from '../extractors/request.js';
import { indexInput, startFrames, type InputIndex } from '../decode/input-index.js';
import { neighbourFrames } from './neighbour-frames.js';
import { DEFAULT_SEGMENT_LENGTH, planSegments, segmentFrames, type Segment, type SegmentLength } from './segment-plan.js';
import { titleIdOf, type TitleInput, type TitleSpec } from './jobs.js';
import type { FrameInput } from '../decode/open-source.js';

export interface PlannedTitle {
  id: string;
  spec: TitleSpec;
  segments: Segment[];
}

function pathOf(input: FrameInput, what: string): string {
  if (typeof input !== 'string' || input === '-') throw new UsageError(`${what}: a queued title needs a path or URL the workers can read, not standard input or a stream`);
  return input;
}

export async function planTitle(reference: FrameInput, renditions: readonly ResolvedRendition[], options: LadderOptions & { segment?: SegmentLength | undefined }): Promise<PlannedTitle> {
  const refPath = pathOf(reference, 'the reference');
  const raw =
    options.width !== undefined && options.height !== undefined
      ? { width: options.width, height: options.height, ...(options.pixelFormat ? { pixelFormat: options.pixelFormat } : {}), ...(options.bitDepth !== undefined ? { bitDepth: options.bitDepth } : {}) }
      : undefined;
  const indexOptions = { ...(raw ? { raw } : {}), ...(options.ffmpegPath !== undefined ? { ffmpegPath: options.ffmpegPath } : {}) };
  const refIndex = await indexInput(refPath, { ...indexOptions, label: refPath });
  const scale = options.scale === true;
  const disInputs: Array<TitleInput & { name: string }> = [];
  for (const r of renditions) {
    const input = pathOf(r.input, r.label);
    let index: InputIndex = await indexInput(input, { ...indexOptions, label: r.label });
    let scaleTo: { width: number; height: number } | undefined;
    if (scale && (index.width !== refIndex.width || index.height !== refIndex.height)) {
      if (raw) throw new UsageError(`${r.label}: scaling raw input is not available on a queue; give inputs of the same size`);
      scaleTo = { width: refIndex.width, height: refIndex.height };
      index = await indexInput(input, { ...indexOptions, viaFfmpeg: true, label: r.label });
    }
    disInputs.push({ input, label: r.label, name: r.name, index, skip: r.frameSkip ?? options.frameSkipDist ?? 0, ...(scaleTo ? { scaleTo } : {}) });
  }
  const skipRef = options.frameSkipRef ?? 0;
  // As groupFrames pairs them: until the reference ends or the last rendition does.
  let frames = Math.min(refIndex.frames - skipRef, Math.max(...disInputs.map((d) => d.index.frames - d.skip)));
  const frameCnt = options.frameCnt ?? 0;
  if (frameCnt > 0) frames = Math.min(frames, frameCnt);
  if (frames <= 0) throw new VmafError('E_INPUT_EMPTY', `${refPath}: no frames to score after the skips`);
  const features = (options.features ?? []).map(featureText);
  const { plan } = await resolveRun({ ...options, features });
  const neighbours = neighbourFrames(plan);
  const fps = await referenceFps(refIndex);
  const length = segmentFrames(options.segment ?? DEFAULT_SEGMENT_LENGTH, fps);
  const segments = planSegments(frames, length, startFrames(refIndex), skipRef, neighbours);
  const spec: TitleSpec = {
    reference: { input: refPath, label: refPath, index: refIndex, skip: skipRef },
    renditions: disInputs,
    models: runModelSpecs(options),
    features,
    noPrediction: options.noPrediction === true,
    subsample: options.subsample ?? 1,
    frames,
    frameCntGiven: frameCnt > 0,
    ...(raw ? { raw } : {}),
    neighbours,
  };
  return { id: titleIdOf(spec, segments), spec, segments };
}

/** A --feature request as the text workers parse again: a queued title's features cross Redis as text. */
function featureText(feature: string | ExtractorRequest): string {
  if (typeof feature === 'string') return feature;
  const changed = feature.definition.options.filter((o) => feature.options[o.name] !== o.default);
  return changed.length === 0 ? feature.definition.name : `${feature.definition.name}=${changed.map((o) => `${o.name}=${String(feature.options[o.name])}`).join(':')}`;
}

/** The reference's frame rate, for --segment in seconds (known for y4m and ffmpeg inputs). */
async function referenceFps(index: InputIndex): Promise<number | undefined> {
  if (index.kind === 'y4m') {
    const rate = /\sF(\d+):(\d+)/.exec(index.header);
    return rate ? Number(rate[1]) / Number(rate[2]) : undefined;
  }
  if (index.kind === 'ffmpeg') return index.fps;
  return undefined;
}

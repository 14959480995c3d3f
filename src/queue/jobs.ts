/**
 * What travels on the queue: a title (one reference, its renditions, the options that change
 * scores) and its segments. A title is a BullMQ flow: a parent job in TITLE_QUEUE with one
 * child per segment in SEGMENT_QUEUE. Job ids are derived from the title's content, so adding
 * the same title again (the submitting process restarted) finds the segments already done.
 */
import { createHash } from 'node:crypto';
import type { RawGeometry } from '../decode/raw-reader.js';
import type { ModelSpec } from '../pipeline/model/index.js';
import type { EncodedFrames } from './result-codec.js';
import type { InputIndex } from '../decode/input-index.js';
import type { NeighbourFrames } from './neighbour-frames.js';

export const TITLE_QUEUE = 'vmaf-stream-titles';
export const SEGMENT_QUEUE = 'vmaf-stream-segments';
/** Job name of a segment (BullMQ names are free text; this one says what the job is). */
export const SEGMENT_JOB = 'segment';
export const TITLE_JOB = 'title';

export interface TitleInput {
  /** A path or URL, as the workers will read it. */
  input: string;
  /** Names the input in messages. */
  label: string;
  index: InputIndex;
  /** Frames of this input before output frame 0 (--frame_skip_ref / _dist, per rendition). */
  skip: number;
  /** Scale its frames to the reference's size (a ladder's smaller rendition). */
  scaleTo?: { width: number; height: number };
}

/** Everything a worker needs to score any segment of a title. */
export interface TitleSpec {
  reference: TitleInput;
  renditions: Array<TitleInput & { name: string }>;
  models: ModelSpec[];
  /** --feature requests, as libvmaf's text (every worker plans the same run from them). */
  features: string[];
  noPrediction: boolean;
  subsample: number;
  /** Output frames of the title (after skips and --frame_cnt). */
  frames: number;
  /** --frame_cnt was given: the title ends at `frames` even if the inputs go on. */
  frameCntGiven: boolean;
  raw?: RawGeometry;
  neighbours: NeighbourFrames;
}

export interface SegmentJobData {
  titleId: string;
  title: TitleSpec;
  start: number;
  end: number;
  /** Position in the title, counting from 0. */
  position: number;
  /** The title's last segment: it reads to the end of the inputs (see the worker). */
  last: boolean;
}

export interface SegmentJobResult {
  start: number;
  end: number;
  /** Per rendition, in the title's order. */
  renditions: EncodedFrames[];
  /** Which worker did it, and how long it took (for status and measurements). */
  worker: string;
  seconds: number;
  /** Frames decoded outside [start, end) (neighbours, the rest of a GOP). */
  extraFrames: number;
}

/** A title's id: a hash of what determines its results. */
export function titleIdOf(title: TitleSpec, segments: ReadonlyArray<{ start: number; end: number }>): string {
  const hash = createHash('sha256').update(JSON.stringify({ title, segments })).digest('hex');
  return `title-${hash.slice(0, 32)}`;
}

export function segmentJobId(titleId: string, position: number): string {
  return `${titleId}-s${position}`;
}

/** A Redis key set when a title failed: workers skip its remaining segments. */
export function cancelKey(prefix: string, titleId: string): string {
  return `${prefix}:vmaf-stream:cancelled:${titleId}`;
}

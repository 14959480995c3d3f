/**
 * Cutting a title into segments: ranges [start, end) of output frame indices (libvmaf's
 * frameNum, counted after the skips) of about the length the user asked for. A compressed
 * reference is cut where a segment's first decoded frame (its first frame less the frames
 * before it that its features need, see neighbourFrames) is a keyframe, so no segment decodes
 * a GOP it does not score; y4m and raw references are cut at any frame.
 */
import { UsageError } from '../errors.js';
import type { NeighbourFrames } from './neighbour-frames.js';

export interface Segment {
  /** First output frame of the segment. */
  start: number;
  /** One past its last output frame. */
  end: number;
}

/** `--segment 600` (frames) or `--segment 20s` (seconds of the reference). */
export type SegmentLength = { frames: number } | { seconds: number };

/** Default: a few thousand frames, long enough that decoding the neighbours costs nothing. */
export const DEFAULT_SEGMENT_LENGTH: SegmentLength = { frames: 3000 };

export function parseSegmentLength(text: string): SegmentLength {
  const seconds = /^(\d+(?:\.\d+)?)s$/.exec(text);
  if (seconds && Number(seconds[1]) > 0) return { seconds: Number(seconds[1]) };
  const frames = /^(\d+)f?$/.exec(text);
  if (frames && Number(frames[1]) >= 1) return { frames: Number(frames[1]) };
  throw new UsageError(`--segment: expected a number of frames (600) or seconds (20s), got "${text}"`);
}

/** The length in frames; seconds need the reference's frame rate. */
export function segmentFrames(length: SegmentLength, fps: number | undefined): number {
  if ('frames' in length) return length.frames;
  if (!fps || !Number.isFinite(fps)) throw new UsageError('--segment in seconds needs a reference with a known frame rate; give a number of frames');
  return Math.max(1, Math.round(length.seconds * fps));
}

/**
 * Segments of `total` frames, each at least `length` long (the last may be shorter) and each
 * starting where the reference can start decoding: `starts` lists the reference's decodable
 * frames (keyframes, in its own numbering) or 'any'. `skipRef` frames of the reference
 * precede output frame 0.
 */
export function planSegments(total: number, length: number, starts: readonly number[] | 'any', skipRef: number, neighbours: NeighbourFrames): Segment[] {
  if (!Number.isInteger(length) || length < 1) throw new UsageError(`segment length must be a whole number of frames >= 1, got ${length}`);
  // Output frames a segment may start at: its first decoded frame is a keyframe.
  const allowed = starts === 'any' ? undefined : starts.map((k) => k - skipRef + neighbours.previous).filter((s) => s > 0 && s < total);
  const segments: Segment[] = [];
  let start = 0;
  while (start < total) {
    let end = Math.min(total, start + length);
    if (allowed && end < total) end = allowed.find((s) => s >= end) ?? total;
    segments.push({ start, end });
    start = end;
  }
  return segments;
}

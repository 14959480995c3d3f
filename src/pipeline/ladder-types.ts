/**
 * The types of a ladder run (one reference, several renditions): its renditions, options,
 * results and deliveries. Their own module so that what runs on them (the queue's title
 * runs) and the engine (ladder.ts), which loads the queue lazily, import these and not
 * each other.
 */
import type { AlignMode } from '../align/align-pairs.js';
import type { FrameInput } from '../decode/open-source.js';
import type { ScoreOptions } from './score-options.js';
import type { FrameResult } from './writers/types.js';

/** One rendition of a ladder: its input, and optionally its name and its own frame skip. */
export interface Rendition {
  input: FrameInput;
  /**
   * Names the rendition in results and logs (`{name}` in the CLI's -o). Default: the file's
   * base name without its extension (`720p` for `out/720p.mp4`), `stdin` for '-', else
   * `rendition<N>` (counting from 1). Names must be unique.
   */
  name?: string;
  /** Frames dropped from the start of this rendition (default: options.frameSkipDist). */
  frameSkip?: number;
  /** This rendition's alignment (default: options.align): 'auto' or an offset (see QcOptions.align). */
  align?: AlignMode;
}

/** A rendition: an input alone (its name derived from it) or a Rendition. */
export type RenditionInput = FrameInput | Rendition;

/** Options of a ladder run: score()'s, except that `scale` defaults to true. */
export interface LadderOptions extends ScoreOptions {
  /**
   * Scale renditions of another size to the reference's size (bicubic, through ffmpeg).
   * Default true for scoreLadder() (score() keeps false: a size mismatch is an error).
   */
  scale?: boolean;
}

/** One frame's result for one rendition. */
export interface LadderResult {
  /** The rendition's name. */
  rendition: string;
  result: FrameResult;
}

/** One result and the hand-back of its credit, called once the consumer has it. */
export interface Delivery<T = FrameResult> {
  result: T;
  delivered(): void;
}

/** A rendition with its name and label settled. */
export interface ResolvedRendition {
  input: FrameInput;
  name: string;
  /** Names the input in messages: its path, or a label. */
  label: string;
  frameSkip?: number;
  align?: AlignMode;
}

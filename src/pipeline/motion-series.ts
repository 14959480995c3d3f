/**
 * integer_motion's per-instance finish, as libvmaf 3.2.0's integer_motion.c computes it
 * (its extract for the SAD score, its flush for motion2 and motion3), for any options.
 *
 * With d the SAD distance (1; 2 with motion_five_frame_window), n the stream's length and
 * MIN(a, b) = a < b ? a : b:
 *   score[i]   = 0 for i < d or motion_force_zero; else
 *                MIN(SAD(ref[i - d], ref[i]) / 256 / (w * h) * fps_weight, max_val)
 *   motion2[i] = 0                                   for i < d
 *              = score[i]                            when frame i + 1 does not exist
 *              = MIN(score[i - d + 1], score[i + 1])  when i - d + 1 >= d
 *              = score[i + 1]                        otherwise (d = 2, i = 2)
 *   blend(x)   = x * blend_factor + (1 - blend_factor) * MIN(blend_offset, x)
 *   p[i]       = MIN(blend(motion2[i]), max_val)     for i >= d
 *   stamp      = n > d ? MIN(blend(score[d]), max_val) : 0   (note: frame d's score, not its motion2)
 *   motion3[i] = stamp                               for i < d
 *              = (p[i] + p'[i - 1]) / 2              with motion_moving_average, where p'[d - 1] = stamp
 *              = p[i]                                otherwise
 * All in doubles, in that order (JavaScript's numbers are the same IEEE doubles).
 *
 * libvmaf computes motion2 and motion3 at the end of the stream; they need less: frame i's
 * values are known once frame max(i + 1, d) has its score, or the stream has ended
 * (MotionHistory.ready). So the default instance's frame i waits one frame, the five-frame
 * window's frames 0 and 1 wait for frame 2.
 */
import type { MotionOptions } from '../extractors/integer_motion/motion-options.js';
import { sadDistance } from '../extractors/integer_motion/motion-options.js';

export interface MotionValues {
  motion2: number;
  motion3: number;
}

/** C's MIN macro (the first operand unless the second is smaller). */
function cmin(a: number, b: number): number {
  return a < b ? a : b;
}

/** libvmaf's motion_blend. */
export function motionBlend(score: number, factor: number, offset: number): number {
  return score * factor + (1 - factor) * cmin(offset, score);
}

/**
 * A frame's SAD score: `sad` is the SAD of its reference against the reference
 * sadDistance(o) frames earlier, null where there is none (the first frames).
 * Number(sad) is exact: a SAD stays far below 2^53.
 */
export function motionSadScore(sad: bigint | null, width: number, height: number, o: MotionOptions): number {
  if (o.forceZero || sad === null) return 0;
  return cmin((Number(sad) / 256 / (width * height)) * o.fpsWeight, o.maxVal);
}

/**
 * Frame i's motion2 and motion3. `score(j)` gives frame j's score for the frames the value
 * reads (see the header); `n` is the stream's length, or Infinity while unknown, which is
 * right as long as frame max(i + 1, d) exists.
 */
export function motionValuesAt(i: number, score: (j: number) => number, n: number, o: MotionOptions): MotionValues {
  const d = sadDistance(o);
  const clipBlend = (x: number): number => cmin(motionBlend(x, o.blendFactor, o.blendOffset), o.maxVal);
  const stamp = (): number => (n > d ? clipBlend(score(d)) : 0);
  if (i < d) return { motion2: 0, motion3: stamp() };
  const motion2At = (k: number): number => {
    if (k + 1 >= n) return score(k);
    const lo = k - (d - 1);
    if (lo < d) return score(k + 1);
    const a = score(lo);
    const b = score(k + 1);
    return a < b ? a : b;
  };
  const motion2 = motion2At(i);
  const processed = clipBlend(motion2);
  if (!o.movingAverage) return { motion2, motion3: processed };
  const previous = i - 1 < d ? stamp() : clipBlend(motion2At(i - 1));
  return { motion2, motion3: (processed + previous) / 2 };
}

/** Whole-stream form: every frame's values from every frame's score. */
export function motionSeries(scores: readonly number[], o: MotionOptions): MotionValues[] {
  const score = (j: number): number => {
    const s = scores[j];
    if (s === undefined) throw new RangeError(`motion: no score for frame ${j}`);
    return s;
  };
  return scores.map((_, i) => motionValuesAt(i, score, scores.length, o));
}

/**
 * One instance's scores as a stream gives them, in frame order, keeping only the few that
 * later values still read (memory stays flat however long the stream).
 */
export class MotionHistory {
  readonly #o: MotionOptions;
  readonly #d: number;
  /** Scores of frames base, base + 1, ... */
  #scores: number[] = [];
  #base = 0;
  /** Frame d's score: the first frames' motion3 reads it. */
  #atDistance: number | undefined;

  constructor(o: MotionOptions) {
    this.#o = o;
    this.#d = sadDistance(o);
  }

  /** Frames pushed so far. */
  get length(): number {
    return this.#base + this.#scores.length;
  }

  push(score: number): void {
    if (this.length === this.#d) this.#atDistance = score;
    this.#scores.push(score);
  }

  /**
   * Whether frame i's values are known: with `n`, the stream's length (it has ended there),
   * always for i < n; without, once frame max(i + 1, d) is in.
   */
  ready(i: number, n?: number): boolean {
    return n !== undefined ? i < n && n <= this.length : this.length > Math.max(i + 1, this.#d);
  }

  /** Frame i's values (ready(i, n) must hold). */
  valuesAt(i: number, n?: number): MotionValues {
    if (!this.ready(i, n)) throw new RangeError(`motion: frame ${i}'s values are not known yet`);
    const score = (j: number): number => {
      if (j === this.#d && this.#atDistance !== undefined) return this.#atDistance;
      const s = this.#scores[j - this.#base];
      if (s === undefined) throw new RangeError(`motion: frame ${j}'s score is no longer kept`);
      return s;
    };
    return motionValuesAt(i, score, n ?? Infinity, this.#o);
  }

  /** Frames before `i` will not be asked for again: forgets what only they read. */
  forgetBefore(i: number): void {
    // Frame i reads scores from frame i - 2 on (the moving average over the five-frame window).
    const keepFrom = i - 2;
    const drop = Math.min(keepFrom - this.#base, this.#scores.length);
    if (drop <= 0) return;
    this.#scores.splice(0, drop);
    this.#base += drop;
  }
}

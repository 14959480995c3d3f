/**
 * integer_motion2, as libvmaf 3.2.0's integer motion flush computes it with default
 * options: with score[i] a frame's own motion score (VMAF_integer_feature_motion_sad_score,
 * 0 for the first frame),
 *   motion2[0]    = 0
 *   motion2[i]    = min(score[i], score[i + 1])   while frame i + 1 exists
 *   motion2[last] = score[last]                   (and 0 when the last is also the first)
 *
 * libvmaf computes it after the last frame; here frame i is emitted as soon as frame i + 1
 * arrives (one frame of latency), and the last one when the stream completes.
 *
 * With --subsample libvmaf still computes motion on every frame, so score[i + 1] may come
 * from a frame that is not scored: such frames pass through here with `scored: false`,
 * count as neighbours, and are not emitted.
 */
import { Observable, type OperatorFunction } from 'rxjs';
import type { FeatureValues, FrameFeatures } from '../types.js';
import { MOTION2_KEY } from '../kernels/native-features.js';

/** One frame before integer_motion2 is known. */
export interface MotionFrame {
  index: number;
  /** Every feature except integer_motion2. */
  features: FeatureValues;
  /** This frame's motion score (0 for the first frame of the stream). */
  motionScore: number;
  refPts?: number;
  disPts?: number;
  /** False: a frame read for motion only; it is not emitted. Absent means true. */
  scored?: boolean;
}

/**
 * integer_motion2 of a frame from its own motion score and the next frame's
 * (undefined when it is the last frame). `isFirst`: the first frame of the stream.
 */
export function motion2Value(score: number, nextScore: number | undefined, isFirst: boolean): number {
  if (isFirst) return 0;
  if (nextScore === undefined) return score;
  return nextScore < score ? nextScore : score;
}

/** Whole-sequence form, for tests and batch use. */
export function motion2Sequence(scores: readonly number[]): number[] {
  return scores.map((score, i) => motion2Value(score, scores[i + 1], i === 0));
}

function complete(frame: MotionFrame, motion2: number): FrameFeatures {
  const out: FrameFeatures = { index: frame.index, features: { ...frame.features, [MOTION2_KEY]: motion2 } };
  if (frame.refPts !== undefined) out.refPts = frame.refPts;
  if (frame.disPts !== undefined) out.disPts = frame.disPts;
  return out;
}

/**
 * Fills in integer_motion2: holds each frame until the next one arrives (or the source
 * completes), then emits it unless it has `scored: false`. Frames must arrive in order,
 * unscored ones included. On error the held frame is dropped and the error passes through.
 */
export function withMotion2(): OperatorFunction<MotionFrame, FrameFeatures> {
  return (source) =>
    new Observable<FrameFeatures>((subscriber) => {
      let held: MotionFrame | undefined;
      let heldIsFirst = true;
      const subscription = source.subscribe({
        next(frame) {
          const previous = held;
          const previousIsFirst = heldIsFirst;
          held = frame;
          heldIsFirst = previous === undefined;
          if (previous && previous.scored !== false) {
            subscriber.next(complete(previous, motion2Value(previous.motionScore, frame.motionScore, previousIsFirst)));
          }
        },
        error(error) {
          held = undefined;
          subscriber.error(error);
        },
        complete() {
          const last = held;
          held = undefined;
          if (last && last.scored !== false) subscriber.next(complete(last, motion2Value(last.motionScore, undefined, heldIsFirst)));
          subscriber.complete();
        },
      });
      return () => {
        held = undefined;
        subscription.unsubscribe();
      };
    });
}

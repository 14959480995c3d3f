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
import { Observable, map, mergeMap, type OperatorFunction } from 'rxjs';
import type { FeatureValues, FrameFeatures, GroupFeatures } from '../types.js';
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

/** One rendition's frame before integer_motion2 is known (see MotionGroup). */
export interface MotionEntry {
  /** Every feature except integer_motion2. */
  features: FeatureValues;
  disPts?: number;
}

/**
 * A group of frames sharing one reference frame (a ladder's renditions), before
 * integer_motion2 is known. Motion reads the reference only, so the group has one motion score.
 */
export interface MotionGroup {
  index: number;
  /** The reference frame's motion score (0 for the first frame of the stream). */
  motionScore: number;
  refPts?: number;
  /**
   * Per rendition: its features (a scored frame), null (it has a frame here, not scored:
   * a neighbour for motion2 only), or undefined (the rendition has ended: its previous
   * frame was its last).
   */
  renditions: ReadonlyArray<MotionEntry | null | undefined>;
}

function complete(index: number, refPts: number | undefined, entry: MotionEntry, motion2: number): FrameFeatures {
  const out: FrameFeatures = { index, features: { ...entry.features, [MOTION2_KEY]: motion2 } };
  if (refPts !== undefined) out.refPts = refPts;
  if (entry.disPts !== undefined) out.disPts = entry.disPts;
  return out;
}

/**
 * withMotion2 for groups: holds each group until the next one arrives (or the source
 * completes), then emits it with integer_motion2 filled in for each rendition that has a
 * scored frame in it. A rendition absent from the next group has ended, so its frame here
 * is its last (motion2 = its own score), exactly as in a run of that rendition alone.
 * Every group is emitted, also those with no scored frame (all entries undefined).
 * Groups must arrive in order. On error the held group is dropped and the error passes through.
 */
export function withGroupMotion2(): OperatorFunction<MotionGroup, GroupFeatures> {
  return (source) =>
    new Observable<GroupFeatures>((subscriber) => {
      let held: MotionGroup | undefined;
      let heldIsFirst = true;
      const emit = (group: MotionGroup, next: MotionGroup | undefined, isFirst: boolean): void => {
        const renditions = group.renditions.map((entry, k) => {
          if (!entry) return undefined;
          const nextScore = next?.renditions[k] !== undefined ? next.motionScore : undefined;
          return complete(group.index, group.refPts, entry, motion2Value(group.motionScore, nextScore, isFirst));
        });
        const out: GroupFeatures = { index: group.index, renditions };
        if (group.refPts !== undefined) out.refPts = group.refPts;
        subscriber.next(out);
      };
      const subscription = source.subscribe({
        next(group) {
          const previous = held;
          const previousIsFirst = heldIsFirst;
          held = group;
          heldIsFirst = previous === undefined;
          if (previous) emit(previous, group, previousIsFirst);
        },
        error(error) {
          held = undefined;
          subscriber.error(error);
        },
        complete() {
          const last = held;
          held = undefined;
          if (last) emit(last, undefined, heldIsFirst);
          subscriber.complete();
        },
      });
      return () => {
        held = undefined;
        subscription.unsubscribe();
      };
    });
}

/**
 * Fills in integer_motion2: holds each frame until the next one arrives (or the source
 * completes), then emits it unless it has `scored: false`. Frames must arrive in order,
 * unscored ones included. On error the held frame is dropped and the error passes through.
 * (withGroupMotion2 with one rendition.)
 */
export function withMotion2(): OperatorFunction<MotionFrame, FrameFeatures> {
  return (source) =>
    source.pipe(
      map((frame): MotionGroup => {
        const entry: MotionEntry | null = frame.scored === false ? null : { features: frame.features };
        if (entry && frame.disPts !== undefined) entry.disPts = frame.disPts;
        const group: MotionGroup = { index: frame.index, motionScore: frame.motionScore, renditions: [entry] };
        if (frame.refPts !== undefined) group.refPts = frame.refPts;
        return group;
      }),
      withGroupMotion2(),
      mergeMap((group) => (group.renditions[0] ? [group.renditions[0]] : [])),
    );
}

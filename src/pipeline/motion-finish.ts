/**
 * The core backends' last step: integer_motion2 and integer_motion3 of each planned motion
 * instance (motion-series.ts has the arithmetic), added to each frame as soon as its frames
 * allow: frame i once frame i + 1 has its scores (the five-frame window's first two frames:
 * once frame 2 has), or when the stream (or that rendition) ends.
 *
 * With --subsample libvmaf still computes motion on every frame, so a value may read a frame
 * that is not scored: such frames pass through here as null renditions, count as
 * neighbours, and are not emitted.
 */
import { Observable, map, mergeMap, type OperatorFunction } from '../rx.js';
import type { FeatureValues, FrameFeatures, GroupFeatures } from '../types.js';
import type { MotionInstance } from '../extractors/integer_motion/motion-options.js';
import { MotionHistory } from './motion-series.js';

/** One rendition's frame before its delayed motion values are known. */
export interface MotionEntry {
  /** Every feature except the instances' motion2 and motion3. */
  features: FeatureValues;
  disPts?: number;
}

/**
 * A group of frames sharing one reference frame (a ladder's renditions), before the
 * delayed motion values are known. Motion reads the reference only, so the scores are the group's.
 */
export interface MotionGroup {
  index: number;
  /** Per motion instance, in the order withGroupMotion was given them: this frame's SAD score. */
  scores: readonly number[];
  refPts?: number;
  /**
   * Per rendition: its features (a scored frame), null (it has a frame here, not scored: a
   * neighbour only), or undefined (the rendition has ended: its previous frame was its last).
   */
  renditions: ReadonlyArray<MotionEntry | null | undefined>;
}

/** One frame (a group of one) before its delayed motion values are known. */
export interface MotionFrame {
  index: number;
  features: FeatureValues;
  /** Per motion instance: this frame's SAD score. */
  scores: readonly number[];
  refPts?: number;
  disPts?: number;
  /** False: a frame read for motion only; it is not emitted. Absent means true. */
  scored?: boolean;
}

/**
 * Holds each group until every instance's values are known for every rendition in it, then
 * emits it with each scored rendition's motion2 and motion3 keys added (instance by
 * instance). A rendition absent from a group has ended: its frames are valued as in a run of
 * that rendition alone, ending there. Every group is emitted, also those with no scored
 * frame. Groups must arrive in order. On error the held groups are dropped and the error
 * passes through.
 */
export function withGroupMotion(instances: readonly MotionInstance[]): OperatorFunction<MotionGroup, GroupFeatures> {
  return (source) =>
    new Observable<GroupFeatures>((subscriber) => {
      const histories = instances.map((x) => new MotionHistory(x.options));
      /** Groups not yet emitted, with their position in the stream. */
      let held: Array<{ group: MotionGroup; position: number }> = [];
      let count = 0;
      /** Per rendition: undefined while it goes on (or has not begun), else its length. */
      const ends: Array<number | undefined> = [];
      const seen: boolean[] = [];

      const ready = (group: MotionGroup, position: number): boolean =>
        group.renditions.every((entry, k) => !entry || histories.every((h) => h.ready(position, ends[k])));

      const emit = (group: MotionGroup, position: number): void => {
        const renditions = group.renditions.map((entry, k): FrameFeatures | undefined => {
          if (!entry) return undefined;
          const features: FeatureValues = { ...entry.features };
          instances.forEach((x, j) => {
            const v = histories[j]!.valuesAt(position, ends[k]);
            features[x.keys.motion2] = v.motion2;
            features[x.keys.motion3] = v.motion3;
          });
          const out: FrameFeatures = { index: group.index, features };
          if (group.refPts !== undefined) out.refPts = group.refPts;
          if (entry.disPts !== undefined) out.disPts = entry.disPts;
          return out;
        });
        const out: GroupFeatures = { index: group.index, renditions };
        if (group.refPts !== undefined) out.refPts = group.refPts;
        subscriber.next(out);
      };

      const flush = (): void => {
        let done = 0;
        while (done < held.length && ready(held[done]!.group, held[done]!.position)) {
          emit(held[done]!.group, held[done]!.position);
          done++;
        }
        if (done === 0) return;
        held = held.slice(done);
        const next = held[0]?.position ?? count;
        for (const h of histories) h.forgetBefore(next);
      };

      const subscription = source.subscribe({
        next(group) {
          try {
            if (group.scores.length !== instances.length) {
              throw new RangeError(`frame ${group.index}: ${group.scores.length} motion scores for ${instances.length} motion instances`);
            }
            const position = count++;
            group.scores.forEach((s, j) => histories[j]!.push(s));
            group.renditions.forEach((entry, k) => {
              if (entry !== undefined) {
                if (ends[k] !== undefined) throw new RangeError(`frame ${group.index}: distorted input ${k + 1} has a frame after its end`);
                seen[k] = true;
              } else if (seen[k] && ends[k] === undefined) {
                ends[k] = position;
              }
            });
            held.push({ group, position });
            flush();
          } catch (error) {
            held = [];
            subscriber.error(error);
          }
        },
        error(error) {
          held = [];
          subscriber.error(error);
        },
        complete() {
          seen.forEach((s, k) => {
            if (s && ends[k] === undefined) ends[k] = count;
          });
          try {
            flush();
          } catch (error) {
            held = [];
            subscriber.error(error);
            return;
          }
          subscriber.complete();
        },
      });
      return () => {
        held = [];
        subscription.unsubscribe();
      };
    });
}

/**
 * withGroupMotion for single frames (groups of one): frames with `scored: false` count as
 * neighbours and are not emitted.
 */
export function withMotion(instances: readonly MotionInstance[]): OperatorFunction<MotionFrame, FrameFeatures> {
  return (source) =>
    source.pipe(
      map((frame): MotionGroup => {
        const entry: MotionEntry | null = frame.scored === false ? null : { features: frame.features };
        if (entry && frame.disPts !== undefined) entry.disPts = frame.disPts;
        const group: MotionGroup = { index: frame.index, scores: frame.scores, renditions: [entry] };
        if (frame.refPts !== undefined) group.refPts = frame.refPts;
        return group;
      }),
      withGroupMotion(instances),
      mergeMap((group) => (group.renditions[0] ? [group.renditions[0]] : [])),
    );
}

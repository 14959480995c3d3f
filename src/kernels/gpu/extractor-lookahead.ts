/**
 * The gpu backend's last step for registered extractors whose values wait for the next
 * frame (float_motion's motion2 and motion3; GpuExtractorSet.finishLookahead): each group is
 * held until the next one is known (or the stream ends), then its scored frames get their
 * final values from its own values and the next group's, per rendition, as the cpu backend's
 * plan backend finishes them (a rendition absent from the next group has ended there; its
 * first frame, scored or not, is its first). Such extractors read only the reference and run
 * on every frame, so their own values are the group's, taken for every group, unscored ones
 * included (`ownOf`). Without such extractors nothing is held.
 */
import { Observable, type OperatorFunction } from '../../rx.js';
import type { GroupFeatures } from '../../types.js';
import type { GpuExtractorSet } from './gpu-extractors.js';

/** One group's lookahead values: per instance its own values, and which renditions have a frame there. */
export interface GroupOwnValues {
  own: Array<number[] | undefined>;
  present: readonly boolean[];
}

export function withExtractorLookahead(
  setOf: () => GpuExtractorSet | undefined,
  ownOf: (index: number) => GroupOwnValues | undefined,
): OperatorFunction<GroupFeatures, GroupFeatures> {
  return (source) =>
    new Observable<GroupFeatures>((subscriber) => {
      let held: { group: GroupFeatures; own: GroupOwnValues } | undefined;
      const seen: boolean[] = [];
      const emit = (set: GpuExtractorSet, group: GroupFeatures, own: GroupOwnValues, next: GroupOwnValues | undefined): void => {
        const renditions = group.renditions.map((frame, k) => {
          if (!own.present[k]) return frame;
          const first = seen[k] !== true;
          seen[k] = true;
          if (!frame) return frame;
          const values = set.finishLookahead(own.own, next?.present[k] ? next.own : undefined, first);
          return { ...frame, features: { ...frame.features, ...values } };
        });
        subscriber.next({ ...group, renditions });
      };
      const subscription = source.subscribe({
        next(group) {
          try {
            const set = setOf();
            const own = set?.lookahead ? ownOf(group.index) : undefined;
            if (!set || !own) {
              subscriber.next(group);
              return;
            }
            const previous = held;
            held = { group, own };
            if (previous) emit(set, previous.group, previous.own, own);
          } catch (error) {
            held = undefined;
            subscriber.error(error);
          }
        },
        error(error) {
          held = undefined;
          subscriber.error(error);
        },
        complete() {
          const last = held;
          held = undefined;
          try {
            if (last) emit(setOf()!, last.group, last.own, undefined);
          } catch (error) {
            subscriber.error(error);
            return;
          }
          subscriber.complete();
        },
      });
      return () => {
        held = undefined;
        subscription.unsubscribe();
      };
    });
}

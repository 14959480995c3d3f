/**
 * How many frames around its own range a segment must decode so that its temporal features
 * come out exactly as in a run over the whole title: the most any extractor instance of the
 * run plan declares (src/extractors: integer motion reads the previous reference, and its
 * motion2 the next frame's motion). A segment [a, b) decodes from a - previous (when a > 0)
 * to b - 1 + next (when b < the end) and keeps only [a, b). The title's first frame keeps its
 * special values (motion 0) because the segment that holds it starts at frame 0 with nothing
 * before it, exactly as the single run does.
 */
import type { NeighbourFrames } from '../extractors/extractor.js';
import type { RunPlan } from '../extractors/plan.js';

export type { NeighbourFrames } from '../extractors/extractor.js';

/** What the features of a run need of neighbouring frames (see the module comment). */
export function neighbourFrames(plan: Pick<RunPlan, 'neighbours'>): NeighbourFrames {
  return { previous: plan.neighbours.previous, next: plan.neighbours.next };
}

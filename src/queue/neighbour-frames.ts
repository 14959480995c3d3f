/**
 * How many frames around its own range a segment must decode so that its temporal features
 * come out exactly as in a run over the whole title.
 *
 * Today's extractors: integer_motion (the per-frame SAD, VMAF_integer_feature_motion_sad_score)
 * reads the previous reference frame; integer_motion2 of frame i is min(motion[i], motion[i+1]),
 * so it reads the next frame's motion. A segment [a, b) therefore decodes from a - 1 (when
 * a > 0) to b (when b < the end) and keeps only [a, b). The title's first frame keeps its
 * special values (motion 0, motion2 0) because the segment that holds it starts at frame 0
 * with nothing before it, exactly as the single run does.
 *
 * TODO(extractor registry): once the registry lands, this must be the maximum over the
 * enabled extractors' declared needs (motion3's five-frame window and moving average, SpEED
 * temporal need more than one frame either side); this function is the one place to change.
 */
export interface NeighbourFrames {
  /** Frames before a segment's first frame that its features read. */
  previous: number;
  /** Frames after its last frame that its features read. */
  next: number;
}

/** What the features of a run need of neighbouring frames (see the module comment). */
export function neighbourFrames(_options: { noPrediction?: boolean | undefined } = {}): NeighbourFrames {
  return { previous: 1, next: 1 };
}

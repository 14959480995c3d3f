/**
 * The typed interfaces between the stages: a FrameSource yields Frames, pairFrames
 * turns two sources into FramePairs, a FeatureBackend turns pairs into FrameFeatures,
 * a Model turns features into scores.
 */

export type ChromaSubsampling = '420' | '422' | '444' | '400';
export type BitDepth = 8 | 10 | 12 | 16;

/** Cb/Cr plane size as ffmpeg lays it out: halved dimensions round up; 0 x 0 for gray. */
export function chromaSize(format: Pick<FrameFormat, 'width' | 'height' | 'chroma'>): { width: number; height: number } {
  const { width, height } = format;
  switch (format.chroma) {
    case '420':
      return { width: Math.ceil(width / 2), height: Math.ceil(height / 2) };
    case '422':
      return { width: Math.ceil(width / 2), height };
    case '444':
      return { width, height };
    case '400':
      return { width: 0, height: 0 };
  }
}

export interface FrameFormat {
  width: number;
  height: number;
  bitDepth: BitDepth;
  chroma: ChromaSubsampling;
  /** Frames per second when the container says so. */
  fps?: number;
}

/**
 * One decoded picture. VIF, ADM and motion read luma only, so only the luma plane is
 * kept: row-major, stride = width, Uint8Array at 8 bits, Uint16Array above.
 */
export interface Frame {
  /** Index in its own input, counting from 0, before any skipping. */
  index: number;
  format: FrameFormat;
  luma: Uint8Array | Uint16Array;
  /**
   * Cb and Cr, where the run's extractors read chroma (packed rows of chromaSize(format)),
   * absent when only luma was decoded or the input is gray.
   */
  chroma?: readonly [Uint8Array | Uint16Array, Uint8Array | Uint16Array];
  /** Presentation time in seconds, where the source knows it. */
  pts?: number;
  /** Gives the frame's memory back to its pool; call once, after the last use. */
  release(): void;
}

/** Yields the frames of one input in order. Ends when the input ends. */
export interface FrameSource extends AsyncIterable<Frame> {
  /** A label for messages: the path, '-' for standard input, or a name. */
  readonly label: string;
  /** Resolves once the header (or first frame) is read. */
  format(): Promise<FrameFormat>;
  /** Stops reading and frees what it holds (an ffmpeg child, a file handle). */
  close(): Promise<void>;
}

export interface FramePair {
  /** Index of the scored frame in the output, counting from 0. */
  index: number;
  ref: Frame;
  dis: Frame;
  /**
   * False when --subsample leaves this frame out (index % subsample !== 0): libvmaf still
   * reads it for motion (integer_motion is computed on every frame), but computes no VIF or
   * ADM for it and logs no line for it. Absent means true.
   */
  scored?: boolean;
}

/**
 * Per-frame feature values keyed by libvmaf's metric names as they appear in its logs:
 * integer_vif_scale0..3, integer_adm2, integer_adm_scale0..3, integer_motion2,
 * VMAF_integer_feature_motion_sad_score (the per-frame motion), and the *_egl_1 variants.
 */
export type FeatureValues = Record<string, number>;

export interface FrameFeatures {
  index: number;
  features: FeatureValues;
  /** Presentation times of the two inputs where known. */
  refPts?: number;
  disPts?: number;
}

/**
 * One reference frame and the frames of several distorted inputs (a ladder's renditions)
 * at the same position: groupFrames yields these, FeatureBackend.extractMany reads them.
 * The reference frame is read once and shared by every rendition.
 */
export interface FrameGroup {
  /** Index of the scored frame in the output, counting from 0. */
  index: number;
  ref: Frame;
  /**
   * One entry per distorted input, in the order they were given: its frame, or undefined
   * once that input has ended (the others go on until the reference or the last of them ends).
   */
  dis: ReadonlyArray<Frame | undefined>;
  /** As FramePair.scored: false when --subsample leaves the frame out. Absent means true. */
  scored?: boolean;
}

/** A FrameGroup's features: one entry per distorted input, in the group's order. */
export interface GroupFeatures {
  index: number;
  /** Presentation time of the reference frame where known. */
  refPts?: number;
  /**
   * Per distorted input: its frame's features, or undefined where there are none (the input
   * has ended, or the group is not scored). Groups that are not scored are emitted too (all
   * entries undefined), so a consumer can count every group it sent.
   */
  renditions: ReadonlyArray<FrameFeatures | undefined>;
}

/**
 * The typed interfaces between the stages: a FrameSource yields Frames, pairFrames
 * turns two sources into FramePairs, a FeatureBackend turns pairs into FrameFeatures,
 * a Model turns features into scores.
 */

export type ChromaSubsampling = '420' | '422' | '444' | '400';
export type BitDepth = 8 | 10 | 12 | 16;

export interface FrameFormat {
  width: number;
  height: number;
  bitDepth: BitDepth;
  chroma: ChromaSubsampling;
  /** Frames per second when the container says so. */
  fps?: number;
}

/** One plane's samples: row-major, stride = its width, Uint8Array at 8 bits, Uint16Array above. */
export type Plane = Uint8Array | Uint16Array;

export interface PlaneSize {
  width: number;
  height: number;
}

/**
 * Which planes a source reads: 'luma' (the default: VIF, ADM and motion read luma only,
 * and the chroma bytes are skipped or never decoded) or 'all' (luma and both chroma planes).
 */
export type PlaneSelection = 'luma' | 'all';

/**
 * One decoded picture: its luma plane, and its two chroma planes (Cb, Cr) when the source
 * was asked for every plane (PlaneSelection 'all'). Each plane is row-major with
 * stride = its width, Uint8Array at 8 bits, Uint16Array above; chroma planes are
 * chromaSize(format) (decode/frame-layout.ts). A pooled frame's planes are views of one
 * allocation, luma first.
 */
export interface Frame {
  /** Index in its own input, counting from 0, before any skipping. */
  index: number;
  format: FrameFormat;
  luma: Plane;
  /** Cb and Cr, when every plane was asked for (never at 4:0:0). */
  chroma?: readonly [Plane, Plane];
  /** Presentation time in seconds, where the source knows it. */
  pts?: number;
  /**
   * A located frame's place in its file (decode/located-frames.ts): its planes were not
   * read, they are empty, and the one stage that needs its samples (the gpu backend's
   * upload) reads them from there, straight into staging memory. Only a run whose every
   * reader of samples does so asks a source for located frames.
   */
  located?: FrameLocation;
  /** Gives the frame's memory back to its pool; call once, after the last use. */
  release(): void;
}

/** Where a located frame's samples lie: its planes back to back (luma, then Cb and Cr) from byte `offset` of a regular file. */
export interface FrameLocation {
  path: string;
  /** The input's label, for messages. */
  label: string;
  offset: number;
  /** The file's identity as its reader opened it: a file replaced since is an error, not other samples. */
  dev: number;
  ino: number;
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

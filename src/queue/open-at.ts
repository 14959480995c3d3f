/**
 * Opens an input at (or a little before) a given frame, from its InputIndex: a y4m or raw
 * file at the frame's byte offset, an ffmpeg input at the last keyframe at or before it
 * (see keyframeAt: a seek to or before it, open GOPs one keyframe earlier, the frames before
 * it dropped by ffmpeg by their times; those from it to the frame by the caller, `skip`).
 * The frames keep the indices, presentation times and error messages of the whole input.
 */
import type { PlaneSelection } from '../types.js';
import { FfmpegSource, type ScaleTo } from '../decode/ffmpeg-source.js';
import { openFrameSource } from '../decode/open-source.js';
import { RawReader, type RawGeometry } from '../decode/raw-reader.js';
import { Y4mReader } from '../decode/y4m-reader.js';
import type { FrameSource } from '../types.js';
import { keyframeAt, type InputIndex } from '../decode/input-index.js';

export interface OpenAtOptions {
  /** The planes the run plan reads (default luma only). */
  planes?: PlaneSelection;
  label: string;
  raw?: RawGeometry;
  ffmpegPath?: string;
  scaleTo?: ScaleTo;
  poolSlots?: number;
}

export interface OpenedAt {
  source: FrameSource;
  /** Frames to drop before `frame`: the source starts at frame `frame - skip`. */
  skip: number;
}

export function openInputAt(input: string, index: InputIndex, frame: number, options: OpenAtOptions): OpenedAt {
  const common = { label: options.label, ...(options.poolSlots !== undefined ? { poolSlots: options.poolSlots } : {}), ...(options.planes !== undefined ? { planes: options.planes } : {}) };
  switch (index.kind) {
    case 'y4m':
      // Read by descriptor, as the single run reads a file (FileByteReader: planes straight
      // into the pool slots, nothing for the garbage collector), from this frame's FRAME line;
      // the header, read once when the title was indexed, comes with the job.
      return {
        source: new Y4mReader({ file: input, start: Buffer.byteLength(index.header, 'latin1') + frame * index.frameStride }, { ...common, firstIndex: frame, knownHeader: index.header }),
        skip: 0,
      };
    case 'raw':
      return { source: new RawReader({ file: input, start: frame * index.frameBytes }, { ...options.raw!, ...common, firstIndex: frame }), skip: 0 };
    case 'ffmpeg': {
      // From the keyframe (one earlier with open GOPs, dropped by time: see keyframeAt).
      const { keyframe, seek, from } = keyframeAt(index, frame);
      const source = new FfmpegSource(input, {
        ...common,
        ...(options.ffmpegPath !== undefined ? { ffmpegPath: options.ffmpegPath } : {}),
        ...(options.scaleTo ? { scaleTo: options.scaleTo } : {}),
        ...(options.raw ? { inputOptions: [...rawInputOptions(options.raw), ...seek] } : { inputOptions: seek }),
        ...(from !== undefined ? { selectSeconds: { from } } : {}),
        firstIndex: keyframe,
      });
      return { source, skip: frame - keyframe };
    }
    case 'sequential':
      return {
        source: openFrameSource(input, {
          ...common,
          ...(options.ffmpegPath !== undefined ? { ffmpegPath: options.ffmpegPath } : {}),
          ...(options.scaleTo ? { scaleTo: options.scaleTo } : {}),
        }),
        skip: frame,
      };
  }
}

function rawInputOptions(raw: RawGeometry): string[] {
  const depth = raw.bitDepth ?? 8;
  const chroma = raw.pixelFormat ?? '420';
  const pix = chroma === '400' ? (depth === 8 ? 'gray' : `gray${depth}le`) : `yuv${chroma}p${depth === 8 ? '' : `${depth}le`}`;
  return ['-f', 'rawvideo', '-pix_fmt', pix, '-s', `${raw.width}x${raw.height}`];
}

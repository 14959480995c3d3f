/**
 * A distorted input of lower bit depth than the reference is scored at the reference's
 * depth, its samples converted exactly as ffmpeg's format filter converts planar YUV to a
 * higher depth (e.g. `-vf format=yuv420p10le` on an 8-bit input):
 *
 * - luma and chroma of 4:2:0, 4:2:2 and 4:4:4 (limited range): a left shift,
 *   v << (to - from). 8 → 10 bits maps 0..255 to 0..1020, 255 → 1020 (not 1023).
 * - luma of 4:0:0 (ffmpeg takes gray as full range): the shift with the top bits repeated
 *   below, (v << (to - from)) | (v >> (2 * from - to)), so white stays white (255 → 1023).
 *
 * Found by experiment with ffmpeg 4.1 (every value of every depth pair, 8/10/12 → 10/12/16,
 * through `-vf format=...`), and confirmed by the golden clip hfr_av1_8bit_as_10bit (an 8-bit
 * AV1 encode scored at 10 bits: libvmaf's integer features, exactly). ffmpeg converts a
 * full-range yuvj input's range as well; frames do not say their range, so that is not done
 * here.
 *
 * A higher depth than the reference is refused (checkFormats): converting down loses what
 * the distorted input has and the reference lacks.
 */
import type { BitDepth, Frame, FrameFormat, FrameSource, Plane } from '../types.js';

/** Converts `src` (samples of `from` bits) into `dst` (of `to` bits, to > from), as ffmpeg does. */
export function widenSamples(src: Plane, from: BitDepth, dst: Uint16Array, to: BitDepth, fullRange = false): void {
  if (dst.length !== src.length) throw new RangeError(`widenSamples: ${src.length} samples in, room for ${dst.length}`);
  if (!(to > from)) throw new RangeError(`widenSamples: ${from} to ${to} bits is not a widening`);
  const up = to - from;
  if (fullRange) {
    const down = 2 * from - to;
    for (let i = 0; i < src.length; i++) {
      const v = src[i]!;
      dst[i] = (v << up) | (v >> down);
    }
  } else {
    for (let i = 0; i < src.length; i++) dst[i] = src[i]! << up;
  }
}

/**
 * A frame's planes at `to` bits: a new frame whose planes are views of one Uint16Array
 * (luma, then Cb and Cr when the frame has them).
 */
export function widenFrame(frame: Frame, to: BitDepth, buffer?: Uint16Array): Frame {
  const from = frame.format.bitDepth;
  const chroma = frame.chroma;
  const total = frame.luma.length + (chroma ? chroma[0].length + chroma[1].length : 0);
  const out = buffer && buffer.length === total ? buffer : new Uint16Array(total);
  const luma = out.subarray(0, frame.luma.length);
  widenSamples(frame.luma, from, luma, to, frame.format.chroma === '400');
  const result: Frame = { index: frame.index, format: { ...frame.format, bitDepth: to }, luma, release: () => {} };
  if (chroma) {
    const cb = out.subarray(luma.length, luma.length + chroma[0].length);
    const cr = out.subarray(luma.length + chroma[0].length, total);
    widenSamples(chroma[0], from, cb, to);
    widenSamples(chroma[1], from, cr, to);
    result.chroma = [cb, cr];
  }
  if (frame.pts !== undefined) result.pts = frame.pts;
  return result;
}

/**
 * `source` with every frame widened to `to` bits (widenFrame). A converted frame holds its
 * source frame until it is released, so the source's pool still bounds the frames out; the
 * converted buffers are recycled.
 */
export class WidenedSource implements FrameSource {
  readonly label: string;
  private readonly free: Uint16Array[] = [];

  constructor(
    readonly source: FrameSource,
    readonly bitDepth: BitDepth,
  ) {
    this.label = source.label;
  }

  async format(): Promise<FrameFormat> {
    return { ...(await this.source.format()), bitDepth: this.bitDepth };
  }

  [Symbol.asyncIterator](): AsyncIterator<Frame> {
    const inner = this.source[Symbol.asyncIterator]();
    return {
      next: async () => {
        const step = await inner.next();
        if (step.done) return step;
        return { done: false, value: this.widen(step.value) };
      },
      return: async (value?: unknown) => (inner.return ? inner.return(value) : { done: true, value: undefined }),
    };
  }

  close(): Promise<void> {
    this.free.length = 0;
    return this.source.close();
  }

  private widen(frame: Frame): Frame {
    let converted: Frame;
    try {
      converted = widenFrame(frame, this.bitDepth, this.free.pop());
    } catch (err) {
      frame.release();
      throw err;
    }
    const buffer = new Uint16Array(converted.luma.buffer as ArrayBuffer);
    let released = false;
    converted.release = () => {
      if (released) return;
      released = true;
      frame.release();
      this.free.push(buffer);
    };
    return converted;
  }
}

/** The format a distorted input of `format` is scored in against a reference of `reference` format. */
export function matchedFormat(reference: FrameFormat, format: FrameFormat): FrameFormat {
  return format.bitDepth < reference.bitDepth ? { ...format, bitDepth: reference.bitDepth } : format;
}

/**
 * The distorted input to score against a reference of `reference` format: `source` itself at
 * the same depth (or a higher one: checkFormats refuses that), else a WidenedSource at the
 * reference's depth, with a warning naming both inputs and depths.
 */
export function matchReferenceDepth(
  ref: FrameSource,
  reference: FrameFormat,
  source: FrameSource,
  format: FrameFormat,
  onWarning?: (message: string) => void,
): FrameSource {
  if (format.bitDepth >= reference.bitDepth) return source;
  onWarning?.(
    `${source.label} is ${format.bitDepth}-bit and the reference ${ref.label} is ${reference.bitDepth}-bit: ` +
      `${source.label} is converted to ${reference.bitDepth} bits as ffmpeg's format filter converts it ` +
      `(${format.chroma === '400' ? 'gray: the bits repeated below the shift' : `samples shifted left by ${reference.bitDepth - format.bitDepth} bits`}) ` +
      `and scored at ${reference.bitDepth} bits`,
  );
  return new WidenedSource(source, reference.bitDepth);
}

/**
 * A native YUV4MPEG2 reader. It keeps the luma plane of each frame (copied into a pool
 * slot) and skips the chroma bytes.
 *
 * Header tags: W, H (required), F, I, A, C and X (comments; XYSCSS= names the chroma
 * when C is absent). Chroma: 420, 420jpeg, 420paldv, 420mpeg2, 422, 444, 444alpha, mono,
 * and ffmpeg's high-bit-depth tags (420p10, 422p12, 444p16, mono10, mono16, ...).
 * Samples above 8 bits are 16-bit little-endian. Chroma planes of odd sizes round up.
 */
import type { Readable } from 'node:stream';

import { InputError, VmafError } from '../errors.js';
import type { BitDepth, ChromaSubsampling, FrameFormat } from '../types.js';
import { MAX_DIMENSION, frameLayout, type FrameLayout } from './frame-layout.js';
import { StreamFrameSource, type ByteInput, type StreamFrameSourceOptions } from './stream-frame-source.js';

export const Y4M_MAGIC = 'YUV4MPEG2';
/** Longest header line accepted. */
const MAX_HEADER_BYTES = 4096;
/** Longest FRAME line accepted (the FRAME tag and its parameters). */
const MAX_FRAME_HEADER_BYTES = 1024;

interface ChromaInfo {
  chroma: ChromaSubsampling;
  bitDepth: BitDepth;
  /** Extra full-size planes after the chroma planes (the alpha of 444alpha). */
  extraPlanes?: number;
}

/** Supported C tags (lower case). */
const CHROMA_TAGS: Record<string, ChromaInfo> = {
  '420': { chroma: '420', bitDepth: 8 },
  '420jpeg': { chroma: '420', bitDepth: 8 },
  '420mpeg2': { chroma: '420', bitDepth: 8 },
  '420paldv': { chroma: '420', bitDepth: 8 },
  '422': { chroma: '422', bitDepth: 8 },
  '444': { chroma: '444', bitDepth: 8 },
  '444alpha': { chroma: '444', bitDepth: 8, extraPlanes: 1 },
  mono: { chroma: '400', bitDepth: 8 },
  mono8: { chroma: '400', bitDepth: 8 },
};
for (const depth of [10, 12, 16] as const) {
  for (const c of ['420', '422', '444'] as const) CHROMA_TAGS[`${c}p${depth}`] = { chroma: c, bitDepth: depth };
  CHROMA_TAGS[`mono${depth}`] = { chroma: '400', bitDepth: depth };
}

export interface Y4mHeader {
  format: FrameFormat;
  /** The chroma tag as written (C tag, else XYSCSS, else '420'). */
  chromaTag: string;
  /** The I tag's value ('p', 't', 'b', 'm' or '?'), when present. */
  interlace?: string;
  /** The F tag as numerator and denominator, when present. */
  frameRate?: [number, number];
  /** The A tag (pixel aspect ratio), when present. */
  aspect?: [number, number];
  layout: FrameLayout;
}

function badTag(label: string, tag: string, why: string): InputError {
  return new InputError('E_INPUT_FORMAT', label, `corrupt YUV4MPEG2 header: tag "${printable(tag)}" ${why}`);
}

/** Shows a header fragment safely in a message. */
function printable(text: string, max = 40): string {
  const shown = text.length > max ? `${text.slice(0, max)}...` : text;
  return shown.replace(/[^\x20-\x7e]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

function ratio(value: string): [number, number] | undefined {
  const m = /^(\d+):(\d+)$/.exec(value);
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

/** Parses a YUV4MPEG2 stream header line (without its newline). */
export function parseY4mHeader(line: string, label: string): Y4mHeader {
  if (!line.startsWith(Y4M_MAGIC) || (line.length > Y4M_MAGIC.length && line[Y4M_MAGIC.length] !== ' ')) {
    throw new InputError(
      'E_INPUT_FORMAT',
      label,
      `not a YUV4MPEG2 stream: it starts with "${printable(line, 16)}" instead of "${Y4M_MAGIC} "`,
    );
  }
  let width: number | undefined;
  let height: number | undefined;
  let frameRate: [number, number] | undefined;
  let aspect: [number, number] | undefined;
  let interlace: string | undefined;
  let cTag: string | undefined;
  let xyscss: string | undefined;
  for (const tag of line.slice(Y4M_MAGIC.length).split(' ')) {
    if (tag === '') continue;
    const value = tag.slice(1);
    switch (tag[0]) {
      case 'W':
      case 'H': {
        if (!/^[1-9]\d*$/.test(value) || Number(value) > MAX_DIMENSION) {
          throw badTag(label, tag, `is not a valid ${tag[0] === 'W' ? 'width' : 'height'} (a whole number from 1 to ${MAX_DIMENSION})`);
        }
        if (tag[0] === 'W') width = Number(value);
        else height = Number(value);
        break;
      }
      case 'F': {
        frameRate = ratio(value);
        if (!frameRate) throw badTag(label, tag, 'is not a valid frame rate (F<num>:<den>)');
        break;
      }
      case 'A': {
        aspect = ratio(value);
        if (!aspect) throw badTag(label, tag, 'is not a valid pixel aspect ratio (A<num>:<den>)');
        break;
      }
      case 'I': {
        if (!/^[ptbm?]$/.test(value)) throw badTag(label, tag, 'is not a valid interlacing mode (Ip, It, Ib, Im or I?)');
        interlace = value;
        break;
      }
      case 'C': {
        if (value === '') throw badTag(label, tag, 'names no chroma format');
        cTag = value;
        break;
      }
      case 'X': {
        if (value.startsWith('YSCSS=')) xyscss = value.slice('YSCSS='.length);
        break;
      }
      default:
        // Unknown tags are ignored, as the format asks.
        break;
    }
  }
  if (width === undefined) throw new InputError('E_INPUT_FORMAT', label, 'corrupt YUV4MPEG2 header: no W (width) tag');
  if (height === undefined) throw new InputError('E_INPUT_FORMAT', label, 'corrupt YUV4MPEG2 header: no H (height) tag');

  const chromaTag = cTag ?? xyscss ?? '420';
  const info = CHROMA_TAGS[chromaTag.toLowerCase()];
  if (!info) {
    const shown = cTag !== undefined ? `C${cTag}` : `XYSCSS=${xyscss}`;
    throw new InputError(
      'E_INPUT_FORMAT',
      label,
      `unsupported chroma format "${printable(shown)}": vmaf-stream reads 4:2:0, 4:2:2, 4:4:4 and mono ` +
        'at 8, 10, 12 or 16 bits (convert it, e.g. with ffmpeg -pix_fmt yuv420p)',
    );
  }
  const format: FrameFormat = { width, height, bitDepth: info.bitDepth, chroma: info.chroma };
  if (frameRate && frameRate[0] > 0 && frameRate[1] > 0) format.fps = frameRate[0] / frameRate[1];
  const header: Y4mHeader = { format, chromaTag, layout: frameLayout(format, info.extraPlanes ?? 0) };
  if (interlace !== undefined) header.interlace = interlace;
  if (frameRate) header.frameRate = frameRate;
  if (aspect) header.aspect = aspect;
  return header;
}

export interface Y4mReaderOptions extends Partial<StreamFrameSourceOptions> {
  /**
   * The stream carries only the luma plane (a mono y4m, as ffmpeg's extractplanes=y writes
   * it) of pictures in this format: the header must say mono at this bit depth, and format()
   * reports this chroma, the source's, not '400'.
   */
  lumaOf?: { chroma: ChromaSubsampling; bitDepth: BitDepth };
  /** Called with the parsed header; may throw to refuse the stream. */
  onHeader?: (header: Y4mHeader) => void;
  /**
   * The stream header (its line, newline included), read already: the input starts at a
   * FRAME line instead (a queued segment reads a file from a frame's byte offset).
   */
  knownHeader?: string;
}

export class Y4mReader extends StreamFrameSource {
  /** The parsed header, once read. */
  header: Y4mHeader | undefined;

  private readonly lumaOf: Y4mReaderOptions['lumaOf'];
  private readonly onHeader: Y4mReaderOptions['onHeader'];
  private readonly knownHeader: string | undefined;

  constructor(input: ByteInput, options: Y4mReaderOptions = {}) {
    super(input, { ...options, label: options.label ?? 'y4m' });
    this.lumaOf = options.lumaOf;
    this.onHeader = options.onHeader;
    this.knownHeader = options.knownHeader;
  }

  protected async readHeader(): Promise<FrameLayout> {
    const known = this.knownHeader;
    const line = known !== undefined
      ? { text: known.endsWith('\n') ? known.slice(0, -1) : known, terminated: known.endsWith('\n'), eof: false }
      : await this.reader.readLine(MAX_HEADER_BYTES);
    if (line === null) throw new InputError('E_INPUT_EMPTY', this.label, 'is empty: no YUV4MPEG2 header, no frames');
    if (!line.text.startsWith(Y4M_MAGIC) && !(line.eof && Y4M_MAGIC.startsWith(line.text))) {
      parseY4mHeader(line.text, this.label); // throws: not a YUV4MPEG2 stream
    }
    if (!line.terminated) {
      throw new InputError(
        'E_INPUT_FORMAT',
        this.label,
        line.eof
          ? 'corrupt YUV4MPEG2 header: the input ends before the header does (no newline)'
          : `corrupt YUV4MPEG2 header: longer than ${MAX_HEADER_BYTES} bytes (no newline)`,
      );
    }
    const header = parseY4mHeader(line.text, this.label);
    const lumaOf = this.lumaOf;
    if (lumaOf) {
      const { format } = header;
      if (format.chroma !== '400' || format.bitDepth !== lumaOf.bitDepth) {
        throw new VmafError(
          'E_FFMPEG',
          `${this.label}: ffmpeg sent "C${header.chromaTag}" (${format.bitDepth}-bit ${format.chroma}) ` +
            `where the ${lumaOf.bitDepth}-bit luma plane alone was asked for`,
        );
      }
      const source: FrameFormat = { ...format, chroma: lumaOf.chroma };
      header.format = source;
      header.layout = { ...header.layout, format: source };
    }
    this.onHeader?.(header);
    this.header = header;
    return header.layout;
  }

  protected async readFrameHeader(index: number, layout: FrameLayout): Promise<boolean> {
    const at = this.reader.position;
    const line = await this.reader.readLine(MAX_FRAME_HEADER_BYTES);
    if (line === null) return false;
    const text = line.text;
    const looksRight = text.length >= 5 ? /^FRAME( |$)/.test(text) : line.eof && 'FRAME'.startsWith(text);
    if (!looksRight) {
      throw new InputError(
        'E_INPUT_FORMAT',
        this.label,
        `corrupt YUV4MPEG2 data: expected a FRAME header at byte ${at}, found "${printable(line.text, 16)}"`,
        index,
      );
    }
    if (!line.terminated) {
      if (line.eof) {
        throw new InputError(
          'E_INPUT_TRUNCATED',
          this.label,
          `truncated: the input ends inside this frame's FRAME header, all ${layout.frameBytes} bytes of its data are missing`,
          index,
        );
      }
      throw new InputError(
        'E_INPUT_FORMAT',
        this.label,
        `corrupt YUV4MPEG2 data: the FRAME header at byte ${at} is longer than ${MAX_FRAME_HEADER_BYTES} bytes`,
        index,
      );
    }
    return true;
  }
}

/** A Y4mReader over a file path (read natively) or a Readable. */
export function openY4m(input: string | Readable, options: Y4mReaderOptions = {}): Y4mReader {
  if (typeof input === 'string') {
    return new Y4mReader({ file: input }, { ...options, label: options.label ?? input });
  }
  return new Y4mReader(input, options);
}

/**
 * What ffmpeg's stderr says about an input (demuxer, first video stream, pixel format),
 * which planar YUV format to ask ffmpeg for, and how to turn ffmpeg's complaints into
 * InputErrors. The installer ships no ffprobe, so probing runs `ffmpeg -i <input>` and reads
 * the banner.
 */
import { spawn } from 'node:child_process';

import { InputError, VmafError } from '../errors.js';

export interface FfmpegVideoStream {
  codec: string;
  /** ffmpeg's pixel format name (yuv420p10le, rgb24, ...), when it prints one. */
  pixFmt?: string;
  width?: number;
  height?: number;
}

export interface FfmpegInputInfo {
  /** The demuxer, as ffmpeg names it ("matroska,webm", "mov,mp4,m4a,3gp,3g2,mj2", "tty"). */
  demuxer?: string;
  /** The first video stream, if any. */
  video?: FfmpegVideoStream;
  /**
   * The input's start time in seconds ("Duration: ..., start: 1.480000"): the presentation
   * time ffmpeg maps to 0 in its output (1.4 s and more in MPEG-TS, 0 in most files).
   */
  startTime?: number;
}

/** Splits on commas outside parentheses and brackets. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(' || c === '[') depth++;
    else if (c === ')' || c === ']') depth = Math.max(0, depth - 1);
    else if (c === ',' && depth === 0) {
      parts.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(text.slice(start).trim());
  return parts;
}

/** Reads the "Input #0, <demuxer>, from ..." and first "Stream #0:n: Video: ..." lines. */
export function parseFfmpegBanner(stderr: string): FfmpegInputInfo {
  const info: FfmpegInputInfo = {};
  const input = /^Input #0, (.*), from '/m.exec(stderr);
  if (input) info.demuxer = input[1];
  const stream = /^\s*Stream #0:\d+\S*: Video: (.*)$/m.exec(stderr);
  if (stream) {
    const parts = splitTopLevel(stream[1]!);
    const video: FfmpegVideoStream = { codec: parts[0]!.split(' ')[0]! };
    const pix = parts[1]?.replace(/\(.*$/, '').trim();
    if (pix && /^[a-z][a-z0-9_]*$/.test(pix) && pix !== 'none') video.pixFmt = pix;
    for (const p of parts.slice(1)) {
      const size = /^(\d+)x(\d+)\b/.exec(p);
      if (size) {
        video.width = Number(size[1]);
        video.height = Number(size[2]);
        break;
      }
    }
    info.video = video;
  }
  return info;
}

/** The input's start time from the banner's "Duration: ..., start: 1.480000" line. */
export function parseStartTime(stderr: string): number | undefined {
  const start = /^\s*Duration: .*?\bstart: (-?\d+(?:\.\d+)?)/m.exec(stderr);
  return start ? Number(start[1]) : undefined;
}

/** Lines of ffmpeg's stderr that carry no diagnosis. */
const NOISE = [
  /^frame=\s*\d+/,
  /^size=\s*/,
  /^Conversion failed!?$/,
  /^Press \[q\]/,
  /^Exiting normally/,
  /^At least one output file must be specified$/,
];

/** ffmpeg's last meaningful stderr line (its own error message, usually). */
export function lastErrorLine(stderr: string): string | undefined {
  const lines = stderr.split(/\r\n|\r|\n/).map((l) => l.trim()).filter(Boolean);
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!;
    if (!NOISE.some((re) => re.test(line))) return line;
  }
  return undefined;
}

/**
 * The InputError (or E_FFMPEG VmafError) for an ffmpeg run that failed on `label`, from its
 * stderr: a missing input → E_INPUT_NOT_FOUND, an input that ends before any data →
 * E_INPUT_EMPTY, no video stream or undecodable data → E_INPUT_FORMAT, a filter failure →
 * E_FFMPEG. The message quotes ffmpeg's last error line.
 */
export function ffmpegFailure(label: string, stderr: string, exit?: string): VmafError {
  const last = lastErrorLine(stderr);
  const says = last ? `ffmpeg says: ${last}` : `ffmpeg failed${exit ? ` (${exit})` : ''} without a message`;
  if (/No such file or directory|Server returned 404|404 Not Found|Name or service not known|Failed to resolve hostname|Connection refused/i.test(stderr)) {
    return new InputError('E_INPUT_NOT_FOUND', label, `not found (${says})`);
  }
  // ffmpeg's -protocol_whitelist (options.protocols) stopped it: say so, not "cannot be decoded".
  const refused = /Protocol '[^']*' not on whitelist '[^']*'!?/.exec(stderr)?.[0];
  if (refused) return new InputError('E_INPUT_NOT_ALLOWED', label, `opens a protocol this run does not allow (ffmpeg says: ${refused})`);
  if (/Permission denied/i.test(stderr)) return new InputError('E_INPUT_NOT_FOUND', label, `cannot be opened (${says})`);
  if (/Is a directory/i.test(stderr)) return new InputError('E_INPUT_NOT_FOUND', label, `is a directory (${says})`);
  if (/: End of file$/m.test(stderr)) {
    return new InputError('E_INPUT_EMPTY', label, `has no video frames: it ends before any (${says})`);
  }
  if (/matches no streams|does not contain any stream/i.test(stderr)) {
    return new InputError('E_INPUT_FORMAT', label, `has no video stream (${says})`);
  }
  if (/Error (initializing|reinitializing|configuring) (complex )?filter|Failed to configure (input|output) pad|Error while filtering/i.test(stderr)) {
    return new VmafError('E_FFMPEG', `${label}: ffmpeg could not convert the frames (${says})`);
  }
  return new InputError('E_INPUT_FORMAT', label, `cannot be decoded as video (${says})`);
}

/** Planar YUV formats the y4m muxer writes and the y4m reader reads, with no conversion. */
export const NATIVE_PIXEL_FORMATS: readonly string[] = [
  'yuv420p', 'yuvj420p', 'yuv422p', 'yuvj422p', 'yuv444p', 'yuvj444p', 'gray',
  'yuv420p10le', 'yuv422p10le', 'yuv444p10le', 'gray10le',
  'yuv420p12le', 'yuv422p12le', 'yuv444p12le', 'gray12le',
  'yuv420p16le', 'yuv422p16le', 'yuv444p16le', 'gray16le',
];

/**
 * For a planar YUV format from NATIVE_PIXEL_FORMATS, the chroma and depth of its luma plane,
 * which `extractplanes=y` hands on unchanged (a plane copy: no range or value conversion) as
 * gray, gray10le, gray12le or gray16le; the y4m muxer writes those as Cmono, Cmono10, ...
 * undefined for gray formats (already luma only) and anything else.
 */
export function lumaPlaneOf(pixFmt: string | undefined): { chroma: '420' | '422' | '444'; bitDepth: 8 | 10 | 12 | 16 } | undefined {
  if (!pixFmt || !NATIVE_PIXEL_FORMATS.includes(pixFmt)) return undefined;
  const m = /^yuvj?(420|422|444)p(?:(10|12|16)le)?$/.exec(pixFmt);
  if (!m) return undefined;
  return { chroma: m[1] as '420' | '422' | '444', bitDepth: (m[2] ? Number(m[2]) : 8) as 8 | 10 | 12 | 16 };
}

/** Rounds a component depth up to one vmaf-stream reads (9 → 10, 14 → 16). */
function supportedDepth(bits: number): 8 | 10 | 12 | 16 {
  if (bits <= 8) return 8;
  if (bits <= 10) return 10;
  if (bits <= 12) return 12;
  return 16;
}

function yuv(chroma: '420' | '422' | '444', bits: number, jpeg = false): string {
  const d = supportedDepth(bits);
  if (d === 8) return `yuv${jpeg ? 'j' : ''}${chroma}p`;
  return `yuv${chroma}p${d}le`;
}

function gray(bits: number): string {
  const d = supportedDepth(bits);
  return d === 8 ? 'gray' : `gray${d}le`;
}

/** Component depth of an RGB-family format name. */
function rgbDepth(pixFmt: string): number {
  const planar = /^gbra?p(\d+)(le|be)?$/.exec(pixFmt);
  if (planar) return Number(planar[1]);
  if (/^(rgb|bgr)48|^(rgba|bgra)64/.test(pixFmt)) return 16;
  if (/^[xX]2(rgb|bgr)10/.test(pixFmt)) return 10;
  if (/^xyz12/.test(pixFmt)) return 12;
  if (/^bayer_.*16(le|be)?$/.test(pixFmt)) return 16;
  return 8;
}

/**
 * The planar YUV format to ask ffmpeg for, given the input's pixel format: the input's own
 * when it is one the y4m reader reads (so ffmpeg converts nothing); big-endian or 9/14-bit
 * YUV → the little-endian format of the next supported depth; semi-planar/packed YUV
 * (nv12, p010, yuyv422, ...) → the planar equivalent; YUV 4:1:1 → 4:2:2, 4:4:0 → 4:4:4,
 * 4:1:0 → 4:2:0; gray → gray; anything else (RGB, palette, bayer, ...) → yuv444p at the
 * source depth. undefined when the name is unknown (let ffmpeg choose from the list).
 */
export function choosePixelFormat(pixFmt: string | undefined): string | undefined {
  if (!pixFmt) return undefined;
  const f = pixFmt.toLowerCase();
  if (NATIVE_PIXEL_FORMATS.includes(f)) return f;

  let m = /^yuv(j?)(420|422|444|440|411|410)p(\d+)?(le|be)?$/.exec(f) ?? /^yuva(j?)(420|422|444)p(\d+)?(le|be)?$/.exec(f);
  if (m) {
    const map: Record<string, '420' | '422' | '444'> = { '420': '420', '422': '422', '444': '444', '440': '444', '411': '422', '410': '420' };
    return yuv(map[m[2]!]!, m[3] ? Number(m[3]) : 8, m[1] === 'j');
  }
  m = /^(gray|ya)(\d+)?(le|be|f32le|f32be)?$/.exec(f);
  if (m) return gray(m[2] ? Number(m[2]) : 8);
  if (/^grayf32/.test(f)) return gray(16);
  if (f === 'monob' || f === 'monow') return 'gray';
  const packed = /^([a-z0-9]+?)(le|be)?$/.exec(f)?.[1];
  const packedTarget = packed ? PACKED_YUV[packed] : undefined;
  if (packedTarget) return packedTarget;
  if (/^(rgb|bgr|argb|abgr|rgba|bgra|0rgb|0bgr|rgb0|bgr0|gbr|x2rgb|x2bgr|xyz|pal8|bayer)/.test(f)) {
    return yuv('444', rgbDepth(f));
  }
  return undefined;
}

/** Semi-planar and packed YUV formats (endianness suffix removed) → planar equivalents. */
const PACKED_YUV: Record<string, string> = {
  nv12: 'yuv420p', nv21: 'yuv420p', nv16: 'yuv422p', nv61: 'yuv422p', nv24: 'yuv444p', nv42: 'yuv444p',
  nv20: 'yuv422p10le',
  p010: 'yuv420p10le', p012: 'yuv420p12le', p016: 'yuv420p16le',
  p210: 'yuv422p10le', p212: 'yuv422p12le', p216: 'yuv422p16le',
  p410: 'yuv444p10le', p412: 'yuv444p12le', p416: 'yuv444p16le',
  yuyv422: 'yuv422p', uyvy422: 'yuv422p', yvyu422: 'yuv422p', y210: 'yuv422p10le', y212: 'yuv422p12le',
  uyyvyy411: 'yuv422p',
  vuya: 'yuv444p', vuyx: 'yuv444p', uyva: 'yuv444p', ayuv: 'yuv444p', ayuv64: 'yuv444p16le',
  xv30: 'yuv444p10le', xv36: 'yuv444p12le', xv48: 'yuv444p16le', v30x: 'yuv444p10le',
  y410: 'yuv444p10le', y412: 'yuv444p12le', y416: 'yuv444p16le',
};

export interface ProbeResult {
  info: FfmpegInputInfo;
  stderr: string;
}

/**
 * Runs `ffmpeg -hide_banner -i <input>` (no output: it exits 1 after printing what it
 * found) and parses the banner. Throws the InputError ffmpeg's complaint maps to when it
 * finds no input, no video stream, or only ANSI art (the tty demuxer reads any .txt file).
 */
export async function probeInput(
  ffmpegPath: string,
  input: string,
  label: string,
  inputOptions: readonly string[] = [],
): Promise<ProbeResult> {
  const stderr = await new Promise<string>((resolve, reject) => {
    const child = spawn(ffmpegPath, ['-hide_banner', '-nostdin', ...inputOptions, '-i', input], {
      stdio: ['ignore', 'ignore', 'pipe'],
      windowsHide: true,
    });
    const parts: Buffer[] = [];
    let size = 0;
    child.stderr!.on('data', (b: Buffer) => {
      if (size < 1 << 20) {
        parts.push(b);
        size += b.length;
      }
    });
    child.on('error', (err) => reject(new VmafError('E_FFMPEG', `cannot run ffmpeg at ${ffmpegPath}: ${err.message}`, { cause: err })));
    child.on('close', () => resolve(Buffer.concat(parts).toString('utf8')));
  });
  const info = parseFfmpegBanner(stderr);
  const startTime = parseStartTime(stderr);
  if (startTime !== undefined) info.startTime = startTime;
  if (info.demuxer === undefined) throw ffmpegFailure(label, stderr);
  if (info.demuxer === 'tty') {
    throw new InputError('E_INPUT_FORMAT', label, 'is not a video: ffmpeg reads it only as ANSI text art (tty demuxer)');
  }
  if (!info.video) throw new InputError('E_INPUT_FORMAT', label, `has no video stream (ffmpeg finds a ${info.demuxer} container without video)`);
  return { info, stderr };
}

/**
 * Where each frame of an input starts, so a segment's worker can begin near its first frame
 * instead of decoding the title from its start:
 *
 * - y4m: the header, then frames of a fixed size each behind a `FRAME\n` marker: frame i is
 *   at a byte offset (any frame). A y4m whose FRAME markers carry parameters (sizes vary) is
 *   read from its start, its leading frames dropped ('sequential').
 * - raw .yuv: frame i at i × the frame size (any frame).
 * - anything ffmpeg decodes: its video packets, listed by ffmpeg itself (`-c copy -f
 *   framecrc`; keyframes are the packets without the F=0x0 flag, the bundled ffmpeg has no
 *   ffprobe): a frame's position is the rank of its pts, a keyframe's seek time its pts as listed
 *   (already counted from the input's start time, as -ss counts). A worker seeks to the last keyframe at or before its first frame
 *   (keyframeAt) and drops the frames between.
 */
import { spawn } from 'node:child_process';
import { open, stat } from 'node:fs/promises';
import path from 'node:path';
import { InputError } from '../errors.js';
import { resolveFfmpegPath } from './ffmpeg-path.js';
import { frameLayout } from './frame-layout.js';
import { rawFormat, type RawGeometry } from './raw-reader.js';
import { Y4M_MAGIC, parseY4mHeader } from './y4m-reader.js';

export type InputIndex =
  | { kind: 'y4m'; frames: number; width: number; height: number; header: string; frameStride: number }
  | { kind: 'raw'; frames: number; width: number; height: number; frameBytes: number }
  | {
      kind: 'ffmpeg';
      frames: number;
      width: number;
      height: number;
      keyframes: number[];
      keyframeSeconds: number[];
      /**
       * Each keyframe's decoding time (its packet's dts, counted as keyframeSeconds are): a
       * seek to it lands at or before the keyframe's packet in every container. A seek to its
       * presentation time may land on a packet after it (MPEG-TS, open GOPs: ffmpeg then
       * decodes from the next keyframe on).
       */
      keyframeDtsSeconds: number[];
      fps?: number;
      /**
       * Every frame within a quarter of a frame of a constant rate (time stamps rounded by
       * the container included): ffmpeg's constant-rate y4m output then neither repeats nor
       * drops a frame, from the start or from any keyframe, so decoders that start at
       * keyframes give exactly the frames of one decoder. False for variable frame rates.
       */
      cfr?: boolean;
      /**
       * A keyframe after the first has leading pictures (frames after it in the file that
       * are shown before it): an open GOP. ffmpeg's H.264 decoder started at such an I frame
       * decodes some later B frames differently from one decoder (direct prediction refers to
       * pictures it never saw): keyframeAt then starts one keyframe earlier (for HEVC too,
       * whose CRA pictures would not need it: one rule, one extra GOP).
       */
      openGop?: boolean;
    }
  | { kind: 'sequential'; frames: number; width: number; height: number };

export interface IndexOptions {
  /** Raw geometry (the inputs are raw when given or named .yuv). */
  raw?: RawGeometry;
  ffmpegPath?: string;
  /** Index as ffmpeg decodes it even when natively readable (a rendition that is scaled). */
  viaFfmpeg?: boolean;
  label?: string;
}

const MAX_HEADER = 4096;
const FRAME_MARKER = 'FRAME\n';

/** Indexes a file (or a URL ffmpeg reads). */
export async function indexInput(input: string, options: IndexOptions = {}): Promise<InputIndex> {
  const label = options.label ?? input;
  const ext = path.extname(input).toLowerCase();
  if (!options.viaFfmpeg && (options.raw || ext === '.yuv')) {
    if (!options.raw) throw new InputError('E_INPUT_FORMAT', label, 'raw YUV input needs width and height');
    const format = rawFormat(options.raw, label);
    const frameBytes = frameLayout(format).frameBytes;
    const size = (await statFile(input, label)).size;
    return { kind: 'raw', frames: Math.ceil(size / frameBytes), width: format.width, height: format.height, frameBytes };
  }
  if (!options.viaFfmpeg && !/^[a-z][a-z0-9+.-]+:/i.test(input) && (await startsWithY4m(input, label))) return indexY4m(input, label);
  return indexWithFfmpeg(input, label, options.ffmpegPath);
}

async function statFile(input: string, label: string) {
  try {
    return await stat(input);
  } catch (error) {
    throw new InputError('E_INPUT_NOT_FOUND', label, `cannot be read: ${(error as Error).message}`, undefined, { cause: error });
  }
}

async function startsWithY4m(input: string, label: string): Promise<boolean> {
  const info = await statFile(input, label);
  if (!info.isFile()) return false;
  const handle = await open(input, 'r');
  try {
    const buf = Buffer.alloc(Y4M_MAGIC.length);
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    return bytesRead === buf.length && buf.toString('latin1') === Y4M_MAGIC;
  } finally {
    await handle.close();
  }
}

async function indexY4m(input: string, label: string): Promise<InputIndex> {
  const handle = await open(input, 'r');
  try {
    const size = (await handle.stat()).size;
    const buf = Buffer.alloc(Math.min(MAX_HEADER, size));
    await handle.read(buf, 0, buf.length, 0);
    const end = buf.indexOf(0x0a);
    if (end < 0) throw new InputError('E_INPUT_FORMAT', label, 'corrupt YUV4MPEG2 header: no newline');
    const header = buf.subarray(0, end + 1).toString('latin1');
    const parsed = parseY4mHeader(header.slice(0, -1), label);
    const { width, height } = parsed.format;
    const frameStride = FRAME_MARKER.length + parsed.layout.frameBytes;
    const body = size - header.length;
    // Plain FRAME markers throughout: the size says so, and the first and last markers agree.
    const frames = Math.floor(body / frameStride);
    const uniform = body % frameStride === 0 && frames > 0 && (await markerAt(handle, header.length)) && (await markerAt(handle, header.length + (frames - 1) * frameStride));
    if (!uniform) return { kind: 'sequential', frames: Math.max(frames, 1), width, height };
    return { kind: 'y4m', frames, width, height, header, frameStride };
  } finally {
    await handle.close();
  }
}

async function markerAt(handle: Awaited<ReturnType<typeof open>>, at: number): Promise<boolean> {
  const buf = Buffer.alloc(FRAME_MARKER.length);
  const { bytesRead } = await handle.read(buf, 0, buf.length, at);
  return bytesRead === buf.length && buf.toString('latin1') === FRAME_MARKER;
}

/** ffmpeg's packet list of the first video stream: positions of keyframes and their times. */
export async function indexWithFfmpeg(input: string, label: string, ffmpegPath: string | undefined, signal?: AbortSignal): Promise<InputIndex> {
  const binary = await resolveFfmpegPath(ffmpegPath ? { ffmpegPath } : {});
  const args = ['-hide_banner', '-nostdin', '-i', input, '-map', '0:v:0', '-c', 'copy', '-f', 'framecrc', 'pipe:1'];
  const { stdout, stderr, code } = await new Promise<{ stdout: string; stderr: string; code: number | null }>((resolve, reject) => {
    // signal: a run that ends early stops the listing (it reads the whole file).
    const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'], windowsHide: true, ...(signal ? { signal, killSignal: 'SIGKILL' as const } : {}) });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (t: string) => (out += t));
    child.stderr.setEncoding('utf8').on('data', (t: string) => (err = (err + t).slice(-65536)));
    child.on('error', reject);
    child.on('close', (exit) => resolve({ stdout: out, stderr: err, code: exit }));
  });
  if (code !== 0) {
    const line = stderr.trim().split('\n').pop() ?? '';
    throw new InputError('E_INPUT_FORMAT', label, `ffmpeg cannot list its packets: ${line}`);
  }
  let timeBase = 0;
  let width = 0;
  let height = 0;
  const packets: Array<{ pts: number; dts: number; key: boolean }> = [];
  for (const line of stdout.split('\n')) {
    if (line.startsWith('#tb 0:')) {
      const [num, den] = line.slice(6).trim().split('/').map(Number);
      timeBase = num! / den!;
    } else if (line.startsWith('#dimensions 0:')) {
      [width, height] = line.slice(14).trim().split('x').map(Number) as [number, number];
    } else if (/^0,/.test(line)) {
      const fields = line.split(',').map((f) => f.trim());
      const flags = fields.find((f) => f.startsWith('F='));
      packets.push({ pts: Number(fields[2]), dts: Number(fields[1]), key: flags === undefined || (Number(flags.slice(2)) & 1) === 1 });
    }
  }
  if (packets.length === 0) throw new InputError('E_INPUT_EMPTY', label, 'has no video frames (ffmpeg lists no packets)');
  let openGop = false;
  for (let i = 0, low = -Infinity; i < packets.length; i++) {
    // `low`: the key packet whose leading pictures are being looked for (file order).
    if (packets[i]!.key) low = i === 0 ? -Infinity : packets[i]!.pts;
    else if (packets[i]!.pts < low) openGop = true;
  }
  const order = packets.map((p, i) => i).sort((a, b) => packets[a]!.pts - packets[b]!.pts);
  const keyframes: number[] = [];
  const keyframeSeconds: number[] = [];
  const keyframeDtsSeconds: number[] = [];
  order.forEach((packet, position) => {
    if (!packets[packet]!.key) return;
    keyframes.push(position);
    // ffmpeg's copy already counts from the input's start time (its output starts at 0, as
    // `-ss` counts): the listed time is the seek time as it is.
    keyframeSeconds.push(Math.max(0, packets[packet]!.pts * timeBase));
    const dts = packets[packet]!.dts;
    keyframeDtsSeconds.push(Math.max(0, Number.isFinite(dts) ? dts * timeBase : packets[packet]!.pts * timeBase));
  });
  if (keyframes[0] !== 0) {
    // Frames before the first keyframe: only a read from the start sees them as the single run does.
    keyframes.unshift(0);
    keyframeSeconds.unshift(0);
    keyframeDtsSeconds.unshift(0);
  }
  const span = (packets[order[order.length - 1]!]!.pts - packets[order[0]!]!.pts) * timeBase;
  const fps = packets.length > 1 && span > 0 ? (packets.length - 1) / span : undefined;
  let cfr = fps !== undefined && packets.every((p) => Number.isFinite(p.pts));
  if (fps !== undefined) {
    const first = packets[order[0]!]!.pts * timeBase;
    order.forEach((packet, position) => {
      if (Math.abs((packets[packet]!.pts * timeBase - first) * fps - position) > 0.25) cfr = false;
    });
  }
  return { kind: 'ffmpeg', frames: packets.length, width, height, keyframes, keyframeSeconds, keyframeDtsSeconds, cfr, openGop, ...(fps !== undefined ? { fps } : {}) };
}

/** The frames a worker may start decoding at (any frame for y4m and raw). */
export function startFrames(index: InputIndex): readonly number[] | 'any' {
  switch (index.kind) {
    case 'y4m':
    case 'raw':
      return 'any';
    case 'ffmpeg':
      return index.keyframes;
    case 'sequential':
      return [0];
  }
}

/** Where a decoder starts to give an ffmpeg input's frames from `keyframe` on (see keyframeAt). */
export interface KeyframeStart {
  /** The keyframe whose frame is the decoder's first output frame. */
  keyframe: number;
  /** Input options: the seek (none from the start). */
  seek: string[];
  /** The seek in seconds (0: none). */
  seekSeconds: number;
  /** FfmpegSource's selectSeconds.from: frames before the keyframe's time are dropped by ffmpeg. */
  from: number | undefined;
}

/**
 * Where to start decoding an ffmpeg input to get frame `frame`: from the last keyframe at or
 * before it, whose frame is the first one written. The seek goes to the keyframe's decoding
 * time (its dts: the demuxer lands on its packet or before it, never after) without ffmpeg's
 * accurate seek, and ffmpeg itself drops the frames timed before the keyframe (select), so
 * what comes first does not depend on where the demuxer landed. In a file with open GOPs
 * (leading pictures) decoding starts one keyframe earlier: ffmpeg's H.264 decoder started at
 * an I frame that is not an IDR decodes some later pictures differently (B pictures whose
 * direct prediction reaches a picture it never decoded; seen on x264 open-GOP clips), so the
 * decoder runs through the previous GOP and its frames are dropped by time as well.
 */
export function keyframeAt(index: Extract<InputIndex, { kind: 'ffmpeg' }>, frame: number): KeyframeStart {
  let at = 0;
  for (let k = 0; k < index.keyframes.length && index.keyframes[k]! <= frame; k++) at = k;
  const keyframe = index.keyframes[at]!;
  if (keyframe === 0) return { keyframe, seek: [], seekSeconds: 0, from: undefined };
  const start = index.openGop && at > 0 ? at - 1 : at;
  // Microseconds, rounded down: -ss then rounds back to the packet's dts, not past it.
  const seekSeconds = index.keyframes[start] === 0 ? 0 : Math.max(0, Math.floor(index.keyframeDtsSeconds[start]! * 1e6) / 1e6);
  return {
    keyframe,
    seek: seekSeconds > 0 ? ['-ss', seekSeconds.toFixed(6), '-noaccurate_seek'] : [],
    seekSeconds,
    from: index.keyframeSeconds[at]! - seekSeconds - frameTolerance(index),
  };
}

/** Where a decoder started at `start` must stop to end before keyframe `end` (FfmpegSource's selectSeconds.to). */
export function keyframeTimeAfterSeek(index: Extract<InputIndex, { kind: 'ffmpeg' }>, start: KeyframeStart, end: number): number {
  const k = index.keyframes.indexOf(end);
  if (k < 0) throw new Error(`frame ${end} is not a keyframe`);
  return index.keyframeSeconds[k]! - start.seekSeconds - frameTolerance(index);
}

/** Below any frame interval and above the rounding of ffmpeg's offsets (half a tick of the stream's time base). */
function frameTolerance(index: Extract<InputIndex, { kind: 'ffmpeg' }>): number {
  return index.fps ? 0.25 / index.fps : 1e-3;
}

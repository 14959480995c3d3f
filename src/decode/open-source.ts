/**
 * openFrameSource: one entry point for every kind of input.
 *
 * - an existing FrameSource: returned as it is;
 * - '-' (standard input) or a Node Readable: sniffed; 'YUV4MPEG2' → the native y4m reader,
 *   anything else → piped through ffmpeg (raw options → the raw reader);
 * - a path ending in .y4m: the native y4m reader;
 * - a path ending in .yuv, or any path when width/height/pixelFormat are given: the raw reader
 *   (libvmaf's -w -h -p -b);
 * - a URL (scheme://...), or ffmpeg protocol syntax that is not a file (concat:a|b): ffmpeg;
 * - any other path: the native reader when the file starts with 'YUV4MPEG2', else ffmpeg;
 * - a fluent-ffmpeg command (bare, or through transcodeInput): run, and its named output's
 *   encoded stream read as a stream (see fluent-command.ts).
 * Named pipes and character devices are opened as streams (never stat-sized or read twice).
 * scaleTo sends everything through ffmpeg (bicubic).
 */
import { close as closeFd, constants as fsConstants, createReadStream, open as openFd, openSync } from 'node:fs';
import { Socket } from 'node:net';
import { open, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';

import { InputError, UsageError } from '../errors.js';
import type { BitDepth, ChromaSubsampling, Frame, FrameFormat, FrameSource, PlaneSelection } from '../types.js';
import { asTranscodeInput, isFluentCommand, isTranscodeInput, openTranscodeSource, type FluentCommand, type TranscodeInput } from './fluent-command.js';
import type { FfmpegSourceOptions, ScaleTo } from './ffmpeg-source.js';
import { autoDecoders, validateScale } from './decoder-options.js';
import { ffmpegPixelFormat } from './frame-layout.js';
import { checkPlaneSelection } from './planes.js';
import { RawReader, rawFormat, type RawReaderOptions } from './raw-reader.js';
import { sniffStream, type Sniffed } from './sniff.js';
import { streamError } from './stream-frame-source.js';
import { Y4M_MAGIC, Y4mReader } from './y4m-reader.js';
import { locateFrames } from './located-frames.js';

export interface OpenFrameSourceOptions {
  /** Raw input: width in pixels (libvmaf's -w). */
  width?: number;
  /** Raw input: height in pixels (-h). */
  height?: number;
  /** Raw input: chroma subsampling (-p; default '420'). */
  pixelFormat?: ChromaSubsampling;
  /** Raw input: bits per sample, 8, 10, 12 or 16 (-b; default 8). */
  bitDepth?: BitDepth | number;
  /** Raw input: frames per second, for presentation times. */
  fps?: number;
  /** The ffmpeg binary (else FFMPEG_PATH, else @ffmpeg-installer/ffmpeg). */
  ffmpegPath?: string;
  /** Scale every frame to this size with bicubic (through ffmpeg). */
  scaleTo?: ScaleTo;
  /** Frame buffers the source may have out at once (default 8). */
  poolSlots?: number;
  /**
   * Which planes the frames carry: 'luma' (default; the luma-only fast paths: chroma
   * skipped by the native readers, never sent by ffmpeg) or 'all' (luma and both chroma
   * planes in one pool slot per frame; a 4:0:0 input is then an error naming it). A
   * FrameSource given as the input is returned as it is: groupFrames checks its frames.
   */
  planes?: PlaneSelection;
  /** Names the input in messages (default: the path, '-' for stdin, 'stream' for a Readable). */
  label?: string;
  /**
   * An input that sends no frame for this many milliseconds ends the run with E_INPUT_STALLED:
   * decoded by ffmpeg (FfmpegSourceOptions.stallTimeoutMs, ffmpeg stopped) or read natively
   * (a y4m or raw pipe, standard input: StreamFrameSourceOptions.stallTimeoutMs).
   */
  stallTimeoutMs?: number;
  /**
   * The protocols an input given as a string may use (see allowedByProtocols): 'file' for
   * local paths, 'pipe' for '-', URL schemes ('https'). Also ffmpeg's -protocol_whitelist, so
   * what ffmpeg opens on its own (a playlist's segments) obeys it too. Default: any.
   */
  protocols?: readonly string[];
  /**
   * ffmpeg decoders over one compressed local file (an input ffmpeg decodes that is a regular
   * file, not y4m or raw): 2 or more cut it at keyframes and decode the segments at once (see
   * SegmentedFfmpegSource; the frames are those of one decoder). Default 1: ffmpeg's own threads
   * already take every core for H.264/HEVC (measured on the H100 machine, see the README).
   * 'auto': half the cores, at most 4. Pipes, URLs, y4m and raw: always one.
   */
  decoders?: number | 'auto';
  /**
   * Options for ffmpeg placed before its `-i` for inputs it decodes (not y4m or raw read
   * natively): a hardware decoder with your own ffmpeg (ffmpegPath), e.g.
   * ['-hwaccel', 'cuda'] or ['-c:v', 'h264_cuvid'].
   */
  ffmpegInputOptions?: readonly string[];
}

/**
 * Why an input string is refused by a protocol list, or undefined when it is allowed. A
 * string with a scheme (two letters or more, then ':') is that protocol (file: a file), '-'
 * is 'pipe', anything else a local path ('file').
 */
export function refusedByProtocols(input: string, protocols: readonly string[]): string | undefined {
  const allowed = new Set(protocols.map((p) => p.toLowerCase().replace(/:(\/\/)?$/, '')));
  const scheme = input === '-' ? 'pipe' : (/^([a-z][a-z0-9+.-]+):/i.exec(input)?.[1]?.toLowerCase() ?? 'file');
  if (allowed.has(scheme)) return undefined;
  const what = input === '-' ? 'standard input (pipe)' : scheme === 'file' ? 'a local file (file)' : `a ${scheme}: input`;
  return `is ${what}, which this run does not allow (protocols: ${[...allowed].join(', ') || 'none'})`;
}

/** The name the pipeline uses for these options. */
export type SourceOptions = OpenFrameSourceOptions;

/** A path or URL, '-', a Readable, a FrameSource, or a fluent-ffmpeg command (as it is, or through transcodeInput). */
export type FrameInput = string | Readable | FrameSource | TranscodeInput | FluentCommand;

export function isFrameSource(x: unknown): x is FrameSource {
  return (
    typeof x === 'object' &&
    x !== null &&
    !(x instanceof Readable) &&
    typeof (x as FrameSource).format === 'function' &&
    typeof (x as FrameSource).close === 'function' &&
    typeof (x as FrameSource)[Symbol.asyncIterator] === 'function'
  );
}

/** scheme://... (http, https, rtmp, srt, ...): for ffmpeg. */
function isUrl(input: string): boolean {
  return /^[a-z][a-z0-9+.-]+:\/\//i.test(input) && !/^file:/i.test(input);
}

/** ffmpeg's other protocol syntax (concat:a|b, pipe:3, ...); two letters at least, so C:\ stays a path. */
function looksLikeProtocol(input: string): boolean {
  return /^[a-z][a-z0-9+.-]+:/i.test(input);
}

/** A FrameSource whose real source is still being chosen (a stat, a sniff). */
class DeferredSource implements FrameSource {
  private closed = false;
  private iterated = false;
  private locating = false;

  constructor(
    readonly label: string,
    private readonly opening: Promise<FrameSource>,
    private readonly abort?: AbortController,
  ) {
    opening.catch(() => {}); // reported by format() / next()
  }

  async format(): Promise<FrameFormat> {
    return (await this.opening).format();
  }

  /** Located frames (decode/located-frames.ts), asked of the source once it is chosen, before its first frame. */
  locateFrames(): void {
    this.locating = true;
  }

  [Symbol.asyncIterator](): AsyncIterator<Frame> {
    if (this.iterated) throw new Error(`${this.label}: a FrameSource can be iterated only once`);
    this.iterated = true;
    let inner: AsyncIterator<Frame> | undefined;
    return {
      next: async () => {
        if (!inner) {
          const source = await this.opening;
          if (this.closed) return { done: true, value: undefined };
          if (this.locating) locateFrames(source);
          inner = source[Symbol.asyncIterator]();
        }
        return inner.next();
      },
      return: async (value?: unknown) => {
        if (inner?.return) return inner.return(value);
        return { done: true, value: undefined };
      },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.abort?.abort(); // an open still waiting (a named pipe's writer) gives up
    let source: FrameSource;
    try {
      source = await this.opening;
    } catch {
      return;
    }
    await source.close();
  }
}

interface Route {
  label: string;
  /** Aborted when the source is closed before it is open (ends a wait for a pipe's writer). */
  signal: AbortSignal;
  raw: RawReaderOptions | undefined;
  options: OpenFrameSourceOptions;
}

/**
 * An input ffmpeg decodes (with `decoders` > 1: segments of a local file, decoded side by
 * side). The decoders' modules are loaded by the runs that have such an input: a y4m or raw
 * file's run does not.
 */
async function ffmpegSource(input: string | Readable, options: FfmpegSourceOptions, decoders = 1): Promise<FrameSource> {
  if (decoders > 1 && typeof input === 'string') {
    const { SegmentedFfmpegSource } = await import('./segmented-source.js');
    return new SegmentedFfmpegSource(input, { ...options, decoders });
  }
  const { FfmpegSource } = await import('./ffmpeg-source.js');
  return new FfmpegSource(input, options);
}

function ffmpegOptions(route: Route, probe: boolean): FfmpegSourceOptions {
  const { options, raw, label } = route;
  const o: FfmpegSourceOptions = { label, probe };
  if (options.ffmpegPath !== undefined) o.ffmpegPath = options.ffmpegPath;
  if (options.scaleTo !== undefined) o.scaleTo = options.scaleTo;
  if (options.poolSlots !== undefined) o.poolSlots = options.poolSlots;
  if (options.planes !== undefined) o.planes = options.planes;
  if (options.stallTimeoutMs !== undefined) o.stallTimeoutMs = options.stallTimeoutMs;
  if (options.protocols !== undefined) o.protocols = options.protocols;
  if (options.ffmpegInputOptions?.length) o.inputOptions = [...options.ffmpegInputOptions];
  if (raw) {
    const f = rawFormat(raw, label);
    o.inputOptions = [...(o.inputOptions ?? []), '-f', 'rawvideo', '-pix_fmt', ffmpegPixelFormat(f.chroma, f.bitDepth), '-s', `${f.width}x${f.height}`];
    if (f.fps) o.inputOptions.push('-framerate', String(f.fps));
  }
  return o;
}

function streamSourceOptions(route: Route) {
  const o: { label: string; poolSlots?: number; planes?: PlaneSelection; stallTimeoutMs?: number } = { label: route.label };
  if (route.options.poolSlots !== undefined) o.poolSlots = route.options.poolSlots;
  if (route.options.planes !== undefined) o.planes = route.options.planes;
  if (route.options.stallTimeoutMs !== undefined) o.stallTimeoutMs = route.options.stallTimeoutMs;
  return o;
}

/**
 * The stream's first bytes (sniffStream), bounded by the stall timeout: a pipe whose writer
 * opened it but sends nothing is E_INPUT_STALLED, its stream destroyed, rather than a wait
 * that no frame-level timeout would see.
 */
async function sniffWithin(stream: Readable, route: Route): Promise<Sniffed> {
  const sniffing = sniffStream(stream, Y4M_MAGIC.length);
  const limit = route.options.stallTimeoutMs;
  if (limit === undefined || !(limit > 0) || !Number.isFinite(limit)) return sniffing;
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      sniffing.catch(() => {}); // ends once the stream is destroyed: the stall is the error
      reject(new InputError('E_INPUT_STALLED', route.label, `no data for ${limit / 1000} s (the stall timeout): the input stalled`, 0));
      stream.destroy();
    }, limit);
  });
  try {
    return await Promise.race([sniffing, stalled]);
  } finally {
    clearTimeout(timer);
  }
}

/** A stream (stdin, a pipe, a Readable): raw, or sniffed for y4m, else ffmpeg. */
async function openStream(stream: Readable, route: Route): Promise<FrameSource> {
  if (route.raw && !route.options.scaleTo) return new RawReader(stream, { ...route.raw, ...streamSourceOptions(route) });
  if (route.raw) return ffmpegSource(stream, ffmpegOptions(route, false));
  let sniffed;
  try {
    sniffed = await sniffWithin(stream, route);
  } catch (err) {
    throw streamError(route.label, err);
  }
  if (sniffed.head.length === 0) throw new InputError('E_INPUT_EMPTY', route.label, 'is empty: no data, no frames');
  if (sniffed.head.toString('latin1') === Y4M_MAGIC && !route.options.scaleTo) {
    return new Y4mReader(sniffed.stream, streamSourceOptions(route));
  }
  return ffmpegSource(sniffed.stream, ffmpegOptions(route, false));
}

/**
 * A named pipe as a socket on its descriptor: libuv reads it without blocking, so closing
 * the source (a stall timeout, an error elsewhere) ends a pending read at once. A file
 * stream's read of a pipe whose writer went quiet would hold a thread-pool thread, and the
 * process, until the writer sends again.
 *
 * Opening waits for a writer (open(2) blocks on a thread-pool thread). With a stall timeout,
 * a pipe that gets no writer in that time is E_INPUT_STALLED; closing the source (`signal`)
 * ends the wait too. Either way the blocked open is released by opening the write end
 * ourselves (non-blocking: a reader is waiting, so it succeeds), then both ends are closed:
 * no thread stays stuck in open(), nothing keeps the process alive.
 */
async function openFifo(file: string, label: string, stallTimeoutMs: number | undefined, signal: AbortSignal): Promise<Readable> {
  let settled = false;
  const opening = new Promise<number>((resolve, reject) => openFd(file, 'r', (err, opened) => {
    settled = true;
    if (err) reject(err);
    else resolve(opened);
  }));
  const limit = stallTimeoutMs !== undefined && stallTimeoutMs > 0 && Number.isFinite(stallTimeoutMs) ? stallTimeoutMs : undefined;
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const gaveUp = new Promise<never>((_, reject) => {
    if (limit !== undefined) {
      timer = setTimeout(() => reject(new InputError('E_INPUT_STALLED', label, `no writer opened the named pipe in ${limit / 1000} s (the stall timeout): the input stalled`)), limit);
    }
    onAbort = () => reject(new InputError('E_INPUT_EMPTY', label, 'was closed before a writer opened the named pipe: no frames'));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    const fd = await Promise.race([opening, gaveUp]);
    return new Socket({ fd, readable: true, writable: false });
  } catch (err) {
    if (!settled) releaseBlockedOpen(file, opening);
    else void opening.then((fd) => closeFd(fd, () => {}), () => {}); // opened just as we gave up
    throw streamError(label, err);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}

/**
 * Ends an open(2) of a named pipe still waiting for a writer: our own non-blocking write end
 * lets it return; then both descriptors are closed. The open may not have reached the kernel
 * yet (the thread pool busy): ENXIO (no reader yet) is retried until the open returns.
 */
function releaseBlockedOpen(file: string, opening: Promise<number>): void {
  let done = false;
  let writer: number | undefined;
  let tries = 0;
  const attempt = (): void => {
    if (done) return;
    try {
      writer ??= openSync(file, fsConstants.O_WRONLY | fsConstants.O_NONBLOCK);
    } catch (err) {
      // ENXIO: the reader's open is not in the kernel yet; try again, for 5 s at most. Any
      // other error (the pipe removed): nothing more can be done from here.
      if ((err as NodeJS.ErrnoException).code === 'ENXIO' && ++tries < 250) setTimeout(attempt, 20);
    }
  };
  void opening.then(
    (fd) => closeFd(fd, () => {}),
    () => {},
  ).finally(() => {
    done = true;
    if (writer !== undefined) closeFd(writer, () => {});
  });
  attempt();
}

async function startsWithY4mMagic(file: string): Promise<boolean> {
  const handle = await open(file, 'r');
  try {
    const buf = Buffer.alloc(Y4M_MAGIC.length);
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    return bytesRead === buf.length && buf.toString('latin1') === Y4M_MAGIC;
  } finally {
    await handle.close();
  }
}

async function openPath(file: string, route: Route): Promise<FrameSource> {
  if (isUrl(file)) return ffmpegSource(file, ffmpegOptions(route, true));
  let info;
  try {
    info = await stat(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' && looksLikeProtocol(file)) {
      return ffmpegSource(file, ffmpegOptions(route, true));
    }
    throw streamError(route.label, err);
  }
  if (info.isDirectory()) throw new InputError('E_INPUT_NOT_FOUND', route.label, 'is a directory, not a video file');
  if (info.isFile() && info.size === 0) throw new InputError('E_INPUT_EMPTY', route.label, 'is empty (0 bytes): no frames');
  const ext = path.extname(file).toLowerCase();
  const isY4m = ext === '.y4m' && !route.options.scaleTo;
  if (!info.isFile()) {
    // A named pipe, a character device (/dev/stdin), a socket: read it once, as a stream.
    const stream = info.isFIFO() ? await openFifo(file, route.label, route.options.stallTimeoutMs, route.signal) : createReadStream(file, { highWaterMark: 1 << 20 });
    if (isY4m) return new Y4mReader(stream, streamSourceOptions(route));
    return openStream(stream, route);
  }
  // A regular file is read by its descriptor: straight into the pool slots, chroma unread when not kept.
  if (isY4m) return new Y4mReader({ file }, streamSourceOptions(route));
  if (route.raw && !route.options.scaleTo) return new RawReader({ file }, { ...route.raw, ...streamSourceOptions(route) });
  // ffmpeg would take "a:b.mp4" for protocol "a".
  const ffmpegInput = file.includes(':') && !path.isAbsolute(file) ? `file:${file}` : file;
  if (!route.raw && !route.options.scaleTo) {
    try {
      if (await startsWithY4mMagic(file)) {
        return new Y4mReader({ file }, streamSourceOptions(route));
      }
    } catch (err) {
      throw streamError(route.label, err);
    }
  }
  const decoders = route.raw ? 1 : resolveDecoders(route.options.decoders, route.label);
  return ffmpegSource(ffmpegInput, ffmpegOptions(route, true), decoders);
}

/** The decoders option as a count (UsageError for anything but 'auto' or a whole number from 1 to 64). */
export function resolveDecoders(decoders: number | 'auto' | undefined, label: string): number {
  if (decoders === undefined) return 1;
  if (decoders === 'auto') return autoDecoders();
  if (!Number.isInteger(decoders) || decoders < 1 || decoders > 64) {
    throw new UsageError(`${label}: decoders must be 'auto' or a whole number from 1 to 64, got ${String(decoders)}`);
  }
  return decoders;
}

/**
 * Opens any input as a FrameSource. Returns at once; the input is opened (and errors are
 * raised) when format() or the iterator is first used. Throws UsageError at once for bad
 * raw geometry or a scaleTo on an existing FrameSource.
 */
export function openFrameSource(input: FrameInput, options: OpenFrameSourceOptions = {}): FrameSource {
  if (isFrameSource(input)) {
    if (options.scaleTo) throw new UsageError(`${input.label}: scaleTo cannot apply to an already open FrameSource`);
    return input;
  }
  if (isFluentCommand(input) || isTranscodeInput(input)) {
    const transcode = asTranscodeInput(input);
    const label = options.label ?? transcode.label;
    validateScale(label, options.scaleTo);
    if (options.width !== undefined || options.height !== undefined || options.pixelFormat !== undefined) {
      throw new UsageError(`${label}: raw YUV options do not apply to a fluent-ffmpeg command (its output is a container ffmpeg reads)`);
    }
    const route: Route = { label, raw: undefined, options, signal: new AbortController().signal };
    return openTranscodeSource(transcode, (stream) => openStream(stream, route), options.ffmpegPath, label);
  }
  const label = options.label ?? (typeof input === 'string' ? input : 'stream');
  validateScale(label, options.scaleTo);
  checkPlaneSelection(label, options.planes);
  if (options.decoders !== undefined) resolveDecoders(options.decoders, label); // UsageError now
  const wantsRaw =
    options.width !== undefined || options.height !== undefined || options.pixelFormat !== undefined ||
    (typeof input === 'string' && path.extname(input).toLowerCase() === '.yuv');
  const isY4mPath = typeof input === 'string' && path.extname(input).toLowerCase() === '.y4m';
  let raw: RawReaderOptions | undefined;
  if (wantsRaw && !isY4mPath) {
    if (options.width === undefined || options.height === undefined) {
      throw new UsageError(`${label}: raw YUV input needs width and height (and pixelFormat, bitDepth unless 420 8-bit)`);
    }
    raw = { width: options.width, height: options.height };
    if (options.pixelFormat !== undefined) raw.pixelFormat = options.pixelFormat;
    if (options.bitDepth !== undefined) raw.bitDepth = options.bitDepth;
    if (options.fps !== undefined) raw.fps = options.fps;
    rawFormat(raw, label); // UsageError now rather than later
  }
  const abort = new AbortController();
  const route: Route = { label, raw, options, signal: abort.signal };
  let opening: Promise<FrameSource>;
  const refused = typeof input === 'string' && options.protocols ? refusedByProtocols(input, options.protocols) : undefined;
  if (refused !== undefined) {
    opening = Promise.reject(new InputError('E_INPUT_NOT_ALLOWED', label, refused));
  } else if (typeof input === 'string') {
    opening = input === '-' ? openStream(process.stdin, route) : openPath(input, route);
  } else if (input instanceof Readable || (typeof input === 'object' && input !== null && typeof (input as Readable).pipe === 'function')) {
    opening = openStream(input as Readable, route);
  } else {
    throw new UsageError(`${label}: not an input: expected a path, '-', a Readable or a FrameSource`);
  }
  return new DeferredSource(label, opening, abort);
}

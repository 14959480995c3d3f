/**
 * Decodes anything ffmpeg reads (a file, a URL, a stream) into a yuv4mpegpipe and parses
 * it with the native Y4mReader. The input's own pixel format is kept when it is a planar
 * YUV format the reader takes (8/10/12/16-bit 4:2:0, 4:2:2, 4:4:4, gray), so ffmpeg converts
 * nothing; other formats become the nearest planar YUV at the same depth (RGB → 4:4:4).
 * Optional scaling (scaleTo) uses bicubic, as `scale=W:H:flags=bicubic`.
 *
 * Presentation times: ffmpeg writes frames at a constant rate from 0 (frame i at i / fps);
 * where the input was probed, its start time is added, so a frame's pts is its time in the
 * input (an MPEG-TS frame at 1.48 s says 1.48, not 0). Unprobed streams count from 0.
 *
 * ffmpeg's stderr is kept: a missing or non-video input becomes an InputError naming the
 * input and quoting ffmpeg's last error line; an input with no frames, E_INPUT_EMPTY.
 *
 * Luma only: VIF, ADM and motion read luma alone, so when the pixel format is known (the
 * input was probed, or pixelFormat was given) ffmpeg is asked for the Y plane only
 * (`format=pix_fmts=<fmt>,extractplanes=y`, after any scale): a mono y4m (Cmono, Cmono10,
 * Cmono12, Cmono16) of the same samples, a third of the bytes of a 4:2:0 stream and two
 * thirds less at 4:4:4. The frames report the source's chroma. It stays a y4m, not rawvideo:
 * its header gives the exact frame rate (the probe's banner rounds 30000/1001 to 29.97) and
 * the size ffmpeg really writes (autorotated video is not the size the banner says), and each
 * FRAME marker checks the framing. Unprobed streams get the full planar y4m, as before.
 *
 * Every plane (planes 'all', for features that read chroma): the full planar y4m in the
 * input's own pixel format (or the nearest planar YUV, as above), read into one pool slot
 * per frame; a gray input is then an error naming it. ffmpeg's y4m muxer in 4.x (the bundled
 * one) writes each chroma row of an odd-width picture above 8 bits one byte short (it halves
 * the row's bytes instead of its samples; 7.0 does not): such pictures (4:2:0 and 4:2:2, odd
 * width, 10 to 16 bits) are refused with an error naming the input, rather than misread.
 *
 * ffmpeg runs as a direct child (no fluent-ffmpeg, no PassThrough in between). Its stdout is
 * one end of a Unix socket whose other end we read with direct reads: the kernel copies each
 * frame straight into its pool slot, in reads as large as the socket holds (see directChannel
 * and DirectFeed). Where that is not available (Windows), its stdout pipe, read with 'data'
 * events copied into the slot as they come.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';

import { InputError, VmafError } from '../errors.js';
import type { Frame, FrameFormat, FrameSource, PlaneSelection } from '../types.js';
import { validateScale, type ScaleTo } from './decoder-options.js';
import {
  NATIVE_PIXEL_FORMATS,
  choosePixelFormat,
  ffmpegFailure,
  lastErrorLine,
  lumaPlaneOf,
  probeInput,
  type FfmpegInputInfo,
} from './ffmpeg-probe.js';
import { DirectFeed } from './byte-reader.js';
import { resolveFfmpegPath } from './ffmpeg-path.js';
import { Y4mReader, type Y4mReaderOptions } from './y4m-reader.js';

// Its home moved so that openFrameSource checks a scale without loading this module.
export { validateScale };

export type { ScaleTo };

export interface FfmpegSourceOptions {
  /** Names the input in messages (default: the path, or 'stream'). */
  label?: string;
  /** The ffmpeg binary (else FFMPEG_PATH, else @ffmpeg-installer/ffmpeg). */
  ffmpegPath?: string;
  /** Scale every frame to this size (bicubic). */
  scaleTo?: ScaleTo;
  /** Frame buffers this source may have out at once (default 8). */
  poolSlots?: number;
  /**
   * 'luma' (default): frames carry luma only (ffmpeg sends the Y plane alone where it can,
   * see lumaOnly). 'all': luma and both chroma planes, from the full planar y4m.
   */
  planes?: PlaneSelection;
  /**
   * Run `ffmpeg -i` on the input first to learn its pixel format (default: true for a
   * path or URL, false for a stream, which cannot be read twice). Without a probe, ffmpeg
   * keeps a native planar YUV format and picks the closest one from the list otherwise.
   */
  probe?: boolean;
  /** Options placed before -i (e.g. ['-f', 'rawvideo', '-pix_fmt', 'yuv420p', '-s', '64x48']). */
  inputOptions?: string[];
  /** Ask ffmpeg for this pixel format (an ffmpeg name from NATIVE_PIXEL_FORMATS) instead. */
  pixelFormat?: string;
  /**
   * Have ffmpeg send the luma plane only when the pixel format is known (default true).
   * false: the whole planar y4m, the chroma read past (the path of unprobed streams).
   */
  lumaOnly?: boolean;
  /**
   * Read ffmpeg's output through a Unix socket with direct reads into the pool slots
   * (default true; not on Windows): see directChannel. false: its stdout pipe, 'data' events.
   */
  directReads?: boolean;
  /** The input frame ffmpeg's first output frame is (after a seek in inputOptions); see StreamFrameSourceOptions.firstIndex. */
  firstIndex?: number;
  /**
   * A live input that sends no frame for this long (ffmpeg stalled, a source that stopped
   * sending) is an E_INPUT_STALLED error naming it and the frame awaited; ffmpeg is stopped.
   * Default: no limit (a live input may pause).
   */
  stallTimeoutMs?: number;
  /**
   * ffmpeg's `-protocol_whitelist` (for the probe too): the protocols ffmpeg may open, nested
   * ones included (an HLS playlist's segments). Transports a protocol needs are added
   * (https: tls, tcp). Default: ffmpeg's own rules.
   */
  protocols?: readonly string[];
  /**
   * What a probe of this input already found (the segmented source probes once for all its
   * decoders): no probe runs; its pixel format and start time are used as a probe's would be.
   */
  inputInfo?: FfmpegInputInfo;
  /** Stop after this many frames (`-frames:v`): a segment that ends at the next one's keyframe. */
  frameLimit?: number;
  /**
   * Keep only the decoded frames whose time (seconds, as ffmpeg counts after the seek in
   * inputOptions) is at least `from` and, when given, below `to`; the first kept frame is
   * written as the stream's first (see keyframeAt: a seek lands at or before the keyframe
   * wanted, so which frames come first is decided by their times, not by a count).
   */
  selectSeconds?: { from: number; to?: number };
}

/** The transports each protocol opens beneath it, which ffmpeg's whitelist must list too. */
const PROTOCOL_TRANSPORTS: Record<string, readonly string[]> = {
  http: ['tcp'],
  https: ['tls', 'tcp', 'crypto'],
  hls: ['crypto'],
  rtmp: ['tcp'],
  rtmps: ['tls', 'tcp'],
  rtsp: ['tcp', 'udp', 'rtp'],
  srt: ['udp'],
  tls: ['tcp'],
};

/** ffmpeg's -protocol_whitelist value for a list of protocols (with the transports they need). */
export function protocolWhitelist(protocols: readonly string[]): string {
  const all = new Set<string>();
  for (const p of protocols) {
    const name = p.toLowerCase();
    all.add(name);
    for (const t of PROTOCOL_TRANSPORTS[name] ?? []) all.add(t);
  }
  return [...all].join(',');
}

interface ExitResult {
  /** Why ffmpeg failed or could not start. */
  error?: Error;
}

const STDERR_LINES = 60;

/** ffmpeg's stdout as a Unix socket that we read with direct reads (see directChannel). */
interface DirectChannel {
  /** The end ffmpeg writes to: its stdout. Closed here once ffmpeg has it. */
  childEnd: net.Socket;
  /** Our end, made with onread: feed.onread. */
  ours: net.Socket;
  feed: DirectFeed;
}

/** Longest Unix socket path used (sun_path holds 104 bytes on macOS, 108 on Linux). */
const MAX_SOCKET_PATH = 100;

/**
 * A connected pair of Unix sockets for ffmpeg's stdout, our end read with direct reads: the
 * kernel copies ffmpeg's frames straight into the pool slots, in reads as large as the socket
 * holds. (A child's stdio pipe is a socket too, but Node reads it 64 KiB at a time into fresh
 * buffers, and its own end cannot take `onread`.) The listening socket lives for a moment in a
 * private temporary folder (mode 0700) that is removed at once. undefined on Windows or on any
 * failure: ffmpeg's stdout is then an ordinary pipe read with 'data' events.
 */
async function directChannel(): Promise<DirectChannel | undefined> {
  if (process.platform === 'win32') return undefined;
  let dir: string | undefined;
  let server: net.Server | undefined;
  let ours: net.Socket | undefined;
  try {
    dir = await mkdtemp(path.join(os.tmpdir(), 'vmaf-stream-'));
    const socketPath = path.join(dir, 'out.sock');
    if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH) return undefined;
    const listening = net.createServer({ pauseOnConnect: true });
    server = listening;
    await new Promise<void>((resolve, reject) => {
      listening.once('error', reject);
      listening.listen(socketPath, () => {
        listening.off('error', reject);
        resolve();
      });
    });
    const accepted = new Promise<net.Socket>((resolve, reject) => {
      listening.once('connection', resolve);
      listening.once('error', reject);
    });
    const feed = new DirectFeed();
    const socket = net.connect({ path: socketPath, onread: feed.onread });
    ours = socket;
    const connected = new Promise<void>((resolve, reject) => {
      const fail = (err: Error) => reject(err);
      socket.once('error', fail);
      socket.once('connect', () => {
        socket.off('error', fail);
        resolve();
      });
    });
    const [childEnd] = await Promise.all([accepted, connected]);
    return { childEnd, ours: socket, feed };
  } catch {
    ours?.destroy();
    return undefined;
  } finally {
    server?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true }).catch(() => {});
  }
}

export class FfmpegSource implements FrameSource {
  readonly label: string;
  /** The ffmpeg command line, once ffmpeg has started. */
  commandLine: string | undefined;
  /** The pixel format asked of ffmpeg (undefined: chosen by ffmpeg from the native list). */
  requestedPixelFormat: string | undefined;
  /** True once ffmpeg has been asked for the luma plane alone (extractplanes=y). */
  lumaOnly = false;
  /** True once ffmpeg writes to a socket read with direct reads (else its stdout pipe). */
  directReads = false;
  /** What the probe found, when one ran. */
  inputInfo: FfmpegInputInfo | undefined;
  /** The ffmpeg child's process id, once started. */
  pid: number | undefined;

  private readonly input: string | Readable;
  private readonly options: FfmpegSourceOptions;
  private readonly stderrLines: string[] = [];
  private stderrTail = '';
  /** Probes, spawns ffmpeg and makes the reader over its stdout; undefined when closed first. */
  private opening: Promise<Y4mReader | undefined> | undefined;
  private reader: Y4mReader | undefined;
  private child: ChildProcess | undefined;
  private iterated = false;
  private closed = false;
  private resolveExit!: (r: ExitResult) => void;
  private readonly exit: Promise<ExitResult>;
  private exited = false;
  /** Frames handed out so far: the next one's index is firstIndex + this. */
  private framesRead = 0;

  constructor(input: string | Readable, options: FfmpegSourceOptions = {}) {
    this.input = input;
    this.options = options;
    this.label = options.label ?? (typeof input === 'string' ? input : 'stream');
    validateScale(this.label, options.scaleTo);
    this.exit = new Promise<ExitResult>((resolve) => {
      this.resolveExit = (r) => {
        if (this.exited) return;
        this.exited = true;
        resolve(r);
      };
    });
  }

  format(): Promise<FrameFormat> {
    return this.open()
      .then((reader) => {
        if (!reader) throw new InputError('E_INPUT_EMPTY', this.label, 'was closed before ffmpeg started: no frames');
        return reader.format();
      })
      .catch((err: unknown) => {
        throw this.mapError(err);
      });
  }

  [Symbol.asyncIterator](): AsyncIterator<Frame> {
    if (this.iterated) throw new Error(`${this.label}: a FrameSource can be iterated only once`);
    this.iterated = true;
    const opening = this.open();
    let inner: AsyncIterator<Frame> | undefined;
    const mapError = (err: unknown) => this.mapError(err);
    const next = async (): Promise<IteratorResult<Frame>> => {
      if (!inner) {
        const reader = await opening;
        if (!reader) return { done: true, value: undefined };
        inner = reader[Symbol.asyncIterator]();
      }
      const step = await this.nextWithin(inner);
      if (!step.done) this.framesRead++;
      // ffmpeg's output starts at 0 (constant frame rate): the input's own time is
      // its start time (known from the probe) plus that.
      const offset = this.inputInfo?.startTime;
      if (!step.done && step.value.pts !== undefined && offset !== undefined && Number.isFinite(offset) && offset !== 0) {
        step.value.pts += offset;
      }
      return step;
    };
    return {
      next: () =>
        next().catch((err: unknown) => {
          throw mapError(err);
        }),
      return: async (value?: unknown) => (inner?.return ? inner.return(value) : { done: true, value: undefined }),
    };
  }

  /** The index the next frame has in the input. */
  private get nextIndex(): number {
    return (this.options.firstIndex ?? 0) + this.framesRead;
  }

  /** inner.next(), or E_INPUT_STALLED (ffmpeg stopped) when no frame comes within stallTimeoutMs. */
  private async nextWithin(inner: AsyncIterator<Frame>): Promise<IteratorResult<Frame>> {
    const limit = this.options.stallTimeoutMs;
    const step = inner.next();
    if (limit === undefined || !(limit > 0) || !Number.isFinite(limit)) return step;
    let timer: NodeJS.Timeout | undefined;
    const stalled = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        step.catch(() => {}); // fails once ffmpeg is killed: the stall is the error
        this.kill();
        const seconds = limit / 1000;
        reject(new InputError('E_INPUT_STALLED', this.label, `no frame for ${seconds} s (the stall timeout): the input or ffmpeg stalled; ffmpeg was stopped`, this.nextIndex));
      }, limit);
    });
    try {
      return await Promise.race([step, stalled]);
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    let reader: Y4mReader | undefined;
    try {
      reader = await this.opening;
    } catch {
      // never started: nothing of ffmpeg's to stop
    }
    if (reader) await reader.close(); // calls stop()
    else await this.stop();
  }

  /** ffmpeg's recent stderr lines (at most 60). */
  get stderr(): string {
    return this.stderrLines.join('\n');
  }

  private mapError(err: unknown): unknown {
    if (err instanceof InputError && err.code === 'E_INPUT_EMPTY' && err.input === this.label) {
      return new InputError('E_INPUT_EMPTY', this.label, 'has no video frames (ffmpeg decoded none)', undefined, { cause: err });
    }
    return err;
  }

  private open(): Promise<Y4mReader | undefined> {
    if (!this.opening) {
      this.opening = this.closed ? Promise.resolve(undefined) : this.launch();
      this.opening.catch(() => {}); // reported by format() / next()
    }
    return this.opening;
  }

  private async launch(): Promise<Y4mReader | undefined> {
    const ffmpegPath = await resolveFfmpegPath(this.options.ffmpegPath ? { ffmpegPath: this.options.ffmpegPath } : {});
    if (this.closed) return undefined;
    const inputOptions = [...(this.options.inputOptions ?? [])];
    if (this.options.protocols) inputOptions.unshift('-protocol_whitelist', protocolWhitelist(fromStreamProtocols(this.input, this.options.protocols)));
    let target = this.options.pixelFormat;
    const probe = this.options.probe ?? typeof this.input === 'string';
    if (!target && this.options.inputInfo) {
      this.inputInfo = this.options.inputInfo;
      target = choosePixelFormat(this.inputInfo.video?.pixFmt);
    } else if (!target && probe && typeof this.input === 'string') {
      const { info } = await probeInput(ffmpegPath, this.input, this.label, inputOptions);
      this.inputInfo = info;
      target = choosePixelFormat(info.video?.pixFmt);
    }
    if (this.closed) return undefined;
    this.requestedPixelFormat = target;
    const luma = this.options.lumaOnly === false || this.options.planes === 'all' ? undefined : lumaPlaneOf(target);
    this.lumaOnly = luma !== undefined;

    const filters: string[] = [];
    const select = this.options.selectSeconds;
    if (select) {
      const to = select.to !== undefined ? `*lt(t,${select.to.toFixed(6)})` : '';
      filters.push(`select='gte(t,${select.from.toFixed(6)})${to}'`, 'setpts=PTS-STARTPTS');
    }
    const scale = this.options.scaleTo;
    if (scale) filters.push(`scale=${scale.width}:${scale.height}:flags=bicubic`);
    filters.push(`format=pix_fmts=${target ?? NATIVE_PIXEL_FORMATS.join('|')}`);
    if (luma) filters.push('extractplanes=y');

    const fromStream = typeof this.input !== 'string';
    const channel = this.options.directReads === false ? undefined : await directChannel();
    if (this.closed) {
      channel?.childEnd.destroy();
      channel?.ours.destroy();
      return undefined;
    }
    const args = [
      '-hide_banner', '-nostats', '-loglevel', 'error', ...(fromStream ? [] : ['-nostdin']), ...inputOptions,
      '-i', typeof this.input === 'string' ? this.input : 'pipe:0',
      '-map', '0:v:0', '-vf', filters.join(','), ...(this.options.frameLimit !== undefined ? ['-frames:v', String(this.options.frameLimit)] : []),
      '-strict', '-1', '-f', 'yuv4mpegpipe', 'pipe:1',
    ];
    let child: ChildProcess;
    try {
      child = spawn(ffmpegPath, args, { stdio: [fromStream ? 'pipe' : 'ignore', channel ? channel.childEnd : 'pipe', 'pipe'], windowsHide: true });
    } catch (err) {
      channel?.ours.destroy();
      throw err;
    } finally {
      // ffmpeg has its own copy: ours must go, or its end of the output never ends.
      channel?.childEnd.destroy();
    }
    this.child = child;
    this.pid = child.pid;
    this.commandLine = `ffmpeg ${args.join(' ')}`;
    this.watch(child);
    if (typeof this.input !== 'string') {
      const input = this.input;
      input.on('error', (err: Error) => {
        const error = new Error(`Input stream error: ${err.message}`);
        (error as Error & { inputStreamError?: Error }).inputStreamError = err;
        this.resolveExit({ error });
        this.kill();
      });
      child.stdin!.on('error', () => {}); // ffmpeg fails on its own
      input.resume();
      input.pipe(child.stdin!);
    }

    const readerOptions: Y4mReaderOptions = {
      label: this.label,
      destroyStream: true,
      checkEnd: (atEof) => this.checkEnd(atEof),
      onClose: () => this.stop(),
    };
    if (this.options.poolSlots !== undefined) readerOptions.poolSlots = this.options.poolSlots;
    if (this.options.planes !== undefined) readerOptions.planes = this.options.planes;
    if (this.options.firstIndex !== undefined) readerOptions.firstIndex = this.options.firstIndex;
    if (luma) readerOptions.lumaOf = luma;
    if (this.options.planes === 'all') readerOptions.onHeader = (header) => this.refuseCutChromaRows(header.format);
    if (channel) readerOptions.directFeed = channel.feed;
    this.directReads = channel !== undefined;
    this.reader = new Y4mReader(channel ? channel.ours : child.stdout!, readerOptions);
    return this.reader;
  }

  /** Pictures whose chroma rows ffmpeg's y4m muxer cuts (see the module comment): refused. */
  private refuseCutChromaRows(format: FrameFormat): void {
    if (format.width % 2 === 1 && format.bitDepth > 8 && (format.chroma === '420' || format.chroma === '422')) {
      throw new InputError(
        'E_INPUT_FORMAT',
        this.label,
        `its chroma planes cannot be read through ffmpeg: ${format.width}x${format.height} ${format.bitDepth}-bit ` +
          `${format.chroma} has an odd width, and ffmpeg's y4m muxer (4.x) cuts the last byte of each chroma row of ` +
          'such pictures; give it as y4m or raw YUV (read natively)',
      );
    }
  }

  /** Keeps ffmpeg's last stderr lines; resolves `exit` once it has exited and stderr is closed. */
  private watch(child: ChildProcess): void {
    let status: ExitResult | undefined;
    let stderrClosed = false;
    const done = () => {
      if (status && stderrClosed) this.resolveExit(status);
    };
    const stderr = child.stderr!;
    stderr.setEncoding('utf8');
    stderr.on('data', (text: string) => {
      const lines = (this.stderrTail + text).split(/\r\n|\r|\n/);
      this.stderrTail = lines.pop()!;
      for (const line of lines) this.pushStderr(line);
    });
    stderr.on('close', () => {
      if (this.stderrTail) this.pushStderr(this.stderrTail);
      this.stderrTail = '';
      stderrClosed = true;
      done();
    });
    child.on('error', (err: Error) => this.resolveExit({ error: err }));
    child.on('exit', (code, signal) => {
      if (signal) status = { error: new Error(`ffmpeg was killed with signal ${signal}`) };
      else if (code) status = { error: new Error(`ffmpeg exited with code ${code}`) };
      else status = {};
      done();
    });
  }

  private pushStderr(line: string): void {
    if (!line) return;
    this.stderrLines.push(line);
    if (this.stderrLines.length > STDERR_LINES) this.stderrLines.shift();
  }

  /** At the end of the y4m stream: ffmpeg's failure, if it failed, replaces the reader's error. */
  private async checkEnd(atEof: boolean): Promise<void> {
    if (!atEof) {
      // The reader stopped on bad data while ffmpeg may still be writing: stop it.
      this.kill();
      return;
    }
    const result = await this.exit;
    if (this.closed) return;
    if (result.error) throw this.failure(result.error);
  }

  private failure(error: Error): VmafError {
    const message = error.message;
    if (/^Input stream error/.test(message)) {
      return new InputError('E_INPUT_NOT_FOUND', this.label, `cannot be read: ${message}`, undefined, { cause: error });
    }
    const syscall = (error as NodeJS.ErrnoException).syscall;
    if (typeof syscall === 'string' && syscall.startsWith('spawn')) {
      return new VmafError('E_FFMPEG', `${this.label}: cannot run ffmpeg: ${message}`, { cause: error });
    }
    const exit = /ffmpeg (exited with code \d+|was killed with signal \w+)/.exec(message)?.[1];
    const failure = ffmpegFailure(this.label, this.stderr, exit);
    if (this.nextIndex === 0) return failure;
    // In the middle of the input (a decoder started at a later keyframe counts the frames
    // before it too): say where, and that ffmpeg failed rather than the input being
    // undecodable (ffmpeg killed from outside says nothing on stderr).
    const says = failure.message.startsWith(`${this.label}: `) ? failure.message.slice(this.label.length + 2) : failure.message;
    const after = this.nextIndex;
    const text = lastErrorLine(this.stderr) === undefined && exit ? `ffmpeg ${exit} while decoding it, after ${after} frames` : `${says}, after ${after} frames`;
    return new InputError(lastErrorLine(this.stderr) === undefined ? 'E_FFMPEG' : failure.code, this.label, text, this.nextIndex, { cause: error });
  }

  private kill(): void {
    if (this.child && !this.exited) {
      try {
        this.child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  }

  /** close(): kill ffmpeg, stop feeding it, wait for it to go. */
  private async stop(): Promise<void> {
    this.closed = true;
    this.kill();
    if (typeof this.input !== 'string') {
      this.input.unpipe();
      this.input.destroy();
    }
    if (this.child) {
      // SIGKILL is prompt; do not hang on a process that never started.
      await Promise.race([this.exit, new Promise((r) => setTimeout(r, 2000).unref())]);
    }
  }
}

/** A stream is fed through ffmpeg's pipe: protocol, which the caller's Readable may always use. */
function fromStreamProtocols(input: string | Readable, protocols: readonly string[]): readonly string[] {
  return typeof input === 'string' ? protocols : [...protocols, 'pipe'];
}

/** An ffmpeg-decoded FrameSource over a path, URL or Readable. */
export function openFfmpegSource(input: string | Readable, options: FfmpegSourceOptions = {}): FfmpegSource {
  return new FfmpegSource(input, options);
}

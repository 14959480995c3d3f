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
 */
import { PassThrough, type Readable } from 'node:stream';

import ffmpeg from 'fluent-ffmpeg';

import { InputError, UsageError, VmafError } from '../errors.js';
import type { Frame, FrameFormat, FrameSource } from '../types.js';
import { MAX_DIMENSION } from './frame-layout.js';
import { NATIVE_PIXEL_FORMATS, choosePixelFormat, ffmpegFailure, probeInput, type FfmpegInputInfo } from './ffmpeg-probe.js';
import { resolveFfmpegPath } from './ffmpeg-path.js';
import { Y4mReader } from './y4m-reader.js';

export interface ScaleTo {
  width: number;
  height: number;
}

export interface FfmpegSourceOptions {
  /** Names the input in messages (default: the path, or 'stream'). */
  label?: string;
  /** The ffmpeg binary (else FFMPEG_PATH, else @ffmpeg-installer/ffmpeg). */
  ffmpegPath?: string;
  /** Scale every frame to this size (bicubic). */
  scaleTo?: ScaleTo;
  /** Luma buffers this source may have out at once (default 8). */
  poolSlots?: number;
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
}

interface ExitResult {
  /** fluent-ffmpeg's error, when ffmpeg failed or could not start. */
  error?: Error;
}

const STDERR_LINES = 60;

/** Throws UsageError unless scaleTo is absent or a valid size. */
export function validateScale(label: string, scaleTo: ScaleTo | undefined): void {
  if (!scaleTo) return;
  for (const [name, v] of [['width', scaleTo.width], ['height', scaleTo.height]] as const) {
    if (!Number.isInteger(v) || v < 1 || v > MAX_DIMENSION) {
      throw new UsageError(`${label}: the scale ${name} must be a whole number from 1 to ${MAX_DIMENSION}, got ${String(v)}`);
    }
  }
}

export class FfmpegSource implements FrameSource {
  readonly label: string;
  /** The ffmpeg command line, once ffmpeg has started. */
  commandLine: string | undefined;
  /** The pixel format asked of ffmpeg (undefined: chosen by ffmpeg from the native list). */
  requestedPixelFormat: string | undefined;
  /** What the probe found, when one ran. */
  inputInfo: FfmpegInputInfo | undefined;
  /** The ffmpeg child's process id, once started. */
  pid: number | undefined;

  private readonly input: string | Readable;
  private readonly options: FfmpegSourceOptions;
  private readonly out = new PassThrough({ autoDestroy: false, highWaterMark: 1 << 20 });
  private readonly reader: Y4mReader;
  private readonly stderrLines: string[] = [];
  private command: ffmpeg.FfmpegCommand | undefined;
  private started = false;
  private closed = false;
  private startError: unknown;
  private resolveExit!: (r: ExitResult) => void;
  private readonly exit: Promise<ExitResult>;
  private exited = false;

  constructor(input: string | Readable, options: FfmpegSourceOptions = {}) {
    this.input = input;
    this.options = options;
    this.label = options.label ?? (typeof input === 'string' ? input : 'stream');
    validateScale(this.label, options.scaleTo);
    this.exit = new Promise<ExitResult>((resolve) => {
      this.resolveExit = (r) => {
        this.exited = true;
        resolve(r);
      };
    });
    const readerOptions: ConstructorParameters<typeof Y4mReader>[1] = {
      label: this.label,
      destroyStream: true,
      checkEnd: (atEof) => this.checkEnd(atEof),
      onClose: () => this.stop(),
    };
    if (options.poolSlots !== undefined) readerOptions.poolSlots = options.poolSlots;
    this.reader = new Y4mReader(this.out, readerOptions);
  }

  format(): Promise<FrameFormat> {
    this.start();
    return this.reader.format().catch((err: unknown) => {
      throw this.mapError(err);
    });
  }

  [Symbol.asyncIterator](): AsyncIterator<Frame> {
    this.start();
    const inner = this.reader[Symbol.asyncIterator]();
    const mapError = (err: unknown) => this.mapError(err);
    return {
      next: () =>
        inner.next().then(
          (step) => {
            // ffmpeg's output starts at 0 (constant frame rate): the input's own time is
            // its start time (known from the probe) plus that.
            const offset = this.inputInfo?.startTime;
            if (!step.done && step.value.pts !== undefined && offset !== undefined && Number.isFinite(offset) && offset !== 0) {
              step.value.pts += offset;
            }
            return step;
          },
          (err: unknown) => {
            throw mapError(err);
          },
        ),
      return: async (value?: unknown) => (inner.return ? inner.return(value) : { done: true, value: undefined }),
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.reader.close(); // calls stop()
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

  private start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    this.launch().catch((err: unknown) => {
      this.startError = err;
      this.resolveExit({ error: err instanceof Error ? err : new Error(String(err)) });
      this.out.end();
    });
  }

  private async launch(): Promise<void> {
    const ffmpegPath = await resolveFfmpegPath(this.options.ffmpegPath ? { ffmpegPath: this.options.ffmpegPath } : {});
    if (this.closed) return;
    const inputOptions = this.options.inputOptions ?? [];
    let target = this.options.pixelFormat;
    const probe = this.options.probe ?? typeof this.input === 'string';
    if (!target && probe && typeof this.input === 'string') {
      const { info } = await probeInput(ffmpegPath, this.input, this.label, inputOptions);
      this.inputInfo = info;
      target = choosePixelFormat(info.video?.pixFmt);
    }
    if (this.closed) return;
    this.requestedPixelFormat = target;

    const filters: string[] = [];
    const scale = this.options.scaleTo;
    if (scale) filters.push(`scale=${scale.width}:${scale.height}:flags=bicubic`);
    filters.push(`format=pix_fmts=${target ?? NATIVE_PIXEL_FORMATS.join('|')}`);

    const command = ffmpeg({ stdoutLines: STDERR_LINES });
    command.setFfmpegPath(ffmpegPath);
    command.input(this.input);
    command.inputOptions(['-hide_banner', '-nostats', '-loglevel', 'error', ...(typeof this.input === 'string' ? ['-nostdin'] : []), ...inputOptions]);
    command.outputOptions(['-map', '0:v:0', '-vf', filters.join(','), '-strict', '-1', '-f', 'yuv4mpegpipe']);
    command.on('start', (line: string) => {
      this.commandLine = line;
      this.pid = (command as unknown as { ffmpegProc?: { pid?: number } }).ffmpegProc?.pid;
      if (this.closed) command.kill('SIGKILL');
    });
    command.on('stderr', (line: string) => {
      this.stderrLines.push(line);
      if (this.stderrLines.length > STDERR_LINES) this.stderrLines.shift();
    });
    command.on('error', (err: Error) => this.resolveExit({ error: err }));
    command.on('end', () => this.resolveExit({}));
    this.command = command;
    command.pipe(this.out, { end: true });
  }

  /** At the end of the y4m stream: ffmpeg's failure, if it failed, replaces the reader's error. */
  private async checkEnd(atEof: boolean): Promise<void> {
    if (this.startError !== undefined) throw this.startError;
    if (!atEof) {
      // The reader stopped on bad data while ffmpeg may still be writing: stop it.
      this.kill();
      return;
    }
    if (!this.started) return;
    const result = await this.exit;
    if (this.closed) return;
    if (this.startError !== undefined) throw this.startError;
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
    return ffmpegFailure(this.label, this.stderr, exit);
  }

  private kill(): void {
    if (this.command && !this.exited) {
      try {
        this.command.kill('SIGKILL');
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
    if (this.started && this.command) {
      // SIGKILL is prompt; do not hang on a process that never started.
      await Promise.race([this.exit, new Promise((r) => setTimeout(r, 2000).unref())]);
    }
  }
}

/** An ffmpeg-decoded FrameSource over a path, URL or Readable. */
export function openFfmpegSource(input: string | Readable, options: FfmpegSourceOptions = {}): FfmpegSource {
  return new FfmpegSource(input, options);
}

/**
 * The common frame loop of the native readers (y4m, raw): read what precedes a frame,
 * await a pool slot, read the luma plane into it (or, with planes 'all', luma and both
 * chroma planes, which lie back to back in the stream as in the slot: one read), skip the
 * rest of the frame, yield. Subclasses say how the stream starts (readHeader) and what
 * precedes each frame. Asked for located frames (locateFrames), a regular file's frames are
 * skipped instead, and carry their place in the file (decode/located-frames.ts).
 */
import { constants as bufferConstants } from 'node:buffer';
import type { Readable } from 'node:stream';

import { InputError, VmafError } from '../errors.js';
import { FramePool, bytesOf, pooledFrame, type LumaBuffer } from '../pool/frame-pool.js';
import type { Frame, FrameFormat, FrameSource, PlaneSelection } from '../types.js';
import { ByteReader, type DirectFeed, type PullByteReader } from './byte-reader.js';
import { FileByteReader } from './file-byte-reader.js';
import { HOST_IS_LITTLE_ENDIAN, swapBytes16, type FrameLayout } from './frame-layout.js';
import { assertChromaAvailable } from './planes.js';
import { locatedFrame } from './located-frames.js';
import { mark } from '../trace.js';

/**
 * A file read by its descriptor rather than as a stream (see FileByteReader): its planes are
 * read straight into the pool slots, and the bytes a frame does not keep are not read.
 */
export interface FileInput {
  file: string;
  /** The byte to start at (default 0). */
  start?: number;
}

/** What a native reader reads: a Node Readable, or a file by its path. */
export type ByteInput = Readable | FileInput;

export function isFileInput(input: unknown): input is FileInput {
  return typeof input === 'object' && input !== null && typeof (input as FileInput).file === 'string';
}

/** The most bytes one frame buffer may take: a typed array's limit on this Node (4 GiB on 64-bit). */
const MAX_BUFFER_BYTES = bufferConstants.MAX_LENGTH;

/** Slots per source when the caller does not say. */
export const DEFAULT_POOL_SLOTS = 8;

export interface StreamFrameSourceOptions {
  /** Names the input in messages: a path, '-' or a name. */
  label: string;
  /** Frame buffers this source may have out at once (default 8). */
  poolSlots?: number;
  /**
   * 'luma' (default): frames carry the luma plane, the chroma bytes are skipped. 'all':
   * luma and chroma (an error naming the input for a 4:0:0 stream).
   */
  planes?: PlaneSelection;
  /** Destroy the stream on close() (default true). */
  destroyStream?: boolean;
  /**
   * Called once when reading stops on its own: at the end of the input (atEof true) or on
   * an error found in the data (atEof false). It may throw a better error, which replaces
   * the reader's own (ffmpeg's exit status and message, for the ffmpeg source).
   */
  checkEnd?: (atEof: boolean) => Promise<void>;
  /** Called by close(), after the stream is detached. */
  onClose?: () => Promise<void> | void;
  /** Bytes buffered ahead of the reader before the stream is paused (default 1 MiB). */
  highWaterMark?: number;
  /**
   * The stream is a net.Socket created with `onread: directFeed.onread`: its reads land
   * straight in the pool slots (see DirectFeed) instead of coming as 'data' events.
   */
  directFeed?: DirectFeed;
  /**
   * The index of the stream's first frame in its input (default 0): a reader opened in the
   * middle of an input (a segment of a queued run) numbers its frames, their presentation
   * times and its error messages as the whole input would.
   */
  firstIndex?: number;
  /**
   * A read that brings no frame for this many milliseconds (a live pipe or standard input
   * whose writer stopped sending) ends the stream with E_INPUT_STALLED naming the input and
   * the frame, and the stream is closed. Timed only while the caller waits for a frame (or
   * for the header, in format()). Default: no limit. (The ffmpeg source times its own.)
   */
  stallTimeoutMs?: number;
}

export abstract class StreamFrameSource implements FrameSource {
  readonly label: string;
  protected readonly reader: PullByteReader;
  /** The stream read, when the input is one (undefined for a FileInput). */
  protected readonly stream: Readable | undefined;
  /** The file read, for a FileInput. */
  private readonly path: string | undefined;
  private readonly options: StreamFrameSourceOptions;
  private readonly abort = new AbortController();
  private headerTask: Promise<FrameLayout> | undefined;
  private iterated = false;
  private closed = false;
  private endChecked = false;
  private framesRead = 0;
  /** locateFrames() was called: frames of a regular file come located (decode/located-frames.ts). */
  private locating = false;

  protected constructor(input: ByteInput, options: StreamFrameSourceOptions) {
    this.label = options.label;
    this.options = options;
    if (isFileInput(input)) {
      this.path = input.file;
      this.stream = undefined;
      this.reader = new FileByteReader(input.file, input.start !== undefined ? { start: input.start } : {});
    } else {
      this.stream = input;
      this.reader = new ByteReader(input, options.highWaterMark, options.directFeed);
    }
  }

  /** Reads the stream's header, if any, and says what the frames are. */
  protected abstract readHeader(): Promise<FrameLayout>;

  /** Reads what precedes frame `index`; false at a clean end of the input. */
  protected abstract readFrameHeader(index: number, layout: FrameLayout): Promise<boolean>;

  /** Presentation time of frame `index`: index / fps when the frame rate is known. */
  protected ptsOf(index: number, format: FrameFormat): number | undefined {
    return format.fps ? index / format.fps : undefined;
  }

  /**
   * From now on, where the input is a regular file read by its descriptor, each frame comes
   * located (Frame.located, its planes empty): its bytes are skipped here, never read, and
   * the gpu backend's upload reads them from the file itself. A stream, a pipe or a
   * big-endian host's 16-bit samples (swapped as they are read) are read as before. Called
   * before the first frame is read, by a run whose every reader of samples reads located
   * frames; a frame read already is not read again.
   */
  locateFrames(): void {
    this.locating = true;
  }

  /** Frames yielded so far. */
  get frameCount(): number {
    return this.framesRead;
  }

  format(): Promise<FrameFormat> {
    return this.within(this.layoutTask()).then((layout) => layout.format);
  }

  [Symbol.asyncIterator](): AsyncIterator<Frame> {
    if (this.iterated) throw new Error(`${this.label}: a FrameSource can be iterated only once`);
    this.iterated = true;
    const frames = this.frames();
    if (this.stallLimit() === undefined) return frames;
    return {
      next: () => this.within(frames.next()),
      return: (value?: unknown) => frames.return(value as undefined),
    };
  }

  /** The stall timeout in ms, when one applies. */
  private stallLimit(): number | undefined {
    const limit = this.options.stallTimeoutMs;
    return limit !== undefined && limit > 0 && Number.isFinite(limit) ? limit : undefined;
  }

  /**
   * `step`, or E_INPUT_STALLED when it takes longer than the stall timeout: the source is
   * closed then (its stream destroyed, so the pending read ends and nothing is left waiting).
   */
  private async within<T>(step: Promise<T>): Promise<T> {
    const limit = this.stallLimit();
    if (limit === undefined) return step;
    let timer: NodeJS.Timeout | undefined;
    const stalled = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        step.catch(() => {}); // ends once the stream is destroyed: the stall is the error
        const frame = (this.options.firstIndex ?? 0) + this.framesRead;
        reject(new InputError('E_INPUT_STALLED', this.label, `no frame for ${limit / 1000} s (the stall timeout): the input stalled`, frame));
        void this.close();
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
    this.abort.abort(new Error(`${this.label}: closed`));
    this.reader.detach();
    if (this.options.destroyStream !== false) this.stream?.destroy();
    await this.options.onClose?.();
  }

  /**
   * A pool slot for frame `index`. A frame too large for the host (a huge size in a header:
   * over what one JavaScript buffer can hold, or memory that cannot be had) is
   * E_FRAME_TOO_LARGE naming the input, the frame and the bytes, rather than a RangeError.
   */
  private async slotFor(pool: FramePool, index: number, format: FrameFormat, bytes: number): Promise<LumaBuffer> {
    const tooLarge = (why: string, cause?: unknown): InputError =>
      new InputError('E_FRAME_TOO_LARGE', this.label, `a ${format.width}x${format.height} ${format.bitDepth}-bit frame needs a ${bytes}-byte buffer: ${why}`, index, cause === undefined ? undefined : { cause });
    if (bytes > MAX_BUFFER_BYTES) throw tooLarge(`over the ${MAX_BUFFER_BYTES} bytes one buffer can hold on this host`);
    try {
      const buffer = await pool.acquire(this.abort.signal);
      bytesOf(buffer); // the view every read takes: fails here, not mid-read, if it cannot be made
      return buffer;
    } catch (err) {
      if (err instanceof RangeError) throw tooLarge(`this host cannot allocate it (${err.message})`, err);
      throw err;
    }
  }

  protected truncated(index: number, layout: FrameLayout, bytesRead: number): InputError {
    const missing = layout.frameBytes - bytesRead;
    return new InputError(
      'E_INPUT_TRUNCATED',
      this.label,
      `truncated: the input ends inside this frame, ${missing} of its ${layout.frameBytes} bytes are missing`,
      index,
    );
  }

  private layoutTask(): Promise<FrameLayout> {
    this.headerTask ??= (async () => {
      try {
        const layout = await this.readHeader();
        assertChromaAvailable(this.label, layout.format, this.options.planes);
        return layout;
      } catch (err) {
        throw await this.settle(err);
      }
    })();
    return this.headerTask;
  }

  private async *frames(): AsyncGenerator<Frame, void, undefined> {
    if (this.closed) return;
    let layout: FrameLayout;
    try {
      layout = await this.layoutTask();
    } catch (err) {
      if (this.closed) return;
      throw err;
    }
    const { format } = layout;
    // With every plane, the slot takes luma, Cb and Cr as they lie in the stream.
    const chroma = this.options.planes === 'all' ? layout.chromaSize : undefined;
    const keptBytes = layout.lumaBytes + (chroma ? 2 * layout.chromaBytes : 0);
    const skippedBytes = layout.frameBytes - keptBytes;
    const pool = new FramePool({
      slots: this.options.poolSlots ?? DEFAULT_POOL_SLOTS,
      samples: keptBytes / layout.bytesPerSample,
      bitDepth: format.bitDepth,
    });
    const swap = layout.bytesPerSample === 2 && !HOST_IS_LITTLE_ENDIAN;
    const firstIndex = this.options.firstIndex ?? 0;
    let index = firstIndex;
    try {
      const file = this.locating && !swap && this.reader instanceof FileByteReader ? this.reader : undefined;
      for (;; index++) {
        if (!(await this.readFrameHeader(index, layout))) break;
        const place = file?.placeOfNext();
        if (place) {
          // The bytes stay in the file (and the page cache); the skip checks they are there.
          const skipped = await file!.skip(layout.frameBytes);
          if (skipped < layout.frameBytes) throw this.truncated(index, layout, skipped);
          if (index === firstIndex) mark(`frames located: ${this.label}`);
          this.framesRead = index + 1 - firstIndex;
          yield locatedFrame(index, format, this.ptsOf(index, format), { path: this.path!, label: this.label, ...place }, chroma !== undefined);
          continue;
        }
        const buffer = await this.slotFor(pool, index, format, keptBytes);
        let handedOut = false;
        try {
          const got = await this.reader.read(bytesOf(buffer));
          if (got < keptBytes) throw this.truncated(index, layout, got);
          const skipped = await this.reader.skip(skippedBytes);
          if (skipped < skippedBytes) throw this.truncated(index, layout, keptBytes + skipped);
          if (swap) swapBytes16(buffer as Uint16Array);
          const frame = pooledFrame(pool, buffer, index, format, this.ptsOf(index, format), chroma);
          handedOut = true;
          this.framesRead = index + 1 - firstIndex;
          yield frame;
        } finally {
          if (!handedOut) pool.release(buffer);
        }
      }
    } catch (err) {
      if (this.closed) return;
      throw await this.settle(err);
    }
    if (this.closed) return;
    if (index === firstIndex) throw await this.settle(new InputError('E_INPUT_EMPTY', this.label, 'has no frames'));
    const late = await this.settle(undefined);
    if (late !== undefined) throw late;
  }

  /**
   * The error to raise once reading has stopped: checkEnd's (ffmpeg's) when it has one,
   * else `err` with stream errors mapped to InputErrors. undefined when all is well.
   */
  private async settle(err: unknown): Promise<unknown> {
    if (!this.endChecked) {
      this.endChecked = true;
      const atEof =
        err === undefined ||
        !(err instanceof VmafError) ||
        err.code === 'E_INPUT_TRUNCATED' ||
        err.code === 'E_INPUT_EMPTY';
      try {
        await this.options.checkEnd?.(atEof);
      } catch (better) {
        return better;
      }
    }
    return err === undefined ? undefined : streamError(this.label, err);
  }
}

/** Maps an I/O error of the input stream to an InputError; VmafErrors pass through. */
export function streamError(label: string, err: unknown): unknown {
  if (err instanceof VmafError) return err;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const message = err instanceof Error ? err.message : String(err);
  switch (code) {
    case 'ENOENT':
      return new InputError('E_INPUT_NOT_FOUND', label, 'no such file', undefined, { cause: err });
    case 'EACCES':
    case 'EPERM':
      return new InputError('E_INPUT_NOT_FOUND', label, 'cannot be opened: permission denied', undefined, { cause: err });
    case 'EISDIR':
      return new InputError('E_INPUT_NOT_FOUND', label, 'is a directory, not a video file', undefined, { cause: err });
    default:
      // A system error reading the input; anything else (a bug) passes through unchanged.
      if (typeof code !== 'string') return err;
      return new InputError('E_INPUT_NOT_FOUND', label, `cannot be read: ${message}`, undefined, { cause: err });
  }
}

/**
 * Pull-style reading of a Node Readable: lines, exact byte counts, skips. It buffers at
 * most about `highWaterMark` bytes ahead and pauses the stream beyond that, so a consumer
 * that stops pulling stops the producer (a file read, an ffmpeg child's stdout).
 *
 * Bulk reads are served straight from the stream's 'data' events: while a read(dest) or
 * skip(n) is pending, each chunk that arrives is copied into `dest` (or dropped) as it comes,
 * and the read's one promise settles when it has all its bytes. Nothing is queued, concatenated
 * or awaited per chunk; only bytes that arrive with no read pending are queued (then copied
 * once, when the next read takes them). A child's stdout pipe delivers 64 KiB chunks: a 1080p
 * luma plane is ~32 of them and costs one promise.
 *
 * Over a net.Socket made with a DirectFeed's `onread`, there are no 'data' events at all: the
 * socket reads straight into the pending read's destination (see DirectFeed).
 */
import type { Readable } from 'node:stream';

export interface LineResult {
  /** The bytes read, as latin1 text, without the newline. */
  text: string;
  /** True when a newline ended the line. */
  terminated: boolean;
  /** True when the input ended before a newline (the line is a tail). */
  eof: boolean;
}

/** What the native readers' frame loop reads through: a ByteReader (a stream) or a FileByteReader. */
export interface PullByteReader {
  /** Bytes consumed so far. */
  position: number;
  /** Waits until at least one byte is buffered; false at the end of the input. */
  fill(): Promise<boolean>;
  /** True when at least one more byte can be read. */
  hasMore(): Promise<boolean>;
  /** Reads a line (see ByteReader.readLine); null when the input has ended before it. */
  readLine(maxBytes: number): Promise<LineResult | null>;
  /** Fills `dest`; the bytes read (fewer only at the end of the input). */
  read(dest: Uint8Array): Promise<number>;
  /** Discards `n` bytes; how many were there. */
  skip(n: number): Promise<number>;
  /** Stops reading; a pending or later read sees the end of the input. */
  detach(): void;
}

/** Queued chunks already consumed are dropped from the array in batches of this many. */
const COMPACT_AT = 64;
/** Direct reads with no read pending land in a scratch buffer of this size... */
const SCRATCH_BYTES = 256 * 1024;
/** ...and a new one is taken when less than this is left of it. */
const SCRATCH_MIN = 16 * 1024;
/**
 * Right after a read completes, the next one or two socket reads come before the consumer has
 * asked for more (the socket's next buffer is chosen before its promise callbacks run): they
 * are kept this small, so that little of the next frame lands in scratch (and is copied) rather
 * than straight in its slot. Later reads with nothing pending (read-ahead) take a whole scratch.
 */
const SMALL_READ_BYTES = 8 * 1024;
const SMALL_READS_AFTER_FINISH = 2;

/** The `onread` option of a net.Socket: where its next read lands, and what it read. */
export interface SocketOnRead {
  buffer: () => Uint8Array;
  callback: (nread: number, buf: Uint8Array) => boolean;
}

/**
 * Direct reads for a net.Socket: create the socket with `onread: feed.onread`, then pass the
 * feed to the ByteReader over that socket. The socket's reads then land where the reader
 * says: straight in the pending read's destination (a pool slot) when one is pending, in a
 * scratch buffer otherwise. No 'data' events, no buffer allocated per read, and a read takes
 * all the socket has (not 64 KiB at most), so a busy reader makes fewer, larger reads.
 */
export class DirectFeed {
  private reader: ByteReader | undefined;
  /** Reads that came before a reader was bound (copied). */
  private early: Buffer[] = [];
  private readonly scratch = Buffer.allocUnsafe(SCRATCH_BYTES);

  readonly onread: SocketOnRead = {
    buffer: () => (this.reader ? this.reader.directBuffer() : this.scratch),
    callback: (nread, buf) => {
      if (this.reader) return this.reader.directData(nread, buf);
      this.early.push(Buffer.from(buf.subarray(0, nread)));
      return true;
    },
  };

  /** @internal Called by the ByteReader constructor. */
  bind(reader: ByteReader): Buffer[] {
    if (this.reader) throw new Error('DirectFeed: already bound to a reader');
    this.reader = reader;
    const early = this.early;
    this.early = [];
    return early;
  }
}

export class ByteReader implements PullByteReader {
  /** Bytes consumed so far. */
  position = 0;

  /** Chunks that arrived with no read pending; chunks[first] is the oldest unconsumed one. */
  private chunks: Buffer[] = [];
  private first = 0;
  private head = 0; // offset of the first unconsumed byte in chunks[first]
  private buffered = 0;
  private ended = false;
  private failure: Error | undefined;
  private paused = false;
  private detached = false;
  /** A fill() waiting for data. */
  private wake: (() => void) | undefined;

  // The pending read (dest set) or skip (dest undefined), fed by onData.
  private pending = false;
  private dest: Uint8Array | undefined;
  /** Bytes the pending read or skip still wants. */
  private want = 0;
  /** Bytes it has so far (copied into dest from offset 0, or skipped). */
  private got = 0;
  private settle: ((n: number) => void) | undefined;
  private fail: ((err: Error) => void) | undefined;

  // Direct reads (DirectFeed): where the socket's next read lands.
  /** What the socket's current read buffer is: the pending read's destination, our scratch, or the feed's. */
  private readingInto: 'dest' | 'scratch' | 'feed' = 'feed';
  private scratch: Buffer | undefined;
  private scratchUsed = 0;
  /** Scratch reads still to keep small (see SMALL_READ_BYTES). */
  private smallReads = 0;

  constructor(
    private readonly stream: Readable,
    private readonly highWaterMark = 1 << 20,
    feed?: DirectFeed,
  ) {
    if (feed) {
      for (const chunk of feed.bind(this)) this.onData(chunk);
    } else {
      stream.on('data', this.onData);
    }
    stream.on('end', this.onEnd);
    stream.on('error', this.onError);
    stream.on('close', this.onClose);
    if (stream.readableEnded) this.ended = true;
    stream.resume();
  }

  private readonly onData = (data: Buffer | string): void => {
    let chunk = typeof data === 'string' ? Buffer.from(data, 'latin1') : data;
    if (chunk.length === 0 || this.detached) return;
    if (this.pending) {
      const n = chunk.length <= this.want ? chunk.length : this.want;
      if (this.dest) this.dest.set(n === chunk.length ? chunk : chunk.subarray(0, n), this.got);
      this.got += n;
      this.want -= n;
      this.position += n;
      if (this.want === 0) this.finish();
      if (n === chunk.length) return;
      chunk = chunk.subarray(n);
    }
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    if (this.buffered >= this.highWaterMark && !this.paused) {
      this.paused = true;
      this.stream.pause();
    }
    this.notify();
  };

  /** @internal DirectFeed: the buffer the socket's next read fills. */
  directBuffer(): Uint8Array {
    if (this.pending && this.dest && !this.detached) {
      this.readingInto = 'dest';
      return this.dest.subarray(this.got, this.got + this.want);
    }
    this.readingInto = 'scratch';
    if (!this.scratch || this.scratch.length - this.scratchUsed < SCRATCH_MIN) {
      // Queued chunks may still point into the old one: take a new one.
      this.scratch = Buffer.allocUnsafeSlow(SCRATCH_BYTES);
      this.scratchUsed = 0;
    }
    if (this.smallReads > 0) {
      this.smallReads--;
      return this.scratch.subarray(this.scratchUsed, this.scratchUsed + SMALL_READ_BYTES);
    }
    return this.scratch.subarray(this.scratchUsed);
  }

  /** @internal DirectFeed: the socket read `nread` bytes into `buf`; false pauses it. */
  directData(nread: number, buf: Uint8Array): boolean {
    if (this.detached) return false;
    if (this.readingInto === 'dest') {
      // Already in place. (The read it was for is still pending: only data settles it, or
      // the end, an error or detach, after which the socket reads nothing more.)
      if (!this.pending || !this.dest) return false;
      this.got += nread;
      this.want -= nread;
      this.position += nread;
      if (this.want === 0) {
        this.smallReads = SMALL_READS_AFTER_FINISH;
        this.finish();
      }
      return true;
    }
    // In the scratch buffer: what a pending read or skip wants is copied or dropped, the
    // rest is queued where it lies (the scratch space after it is used next).
    const chunk = buf as Buffer;
    let start = 0;
    if (this.pending) {
      const n = nread <= this.want ? nread : this.want;
      if (this.dest) this.dest.set(chunk.subarray(0, n), this.got);
      this.got += n;
      this.want -= n;
      this.position += n;
      start = n;
      if (this.want === 0) this.finish();
    }
    if (start < nread) {
      const rest = chunk.subarray(start, nread);
      if (this.readingInto === 'scratch') this.scratchUsed += nread;
      this.chunks.push(rest);
      this.buffered += rest.length;
      this.notify();
      if (this.buffered >= this.highWaterMark && !this.pending) {
        this.paused = true;
        return false;
      }
    }
    return true;
  }

  private readonly onEnd = (): void => {
    this.ended = true;
    if (this.pending) this.finish();
    this.notify();
  };

  private readonly onError = (err: Error): void => {
    this.failure ??= err;
    if (this.pending) {
      // A pending read has used up every buffered byte: the error is next.
      const fail = this.fail!;
      this.clearPending();
      fail(this.failure);
    }
    this.notify();
  };

  /** A stream destroyed without 'end' (or after an error) has nothing more to give. */
  private readonly onClose = (): void => {
    this.ended = true;
    if (this.pending) this.finish();
    this.notify();
  };

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  /** Settles the pending read or skip with the bytes it got. */
  private finish(): void {
    const settle = this.settle!;
    const got = this.got;
    this.clearPending();
    settle(got);
  }

  private clearPending(): void {
    this.pending = false;
    this.dest = undefined;
    this.want = 0;
    this.got = 0;
    this.settle = undefined;
    this.fail = undefined;
  }

  private resumeIfPaused(): void {
    if (this.paused) {
      this.paused = false;
      this.stream.resume();
    }
  }

  /**
   * Waits until at least one byte is buffered. Returns false at the end of the input;
   * throws the stream's error once the buffered bytes are used up.
   */
  async fill(): Promise<boolean> {
    while (this.buffered === 0) {
      if (this.failure) throw this.failure;
      if (this.ended || this.detached) return false;
      this.resumeIfPaused();
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
    return true;
  }

  /** True when at least one more byte can be read. */
  hasMore(): Promise<boolean> {
    return this.fill();
  }

  private consume(n: number): void {
    this.head += n;
    this.buffered -= n;
    this.position += n;
    const chunks = this.chunks;
    while (this.first < chunks.length && this.head >= chunks[this.first]!.length) {
      this.head -= chunks[this.first]!.length;
      chunks[this.first] = undefined as unknown as Buffer; // let it be collected
      this.first++;
    }
    if (this.first === chunks.length) {
      chunks.length = 0;
      this.first = 0;
    } else if (this.first >= COMPACT_AT) {
      chunks.splice(0, this.first);
      this.first = 0;
    }
    if (this.paused && this.buffered < this.highWaterMark) {
      this.paused = false;
      this.stream.resume();
    }
  }

  /**
   * Reads up to and including the next newline, or at most `maxBytes` bytes before it.
   * Returns null when the input has ended before any byte of the line.
   */
  async readLine(maxBytes: number): Promise<LineResult | null> {
    // A line within one chunk (every FRAME line, as a rule) is one toString; a line across
    // chunks collects its pieces. No closure or array per call on that usual path.
    let parts: Buffer[] | undefined;
    let text = '';
    let total = 0;
    for (;;) {
      if (!(await this.fill())) {
        if (total === 0) return null;
        return { text: parts ? Buffer.concat(parts).toString('latin1') : text, terminated: false, eof: true };
      }
      const chunk = this.chunks[this.first]!;
      const start = this.head;
      const nl = chunk.indexOf(0x0a, start);
      const end = nl >= 0 ? nl : chunk.length;
      const n = Math.min(end - start, maxBytes - total);
      if (n > 0) {
        if (total === 0 && !parts) text = chunk.toString('latin1', start, start + n);
        else {
          parts ??= [Buffer.from(text, 'latin1')];
          parts.push(chunk.subarray(start, start + n));
        }
        total += n;
      }
      if (nl >= 0 && start + n === nl) {
        this.consume(n + 1);
        return { text: parts ? Buffer.concat(parts).toString('latin1') : text, terminated: true, eof: false };
      }
      this.consume(n);
      if (total >= maxBytes) return { text: parts ? Buffer.concat(parts).toString('latin1') : text, terminated: false, eof: false };
    }
  }

  /** Copies queued bytes into dest from `off`; returns the new offset. */
  private drainInto(dest: Uint8Array | undefined, off: number, end: number): number {
    while (off < end && this.buffered > 0) {
      const chunk = this.chunks[this.first]!;
      const n = Math.min(chunk.length - this.head, end - off);
      if (dest) dest.set(this.head === 0 && n === chunk.length ? chunk : chunk.subarray(this.head, this.head + n), off);
      off += n;
      this.consume(n);
    }
    return off;
  }

  /** Takes queued bytes, then waits for the rest straight from the stream. */
  private take(dest: Uint8Array | undefined, n: number): Promise<number> {
    if (this.pending) return Promise.reject(new Error('ByteReader: one read at a time'));
    const got = this.drainInto(dest, 0, n);
    if (got === n) return Promise.resolve(got);
    if (this.failure) return Promise.reject(this.failure);
    if (this.ended || this.detached) return Promise.resolve(got);
    this.pending = true;
    this.dest = dest;
    this.got = got;
    this.want = n - got;
    const promise = new Promise<number>((resolve, reject) => {
      this.settle = resolve;
      this.fail = reject;
    });
    this.resumeIfPaused();
    return promise;
  }

  /** Fills `dest` from the input; returns the bytes copied (fewer only at the end of the input). */
  read(dest: Uint8Array): Promise<number> {
    return this.take(dest, dest.length);
  }

  /** Discards `n` bytes; returns how many were there (fewer only at the end of the input). */
  skip(n: number): Promise<number> {
    return this.take(undefined, n);
  }

  /** Stops listening; a pending or later read sees the end of the input. */
  detach(): void {
    if (this.detached) return;
    this.detached = true;
    this.stream.off('data', this.onData);
    this.stream.off('end', this.onEnd);
    this.stream.off('close', this.onClose);
    // Keep an error listener so a late stream error is not an uncaught exception.
    this.stream.off('error', this.onError);
    this.stream.on('error', () => {});
    this.chunks = [];
    this.first = 0;
    this.buffered = 0;
    this.head = 0;
    if (this.pending) this.finish();
    this.notify();
  }
}

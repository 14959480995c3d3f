/**
 * Pull-style reading of a Node Readable: lines, exact byte counts, skips. It buffers at
 * most about `highWaterMark` bytes ahead and pauses the stream beyond that, so a consumer
 * that stops pulling stops the producer (a file read, an ffmpeg child's stdout).
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

export class ByteReader {
  /** Bytes consumed so far. */
  position = 0;

  private readonly chunks: Buffer[] = [];
  private head = 0; // offset of the first unconsumed byte in chunks[0]
  private buffered = 0;
  private ended = false;
  private failure: Error | undefined;
  private paused = false;
  private wake: (() => void) | undefined;
  private detached = false;

  constructor(
    private readonly stream: Readable,
    private readonly highWaterMark = 1 << 20,
  ) {
    stream.on('data', this.onData);
    stream.on('end', this.onEnd);
    stream.on('error', this.onError);
    stream.on('close', this.onClose);
    if (stream.readableEnded) this.ended = true;
    stream.resume();
  }

  private readonly onData = (chunk: Buffer | string): void => {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'latin1') : chunk;
    if (buf.length === 0) return;
    this.chunks.push(buf);
    this.buffered += buf.length;
    if (this.buffered >= this.highWaterMark && !this.paused) {
      this.paused = true;
      this.stream.pause();
    }
    this.notify();
  };

  private readonly onEnd = (): void => {
    this.ended = true;
    this.notify();
  };

  private readonly onError = (err: Error): void => {
    this.failure ??= err;
    this.notify();
  };

  /** A stream destroyed without 'end' (or after an error) has nothing more to give. */
  private readonly onClose = (): void => {
    this.ended = true;
    this.notify();
  };

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  /**
   * Waits until at least one byte is buffered. Returns false at the end of the input;
   * throws the stream's error once the buffered bytes are used up.
   */
  async fill(): Promise<boolean> {
    while (this.buffered === 0) {
      if (this.failure) throw this.failure;
      if (this.ended || this.detached) return false;
      if (this.paused) {
        this.paused = false;
        this.stream.resume();
      }
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
    while (this.chunks.length > 0 && this.head >= this.chunks[0]!.length) {
      this.head -= this.chunks[0]!.length;
      this.chunks.shift();
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
    const parts: Buffer[] = [];
    let total = 0;
    for (;;) {
      if (!(await this.fill())) {
        if (total === 0) return null;
        return { text: Buffer.concat(parts).toString('latin1'), terminated: false, eof: true };
      }
      const chunk = this.chunks[0]!;
      const start = this.head;
      const nl = chunk.indexOf(0x0a, start);
      const end = nl >= 0 ? nl : chunk.length;
      const take = Math.min(end - start, maxBytes - total);
      if (take > 0) {
        parts.push(chunk.subarray(start, start + take));
        total += take;
      }
      if (nl >= 0 && start + take === nl) {
        this.consume(take + 1);
        return { text: Buffer.concat(parts).toString('latin1'), terminated: true, eof: false };
      }
      this.consume(take);
      if (total >= maxBytes) {
        return { text: Buffer.concat(parts).toString('latin1'), terminated: false, eof: false };
      }
    }
  }

  /** Fills `dest` from the input; returns the bytes copied (fewer only at the end of the input). */
  async read(dest: Uint8Array): Promise<number> {
    let off = 0;
    while (off < dest.length) {
      if (!(await this.fill())) break;
      const chunk = this.chunks[0]!;
      const n = Math.min(chunk.length - this.head, dest.length - off);
      dest.set(chunk.subarray(this.head, this.head + n), off);
      off += n;
      this.consume(n);
    }
    return off;
  }

  /** Discards `n` bytes; returns how many were there (fewer only at the end of the input). */
  async skip(n: number): Promise<number> {
    let done = 0;
    while (done < n) {
      if (!(await this.fill())) break;
      const chunk = this.chunks[0]!;
      const k = Math.min(chunk.length - this.head, n - done);
      done += k;
      this.consume(k);
    }
    return done;
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
    this.chunks.length = 0;
    this.buffered = 0;
    this.head = 0;
    this.notify();
  }
}

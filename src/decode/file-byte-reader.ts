/**
 * Pull-style reading of a file by its descriptor, for the native readers: the same calls as
 * ByteReader (lines, exact byte counts, skips) without a stream in between. A bulk read()
 * is one positional read straight into the caller's buffer (a pool slot): no chunk is
 * allocated, queued or copied, so a 1080p luma plane costs one read and nothing for the
 * garbage collector. A skip() of a regular file reads nothing at all: the bytes a frame
 * does not keep (chroma of a luma-only run) never leave the page cache.
 *
 * Lines are read in small pieces into one fixed scratch buffer: a y4m FRAME line is six
 * bytes, read as six, so the plane after it lands in its slot without passing through the
 * scratch. Memory: that scratch (MAX_LINE_READ bytes), whatever the input's length.
 *
 * A path that is not a regular file (a named pipe, a character device) is read the same way
 * at the descriptor's current position; there a skip reads the bytes into the scratch and
 * drops them.
 */
import { read as readFd, readSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';

import type { LineResult, PullByteReader } from './byte-reader.js';

/** The first piece of a line read: exactly "FRAME\n", the usual y4m frame header. */
const FIRST_LINE_READ = 6;
/** Later pieces of a longer line (a stream header, a FRAME line with parameters). */
const MAX_LINE_READ = 256;
/** Bytes dropped per read when skipping in a file that cannot seek. */
const DISCARD_BYTES = 64 * 1024;

export interface FileByteReaderOptions {
  /** The byte of the file to start at (default 0); regular files only. */
  start?: number;
}

export class FileByteReader implements PullByteReader {
  /** Bytes consumed so far (from `start`). */
  position = 0;

  private handle: FileHandle | undefined;
  private opening: Promise<FileHandle> | undefined;
  /** Regular file: reads say where; else they read on from the descriptor's position. */
  private seekable = false;
  /** The file's size as last seen (regular files), to tell a skip past the end. */
  private size = 0;
  /** The file's identity (device and inode), as opened. */
  private dev = 0;
  private ino = 0;
  /** The file offset of the next byte not yet read (regular files). */
  private offset: number;
  private ended = false;
  private detached = false;
  /** The descriptor is closed (at the end of the input, or on detach). */
  private closed = false;
  /** A read in flight: close waits for it, so the descriptor is never closed under it. */
  private busy: Promise<unknown> | undefined;

  /** Bytes read ahead of the consumer by a line read: scratch[head, tail). */
  private readonly scratch: Buffer;
  private head = 0;
  private tail = 0;

  constructor(
    private readonly path: string,
    options: FileByteReaderOptions = {},
  ) {
    this.offset = options.start ?? 0;
    this.scratch = Buffer.allocUnsafe(Math.max(MAX_LINE_READ, DISCARD_BYTES));
  }

  private async fileHandle(): Promise<FileHandle> {
    if (this.handle) return this.handle;
    if (this.opening && this.closed) throw new Error('FileByteReader: read after close');
    this.opening ??= (async () => {
      const handle = await open(this.path, 'r');
      try {
        const info = await handle.stat();
        this.seekable = info.isFile();
        this.size = info.size;
        this.dev = info.dev;
        this.ino = info.ino;
      } catch (err) {
        await handle.close();
        throw err;
      }
      this.handle = handle;
      if (this.detached) await this.closeHandle();
      return handle;
    })();
    return this.opening;
  }

  /**
   * One read of at most `length` bytes into dest at `at`; 0 at the end of the input.
   * `small` (a line's piece, at most MAX_LINE_READ bytes) reads a regular file
   * synchronously: a pread of a few bytes, nearly always from the page cache, costs the
   * main thread about 3 us, where queuing it to libuv's pool costs 8 us and a round trip
   * through the event loop on top (H100 machine). Bulk reads stay asynchronous.
   */
  private async readInto(dest: Uint8Array, at: number, length: number, small = false): Promise<number> {
    const handle = await this.fileHandle();
    if (this.detached) return 0;
    let bytesRead: number;
    if (small && this.seekable) {
      bytesRead = readSync(handle.fd, dest, at, length, this.offset);
    } else {
      const task = readAt(handle.fd, dest, at, length, this.seekable ? this.offset : null);
      this.busy = task;
      try {
        bytesRead = await task;
      } finally {
        this.busy = undefined;
      }
    }
    if (this.detached) {
      await this.closeHandle();
      return 0;
    }
    if (this.seekable) this.offset += bytesRead;
    if (bytesRead === 0) {
      // Nothing reads after the end: the descriptor can go now, closed or not by the caller.
      this.ended = true;
      await this.closeHandle();
    }
    return bytesRead;
  }

  /** Reads the next piece of a line into the (drained) scratch; false at the end. */
  private async readPiece(length: number): Promise<boolean> {
    if (this.ended || this.detached) return false;
    this.head = 0;
    this.tail = await this.readInto(this.scratch, 0, length, true);
    return this.tail > 0;
  }

  async fill(): Promise<boolean> {
    if (this.tail > this.head) return true;
    return this.readPiece(FIRST_LINE_READ);
  }

  hasMore(): Promise<boolean> {
    return this.fill();
  }

  async readLine(maxBytes: number): Promise<LineResult | null> {
    let text = '';
    let total = 0;
    let piece = FIRST_LINE_READ;
    for (;;) {
      if (this.tail === this.head && !(await this.readPiece(Math.min(piece, maxBytes - total + 1)))) {
        return total === 0 ? null : { text, terminated: false, eof: true };
      }
      piece = MAX_LINE_READ;
      const start = this.head;
      // Only scratch[head, tail) was read: a newline past it is stale.
      const at = this.scratch.indexOf(0x0a, start);
      const nl = at >= 0 && at < this.tail ? at : -1;
      const end = nl >= 0 ? nl : this.tail;
      const n = Math.min(end - start, maxBytes - total);
      text += this.scratch.toString('latin1', start, start + n);
      total += n;
      if (nl >= 0 && start + n === nl) {
        this.consume(n + 1);
        return { text, terminated: true, eof: false };
      }
      this.consume(n);
      if (total >= maxBytes) return { text, terminated: false, eof: false };
    }
  }

  private consume(n: number): void {
    this.head += n;
    this.position += n;
  }

  /**
   * Where the next byte not yet consumed lies in the file, with the file's identity: for a
   * regular file once it is open (after a first read); undefined for anything else (a
   * named pipe, a device), whose bytes can be read only once, here.
   */
  placeOfNext(): { offset: number; dev: number; ino: number } | undefined {
    if (!this.handle || !this.seekable) return undefined;
    return { offset: this.offset - (this.tail - this.head), dev: this.dev, ino: this.ino };
  }

  /** Fills `dest` from the input; returns the bytes read (fewer only at the end of the input). */
  async read(dest: Uint8Array): Promise<number> {
    let got = Math.min(this.tail - this.head, dest.length);
    if (got > 0) {
      dest.set(this.scratch.subarray(this.head, this.head + got));
      this.consume(got);
    }
    while (got < dest.length && !this.ended && !this.detached) {
      const n = await this.readInto(dest, got, dest.length - got);
      got += n;
      this.position += n;
    }
    return got;
  }

  /** Discards `n` bytes; returns how many were there (fewer only at the end of the input). */
  async skip(n: number): Promise<number> {
    let done = Math.min(this.tail - this.head, n);
    this.consume(done);
    if (done === n || this.ended || this.detached) return done;
    const handle = await this.fileHandle();
    if (this.seekable) {
      if (this.offset + (n - done) > this.size) this.size = (await handle.stat()).size;
      const n2 = Math.max(0, Math.min(n - done, this.size - this.offset));
      this.offset += n2;
      this.position += n2;
      done += n2;
      if (done < n) this.ended = true;
      return done;
    }
    while (done < n && !this.ended && !this.detached) {
      const got = await this.readInto(this.scratch, 0, Math.min(this.scratch.length, n - done));
      this.head = this.tail = 0;
      done += got;
      this.position += got;
    }
    return done;
  }

  private async closeHandle(): Promise<void> {
    const handle = this.handle;
    if (!handle || this.busy) return; // the read in flight closes it when it returns
    this.handle = undefined;
    this.closed = true;
    await handle.close().catch(() => {});
  }

  /** Stops reading and closes the file (once no read is in flight); later reads see the end. */
  detach(): void {
    if (this.detached) return;
    this.detached = true;
    this.head = this.tail = 0;
    void this.closeHandle();
  }
}

/**
 * One read by descriptor through fs.read's callback: the same read as FileHandle.read, at
 * a fraction of its main-thread cost (no FileHandle bookkeeping, no result object), which
 * counts at two or more reads per frame and input.
 */
function readAt(fd: number, dest: Uint8Array, at: number, length: number, position: number | null): Promise<number> {
  return new Promise((resolve, reject) => {
    readFd(fd, dest, at, length, position, (error, bytesRead) => (error ? reject(error) : resolve(bytesRead)));
  });
}

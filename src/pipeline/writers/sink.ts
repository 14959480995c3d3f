import { finished } from 'node:stream/promises';
import type { Writable } from 'node:stream';
import { VmafError } from '../../errors.js';

/**
 * Writes text chunks to a stream with its backpressure surfaced (write() returns false,
 * ready() waits for 'drain'), its errors turned into VmafError E_OUTPUT, and a flush at
 * the end that either ends the stream or, for stdout and stderr, waits for the write
 * callbacks without closing it.
 */
export class Sink {
  private pending = 0;
  private blocked = false;
  private failure: VmafError | undefined;
  private flushWaiters: Array<() => void> = [];
  private drainWaiters: Array<{ resolve: () => void; reject: (error: unknown) => void }> = [];
  private closed = false;

  private readonly onError = (error: unknown): void => this.fail(error);
  private readonly onDrain = (): void => {
    this.blocked = false;
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const waiter of waiters) waiter.resolve();
  };

  constructor(
    private readonly out: NodeJS.WritableStream,
    private readonly endOut: boolean,
    private readonly label: string | undefined,
  ) {
    out.on('error', this.onError);
    out.on('drain', this.onDrain);
  }

  /** Queues one chunk; false when the stream wants the writer to wait for ready(). */
  write(chunk: string): boolean {
    if (this.failure) throw this.failure;
    if (this.closed) throw new VmafError('E_OUTPUT', `${this.prefix()}the log was already ended`);
    this.pending++;
    const ok = this.out.write(chunk, (error) => {
      this.pending--;
      if (error) this.fail(error);
      if (this.pending === 0) this.wakeFlushWaiters();
    });
    if (!ok) this.blocked = true;
    return ok;
  }

  ready(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (!this.blocked) return Promise.resolve();
    return new Promise((resolve, reject) => this.drainWaiters.push({ resolve, reject }));
  }

  /** Writes the last chunk (if any) and resolves when all is flushed. */
  async close(lastChunk: string): Promise<void> {
    if (this.failure) {
      this.detach();
      throw this.failure;
    }
    if (this.closed) throw new VmafError('E_OUTPUT', `${this.prefix()}the log was already ended`);
    try {
      if (this.endOut) {
        this.closed = true;
        if (lastChunk) this.out.end(lastChunk);
        else this.out.end();
        await finished(this.out as Writable);
      } else {
        if (lastChunk) this.write(lastChunk);
        this.closed = true;
        if (this.pending > 0 && !this.failure) {
          await new Promise<void>((resolve) => this.flushWaiters.push(resolve));
        }
      }
    } catch (error) {
      this.fail(error);
    } finally {
      this.detach();
    }
    if (this.failure) throw this.failure;
  }

  private detach(): void {
    this.out.removeListener('error', this.onError);
    this.out.removeListener('drain', this.onDrain);
  }

  private fail(error: unknown): void {
    if (!this.failure) {
      const message = error instanceof Error ? error.message : String(error);
      this.failure = new VmafError('E_OUTPUT', `${this.prefix()}cannot write the log: ${message}`, { cause: error });
    }
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const waiter of waiters) waiter.reject(this.failure);
    this.wakeFlushWaiters();
  }

  private wakeFlushWaiters(): void {
    const waiters = this.flushWaiters;
    this.flushWaiters = [];
    for (const wake of waiters) wake();
  }

  private prefix(): string {
    return this.label === undefined ? '' : `${this.label}: `;
  }
}

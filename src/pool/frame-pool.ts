/**
 * A bounded pool of frame buffers ("slots"). It is the backpressure of the decode stage:
 * a reader awaits a free slot before it reads the next frame, and a slot comes back only
 * when the consumer calls the Frame's release(). Memory therefore stays at
 * slots × samples × bytes-per-sample however long or fast the input is. A slot holds the
 * luma plane alone, or every plane of a frame (luma, Cb, Cr back to back) in one allocation.
 * Slots are SharedArrayBuffers, so that a frame can be handed to another thread (the gpu
 * backend's, kernels/gpu-thread) without copying its samples.
 */
import type { BitDepth, Frame, FrameFormat, PlaneSize } from '../types.js';

export type LumaBuffer = Uint8Array | Uint16Array;

export interface FramePoolOptions {
  /** How many buffers may be out at once (at least 1). */
  slots: number;
  /** Samples per buffer: width × height of the luma plane, plus both chroma planes' when they are kept. */
  samples: number;
  /** 8 gives Uint8Array buffers, anything above Uint16Array. */
  bitDepth: BitDepth;
}

interface Waiter {
  resolve(buffer: LumaBuffer): void;
  reject(reason: unknown): void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

export class FramePool {
  readonly slots: number;
  readonly samples: number;
  readonly bitDepth: BitDepth;

  private readonly free: LumaBuffer[] = [];
  private readonly out = new Set<LumaBuffer>();
  private readonly waiters: Waiter[] = [];
  private allocatedCount = 0;
  private closedReason: unknown = undefined;
  private closed = false;

  constructor(options: FramePoolOptions) {
    const { slots, samples, bitDepth } = options;
    if (!Number.isInteger(slots) || slots < 1) throw new RangeError(`FramePool: slots must be a positive integer, got ${slots}`);
    if (!Number.isInteger(samples) || samples < 1) throw new RangeError(`FramePool: samples must be a positive integer, got ${samples}`);
    if (![8, 10, 12, 16].includes(bitDepth)) throw new RangeError(`FramePool: unsupported bit depth ${bitDepth}`);
    this.slots = slots;
    this.samples = samples;
    this.bitDepth = bitDepth;
  }

  /** Buffers handed out and not yet released. */
  get inUse(): number {
    return this.out.size;
  }

  /** Buffers that acquire() could hand out right now without waiting. */
  get available(): number {
    return this.closed ? 0 : this.slots - this.out.size;
  }

  /** Buffers allocated so far (never more than slots; they are allocated on demand). */
  get allocated(): number {
    return this.allocatedCount;
  }

  /** Callers waiting in acquire(). */
  get pending(): number {
    return this.waiters.length;
  }

  /** Bytes per buffer. */
  get bytesPerSlot(): number {
    return this.samples * (this.bitDepth > 8 ? 2 : 1);
  }

  /**
   * A free buffer, waiting while all slots are out. Rejects with the signal's reason when
   * the signal aborts, or when the pool is closed. The contents are unspecified.
   */
  acquire(signal?: AbortSignal): Promise<LumaBuffer> {
    if (this.closed) return Promise.reject(this.closedError());
    if (signal?.aborted) return Promise.reject(signal.reason);
    const buffer = this.tryAcquire();
    if (buffer) return Promise.resolve(buffer);
    return new Promise<LumaBuffer>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, signal, onAbort: undefined };
      if (signal) {
        waiter.onAbort = () => {
          const i = this.waiters.indexOf(waiter);
          if (i >= 0) this.waiters.splice(i, 1);
          reject(signal.reason);
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      this.waiters.push(waiter);
    });
  }

  /** A free buffer, or undefined when all slots are out (never waits). */
  tryAcquire(): LumaBuffer | undefined {
    if (this.closed || this.out.size >= this.slots) return undefined;
    let buffer = this.free.pop();
    if (!buffer) {
      const memory = new SharedArrayBuffer(this.bytesPerSlot);
      buffer = this.bitDepth > 8 ? new Uint16Array(memory) : new Uint8Array(memory);
      this.allocatedCount++;
    }
    this.out.add(buffer);
    return buffer;
  }

  /** Gives a buffer back; the first waiter, if any, gets it. */
  release(buffer: LumaBuffer): void {
    if (!this.out.has(buffer)) throw new Error('FramePool.release: this buffer is not out of this pool (released twice?)');
    this.out.delete(buffer);
    if (this.closed) return;
    const waiter = this.waiters.shift();
    if (waiter) {
      if (waiter.signal && waiter.onAbort) waiter.signal.removeEventListener('abort', waiter.onAbort);
      this.out.add(buffer);
      waiter.resolve(buffer);
    } else {
      this.free.push(buffer);
    }
  }

  /**
   * Rejects every waiter and every later acquire(); buffers still out may be released
   * (it does nothing). Frees the idle buffers.
   */
  close(reason?: unknown): void {
    if (this.closed) return;
    this.closed = true;
    this.closedReason = reason;
    this.free.length = 0;
    const waiters = this.waiters.splice(0);
    for (const w of waiters) {
      if (w.signal && w.onAbort) w.signal.removeEventListener('abort', w.onAbort);
      w.reject(this.closedError());
    }
  }

  private closedError(): unknown {
    return this.closedReason ?? new Error('FramePool is closed');
  }
}

/** A byte view of a pool buffer (for reading little-endian samples straight into it). */
export function bytesOf(buffer: LumaBuffer): Uint8Array {
  return buffer instanceof Uint8Array ? buffer : new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}

/**
 * A Frame over a pool buffer; its release() gives the buffer back once (later calls do
 * nothing). Without `chroma` the buffer is the luma plane; with it (the size of each chroma
 * plane) the buffer holds luma, Cb and Cr back to back, and the frame's planes are views of it.
 */
export function pooledFrame(pool: FramePool, buffer: LumaBuffer, index: number, format: FrameFormat, pts?: number, chroma?: PlaneSize): Frame {
  let released = false;
  const frame: Frame = {
    index,
    format,
    luma: buffer,
    release() {
      if (released) return;
      released = true;
      pool.release(buffer);
    },
  };
  if (chroma) {
    const lumaSamples = format.width * format.height;
    const chromaSamples = chroma.width * chroma.height;
    frame.luma = buffer.subarray(0, lumaSamples);
    frame.chroma = [
      buffer.subarray(lumaSamples, lumaSamples + chromaSamples),
      buffer.subarray(lumaSamples + chromaSamples, lumaSamples + 2 * chromaSamples),
    ];
  }
  if (pts !== undefined) frame.pts = pts;
  return frame;
}

/**
 * The gpu backend's buffers between the host and the GPU: rings of upload (staging) slots,
 * of readback slots, and of device-local buffers, each slot guarded by the fence that says
 * when it may be reused.
 *
 *   UploadRing    host -> GPU. MAP_WRITE | COPY_SRC buffers, mapped at creation. The host
 *                 writes a frame's luma into a mapped slot, unmaps it, and the frame's command
 *                 buffer copies it into a device-local buffer. Right after the submit the slot
 *                 is re-mapped with mapAsync(WRITE): that promise is its fence. It resolves
 *                 only once the GPU has finished every submitted command that reads the
 *                 buffer, and only then does the slot go back to the free list. So the host
 *                 writes frame N+1 into another slot while the GPU still reads frame N's.
 *   ReadbackRing  GPU -> host. MAP_READ | COPY_DST buffers. The frame's last command copies
 *                 its stats into a slot; after the submit, mapAsync(READ) -> copy the words
 *                 out -> unmap -> the slot is free. Nothing waits for that before the next
 *                 submit; a slot is taken only when its previous read has finished.
 *   DeviceRing    GPU-only buffers (STORAGE | COPY_DST | COPY_SRC): the luma planes the
 *                 kernels read and the stats they write. They need no fences: WebGPU has one
 *                 queue, and everything submitted to it behaves as if it ran in submission
 *                 order, so frame N+k's copy into a buffer cannot overtake frame N's reads of
 *                 it. A ring (rather than one buffer) only spares the GPU the write-after-read
 *                 barriers between frames in flight; for the reference planes it is what
 *                 keeps frame N's reference resident, without a copy, as frame N+1's previous
 *                 reference (see ReferenceRing), and, where a gpu extractor reads the previous
 *                 distorted picture, each rendition's (StagingPoolOptions.distortedHistory).
 *
 * Every fence is raced against the device's failure (GpuDevice.guard: a lost device rejects
 * pending mapAsync calls with an AbortError, and an uncaptured error fails the device) and
 * against a timeout, so a wait ends in BackendError('E_GPU') instead of hanging.
 */
import { BackendError } from '../errors.js';
import { DEFAULT_GPU_TIMEOUT_MS, type GpuDevice } from '../kernels/gpu/device.js';

/** Bytes rounded up to whole 4-byte words (copies and storage bindings want multiples of 4). */
export function paddedBytes(bytes: number): number {
  return Math.max(4, Math.ceil(bytes / 4) * 4);
}

export interface RingOptions {
  /** The device the buffers live on. */
  gpu: GpuDevice;
  /** How many slots (at least 2 for the rings with fences). */
  slots: number;
  /** Bytes per slot (rounded up to a multiple of 4). */
  bytes: number;
  /** A label for Dawn's messages. */
  label: string;
  /**
   * Longest wait on one fence in ms before it counts as a hang (BackendError E_GPU).
   * 0 disables. Default 300000 (a software adapter is slow on large frames).
   */
  fenceTimeoutMs?: number;
}

export const DEFAULT_FENCE_TIMEOUT_MS = DEFAULT_GPU_TIMEOUT_MS;

/** The gpu backend's default depth: frames in flight on the GPU, upload slots per input. */
export const DEFAULT_STAGING_DEPTH = 6;

/**
 * Frames at least this large are copied into staging slots off the main thread
 * (UploadSlot.writeRegionsAsync); below it the thread hop costs more than the copy.
 */
export const ASYNC_WRITE_MIN_BYTES = 256 * 1024;


/** A FIFO of free slots with waiters; a failure rejects every waiter and later acquire. */
class FreeList<S> {
  readonly #free: S[] = [];
  readonly #waiters: { resolve(s: S): void; reject(e: unknown): void }[] = [];
  #error: unknown;
  #failed = false;

  get available(): number {
    return this.#free.length;
  }

  put(slot: S): void {
    if (this.#failed) return;
    const w = this.#waiters.shift();
    if (w) w.resolve(slot);
    else this.#free.push(slot);
  }

  take(): Promise<S> {
    if (this.#failed) return Promise.reject(this.#error);
    const s = this.#free.shift();
    if (s !== undefined) return Promise.resolve(s);
    return new Promise<S>((resolve, reject) => this.#waiters.push({ resolve, reject }));
  }

  fail(error: unknown): void {
    if (this.#failed) return;
    this.#failed = true;
    this.#error = error;
    this.#free.length = 0;
    for (const w of this.#waiters.splice(0)) w.reject(error);
  }
}

// ---- host -> GPU -------------------------------------------------------------------------

/**
 * A plane written into a staging slot: its bytes, copied; or a read that fills the slot's
 * range itself (a located frame's plane, read from its file straight into mapped memory).
 */
export type StagedPlane = Uint8Array | { readonly byteLength: number; readInto(dst: Uint8Array): Promise<void> };

/** One staging buffer of an UploadRing, mapped for writing while the host holds it. */
export class UploadSlot {
  readonly buffer: GPUBuffer;
  readonly index: number;
  /** Bytes written by the last writeRegionsAsync() (rounded up to 4). */
  #written = 0;
  /**
   * 'held': acquired and mapped; 'writing': a writeRegionsAsync copy into the mapped range is in
   * flight; 'sealed': written and unmapped, not yet submitted.
   */
  state: 'free' | 'held' | 'writing' | 'sealed' | 'in-flight' = 'free';

  constructor(buffer: GPUBuffer, index: number) {
    this.buffer = buffer;
    this.index = index;
  }

  /**
   * Writes pictures into the slot and unmaps it, ready for copies in a command buffer (a
   * group's reference and distorted pictures: one map, one unmap and one fence per group).
   * Each region holds one picture's planes (offsets within the region, word aligned,
   * ascending); only each region's gaps and tail up to its padded `bytes` are zeroed, so a
   * region left out (an absent rendition) costs nothing. A region of a large picture is
   * copied off the main thread by `copy` (e.g. the addon's copyBytes, on the libuv pool),
   * or with `copyPairs` (copyBytes of several pairs) every such copy of the slot in one
   * call; the slot stays mapped, and must not be released or destroyed, until the promise
   * settles, and the callers' planes must not change until then. A plane that reads itself
   * (StagedPlane) reads into its range, whatever its size.
   */
  async writeRegionsAsync(
    regions: ReadonlyArray<{ offset: number; bytes: number; planes: ReadonlyArray<{ bytes: StagedPlane; offset: number }> }>,
    copy: ((dst: Uint8Array, src: Uint8Array) => Promise<void>) | undefined,
    copyPairs?: (pairs: Uint8Array[]) => Promise<void>,
  ): Promise<void> {
    if (this.state !== 'held') throw new BackendError('E_GPU', `staging slot ${this.index} is not held for writing (${this.state})`);
    let size = 0;
    for (const r of regions) size = Math.max(size, r.offset + paddedBytes(r.bytes));
    if (size > this.buffer.size) throw new BackendError('E_GPU', `staging slot holds ${this.buffer.size} bytes, the pictures take ${size}`);
    const mapped = new Uint8Array(this.buffer.getMappedRange(0, size));
    const pads: number[] = [];
    const copies: Promise<void>[] = [];
    // With copyPairs, the large pictures' planes go in one call: [dst, src, dst, src, ...].
    const pairs: Uint8Array[] = [];
    this.state = 'writing';
    try {
      for (const r of regions) {
        let end = r.offset;
        const stop = r.offset + paddedBytes(r.bytes);
        const async = (copy !== undefined || copyPairs !== undefined) && r.bytes >= ASYNC_WRITE_MIN_BYTES;
        for (const p of r.planes) {
          const at = r.offset + p.offset;
          if (at < end || at + p.bytes.byteLength > stop) throw new BackendError('E_GPU', `staging slot ${this.index}: planes overlap or overrun the picture`);
          pads.push(end, at);
          end = at + p.bytes.byteLength;
          const dst = mapped.subarray(at, end);
          const bytes = p.bytes;
          if (!(bytes instanceof Uint8Array)) copies.push(bytes.readInto(dst));
          else if (!async) dst.set(bytes);
          else if (copyPairs) pairs.push(dst, bytes);
          else copies.push(copy!(dst, bytes));
        }
        pads.push(end, stop);
      }
      if (pairs.length > 0) copies.push(copyPairs!(pairs));
      if (copies.length > 0) await Promise.all(copies);
    } catch (error) {
      // Every copy started must be over before the slot may be unmapped or given back.
      await Promise.allSettled(copies);
      throw error;
    } finally {
      this.state = 'held';
    }
    for (let i = 0; i < pads.length; i += 2) if (pads[i]! < pads[i + 1]!) mapped.fill(0, pads[i], pads[i + 1]);
    this.buffer.unmap();
    this.#written = size;
    this.state = 'sealed';
  }

  /** Records the copy of `size` written bytes from `offset` into `dst` (at offset 0). */
  encodeRegionCopy(encoder: GPUCommandEncoder, offset: number, size: number, dst: GPUBuffer): void {
    if (this.state !== 'sealed') throw new BackendError('E_GPU', `staging slot ${this.index} has not been written (${this.state})`);
    if (offset + size > this.#written) throw new BackendError('E_GPU', `staging slot ${this.index}: bytes ${offset}-${offset + size} were not written`);
    encoder.copyBufferToBuffer(this.buffer, offset, dst, 0, size);
  }
}

/**
 * Upload slots for one input. acquire() gives a mapped slot, waiting for one to be free;
 * after the submit that reads it, submitted(slot) arms its fence (mapAsync WRITE); a slot
 * acquired but not submitted goes back with release(slot).
 */
export class UploadRing {
  readonly slots: readonly UploadSlot[];
  readonly bytes: number;
  readonly #gpu: GpuDevice;
  readonly #free = new FreeList<UploadSlot>();
  readonly #timeoutMs: number;
  readonly #label: string;
  /** What a fence wait is called in its errors: made once, not per frame. */
  readonly #fenceWhat: string;
  #destroyed = false;

  constructor(options: RingOptions) {
    const { gpu, slots, label } = options;
    if (!Number.isInteger(slots) || slots < 2) throw new RangeError(`UploadRing: at least 2 slots, got ${slots}`);
    this.#gpu = gpu;
    this.#label = label;
    this.#fenceWhat = `${label} staging fence`;
    this.#timeoutMs = options.fenceTimeoutMs ?? DEFAULT_FENCE_TIMEOUT_MS;
    this.bytes = paddedBytes(options.bytes);
    const list: UploadSlot[] = [];
    for (let i = 0; i < slots; i++) {
      const buffer = gpu.device.createBuffer({
        size: this.bytes,
        usage: GPUBufferUsage.MAP_WRITE | GPUBufferUsage.COPY_SRC,
        mappedAtCreation: true,
        label: `${label} staging ${i}`,
      });
      const slot = new UploadSlot(buffer, i);
      list.push(slot);
      this.#free.put(slot);
    }
    this.slots = list;
  }

  /** Slots free right now. */
  get available(): number {
    return this.#free.available;
  }

  /** A slot mapped for writing; waits (FIFO) while every slot is in flight. */
  async acquire(): Promise<UploadSlot> {
    if (this.#destroyed) throw new BackendError('E_GPU', `${this.#label}: staging ring is destroyed`);
    this.#gpu.throwIfFailed();
    const slot = await this.#free.take();
    slot.state = 'held';
    return slot;
  }

  /**
   * Call right after the queue.submit whose commands read `slot`: re-maps it for writing;
   * the slot is free again once the GPU has consumed it. Returns the fence (for tests);
   * it never rejects, failures go to the waiters of acquire().
   */
  submitted(slot: UploadSlot): Promise<void> {
    slot.state = 'in-flight';
    return this.#remap(slot);
  }

  /** Gives back a slot acquired but not submitted (an error on the way). */
  release(slot: UploadSlot): void {
    if (slot.state === 'held') {
      slot.state = 'free';
      this.#free.put(slot);
    } else if (slot.state === 'sealed') {
      slot.state = 'in-flight';
      void this.#remap(slot);
    }
  }

  #remap(slot: UploadSlot): Promise<void> {
    return this.#gpu.guard(slot.buffer.mapAsync(GPUMapMode.WRITE), this.#fenceWhat, this.#timeoutMs).then(
      () => {
        if (this.#destroyed) return;
        slot.state = 'free';
        this.#free.put(slot);
      },
      (error: unknown) => {
        this.#free.fail(this.#destroyed ? new BackendError('E_GPU', `${this.#label}: staging ring is destroyed`) : error);
      },
    );
  }

  /** Destroys the buffers (pending fences reject and are ignored); waiters get E_GPU. */
  destroy(): void {
    if (this.#destroyed) return;
    this.#destroyed = true;
    this.#free.fail(new BackendError('E_GPU', `${this.#label}: staging ring is destroyed`));
    for (const s of this.slots) s.buffer.destroy();
  }
}

// ---- GPU -> host -------------------------------------------------------------------------

export class ReadbackSlot {
  readonly buffer: GPUBuffer;
  readonly index: number;
  state: 'free' | 'held' | 'in-flight' = 'free';

  constructor(buffer: GPUBuffer, index: number) {
    this.buffer = buffer;
    this.index = index;
  }

  /** Records a copy of `size` bytes of `src` at `srcOffset` into this slot at `dstOffset`. */
  encodeCopy(encoder: GPUCommandEncoder, src: GPUBuffer, srcOffset: number, size: number, dstOffset = 0): void {
    encoder.copyBufferToBuffer(src, srcOffset, this.buffer, dstOffset, size);
  }
}

/**
 * Readback slots: acquire() a free one, record copies into it, submit, then read(slot)
 * maps it, copies the bytes out, unmaps it and frees it. read() never delays a submit.
 */
export class ReadbackRing {
  readonly slots: readonly ReadbackSlot[];
  readonly bytes: number;
  readonly #gpu: GpuDevice;
  readonly #free = new FreeList<ReadbackSlot>();
  readonly #timeoutMs: number;
  readonly #label: string;
  /** What a fence wait is called in its errors: made once, not per frame. */
  readonly #fenceWhat: string;
  #destroyed = false;

  constructor(options: RingOptions) {
    const { gpu, slots, label } = options;
    if (!Number.isInteger(slots) || slots < 1) throw new RangeError(`ReadbackRing: at least 1 slot, got ${slots}`);
    this.#gpu = gpu;
    this.#label = label;
    this.#fenceWhat = `${label} readback`;
    this.#timeoutMs = options.fenceTimeoutMs ?? DEFAULT_FENCE_TIMEOUT_MS;
    this.bytes = paddedBytes(options.bytes);
    const list: ReadbackSlot[] = [];
    for (let i = 0; i < slots; i++) {
      const buffer = gpu.device.createBuffer({
        size: this.bytes,
        usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
        label: `${label} readback ${i}`,
      });
      const slot = new ReadbackSlot(buffer, i);
      list.push(slot);
      this.#free.put(slot);
    }
    this.slots = list;
  }

  get available(): number {
    return this.#free.available;
  }

  async acquire(): Promise<ReadbackSlot> {
    if (this.#destroyed) throw new BackendError('E_GPU', `${this.#label}: readback ring is destroyed`);
    this.#gpu.throwIfFailed();
    const slot = await this.#free.take();
    slot.state = 'held';
    return slot;
  }

  /**
   * After the submit that fills `slot`: resolves with a copy of its first `size` bytes
   * (default all) once the GPU is done; the slot is free again by then.
   */
  async read(slot: ReadbackSlot, size = this.bytes): Promise<ArrayBuffer> {
    return (await this.readFrames(slot, 1, size, size))[0]!;
  }

  /**
   * read() for `count` frames laid out `stride` bytes apart, `size` bytes each: one map of
   * the range they span, and a copy of each frame's bytes (so each frame's buffer can be
   * kept, or dropped, on its own).
   */
  async readFrames(slot: ReadbackSlot, count: number, stride: number, size: number): Promise<ArrayBuffer[]> {
    slot.state = 'in-flight';
    const span = (count - 1) * stride + size;
    try {
      await this.#gpu.guard(slot.buffer.mapAsync(GPUMapMode.READ, 0, span), this.#fenceWhat, this.#timeoutMs);
    } catch (error) {
      // The slot's state is unknown (the map may still be pending): it stays out of the ring.
      if (this.#destroyed) throw new BackendError('E_GPU', `${this.#label}: readback ring is destroyed`);
      this.#free.fail(error);
      throw error;
    }
    const copies: ArrayBuffer[] = [];
    try {
      const mapped = slot.buffer.getMappedRange(0, span);
      for (let i = 0; i < count; i++) copies.push(mapped.slice(i * stride, i * stride + size));
      slot.buffer.unmap();
    } catch (cause) {
      const error = this.#gpu.error ?? new BackendError('E_GPU', `${this.#label} readback: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
      this.#free.fail(error);
      throw error;
    }
    slot.state = 'free';
    this.#free.put(slot);
    return copies;
  }

  /** Gives back a slot acquired but not submitted. */
  release(slot: ReadbackSlot): void {
    if (slot.state !== 'held') return;
    slot.state = 'free';
    this.#free.put(slot);
  }

  destroy(): void {
    if (this.#destroyed) return;
    this.#destroyed = true;
    this.#free.fail(new BackendError('E_GPU', `${this.#label}: readback ring is destroyed`));
    for (const s of this.slots) s.buffer.destroy();
  }
}

// ---- GPU-only -----------------------------------------------------------------------------

/** Device-local buffers taken in turn; ordering on the single queue makes reuse safe. */
export class DeviceRing {
  readonly buffers: readonly GPUBuffer[];
  readonly bytes: number;
  #next = 0;

  constructor(gpu: GpuDevice, options: { slots: number; bytes: number; label: string; usage?: number }) {
    const { slots, label } = options;
    if (!Number.isInteger(slots) || slots < 1) throw new RangeError(`DeviceRing: at least 1 slot, got ${slots}`);
    this.bytes = paddedBytes(options.bytes);
    const usage = options.usage ?? (GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC);
    this.buffers = Array.from({ length: slots }, (_, i) =>
      gpu.device.createBuffer({ size: this.bytes, usage, label: `${label} ${i}` }));
  }

  /** The next buffer in turn. */
  next(): GPUBuffer {
    const b = this.buffers[this.#next]!;
    this.#next = (this.#next + 1) % this.buffers.length;
    return b;
  }

  destroy(): void {
    for (const b of this.buffers) b.destroy();
  }
}

/**
 * Device-local reference planes: advance() gives the buffer frame N's reference is copied
 * into and the ones frames N-1's and N-2's went to (its previous references, still
 * resident: nothing overwrites them before frame N's commands, which come earlier on the
 * queue, have run; the ring has at least 3 buffers so that N's is neither of them).
 */
export class ReferenceRing {
  readonly #ring: DeviceRing;
  #latest: GPUBuffer | undefined;
  #beforeLatest: GPUBuffer | undefined;

  constructor(gpu: GpuDevice, options: { slots: number; bytes: number; label: string }) {
    if (options.slots < 3) throw new RangeError(`ReferenceRing: at least 3 slots, got ${options.slots}`);
    this.#ring = new DeviceRing(gpu, options);
  }

  get buffers(): readonly GPUBuffer[] {
    return this.#ring.buffers;
  }

  /** The buffer for the next frame's reference, and the previous two frames' (if any). */
  advance(): { ref: GPUBuffer; prevRef: GPUBuffer | undefined; prevRef2: GPUBuffer | undefined } {
    const prevRef = this.#latest;
    const prevRef2 = this.#beforeLatest;
    const ref = this.#ring.next();
    this.#beforeLatest = prevRef;
    this.#latest = ref;
    return { ref, prevRef, prevRef2 };
  }

  /** Forgets the previous frames (a new stream starts without them). */
  reset(): void {
    this.#latest = undefined;
    this.#beforeLatest = undefined;
  }

  destroy(): void {
    this.#ring.destroy();
    this.#latest = undefined;
    this.#beforeLatest = undefined;
  }
}

// ---- one stream's set --------------------------------------------------------------------

export interface StagingPoolOptions {
  gpu: GpuDevice;
  /** Frames in flight: upload, readback and device slots per ring (at least 2). */
  depth: number;
  /**
   * Distorted inputs per frame (a ladder's renditions; default 1): the group's upload slots
   * hold a picture per rendition, and the distorted device planes have `(depth + 1) *
   * renditions` slots, as many per rendition as the reference ring has. The reference ring
   * is shared by all of them.
   */
  renditions?: number;
  /**
   * Keep each rendition's previous distorted picture resident (a gpu extractor reads it:
   * GpuImplementation.previousDis): the distorted planes are then a ReferenceRing per
   * rendition (depth + 1 planes each) instead of one shared ring of depth per rendition.
   * Default false.
   */
  distortedHistory?: boolean;
  /**
   * Bytes per picture upload: the luma plane (width * height * bytes per sample), or, where
   * the run reads chroma, all three planes as gpu/picture-planes.ts lays them out.
   */
  lumaBytes: number;
  /** Bytes of one frame's stats (device buffer and readback). */
  statsBytes: number;
  /** Extra readback bytes per frame after the stats (timestamps). Default 0. */
  extraReadbackBytes?: number;
  /**
   * Frames one readback slot holds (default 1): a batch of frames submitted together copies
   * each frame's stats (and extra bytes) into its own stride of one slot, so one map reads
   * them all back.
   */
  readbackFrames?: number;
  /**
   * Largest upload slot in bytes (the adapter's maxBufferSize; default no limit). A group's
   * pictures (the reference, then each rendition's) share one upload slot, one after the
   * other, as many as fit; a ladder too large for one slot takes several.
   */
  maxUploadBytes?: number;
  fenceTimeoutMs?: number;
  label?: string;
}

/**
 * Everything one stream of one frame size needs: the upload ring (a group's pictures share a slot), the reference
 * ring (depth + 1 planes), distorted planes (depth + 1 per rendition; with distortedHistory a
 * ReferenceRing of depth + 1 per rendition) and stats buffers (depth + 1), the readback ring
 * (depth slots).
 */
export class StagingPool {
  readonly depth: number;
  /** Upload slots: `slotsPerGroup` per group in flight, each holding up to `picturesPerSlot` pictures. */
  readonly upload: UploadRing;
  /** Bytes between two pictures in an upload slot (a picture's bytes, word aligned). */
  readonly pictureStride: number;
  readonly picturesPerSlot: number;
  readonly slotsPerGroup: number;
  readonly references: ReferenceRing;
  /** The distorted planes, shared by the renditions in turn (without distortedHistory). */
  readonly distorted: DeviceRing | undefined;
  /** Per rendition, its distorted planes with its previous one resident (distortedHistory). */
  readonly distortedHistory: readonly ReferenceRing[] | undefined;
  readonly stats: DeviceRing;
  readonly readback: ReadbackRing;
  readonly statsBytes: number;
  /** Bytes between two frames' stats in a readback slot (stats and extra bytes, 8-aligned for the int64 views). */
  readonly readbackStride: number;
  /** Frames one readback slot holds. */
  readonly readbackFrames: number;
  #destroyed = false;

  constructor(options: StagingPoolOptions) {
    const { gpu, depth, lumaBytes, statsBytes } = options;
    if (!Number.isInteger(depth) || depth < 2) throw new RangeError(`StagingPool: depth must be at least 2, got ${depth}`);
    const label = options.label ?? 'vmaf';
    const renditions = options.renditions ?? 1;
    if (!Number.isInteger(renditions) || renditions < 1) throw new RangeError(`StagingPool: renditions must be a positive integer, got ${renditions}`);
    const common = { gpu, fenceTimeoutMs: options.fenceTimeoutMs };
    this.depth = depth;
    this.statsBytes = paddedBytes(statsBytes);
    const readbackFrames = options.readbackFrames ?? 1;
    if (!Number.isInteger(readbackFrames) || readbackFrames < 1) throw new RangeError(`StagingPool: readbackFrames must be a positive integer, got ${readbackFrames}`);
    this.readbackFrames = readbackFrames;
    this.readbackStride = Math.ceil((this.statsBytes + (options.extraReadbackBytes ?? 0)) / 8) * 8;
    const made: { destroy(): void }[] = [];
    try {
      // Picture j of a group (0 the reference, k + 1 rendition k's) lies in slot
      // floor(j / picturesPerSlot) at (j % picturesPerSlot) * pictureStride (uploadPlace).
      this.pictureStride = paddedBytes(lumaBytes);
      const pictures = renditions + 1;
      const most = Math.max(1, Math.min(pictures, Math.floor((options.maxUploadBytes ?? Infinity) / this.pictureStride)));
      this.slotsPerGroup = Math.ceil(pictures / most);
      // Spread evenly over the slots needed: no slot holds room for pictures no group has.
      this.picturesPerSlot = Math.ceil(pictures / this.slotsPerGroup);
      made.push((this.upload = new UploadRing({ ...common, slots: depth * this.slotsPerGroup, bytes: this.picturesPerSlot * this.pictureStride, label: `${label} upload` })));
      made.push((this.references = new ReferenceRing(gpu, { slots: depth + 1, bytes: lumaBytes, label: `${label} ref luma` })));
      if (options.distortedHistory) {
        const rings: ReferenceRing[] = [];
        for (let k = 0; k < renditions; k++) {
          const ring = new ReferenceRing(gpu, { slots: depth + 1, bytes: lumaBytes, label: `${label} dis ${k} luma` });
          made.push(ring);
          rings.push(ring);
        }
        this.distortedHistory = rings;
        this.distorted = undefined;
      } else {
        // As many slots per rendition as the reference ring has: both rings then come round
        // together, so a kernel's bind group for a (reference, distorted) pair of buffers
        // recurs every depth + 1 frames (depth + 1 pairs to bind, not depth * (depth + 1)).
        made.push((this.distorted = new DeviceRing(gpu, { slots: (depth + 1) * renditions, bytes: lumaBytes, label: `${label} dis luma` })));
        this.distortedHistory = undefined;
      }
      // depth + 1 slots too: motion binds (reference, previous reference, stats slot), all three then in step.
      made.push((this.stats = new DeviceRing(gpu, { slots: depth + 1, bytes: statsBytes, label: `${label} stats` })));
      made.push((this.readback = new ReadbackRing({ ...common, slots: depth, bytes: readbackFrames === 1 ? this.statsBytes + (options.extraReadbackBytes ?? 0) : readbackFrames * this.readbackStride, label })));
    } catch (e) {
      for (const m of made) m.destroy();
      throw e;
    }
  }

  get destroyed(): boolean {
    return this.#destroyed;
  }

  /**
   * The buffer rendition k's distorted picture of the next frame is copied into, and (with
   * distortedHistory) the one its previous frame's went to, still resident (ReferenceRing's
   * argument); undefined without distortedHistory, for the rendition's first picture, and after forgetDistorted(k).
   */
  nextDistorted(k: number): { dis: GPUBuffer; previousDis: GPUBuffer | undefined } {
    const history = this.distortedHistory;
    if (!history) return { dis: this.distorted!.next(), previousDis: undefined };
    const { ref, prevRef } = history[k]!.advance();
    return { dis: ref, previousDis: prevRef };
  }

  /** Rendition k has no picture in this frame: its next one has no previous distorted picture. */
  forgetDistorted(k: number): void {
    this.distortedHistory?.[k]!.reset();
  }

  /** Where a group's picture j (0: the reference, k + 1: rendition k's) is uploaded: its slot of the group, its offset there. */
  uploadPlace(j: number): { slot: number; offset: number } {
    return { slot: Math.floor(j / this.picturesPerSlot), offset: (j % this.picturesPerSlot) * this.pictureStride };
  }

  destroy(): void {
    if (this.#destroyed) return;
    this.#destroyed = true;
    this.upload.destroy();
    this.references.destroy();
    this.distorted?.destroy();
    for (const ring of this.distortedHistory ?? []) ring.destroy();
    this.stats.destroy();
    this.readback.destroy();
  }
}

/**
 * The contract between the gpu backend's host side (upload ring, command encoding, readback)
 * and each feature kernel (VIF, ADM, motion). A kernel is created once per frame size and bit
 * depth and records its compute passes into the frame's command encoder; it never submits.
 *
 * Inputs are luma planes in storage buffers laid out as lib/luma.wgsl describes (where a run
 * also uploads chroma for a registered extractor, it follows the luma in the same buffer:
 * picture-planes.ts; these kernels read luma only). Outputs are
 * 64-bit integer accumulators, each stored as two u32 words (lo, hi), in the frame's stats
 * buffer at the kernel's offset: the very same int64 values, in the same layout, that the cpu
 * backend's vifStats/admStats/motionSad produce (see src/kernels/cpu/*.h), so that one native
 * finish step (finishFeatures) serves both backends and they agree bit for bit.
 */
export interface LumaPlanes {
  ref: GPUBuffer;
  dis: GPUBuffer;
  /** The previous reference frame (motion only); undefined for the first frame. */
  prevRef?: GPUBuffer;
}

export interface StatsSlot {
  buffer: GPUBuffer;
  /** Offset in bytes; each accumulator takes 8 bytes (lo word, hi word). */
  offset: number;
}

export interface FrameKernel {
  /** How many int64 accumulators this kernel writes. */
  readonly statsLength: number;
  /** Records the passes that compute this frame's accumulators into `out`. */
  encode(encoder: GPUCommandEncoder, planes: LumaPlanes, out: StatsSlot): void;
  /**
   * Optional, with encodeInPass: what encode() records outside a compute pass, recorded
   * before the pass that encodeInPass fills is begun (motion: its accumulator's clear).
   */
  encodeBefore?(encoder: GPUCommandEncoder, planes: LumaPlanes, out: StatsSlot): void;
  /**
   * Optional: encode()'s dispatches (after encodeBefore, where there is one) into a compute
   * pass the caller has begun and ends, so that several kernels share one pass: fewer
   * native calls per frame. Dispatches of one pass run in order, each seeing the writes of
   * the ones before it, as separate passes do.
   */
  encodeInPass?(pass: GPUComputePassEncoder, planes: LumaPlanes, out: StatsSlot): void;
  destroy(): void;
}

export interface FrameGeometry {
  width: number;
  height: number;
  bitDepth: 8 | 10 | 12 | 16;
}

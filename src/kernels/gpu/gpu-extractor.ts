/**
 * The contract of a registered extractor's GPU implementation (ExtractorImplementation's
 * `gpu` part, src/extractors/extractor.ts): how the gpu backend runs a `--feature` extractor
 * inside its per-group command buffer, beside the core kernels, with the same uploads, the
 * same submit and the same readback.
 *
 * An implementation is created per extractor instance (its options) and frame format. For
 * each scored pair it records its passes into the group's command encoder; they read the
 * device-local pictures the upload path filled (picture-planes.ts: Y, and Cb/Cr when the
 * extractor's planes() is 'all') and write `statsCount` 64-bit unsigned integers (two u32
 * words each, low first) at the offset it is given in the group's stats buffer. Those come
 * back with the group's readback and are finished (gpu-extractors.ts) by the C++
 * extractor's finishStats (src/kernels/cpu/extractor.h, the addon's finishExtractor): a
 * pure function of the accumulators (statsAt decodes the words) that is the very double
 * arithmetic its extract() ends with (extract() calls it), so both backends give the same
 * bits, glibc's log10 included; it feeds the instance's aggregates (APSNR) as extract() does.
 *
 * The kernels must give exactly the accumulators the C++ extractor's finishStats takes, in
 * fixed-order reductions (no atomics whose result depends on order), so a run is
 * deterministic and equal to the cpu backend's.
 *
 * A temporal extractor that reads only reference pictures (float_motion: this frame's and the
 * previous one's) declares `referenceOnly`: the gpu backend runs it once per frame, scored
 * or not (libvmaf runs temporal extractors on every
 * frame), with the previous frame's reference from its reference ring (`previousRef`,
 * absent for a stream's first frame), into the first rendition's block, and every rendition
 * takes its values from there; values that wait for the next frame are finished by the
 * definition's finishFrame, as on the cpu backend (gpu-extractors.ts, extractor-lookahead.ts).
 *
 * A temporal extractor that also reads the previous frame's distorted picture (speed_temporal:
 * both inputs' frame differences) declares `previousDis`: where a run has one, the gpu backend
 * uploads every rendition's distorted picture on every frame, scored or not (without such an
 * extractor an unscored frame's distorted pictures are never uploaded), into a history ring
 * per rendition that keeps its last picture resident, as the reference ring does the
 * reference's; the kernel runs per rendition on its scored frames, given this frame's
 * pictures and the previous frame's reference and distorted picture of the same rendition
 * (`previousRef`, `previousDis`, both absent for a stream's first frame). Its values depend
 * on those two frames alone (no state kept from frame to frame, no next frame's values).
 */
import type { FrameFormat } from '../../types.js';
import type { OptionValues } from '../../extractors/option.js';
import type { GpuDevice } from './device.js';
import type { StatsSlot } from './frame-kernel.js';
import type { I64Reducer } from './reduce-i64.js';
import type { PictureLayout } from './picture-planes.js';

/** One picture on the device: a buffer holding its planes as `layout` places them. */
export interface GpuPicture {
  buffer: GPUBuffer;
  layout: PictureLayout;
}

/** What one frame's passes read. */
export interface GpuExtractorInputs {
  ref: GpuPicture;
  /** A referenceOnly kernel is given the reference here too: it must not read it as distorted. */
  dis: GpuPicture;
  /** The previous frame's reference (absent for the first frame). */
  previousRef?: GpuPicture;
  /**
   * For previousDis kernels: the previous frame's distorted picture of the same rendition
   * (absent for the first frame, and for every frame of a run without such a kernel).
   */
  previousDis?: GpuPicture;
}

/** What an implementation gets when it is created. */
export interface GpuExtractorContext {
  gpu: GpuDevice;
  options: OptionValues;
  format: FrameFormat;
  /** The planes uploaded for this run (luma only, or Y, Cb, Cr). */
  layout: PictureLayout;
  /** A deterministic i64 summer shared by the instances of a stream. */
  reducer: I64Reducer;
}

/** One instance's compiled GPU work, for one frame format. */
export interface GpuExtractorKernel {
  /** 64-bit accumulators written per frame (the C++ extractor's statsCount()). */
  readonly statsCount: number;
  /** Records the frame's passes; writes statsCount * 8 bytes at `out` (offset a multiple of 8). */
  encode(encoder: GPUCommandEncoder, inputs: GpuExtractorInputs, out: StatsSlot): void;
  /**
   * Optional: the frame's values from its accumulators, in place of calling the C++
   * finishStats (`finishNative`) directly: called once per encoded frame, with that frame's
   * accumulators, so a kernel may keep per-frame state until then (cambi: its values, for
   * the frames whose pooling the host must do).
   */
  finish?(stats: BigUint64Array, finishNative: NativeFinish): Promise<Float64Array>;
  destroy(): void;
}

/**
 * The device limits a gpu part may size itself by in supports(): the device's own where it
 * is open, WebGPU's defaults (DEFAULT_BINDING_LIMITS) where a caller has none.
 */
export interface GpuBindingLimits {
  readonly maxStorageBufferBindingSize: number;
}

/** WebGPU's default limits: what every adapter gives. */
export const DEFAULT_BINDING_LIMITS: GpuBindingLimits = Object.freeze({ maxStorageBufferBindingSize: 128 << 20 });

/** The C++ extractor's finishStats on the worker pool (the addon's finishExtractorAsync). */
export type NativeFinish = (stats: BigUint64Array) => Promise<Float64Array>;

export interface GpuImplementation {
  /**
   * It reads only the reference, this frame's and (inputs.previousRef) the previous one's:
   * run once per frame, scored or not. Required of an extractor with neighbours (at most one
   * previous frame, at most one next one through finishFrame).
   */
  readonly referenceOnly?: boolean;
  /**
   * It reads, beside this frame's pictures, the previous frame's reference and distorted
   * picture of the same rendition (inputs.previousRef, inputs.previousDis): run per rendition
   * on scored frames, the backend keeping each rendition's previous distorted picture. For an
   * extractor whose neighbours are at most one previous frame and no next one.
   */
  readonly previousDis?: boolean;
  /**
   * Whether the kernel is exact for these options and format (e.g. a float extractor whose
   * integer accumulation reproduces libvmaf's double sums only up to some bit depth). An
   * instance it refuses runs on the host, as extractors without a gpu part do.
   */
  supports(options: OptionValues, format: FrameFormat, limits?: GpuBindingLimits): boolean;
  create(context: GpuExtractorContext): Promise<GpuExtractorKernel>;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/**
 * The accumulators at word offset `at` of a readback (u32 pairs, low word first). Where
 * they are aligned this is a view of `words`' buffer, not a copy (CAMBI's
 * values are megabytes a frame): the readback is the host's own copy, which nothing writes.
 */
export function statsAt(words: Uint32Array, at: number, count: number): BigUint64Array {
  // On a little-endian host a low-first u32 pair is the u64's bytes.
  const byte = words.byteOffset + 4 * at;
  if (LITTLE_ENDIAN && byte % 8 === 0) return new BigUint64Array(words.buffer, byte, count);
  const out = new BigUint64Array(count);
  for (let i = 0; i < count; i++) out[i] = (BigInt(words[at + 2 * i + 1]!) << 32n) | BigInt(words[at + 2 * i]!);
  return out;
}

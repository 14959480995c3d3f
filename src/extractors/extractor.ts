/**
 * A feature extractor, declared once (as libvmaf's feature_extractor.h declares one): its
 * name, its options, the features it provides, what it reads (planes, neighbouring frames)
 * and how each backend computes it. The registry (registry.ts) lists them; a run plan
 * (plan.ts) picks instances of them for the models and `--feature` requests of a run;
 * decode, the backends and the writers read the plan, never an extractor's module.
 */
import type { FrameFormat } from '../types.js';
import type { OptionDef, OptionValues } from './option.js';
import type { GpuImplementation } from '../kernels/gpu/gpu-extractor.js';

/** Which planes of a picture an extractor reads. */
export type PlaneNeed = 'luma' | 'all';

/** Frames of the same input, around the current one, that a frame's values depend on. */
export interface NeighbourFrames {
  /** Earlier frames the computation reads (motion: 1, the previous reference). */
  previous: number;
  /** Later frames a value waits for (motion2: 1, the next frame's motion). */
  next: number;
}

/**
 * How the cpu and gpu backends compute an extractor:
 * - 'core': the fused integer VIF/ADM/motion computation both backends share
 *   (src/kernels/cpu, src/kernels/gpu), which computes the parts a run's plan has
 *   instances of (VIF, ADM, motion: src/kernels/core-parts.ts) together;
 * - 'native': a C++ extractor registered under `native` in the addon
 *   (src/kernels/cpu/extractor.h), run per frame on the cpu backend's threads; its
 *   `outputs` are the values the native job returns, in that order. On the gpu backend it
 *   runs on the host unless `gpu` loads a WGSL implementation (src/kernels/gpu/gpu-extractor.ts;
 *   its WGSL and binding module live in the extractor's folder), which then runs in the gpu
 *   backend's command buffer for the formats it supports, finished by the C++ extractor.
 */
export type ExtractorImplementation =
  | { readonly kind: 'core' }
  | { readonly kind: 'native'; readonly native: string; readonly gpu?: GpuPartLoader };

/**
 * An extractor's gpu part, loaded when the gpu backend opens for a plan that has it
 * (kernels/gpu/gpu-extractors.ts, GpuParts): its module, its kernels' and the device code
 * they import are no part of a cpu run's start-up, nor of a gpu run that does not use it.
 * A definition writes `gpu: () => import('./x-gpu.js').then((m) => m.xGpu)`.
 */
export type GpuPartLoader = () => Promise<GpuImplementation>;

export interface ExtractorDefinition {
  /** libvmaf's extractor name, as `--feature NAME` takes it: 'psnr', 'float_ssim'. */
  readonly name: string;
  /** One line for `--list`. */
  readonly summary: string;
  readonly options: readonly OptionDef[];
  /** libvmaf's provided_features: the names models address ('VMAF_integer_feature_adm2_score', 'psnr_y'). */
  readonly provides: readonly string[];
  /** The planes read under these options (chroma only where the input has it). */
  planes(options: OptionValues): PlaneNeed;
  neighbours(options: OptionValues): NeighbourFrames;
  /**
   * The provided features one frame gives under these options and format, in the order
   * libvmaf appends them (which becomes the log's column order).
   */
  outputs(options: OptionValues, format: FrameFormat): readonly string[];
  /**
   * Outputs appended one frame late (motion2 waits for the next frame's motion): in
   * libvmaf's logs they come after every feature of the first frame.
   */
  readonly delayedOutputs?: readonly string[] | ((options: OptionValues) => readonly string[]);
  /**
   * Outputs libvmaf logs under their bare names whatever the options: it suffixes only its
   * provided features (its feature-name dictionary holds nothing else), e.g. cambi_source.
   */
  readonly unsuffixedOutputs?: readonly string[];
  /**
   * For extractors that wait for the next frame (neighbours().next > 0): a frame's final
   * values, in outputs() order, from the values the native extractor gave for it (`own`)
   * and for the next frame of the same input (`next`; undefined when it was the last), and
   * whether it is the first frame of the stream. A pure function: the plan backend's
   * lookahead stage calls it once per frame, unscored (--subsample) frames included.
   */
  finishFrame?(own: readonly number[], next: readonly number[] | undefined, first: boolean, options: OptionValues): number[];
  /** Throws a VmafError (E_FRAME_TOO_SMALL, E_INPUT_FORMAT, ...) for inputs libvmaf refuses. */
  check?(options: OptionValues, format: FrameFormat): void;
  readonly implementation: ExtractorImplementation;
  /**
   * Where one implementation does not cover every option set: the definition (same name,
   * options and outputs) that computes these options. The run plan asks it per instance.
   */
  forOptions?(options: OptionValues): ExtractorDefinition;
}

/** Convenience for extractors that read each frame alone. */
export const NO_NEIGHBOURS: NeighbourFrames = Object.freeze({ previous: 0, next: 0 });

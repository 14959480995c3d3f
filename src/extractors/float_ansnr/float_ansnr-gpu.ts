/**
 * float_ansnr on the GPU (float_ansnr.wgsl): the luma as floats, the reference's 3x3 and the
 * distorted's 5x5 filters, and the signal and noise energies, every float operation
 * integer-exact (lib/f32.wgsl) and every sum in float_ansnr.cpp's order (per row left to
 * right, then the rows top to bottom, each a sequential float sum on one invocation, the
 * terms loaded through workgroup tiles: serial-rows.wgsl), so the two floats are the cpu
 * backend's bit for bit; float_ansnr.cpp's finishStats ends as
 * extract() does. Everything runs on the GPU: no readback of maps, no host summation.
 */
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { GpuExtractorContext, GpuExtractorInputs, GpuExtractorKernel, GpuImplementation } from '../../kernels/gpu/gpu-extractor.js';
import type { StatsSlot } from '../../kernels/gpu/frame-kernel.js';
import { WGSL_ROOT } from '../../kernels/gpu/wgsl.js';
import { FloatPasses } from '../common/float-passes-gpu.js';

const SOURCE = relative(WGSL_ROOT, join(dirname(fileURLToPath(import.meta.url)), 'float_ansnr.wgsl'));

/** The kernels as float_ansnr.cpp has them: the 3x3 binomial (/16) and libvmaf's 5x5 (/571), as floats. */
const REF_KERNEL = [1, 2, 1, 2, 4, 2, 1, 2, 1].map((v) => Math.fround(v / 16));
const DIS_KERNEL = [2, 7, 12, 7, 2, 7, 31, 52, 31, 7, 12, 52, 127, 52, 12, 7, 31, 52, 31, 7, 2, 7, 12, 7, 2].map((v) => Math.fround(v / 571));

/** The 5x5 filter's mirroring (-2 -> 2, n + 1 -> n - 2) stays inside planes of 3 samples a side and more. */
const MIN_SIDE = 3;

type Entry = 'to_float' | 'filter_2d' | 'energies' | 'total';

class FloatAnsnrKernel implements GpuExtractorKernel {
  readonly statsCount = 2;
  readonly #passes: FloatPasses<Entry, 'ref' | 'dis'>;

  private constructor(passes: FloatPasses<Entry, 'ref' | 'dis'>) {
    this.#passes = passes;
  }

  static async create(ctx: GpuExtractorContext): Promise<FloatAnsnrKernel> {
    const luma = ctx.layout.planes[0]!;
    const { width: w, height: h } = luma;
    // params: src, dst, w, h, taps, weightsAt, scale, ref, dis; total's output word at 9.
    const words = (v: Partial<Record<'src' | 'dst' | 'taps' | 'weightsAt' | 'scale' | 'ref' | 'dis', number>>): number[] =>
      [v.src ?? 0, v.dst ?? 0, w, h, v.taps ?? 0, v.weightsAt ?? 0, v.scale ?? 0, v.ref ?? 0, v.dis ?? 0, 0, 0, 0];
    // work: ref and dis as floats, their filtered images, two row sums per row.
    const n = w * h;
    const [refFloat, disFloat, refFiltered, disFiltered, rows] = [0, n, 2 * n, 3 * n, 4 * n];
    const passes = await FloatPasses.create<Entry, 'ref' | 'dis'>(ctx, {
      name: 'float_ansnr',
      source: SOURCE,
      entries: ['to_float', 'filter_2d', 'energies', 'total'],
      workWords: 4 * n + 2 * h,
      constants: [...REF_KERNEL, ...DIS_KERNEL],
      constantsFor: ['filter_2d'],
      outReadsWork: ['total'],
      outWords: [rows, 0, w, h, 0, 0, 0, 0, 0, 0, 0, 0],
      outWordAt: 9,
      passes: ({ uniform, image, rows: rowGroups, scale }) => [
        { entry: 'to_float', of: 'ref', params: uniform(words({ src: luma.offset / 4, dst: refFloat, scale })), groups: image },
        { entry: 'to_float', of: 'dis', params: uniform(words({ src: luma.offset / 4, dst: disFloat, scale })), groups: image },
        { entry: 'filter_2d', params: uniform(words({ src: refFloat, dst: refFiltered, taps: 3, weightsAt: 0 })), groups: image },
        { entry: 'filter_2d', params: uniform(words({ src: disFloat, dst: disFiltered, taps: 5, weightsAt: REF_KERNEL.length })), groups: image },
        { entry: 'energies', params: uniform(words({ dst: rows, ref: refFiltered, dis: disFiltered })), groups: rowGroups },
      ],
    });
    return new FloatAnsnrKernel(passes);
  }

  encode(encoder: GPUCommandEncoder, inputs: GpuExtractorInputs, out: StatsSlot): void {
    this.#passes.encode(encoder, out, (of) => inputs[of], 'total');
  }

  destroy(): void {
    this.#passes.destroy();
  }
}

export const floatAnsnrGpu: GpuImplementation = {
  supports: (_options, format) => format.width >= MIN_SIDE && format.height >= MIN_SIDE,
  create: (ctx) => FloatAnsnrKernel.create(ctx),
};

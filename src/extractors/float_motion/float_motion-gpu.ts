/**
 * float_motion on the GPU (float_motion.wgsl), for luma at scale 0 (without motion_add_scale1
 * and motion_add_uv, which run on the host): the previous and this reference frame as floats,
 * each blurred by the separable filter, and the mean absolute difference's float sums, every
 * float operation integer-exact (lib/f32.wgsl) and every sum in float_motion.cpp's order (per
 * row left to right, then the rows top to bottom, each sequential on one invocation, the
 * terms loaded through workgroup tiles: serial-rows.wgsl), so the sum is the cpu backend's
 * bit for bit; float_motion.cpp's finishStats ends as extract() does. Everything runs on the
 * GPU: no readback of maps, no host summation.
 *
 * It reads only reference pictures (`referenceOnly`): the gpu backend runs it once per frame,
 * scored or not, with the previous frame's reference from its reference ring, and finishes
 * motion2 and motion3 from the next frame's score (float_motion.ts's finishFrame) as the cpu
 * backend does.
 */
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { GpuExtractorContext, GpuExtractorInputs, GpuExtractorKernel, GpuImplementation } from '../../kernels/gpu/gpu-extractor.js';
import type { StatsSlot } from '../../kernels/gpu/frame-kernel.js';
import { WGSL_ROOT } from '../../kernels/gpu/wgsl.js';
import { FloatPasses, type FloatPass } from '../common/float-passes-gpu.js';
import type { OptionValues } from '../option.js';

const SOURCE = relative(WGSL_ROOT, join(dirname(fileURLToPath(import.meta.url)), 'float_motion.wgsl'));

/** float_motion.cpp's filters as floats: motion_filter_size 1 (identity), 3, else 5. */
function filterOf(options: OptionValues): number[] {
  const size = Number(options['motion_filter_size']);
  if (size === 1) return [0, 0, 1, 0, 0];
  if (size === 3) return [0.166378498, 0.667243004, 0.166378498].map(Math.fround);
  return [0.054488685, 0.244201342, 0.402619947, 0.244201342, 0.054488685].map(Math.fround);
}

type Entry = 'to_float' | 'blur_rows' | 'blur_cols' | 'row_sums' | 'total' | 'no_previous';
type Picture = 'previous' | 'current';

class FloatMotionKernel implements GpuExtractorKernel {
  readonly statsCount = 2;
  readonly #passes: FloatPasses<Entry, Picture>;
  readonly #forceZero: boolean;

  private constructor(passes: FloatPasses<Entry, Picture>, forceZero: boolean) {
    this.#passes = passes;
    this.#forceZero = forceZero;
  }

  static async create(ctx: GpuExtractorContext): Promise<FloatMotionKernel> {
    const { layout, options } = ctx;
    const luma = layout.planes[0]!;
    const { width: w, height: h } = luma;
    const filter = filterOf(options);
    // params: src, dst, w, h, taps, scale, a, b; total's and no_previous's output word at 8.
    const words = (v: Partial<Record<'src' | 'dst' | 'scale' | 'a' | 'b', number>>): number[] =>
      [v.src ?? 0, v.dst ?? 0, w, h, filter.length, v.scale ?? 0, v.a ?? 0, v.b ?? 0, 0, 0, 0, 0];
    // work: a picture as floats, the vertical pass, both blurred pictures, one sum per row.
    const n = w * h;
    const [floats, vertical, previous, current, rows] = [0, n, 2 * n, 3 * n, 4 * n];
    const passes = await FloatPasses.create<Entry, Picture>(ctx, {
      name: 'float_motion',
      source: SOURCE,
      entries: ['to_float', 'blur_rows', 'blur_cols', 'row_sums', 'total', 'no_previous'],
      workWords: 4 * n + h,
      constants: filter,
      constantsFor: ['blur_rows', 'blur_cols'],
      outReadsWork: ['total'],
      outWords: [0, 0, w, h, filter.length, 0, rows, 0, 0, 0, 0, 0],
      outWordAt: 8,
      passes: ({ uniform, image, rows: rowGroups, scale }) => {
        const list: FloatPass<Entry, Picture>[] = [];
        for (const [of, dst] of [['previous', previous], ['current', current]] as const) {
          list.push(
            { entry: 'to_float', of, params: uniform(words({ src: luma.offset / 4, dst: floats, scale })), groups: image },
            { entry: 'blur_rows', params: uniform(words({ src: floats, dst: vertical })), groups: image },
            { entry: 'blur_cols', params: uniform(words({ src: vertical, dst })), groups: image },
          );
        }
        list.push({ entry: 'row_sums', params: uniform(words({ dst: rows, a: previous, b: current })), groups: rowGroups });
        return list;
      },
    });
    return new FloatMotionKernel(passes, options['motion_force_zero'] === true);
  }

  encode(encoder: GPUCommandEncoder, inputs: GpuExtractorInputs, out: StatsSlot): void {
    const previous = inputs.previousRef;
    // The first frame scores 0 (and motion_force_zero always does): no previous frame is read.
    if (previous && !this.#forceZero) this.#passes.encode(encoder, out, (of) => (of === 'previous' ? previous : inputs.ref), 'total');
    else this.#passes.encode(encoder, out, undefined, 'no_previous');
  }

  destroy(): void {
    this.#passes.destroy();
  }
}

export const floatMotionGpu: GpuImplementation = {
  referenceOnly: true,
  supports: (options) => options['motion_add_scale1'] !== true && options['motion_add_uv'] !== true,
  create: (ctx) => FloatMotionKernel.create(ctx),
};

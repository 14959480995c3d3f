/**
 * float_motion on the GPU (float_motion.wgsl): the previous and this reference frame's luma
 * (with motion_add_uv also Cb and Cr, each plane at its own size) as floats, each blurred by
 * the separable filter (with motion_add_scale1 also resampled bilinearly to half size, as
 * float-scale.h's scalePlane, from tables the host computes as the C++ does, subsampled
 * chroma read as libvmaf reads it: float_motion.wgsl's downscale), and the mean
 * absolute difference's float sums per plane and scale, every
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
import { BackendError } from '../../errors.js';
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

type Entry = 'to_float' | 'blur_rows' | 'blur_cols' | 'row_sums' | 'downscale' | 'row_total' | 'total' | 'no_previous';
type Picture = 'previous' | 'current';

/** The scale-1 term's plane size: float_motion.cpp's halfSize (w * 0.5 + 0.5, truncated). */
function halfSize(n: number): number {
  return Math.trunc(n * 0.5 + 0.5);
}

/** libvmaf's row stride in floats for a row of n floats (32-byte aligned: float_motion.cpp's alignedFloats). */
function alignedFloats(n: number): number {
  return Math.ceil(n / 8) * 8;
}

/**
 * float-scale.h's bilinear axis from n samples to m, as floats: per output sample, the
 * mirrored source samples below and above its centre, 1 - f and f (f its distance from the
 * first). The C++'s float operations as doubles rounded to float are the same floats: a
 * double holds a product or sum of floats (or the quotient's rounding) so that rounding it
 * again to float is the single rounding (53 >= 2 * 24 + 2 bits).
 */
function bilinearTable(n: number, m: number): number[] {
  const ratio = Math.fround(n / m);
  const mirror = (i: number): number => (i < 0 ? -i : i > n - 1 ? 2 * (n - 1) - i : i);
  const table: number[] = [];
  for (let i = 0; i < m; i++) {
    const c = Math.fround((i + 0.5) * ratio - 0.5);
    const first = mirror(Math.floor(c));
    const second = mirror(Math.ceil(c));
    const f = Math.fround(c - first);
    table.push(first, second, Math.fround(1 - f), f);
  }
  return table;
}

class FloatMotionKernel implements GpuExtractorKernel {
  readonly statsCount: number;
  readonly #passes: FloatPasses<Entry, Picture>;
  readonly #forceZero: boolean;

  private constructor(passes: FloatPasses<Entry, Picture>, forceZero: boolean, statsCount: number) {
    this.#passes = passes;
    this.#forceZero = forceZero;
    this.statsCount = statsCount;
  }

  static async create(ctx: GpuExtractorContext): Promise<FloatMotionKernel> {
    const { layout, options } = ctx;
    const addUv = options['motion_add_uv'] === true;
    const addScale1 = options['motion_add_scale1'] === true;
    if (addUv && layout.planes.length < 3) throw new BackendError('E_GPU', 'float_motion: motion_add_uv needs chroma planes, which the run does not upload');
    // The planes scored (float_motion.cpp's order: Y, then Cb and Cr) and their scales.
    const planes = addUv ? layout.planes.slice(0, 3) : layout.planes.slice(0, 1);
    const scales = addScale1 ? 2 : 1;
    const count = planes.length * scales;
    const { width: w, height: h } = planes[0]!;
    const filter = filterOf(options);
    // The constants: the filter, then per plane size (luma, chroma) the scale-1 tables:
    // per output column, then per output row, (first, second, 1 - f, f).
    const constants = [...filter];
    const tables = new Map<string, { cols: number; rows: number }>();
    if (addScale1) {
      for (const p of planes) {
        const key = `${p.width}x${p.height}`;
        if (tables.has(key)) continue;
        const cols = constants.length;
        constants.push(...bilinearTable(p.width, halfSize(p.width)));
        const rows = constants.length;
        constants.push(...bilinearTable(p.height, halfSize(p.height)));
        tables.set(key, { cols, rows });
      }
    }
    // params: src, dst, w, h, taps, scale, a, b; total's and no_previous's output word at 8,
    // then count, the source width, and libvmaf's read and buffer strides.
    type Words = Partial<Record<'src' | 'dst' | 'w' | 'h' | 'scale' | 'a' | 'b' | 'count' | 'srcWidth' | 'readStride', number>>;
    const words = (v: Words): number[] =>
      [v.src ?? 0, v.dst ?? 0, v.w ?? w, v.h ?? h, filter.length, v.scale ?? 0, v.a ?? 0, v.b ?? 0, 0, v.count ?? 0, v.srcWidth ?? 0, v.readStride ?? 0, alignedFloats(w), 0, 0, 0];
    // work: a picture as floats, the vertical pass (later the scale-1 planes), both blurred
    // pictures, one sum per row, the sums of the planes and scales but the last.
    const n = w * h;
    const [floats, vertical, previous, current, rows, sums] = [0, n, 2 * n, 3 * n, 4 * n, 4 * n + h];
    // The last image's rows (the total pass sums them).
    const last = planes[planes.length - 1]!;
    const lastHeight = addScale1 ? halfSize(last.height) : last.height;
    const passes = await FloatPasses.create<Entry, Picture>(ctx, {
      name: 'float_motion',
      source: SOURCE,
      entries: ['to_float', 'blur_rows', 'blur_cols', 'row_sums', ...(addScale1 ? (['downscale'] as const) : []), ...(count > 1 ? (['row_total'] as const) : []), 'total', 'no_previous'],
      workWords: 4 * n + h + count,
      constants,
      constantsFor: ['blur_rows', 'blur_cols', 'downscale'],
      outReadsWork: ['total'],
      outWords: words({ h: lastHeight, a: rows, b: sums, count }),
      outWordAt: 8,
      passes: ({ uniform, image, rows: rowGroups, scale }) => {
        const list: FloatPass<Entry, Picture>[] = [];
        let done = 0;
        // Image (a, b)'s row sums, and unless it is the last, their total into sums.
        const sumRows = (a: number, b: number, pw: number, ph: number): void => {
          list.push({ entry: 'row_sums', params: uniform(words({ dst: rows, a, b, w: pw, h: ph })), groups: rowGroups });
          if (++done < count) list.push({ entry: 'row_total', params: uniform(words({ a: rows, dst: sums + done - 1, w: pw, h: ph })), groups: [1, 1] });
        };
        for (const plane of planes) {
          const { width: pw, height: ph } = plane;
          for (const [of, dst] of [['previous', previous], ['current', current]] as const) {
            list.push(
              { entry: 'to_float', of, params: uniform(words({ src: plane.offset / 4, dst: floats, scale, w: pw, h: ph })), groups: image },
              { entry: 'blur_rows', params: uniform(words({ src: floats, dst: vertical, w: pw, h: ph })), groups: image },
              { entry: 'blur_cols', params: uniform(words({ src: vertical, dst, w: pw, h: ph })), groups: image },
            );
          }
          sumRows(previous, current, pw, ph);
          if (addScale1) {
            const table = tables.get(`${pw}x${ph}`)!;
            const [sw, sh] = [halfSize(pw), halfSize(ph)];
            for (const [src, dst] of [[previous, floats], [current, vertical]] as const) {
              list.push({ entry: 'downscale', params: uniform(words({ src, dst, w: sw, h: sh, a: table.cols, b: table.rows, srcWidth: pw, readStride: alignedFloats(pw) })), groups: image });
            }
            sumRows(floats, vertical, sw, sh);
          }
        }
        return list;
      },
    });
    return new FloatMotionKernel(passes, options['motion_force_zero'] === true, 1 + count);
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
  // motion_add_uv reads the chroma planes: not of gray input (the C++ refuses it there).
  supports: (options, format) => options['motion_add_uv'] !== true || format.chroma !== '400',
  create: (ctx) => FloatMotionKernel.create(ctx),
};

/**
 * What libvmaf's two SpEED extractors (speed.c: speed_chroma, speed_temporal) share: their
 * option table's common part, and the frame-size and option checks libvmaf's init makes.
 * The C++ math they share is speed-core.h/.cpp beside this file.
 */
import { UsageError, VmafError } from '../../errors.js';
import type { OptionDef, OptionValues } from '../option.js';

/** libvmaf's defaults (speed.c's DEFAULT_SPEED_*). */
export const SPEED_COMMON_OPTIONS: readonly OptionDef[] = [
  {
    name: 'speed_kernelscale', alias: 'ks', type: 'double', default: 1, min: 0.1, max: 4, param: true,
    help: 'scaling factor for the gaussian kernel (2.0 means multiplying the standard deviation by 2 and enlarge the kernel size accordingly',
  },
  {
    name: 'speed_prescale', alias: 'ps', type: 'double', default: 1, min: 0.1, max: 4, param: true,
    help: 'scaling factor for the frame (2.0 means making the image twice as large on each dimension)',
  },
  {
    name: 'speed_prescale_method', alias: 'psm', type: 'string', default: 'nearest', param: true,
    help: 'scaling method for the frame, supported options: [nearest, bilinear, bicubic, lanczos4]',
  },
  { name: 'speed_sigma_nn', alias: 'snn', type: 'double', default: 0.29, min: 0.1, max: 2, param: true, help: 'standard deviation of neural noise' },
  { name: 'speed_nn_floor', alias: 'nnf', type: 'double', default: 0, min: 0, max: 1, param: true, help: 'neural noise floor, expressed in percentage of sigma_nn' },
  {
    name: 'speed_max_val', alias: 'mxv', type: 'double', default: 1000, min: 0, max: 1000, param: true,
    help: 'maximum value allowed; larger values will be clipped to this value',
  },
];

/** SpEED works on 5x5 blocks of the plane decimated by 16 (four dyadic scales). */
const BLOCK = 5;
const DECIMATION_SHIFT = 4;

// The kernel scales libvmaf's VIF tools accept, compared as floats within 1e-3.
const VALID_KERNELSCALES = [
  1, 1 / 2, 3 / 2, 2, 2 / 3, 24 / 10, 360 / 97, 4 / 3, 3.5 / 3, 3.75 / 3, 4.25 / 3, 5 / 3, 3, 1 / 2.25, 1.4746, 1.54, 1.6, 1.06667, 0.711111, 0.74074,
  1.111111,
].map((x) => Math.fround(x));

/**
 * Throws what libvmaf's init refuses for a plane of `width` x `height` (luma for
 * speed_temporal, one chroma plane as libvmaf sizes it for speed_chroma): a kernel scale or
 * prescale method it does not know, or a plane whose decimated size holds no 5x5 block.
 */
export function checkSpeedPlane(extractor: string, options: OptionValues, width: number, height: number, what: string): void {
  const ks = Math.fround(Number(options['speed_kernelscale']));
  if (!VALID_KERNELSCALES.some((v) => Math.abs(Math.fround(ks - v)) < 1e-3)) {
    throw new UsageError(`${extractor}: invalid speed_kernelscale ${String(options['speed_kernelscale'])}`);
  }
  const method = String(options['speed_prescale_method']);
  if (!['nearest', 'bilinear', 'bicubic', 'lanczos4'].includes(method)) {
    throw new UsageError(`${extractor}: unknown speed_prescale_method ${method} (nearest, bilinear, bicubic, lanczos4)`);
  }
  const prescale = Number(options['speed_prescale']);
  const scaled = (n: number): number => Math.trunc(n * prescale + 0.5);
  const blocks = (n: number): number => Math.floor((scaled(n) >> DECIMATION_SHIFT) / BLOCK);
  if (blocks(width) === 0 || blocks(height) === 0) {
    const minimum = Math.ceil((BLOCK << DECIMATION_SHIFT) / prescale);
    throw new VmafError(
      'E_FRAME_TOO_SMALL',
      `${extractor}: ${what} of ${width}x${height} is too small: SpEED needs at least ${minimum}x${minimum} ` +
        `(a ${BLOCK}x${BLOCK} block after decimating by ${1 << DECIMATION_SHIFT}${prescale === 1 ? '' : ` at prescale ${prescale}`}); ` +
        "libvmaf refuses it too (SpEED: image too small, operating width or height is 0)",
    );
  }
}

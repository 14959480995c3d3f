/**
 * The smallest frame side the integer VIF, ADM and motion kernels handle: VIF decimates
 * three times and filters with up to 17 taps at scale 0, ADM's DWT halves the frame four
 * times. libvmaf itself crashes below this; we refuse with a clear error instead.
 */
export const MIN_FRAME_DIMENSION = 32;

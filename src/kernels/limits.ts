/**
 * The smallest frame side the integer kernels handle (kAdmMinSize in cpu/adm.h): ADM's
 * scale-3 DWT mirrors its borders over the scale-2 LL band, which needs at least 5 samples,
 * and its scale-0 masking shift needs a band at least 17 wide. libvmaf reads outside its
 * buffers below this and crashes below about 24; we refuse with a clear error instead.
 */
export const MIN_FRAME_DIMENSION = 33;

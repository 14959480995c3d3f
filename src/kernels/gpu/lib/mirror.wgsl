// The edge mirrors of libvmaf's filters: where a tap at index i falls outside 0..n-1, the
// index it reads instead (valid for -n < i < 2n - 1: taps reach less than a side beyond).
//   mirror_skip_edge:   -1 -> 1, n -> n - 2 (the edge sample not repeated: float-filter.h,
//                       float_vif, float_motion)
//   mirror_repeat_edge: -1 -> 0, n -> n - 1 (the edge sample repeated: the SSIM filters)
//   mirror_skip_first:  -1 -> 1, n -> n - 1 (not repeated at the start, repeated at the end:
//                       float_ansnr's filter and float_adm's DWT)

fn mirror_skip_edge(i: i32, n: i32) -> u32 {
  if (i < 0) {
    return u32(-i);
  }
  if (i >= n) {
    return u32(2 * n - i - 2);
  }
  return u32(i);
}

fn mirror_repeat_edge(i: i32, n: i32) -> u32 {
  if (i < 0) {
    return u32(-1 - i);
  }
  if (i >= n) {
    return u32(2 * n - 1 - i);
  }
  return u32(i);
}

fn mirror_skip_first(i: i32, n: i32) -> u32 {
  if (i < 0) {
    return u32(-i);
  }
  if (i >= n) {
    return u32(2 * n - i - 1);
  }
  return u32(i);
}

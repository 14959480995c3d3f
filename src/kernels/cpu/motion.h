// Motion: libvmaf 3.2.0's integer motion feature. Its per-frame score is logged as
// VMAF_integer_feature_motion_sad_score; integer_motion2 is derived from it.
//
// What libvmaf 3.2.0 computes
// ---------------------------
// Earlier libvmaf versions blurred each reference frame into a 16-bit picture and summed
// |blur(prev) - blur(cur)|. 3.2.0 does not: it blurs the DIFFERENCE of the two raw
// reference frames, rounding after each pass. Rounding blur(a) and blur(b) separately is
// not rounding blur(a - b), so no per-frame 16-bit blur can reproduce 3.2.0 (checked
// against the golden logs: the old scheme matches none of src01's 47 frames that have a
// previous frame; this one matches all).
// The kernel therefore takes the previous and the current reference luma together.
//
// Let P be the previous and C the current reference luma (width w, height h, bit depth
// bd in {8, 10, 12, 16}), f = {3571, 16004, 26386, 16004, 3571} (sum 65536), and
// m(i, n) the mirror of index i into [0, n):  i < 0 -> -i;  i >= n -> 2n - i - 2
// (the edge sample is not repeated: index -1 reads 1, index n reads n - 2).
//
// For every row y:
//   1. vertical pass of the difference, then round:
//        D[x] = sum_{k=0..4} f[k] * (P[m(y-2+k, h)][x] - C[m(y-2+k, h)][x])  (signed; fits
//                                                                              an int32 up to
//                                                                              12 bits, needs
//                                                                              33 bits at 16)
//        Y[x] = (D[x] + 2^(bd-1)) >> bd
//      libvmaf's 8-bit path writes this as (D + 128) >> 8: the same formula at bd = 8.
//   2. horizontal pass of Y, then round:
//        H[x] = (sum_{k=0..4} f[k] * Y[m(x-2+k, w)] + 2^15) >> 16
//      |Y| <= 65535, so each product f[k] * Y fits an int32; the sum needs 33 bits.
//   3. row = sum_x |H[x]|, accumulated in a uint32 (wraps mod 2^32, as libvmaf's does; with
//      |H| < 2^16 only rows wider than 65536 samples could wrap).
// SAD = sum of the rows, in a uint64.
// Both >> are arithmetic shifts of signed values: floor division by the power of two, so
// the rounding is "half up" (toward +infinity) for negative values too.
//
// Score: min(SAD / 256.0 / (w * h), 10000.0), in doubles and in that order, w * h as an
// unsigned 32-bit product (10000 is motion_max_val's default). The first frame of a stream
// has no previous frame and scores 0.
//
// integer_motion2 (libvmaf's flush, default options), score[i] being frame i's score:
// 0 for frame 0; min(score[i], score[i + 1]) while frame i + 1 exists; score[i] for the
// last frame.
#pragma once
#include <cstdint>

#include "plane.h"

namespace vmafs {

// The 5-tap filter of both passes. Sums to 65536.
constexpr int32_t kMotionFilter[5] = {3571, 16004, 26386, 16004, 3571};

// Largest score libvmaf reports (motion_max_val's default).
constexpr double kMotionMaxVal = 10000.0;

// The smallest width and height the mirroring can serve (it reads up to 2 samples past an
// edge, mirrored, which needs at least 3). Smaller planes give a SAD of 0.
constexpr int kMotionMinSize = 3;

// The SAD between two reference lumas of the same width, height and bit depth.
uint64_t motionSad(const LumaPlane& prev, const LumaPlane& cur);

// min(sad / 256 / (width * height), kMotionMaxVal).
double motionScore(uint64_t sad, int width, int height);

}  // namespace vmafs

// Motion: libvmaf 3.2.0's integer motion feature (VMAF_integer_feature_motion_sad_score
// and, from it, integer_motion2).
//
// What libvmaf 3.2.0 computes
// ---------------------------
// Earlier libvmaf versions blurred each reference frame to 16 bits and summed
// |blur(prev) - blur(cur)|. 3.2.0 does not: it blurs the DIFFERENCE of the two raw frames,
// rounding after each pass, so a per-frame 16-bit blur cannot reproduce it (the rounding
// of blur(a) and of blur(b) is not the rounding of blur(a - b)). What is exact is to keep,
// per frame, the vertical pass UNROUNDED; the difference of two such sums is exactly the
// vertical pass of the difference, and the rest runs on that.
//
// Let P be the previous and C the current reference luma (width w, height h, bit depth
// bd in {8, 10, 12, 16}), f = {3571, 16004, 26386, 16004, 3571} (sum 65536), and
// m(i, n) the mirror of index i into [0, n):  i < 0 -> -i;  i >= n -> 2n - i - 2
// (the edge sample itself is not repeated: row -1 is row 1, row h is row h - 2).
//
// 1. Per frame (motionBlur), the vertical pass without any rounding or shift:
//        V[y][x] = sum_{k=0..4} f[k] * L[m(y - 2 + k, h)][x]             (uint32)
//    At most 65535 * 65536 < 2^32, so it fits a uint32 for every bit depth.
//
// 2. Per pair (motionSad), for every row y:
//        D[x]   = V_P[y][x] - V_C[y][x]                                   (int64, signed)
//        Y[x]   = (D[x] + 2^(bd-1)) >> bd                                 (arithmetic shift:
//                                                                          floor division)
//        H[x]   = (sum_{k=0..4} f[k] * Y[m(x - 2 + k, w)] + 2^15) >> 16   (int64, arithmetic)
//        row    = sum_x |H[x]|                   accumulated in a uint32 (wraps mod 2^32;
//                                                 |H| < 2^16, so only rows wider than
//                                                 65536 samples could wrap)
//    and SAD = sum over rows of row (uint64).
//    (libvmaf's 8-bit path shifts by 8 with rounding 1 << 7: the same formula at bd = 8.)
//    Y is in [-65535, 65535], so every product f[k] * Y fits an int32; only the sums need
//    more than 32 bits. Both shifts floor (round half up toward +inf), also for negatives.
//
// 3. Score (motionScore): min(SAD / 256.0 / (w * h), 10000.0), in doubles, in that order,
//    with w * h as an unsigned 32-bit product; 0 for the first frame of a stream (no
//    previous frame). libvmaf logs it as VMAF_integer_feature_motion_sad_score.
//
// integer_motion2 for frame i (libvmaf's flush, default options): 0 for frame 0;
// min(score[i], score[i + 1]) while frame i + 1 exists; score[i] for the last frame.
#pragma once
#include <cstdint>

#include "plane.h"

namespace vmafs {

// The 5-tap filter shared by both passes. Sums to 65536.
constexpr int32_t kMotionFilter[5] = {3571, 16004, 26386, 16004, 3571};

// Largest score libvmaf reports (motion_max_val's default).
constexpr double kMotionMaxVal = 10000.0;

// The smallest width and height the mirroring above can serve (it reads up to 2 samples
// past either edge, mirrored, which needs at least 3 samples).
constexpr int kMotionMinSize = 3;

// Step 1: writes ref.width * ref.height unrounded vertical sums V (row-major, packed).
void motionBlur(const LumaPlane& ref, uint32_t* vsum);

// Step 2: the SAD between the previous frame's and the current frame's vertical sums.
// Same width, height and bit depth for both.
uint64_t motionSad(const uint32_t* prev, const uint32_t* cur, int width, int height,
                   int bitDepth);

// Step 3.
double motionScore(uint64_t sad, int width, int height);

}  // namespace vmafs

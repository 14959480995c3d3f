// Integer VIF (visual information fidelity), bit-exact with libvmaf 3.2.0's "integer_vif"
// feature extractor: four scales, 8/10/12/16-bit luma, any size >= kVifMinDimension.
//
// The work is split in two so that the gpu backend can share the host half:
//   vifStats  : pixels -> kVifStatsLen int64 accumulators. Every accumulator is a plain sum of
//               per-pixel integer contributions (no per-row rounding anywhere), so any
//               summation order gives the same value.
//   vifFinish : accumulators -> the 8 feature values (all of libvmaf's post-loop float/double
//               arithmetic lives here).
//
// ---------------------------------------------------------------------------------------------
// Stats layout: stats[kVifStatsPerScale * s + k] for scale s = 0..3 and k:
//   k | name          | per-pixel contribution (only for pixels of the scale-s image)
//   0 | kVifNumLog    | log term of the numerator, gain limit 100 (default model)   [0, 2^31)
//   1 | kVifNumLogEgl | the same with gain limit 1 (NEG model, "_egl_1" keys)       [0, 2^31)
//   2 | kVifDenLog    | log term of the denominator                                  [0, 2^31)
//   3 | kVifNumNonLog | sigma2_sq of low-variance pixels                             [0, 2^31)
//   4 | kVifDenNonLog | 1 per low-variance pixel (a count)                           {0, 1}
// All contributions are non-negative and fit in 31 bits; the sums fit in int64 for any frame.
//
// ---------------------------------------------------------------------------------------------
// The per-pixel algorithm (the spec the WGSL port must follow). All integers are unsigned
// 32-bit unless stated; ">>r s" means (x + (1 << (s-1))) >> s, and ">>r 0" means no-op.
//
// Filters (symmetric, each sums to 65536), listed centre tap first, then distance 1, 2, ...:
//   F0 (17 taps): 7784 7455 6547 5274 3896 2640 1640 935 489
//   F1 ( 9 taps): 14692 12590 7925 3663 1244
//   F2 ( 5 taps): 26386 16004 3571
//   F3 ( 3 taps): 43728 10904
// Borders: mirror without repeating the edge sample (index -k -> k, n-1+k -> n-1-k), applied
// independently to rows (vertical pass) and to columns (horizontal pass), at every scale.
//
// Pyramid: image I0 is the input. I(s+1) (s = 0..2) is I(s) filtered with F(s+1), separably,
// then decimated by taking even rows and even columns: size (w_s/2) x (h_s/2), rounded down.
//   vertical:   v = sum_k F(s+1)[k] * I(s)[mirror(y+k)][x]          (fits u32), then >>r b
//               where b = bitDepth at s = 0 and 16 at s > 0
//   horizontal: I(s+1)[y/2][x/2] = (sum_k F(s+1)[k] * v[mirror(x+k)]) >>r 16   (u32; < 2^16)
//
// Statistics at scale s (image I(s) of ref and dis, filter F(s)), for every pixel:
//   vertical (per column of one row, ref sample a, dis sample d):
//     vmu1 = (sum F*a) >>r b,    vmu2 = (sum F*d) >>r b                 (b as above)
//     vxx  = (sum F*a*a) >>r q,  vyy = (sum F*d*d) >>r q,  vxy = (sum F*a*d) >>r q
//            with the sums in u64, q = 2*(bitDepth-8) at s = 0 (0 for 8-bit) and 16 at s > 0;
//            the results fit u32.
//   horizontal (over the mirrored rows of the five vertical results):
//     mu1 = sum F*vmu1,  mu2 = sum F*vmu2                               (u32, no shift)
//     xx = u32((sum F*vxx) >>r 16)  (sum in u64), same for yy, xy
//   moments (u32 wrap-around subtraction, then reinterpret as int32):
//     mu1_sq = u32((u64(mu1)*mu1 + 2^31) >> 32), mu2_sq, mu1_mu2 likewise
//     sigma1_sq = i32(xx - mu1_sq), sigma2_sq = max(i32(yy - mu2_sq), 0),
//     sigma12 = i32(xy - mu1_mu2)
//   contribution, with NSQ = 131072 and log2q(x) defined below:
//     if sigma1_sq < NSQ:  kVifNumNonLog += sigma2_sq;  kVifDenNonLog += 1
//     else:
//       kVifDenLog += log2q(u32(sigma1_sq) + NSQ) - 17*2048
//       if sigma12 > 0 && sigma2_sq > 0:                       -- IEEE binary64, no FMA:
//         g      = f64(sigma12) / (f64(sigma1_sq) + 6.5536e-06)  -- 6.5536e-06 is 65536*1e-10
//         t      = f64(sigma2_sq) - (g * f64(sigma12))          -- product rounded, then minus
//         sv_sq  = max(trunc_to_i32(t), 0)                      -- truncation toward zero
//         base   = u32(sv_sq) + NSQ
//         for L in {100 -> kVifNumLog, 1 -> kVifNumLogEgl}:
//           gl   = min(g, L)
//           p    = trunc_to_i64((gl * gl) * f64(sigma1_sq))     -- two roundings, in that order
//           += log2q(p + base) - log2q(base)
//   log2q(x) for x >= 2^17 (u64): k = bit_length(x) - 16; log2q = T[x >> k] + 2048*k,
//     T[i] = round_half_away(float(log2(i)) * 2048) for i in [32768, 65535], where float(...)
//     is log2 correctly rounded to binary32 (this equals glibc's log2f-based table).
//
// GPU notes: f32 is NOT enough for g / sv_sq / p (truncation points move); with gl = 1 the
// egl product p is exactly sigma1_sq. The vertical sums at 16-bit need 48+ bits, the
// horizontal square sums need 64 bits at every bit depth.
//
// Host math (vifFinish), per scale and per gain variant, mirroring libvmaf's float storage:
//   num = float(f64(numLog)/2048 + (f64(denNonLog) - (f64(numNonLog)/16384)/65025))
//   den = float(f64(denLog)/2048 + f64(denNonLog))
//   score = double(num / den)   -- a binary32 division
#pragma once
#include <cstdint>

#include "plane.h"

namespace vmafs {

constexpr int kVifScales = 4;
constexpr int kVifStatsPerScale = 5;
constexpr int kVifStatsLen = kVifScales * kVifStatsPerScale;  // 20

enum VifStat : int {
  kVifNumLog = 0,
  kVifNumLogEgl = 1,
  kVifDenLog = 2,
  kVifNumNonLog = 3,
  kVifDenNonLog = 4,
};

// Smallest width and height vifStats handles. Below it, the border mirroring of the
// scale-3 image (w/8 x h/8, 3-tap filter) would run past the image and libvmaf reads
// uninitialised/padding memory. vifStats leaves all stats at 0 for smaller frames.
constexpr int kVifMinWidth = 16;
constexpr int kVifMinHeight = 16;

// Per-frame integer accumulators: everything VIF needs from the pixels, as int64 sums.
// ref and dis must have the same width, height and bitDepth.
void vifStats(const LumaPlane& ref, const LumaPlane& dis, int64_t* stats /* kVifStatsLen */);

// Turns the accumulators into the 8 feature values: integer_vif_scale0..3, then
// integer_vif_scale0..3_egl_1 (enhancement gain limit 1).
void vifFinish(const int64_t* stats, double out[8]);

}  // namespace vmafs

// Integer VIF (visual information fidelity), bit-exact with libvmaf 3.2.0's "integer_vif"
// feature extractor: four scales, 8/10/12/16-bit luma, any size >= kVifMinWidth x
// kVifMinHeight (odd sizes included), default gain limit (100) and gain limit 1 ("_egl_1",
// read by the NEG model) in one pass.
//
// The work is split in two so that the gpu backend can share the host half:
//   vifStats  : pixels -> kVifStatsLen int64 accumulators. Every accumulator is a plain sum of
//               per-pixel integer contributions (there is no per-row rounding anywhere), so
//               any summation order gives the same value.
//   vifFinish : accumulators -> the 8 feature values (all of libvmaf's float/double
//               arithmetic after its pixel loops lives here).
//
// ---------------------------------------------------------------------------------------------
// Stats layout: stats[kVifStatsPerScale * s + k], scale s = 0..3 (20 values):
//   k | name          | per-pixel contribution, summed over the pixels of scale s's image
//   0 | kVifNumLog    | numerator log term, gain limit 100 (integer_vif_scale<s>)  [0, 2^31)
//   1 | kVifNumLogEgl | numerator log term, gain limit 1 (integer_vif_scale<s>_egl_1) [0, 2^31)
//   2 | kVifDenLog    | denominator log term                                       [0, 2^31)
//   3 | kVifNumNonLog | sigma2_sq of a low-variance pixel                          [0, 2^31)
//   4 | kVifDenNonLog | 1 per low-variance pixel (a count)                         {0, 1}
// Every contribution is a non-negative integer below 2^31 (the log terms are below 2^16), so
// the sums fit in int64 for any frame. Pixels that contribute nothing to a stat add 0.
//
// ---------------------------------------------------------------------------------------------
// The per-pixel algorithm (the spec the WGSL port follows). Integers are unsigned 32-bit
// unless stated; "x >>r s" means (x + 2^(s-1)) >> s, and is x itself when s == 0.
//
// Filters (symmetric, each sums to 65536), centre tap first, then distance 1, 2, ...:
//   F0 (17 taps): 7784 7455 6547 5274 3896 2640 1640 935 489
//   F1 ( 9 taps): 14692 12590 7925 3663 1244
//   F2 ( 5 taps): 26386 16004 3571
//   F3 ( 3 taps): 43728 10904
// Borders: mirror without repeating the edge sample (index -k -> k, n-1+k -> n-1-k), for rows
// in vertical passes and for columns in horizontal passes, at every scale. Vertical first,
// then horizontal, always (the rounding in between makes the order matter).
//
// Pyramid: I0 is the input. I(s+1) (s = 0..2) is I(s) low-passed with F(s+1), keeping even
// rows and even columns: size floor(w_s/2) x floor(h_s/2). All samples of I1..I3 are 16-bit.
//   vertical:   v[y][x] = (sum_k F(s+1)[k] * I(s)[mirror(y+k)][x]) >>r b      (sum < 2^32)
//               b = bitDepth when s = 0, else 16
//   horizontal: I(s+1)[y/2][x/2] = (sum_k F(s+1)[k] * v[y][mirror(x+k)]) >>r 16    (< 2^16)
//
// Statistics at scale s, image I(s) of ref (sample a) and dis (sample d), filter F = F(s):
//   vertical, per pixel of the row:
//     vmu1 = (sum F*a) >>r b,  vmu2 = (sum F*d) >>r b                       (b as above)
//     vxx = (sum F*a*a) >>r q, vyy = (sum F*d*d) >>r q, vxy = (sum F*a*d) >>r q
//       sums need 48 bits at 16-bit input; q = 2*(bitDepth-8) when s = 0 (0 for 8-bit),
//       else 16; the results fit 32 bits.
//   horizontal, over those five rows:
//     mu1 = sum F*vmu1, mu2 = sum F*vmu2                           (< 2^32, no shift)
//     xx = (sum F*vxx) >>r 16, yy, xy likewise                     (sums need 48 bits)
//   moments (subtract modulo 2^32, then reinterpret as int32):
//     mu1_sq = (u64(mu1)*mu1 + 2^31) >> 32, mu2_sq, mu1_mu2 likewise   (needs a 32x32->64 mul)
//     sigma1_sq = i32(xx - mu1_sq), sigma2_sq = max(i32(yy - mu2_sq), 0),
//     sigma12 = i32(xy - mu1_mu2)
//   contribution, with NSQ = 131072 and log2q below:
//     if sigma1_sq < NSQ:  NumNonLog += sigma2_sq;  DenNonLog += 1
//     else:
//       DenLog += log2q(u32(sigma1_sq) + NSQ) - 17*2048
//       if sigma12 > 0 and sigma2_sq > 0, in IEEE binary64 with every operation rounded
//       (no fused multiply-add):
//         g     = f64(sigma12) / (f64(sigma1_sq) + EPS)   EPS = 65536 * 1e-10 = 6.5536e-06
//                                                         (binary64 0x1.b7cdfd9d7bdbbp-18)
//         t     = f64(sigma2_sq) - (g * f64(sigma12))     -- product rounded, then subtract
//         sv_sq = max(trunc_to_i32(t), 0)                 -- truncation toward zero
//         base  = u32(sv_sq) + NSQ
//         for (L, stat) in {(100, NumLog), (1, NumLogEgl)}:
//           gl    = min(g, L)
//           p     = trunc_to_i64((gl * gl) * f64(sigma1_sq))  -- two roundings, this order
//           stat += log2q(u64(p) + base) - log2q(base)
//   log2q(x), x >= 2^17 (64-bit): k = bit_length(x) - 16; log2q = T[x >> k] + 2048*k, where
//     T[i] = round_half_away(float(log2(i)) * 2048) for i in [32768, 65535] and float(...)
//     is log2 rounded to binary32 (identical to libvmaf's table from glibc's log2f).
//
// Notes for the GPU port:
//  * f32 cannot replace the binary64 steps: the truncations of t and p move. With gl = 1
//    the product p is exactly sigma1_sq whenever g >= 1. Since sigma1_sq >= NSQ (a variance
//    of 2 in 8-bit units) and a variance is at most 127.5^2, Cauchy-Schwarz keeps g below
//    about 91: the limit 100 does not bind in practice (apply the min anyway).
//  * All filter sums can be done in 32-bit integers: a filter applied to 16-bit values never
//    exceeds 65535 * 65536 < 2^32. Split wider values (a*a, the 32-bit vxx/vyy/vxy) into
//    16-bit halves hi*2^16 + lo, filter both, and recombine: e.g. (sum F*v) >>r 16 ==
//    sum F*hi + ((sum F*lo + 2^15) >> 16), exactly, modulo 2^32 (see vif.cpp).
//
// Host math (vifFinish), per scale and gain variant, mirroring libvmaf's float storage:
//   num = float(f64(NumLog)/2048 + (f64(DenNonLog) - (f64(NumNonLog)/16384)/65025))
//   den = float(f64(DenLog)/2048 + f64(DenNonLog))
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

// Smallest frame vifStats handles: at 16 the scale-3 image is 2 pixels wide/high, the least
// its 3-tap mirrored filter needs. Below it libvmaf's border mirroring reads stale buffer
// contents (it does not crash on VIF alone, but its values are not reproducible).
// vifStats leaves all stats at 0 for smaller frames (vifFinish then gives NaN).
constexpr int kVifMinWidth = 16;
constexpr int kVifMinHeight = 16;

// Per-frame integer accumulators: everything VIF needs from the pixels, as int64 sums.
// ref and dis must have the same width, height and bitDepth. Re-entrant; keeps its scratch
// memory per thread, reused while the frame size stays the same; uses SSE2/AVX2/AVX-512
// kernels on x86-64 (chosen at run time), portable code elsewhere, all bit-identical.
void vifStats(const LumaPlane& ref, const LumaPlane& dis, int64_t* stats /* kVifStatsLen */);

// Turns the accumulators into the 8 feature values: integer_vif_scale0..3, then
// integer_vif_scale0..3_egl_1 (enhancement gain limit 1).
void vifFinish(const int64_t* stats, double out[8]);

}  // namespace vmafs

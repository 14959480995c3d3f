// Integer ADM (additive detail measure), bit-exact with libvmaf 3.2.0's "integer_adm"
// feature extractor at its default options: four DWT scales, 8/10/12/16-bit luma, any size
// >= kAdmMinSize (odd sizes included). It gives integer_adm2 and integer_adm_scale0..3, and
// the same with adm_enhn_gain_limit = 1 (the "_egl_1" keys the NEG model reads).
//
// The work is split in two so that the gpu backend can share the host half:
//   admStats  : pixels -> kAdmStatsLen int64 accumulators (all integer arithmetic, plus one
//               float/double angle test per pixel, see "decouple" below);
//   admFinish : accumulators -> the 10 feature values (all of libvmaf's float/double
//               arithmetic after the pixel loops lives here).
//
// ---------------------------------------------------------------------------------------------
// Stats layout: stats[kAdmStatsPerScale * s + k], scale s = 0..3, band b = 0 (h), 1 (v), 2 (d):
//   k      | name          | value
//   0 + b  | kAdmNumH + b  | numerator, gain limit 100 (default): sum over the rows of the
//          |               | scored rect of  (rowsum(maskedCube) + rnd(R)) >> R
//   3 + b  | kAdmNumEglH+b | the same with gain limit 1 ("_egl_1")
//   6 + b  | kAdmDenH + b  | denominator: sum over the rows of the scored rect of
//          |               | (rowsum(denCube) + rnd(D)) >> D. A uint64 stored bit for bit
//          |               | in the int64 slot (it can exceed 2^63 in extreme cases).
// rnd(s) = s > 0 ? 1 << (s-1) : 0. The per-ROW rounding shift is part of the definition: a
// stat is the sum of the shifted row sums (row sums are int64, non-negative in practice), so
// a GPU must reduce each row to one exact 64-bit value first, shift it, then sum the rows.
// Summation order does not matter otherwise (all sums are exact, modulo 2^64).
//
// ---------------------------------------------------------------------------------------------
// The per-pixel algorithm (spec for the WGSL port). ">>" is an arithmetic shift (floor);
// "i16(x)", "i32(x)" are C's modular narrowing casts (keep the low bits, two's complement).
// Widths given as "i32"/"i64" are what the arithmetic needs to be exact.
//
// Sizes. W x H is the frame. Scale s has detail bands of size w_s x h_s with
// w_0 = (W+1)/2, w_s = (w_{s-1}+1)/2 (same for h). Scale s > 0 filters the LL band of s-1.
//
// Mirroring m(i, n) (used by the DWT and the masking neighbourhood): -1 -> 1, n -> n-1,
// n+1 -> n-2, else i. (Not the same rule on both sides: the top/left edge is not repeated,
// the bottom/right edge is.)
//
// DWT filters: L = {15826, 27411, 7345, -4240}, Hf = {-4240, -7345, 27411, -15826}.
// Output (band) position (y, x) uses input rows m(2y-1+k, h_in) and columns m(2x-1+k, w_in),
// k = 0..3. Vertical first (per input column), then horizontal on the vertical results:
//   a = L(vertical L), v = Hf(vertical L), h = L(vertical Hf), d = Hf(vertical Hf).
//   Scale 0, samples p of bit depth B, c = p - 2^(B-1):
//     vlo = (sum L*c + 2^(B-1)) >> B,   vhi = (sum Hf*c + 2^(B-1)) >> B        (i32, fit i16)
//     band = (sum F*v + 32768) >> 16                                          (i32, fit i16)
//     (libvmaf subtracts 46342*2^(B-1) after the sum instead of centring: same value, but
//     its sum wraps i32 at 16 bits; centring first keeps every step inside i32.)
//   Scales 1..3, input LL values q (i32); sums in i64, results i32(...):
//     vertical:   s=1: i32(sum F*q)              s=2,3: i32((sum F*q + 32768) >> 16)
//     horizontal: s=1,3: i32((sum + 16384) >> 15)   s=2: i32((sum + 32768) >> 16)
//
// Regions. Scored rect of a w x h band: left = trunc(w*0.1 - 0.5), top = trunc(h*0.1 - 0.5)
// (double arithmetic), columns [left, w-left), rows [top, h-top). Decouple/CSF are needed on
// that rect grown by one row/column on each side (clipped to the band): the 3x3 neighbourhood.
//
// Decouple, per band position, o_b = ref band b, t_b = dis band b (b = h, v, d):
//   Angle test (one per position, on the h and v bands), computed in IEEE binary32/binary64
//   exactly as written, no FMA:
//     dot = oh*th + ov*tv, om = oh*oh + ov*ov, tm = th*th + tv*tv       (i64)
//     D = f64(f32(dot))/4096, O = f64(f32(om))/4096, T = f64(f32(tm))/4096
//     angle = D >= 0 && D*D >= (f64(0x1.ffd814p-1f) * O) * T          (left to right, f64)
//   WGSL has no f64: note f32(x) is x rounded to 24 bits (round to nearest even), D*D and
//   c*O are exact in f64 (48-bit products), so only the final product (c*O)*T rounds
//   (72 -> 53 bits, nearest even). The test is therefore reproducible exactly in integer
//   arithmetic: compare the exact dot'^2 with the 53-bit rounding of c'*om'*tm' (all
//   24-bit mantissas with exponents). The /4096 scalings cancel (no under/overflow).
//   Ratio k_b (Q15, clamped to [0, 32768]); o == 0 gives 32768. R(v) = trunc(2^30 / v) for
//   v in [-32768, 32768] \ {0} (a table):
//     scale 0:  k = clamp((R(o) * t + 16384) >> 15)                                  (i64)
//     s = 1..3: u = |o|; if u < 32768: e = 0, m = u;
//               else e = 17 - clz32(u), m = (u + 2^(e-1)) >> e      (m <= 32768)
//               k = clamp((R(m) * t * sign(o) + 2^(14+e)) >> (15+e))                (i64)
//   Restored: rst = (k*o + 16384) >> 15  (i32 at scale 0, i64 then i32 at 1..3).
//   Gain limit g (100 default, 1 egl): if angle && k > 0 && o != 0:
//     rst = o > 0 ? min(rst*g, t) : max(rst*g, t)      (rst*g needs more than i32 at s>0;
//                                                       the result always fits i32)
//   r_b = rst, a_b = t - rst  (scale 0: both through i16(...); they fit).
//
// CSF of the impairment a_b, per band and variant:
//   scale 0: W = {36453, 36453, 49417}, sh = {15, 15, 17}, rn = {16384, 16384, 65535} (sic)
//     ca = i16((W_b*a + rn_b) >> sh_b)                                        (i32)
//     nb = i16((4369*|ca| + 2048) >> 12),  ce = i16((8738*|ca| + 2048) >> 12)
//   s = 1..3: W_s = {Wh, Wv, Wd} (Q32) = s1 {137373792, 137373792, 61414028},
//             s2 {186284160, 186284160, 104783920}, s3 {196165808, 196165808, 134487184}
//     ca = i32((W_b*a + 2^27) >> 28)                                          (i64)
//     nb = i32((143165577*|ca| - 2^31) >> 32), ce = i32((286331153*|ca| - 2^31) >> 32) (i64)
//     (MINUS 2^31: libvmaf's rounding constant is (int32_t)(1u << 31). So ca == 0 gives -1.)
//   F = nb_h + nb_v + nb_d,  C = ce_h + ce_v + ce_d                            (i32)
//
// Masking (numerator), for each position of the scored rect, per variant:
//   thr = sum of F over the 3x3 neighbourhood (rows/cols through m(., n)) - F(centre) + C
//   (i32; with mirroring a neighbour can be the centre position again: it counts.)
//   per band b:
//     scale 0: x = |r_b * W_b| - (thr << tsh_b), tsh = {10, 10, 12}              (i32)
//              x = max(x, 0);  xs = i32((x*x + 2^(q-1)) >> q), q = {29, 29, 30}  (i64)
//              maskedCube = (xs*x + rnd(c_b)) >> c_b                            (i64)
//              c_h = c_v = ceil(log2(w_0) - 4), c_d = ceil(log2(w_0) - 3)
//     s = 1..3: x = i32((r_b * W_b + 2^27) >> 28)                                 (i64)
//              x = max(|x| - thr, 0);  xs = i32((x*x + 2^29) >> 30)             (i64)
//              maskedCube = (xs*x + rnd(c)) >> c,  c = ceil(log2(w_s))          (i64)
//   row shift R = ceil(log2(h_s)) at every scale.
//
// Denominator, ref bands o_b over the scored rect (no decouple, no masking):
//   scale 0: denCube = |o|^3 (u64);  D = max(0, ceil(log2(rect area) - 20))
//   s = 1..3: u = |o|, qs = {31, 30, 31}[s-1] (the rounding constant is 2^qs, sic):
//             denCube = ((((u*u + 2^qs) >> qs) * u) + rnd(cd)) >> cd              (u64)
//             cd = ceil(log2(rect width)), D = ceil(log2(rect height))
//
// 64-bit intermediates a GPU must emulate: the angle test (above), the decouple division
// and restore at scales 1..3, the DWT sums at scales 1..3, CSF/threshold terms at 1..3,
// x*x and xs*x everywhere, denCube, and all row sums and stats.
//
// ---------------------------------------------------------------------------------------------
// Host math (admFinish), per scale, libvmaf's float/double types kept: noise =
// powf(f32(area*0.03125), 1/3f); num_b = powf(f32(acc / 2^E), 1/3f) + noise where scale 0
// divides in double (E = 52 - c_b - R for h/v, 57 - c_d - R for d) and scales 1..3 in float
// (f32(acc) / f32(2^E), E = {45, 39, 36} - c - R); den_b = powf(f32(acc / 2^E' *
// pow(f64(wf_b), 3)), 1/3f) + noise (E' = 18 - D at scale 0, {32, 27, 23} - cd - D at 1..3;
// wf = the float CSF weights); num = (num_h + num_v) + num_d in float, den the same.
// adm2 = sum_s num / sum_s den (double sums; both set to 0 below 1e-10*W*H/(1920*1080),
// adm2 = 1 when den is 0); scale s = num_s / den_s. powf/pow come from the C library: the
// results match libvmaf built against the same libm (glibc here).
#pragma once
#include <cstdint>

#include "plane.h"

namespace vmafs {

constexpr int kAdmScales = 4;
constexpr int kAdmStatsPerScale = 9;
constexpr int kAdmStatsLen = kAdmScales * kAdmStatsPerScale;  // 36

enum AdmStat : int {
  kAdmNumH = 0,     // + band (h, v, d): numerator, gain limit 100
  kAdmNumEglH = 3,  // + band: numerator, gain limit 1
  kAdmDenH = 6,     // + band: denominator (uint64 bits)
};

// Smallest width and height admStats handles. The scale-3 DWT reads the LL band of scale 2
// (ceil(W/8) x ceil(H/8)); its border mirroring needs at least 5 samples there, and the
// scale-0 masking shift ceil(log2(w_0) - 4) must be >= 1 (w_0 >= 17). Below 33, libvmaf
// reads outside its buffers (from 24 to 32 it runs, on memory it never wrote; below about
// 24 it crashes). admStats leaves all stats at 0 for smaller frames.
constexpr int kAdmMinSize = 33;

// Per-frame integer accumulators: everything ADM needs from the pixels, as int64 sums.
// ref and dis must have the same width, height and bitDepth.
void admStats(const LumaPlane& ref, const LumaPlane& dis, int64_t* stats /* kAdmStatsLen */);

// Turns the accumulators into the 10 feature values: adm2, scale0..3, then adm2_egl_1,
// scale0..3_egl_1.
void admFinish(const int64_t* stats, int width, int height, int bitDepth, double out[10]);

}  // namespace vmafs

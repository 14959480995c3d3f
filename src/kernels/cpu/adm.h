// Integer ADM (additive detail measure), bit-exact with libvmaf 3.2.0's "integer_adm" feature
// extractor (its C code path): four DWT scales, 8/10/12/16-bit luma, any size >= kAdmMinSize,
// odd sizes included. At default options it gives integer_adm2, integer_aim, integer_adm3 and
// integer_adm_scale0..3, and the same with adm_enhn_gain_limit = 1 (the "_egl_1" keys);
// admStatsWithOptions / admFinishWithOptions compute one instance at any AdmOptions.
//
// AIM (additive impairment measure) is DLM's numerator with the roles of the two decoupled
// signals swapped: the impairment a = t - r is masked by the CSF of the restored signal r
// (instead of r masked by the CSF of a), at the same shifts; its float finish adds no noise
// term. aim = sum_s aim_s / (DLM's denominator); adm3 = max(adm2 * dlm_weight + (1 - aim) *
// (1 - dlm_weight), min_val).
//
// The work is split in two so that the gpu backend can share the host half:
//   admStats  : pixels -> kAdmStatsLen 64-bit accumulators. Integer arithmetic throughout,
//               plus one float/double angle test per position (reproducible in integers,
//               see "Decouple");
//   admFinish : accumulators -> the 10 feature values (all of libvmaf's float/double
//               arithmetic after its pixel loops lives here).
//
// ---------------------------------------------------------------------------------------------
// Stats layout: stats[kAdmStatsPerScale * s + k], scale s = 0..3, band b = 0 (h), 1 (v), 2 (d).
//   k     | name           | value
//   0 + b | kAdmNumH + b   | numerator, gain limit 100 (default):
//         |                |   sum over rows i of the scored rect of (rowsum_i(cube) + rnd(R)) >> R
//   3 + b | kAdmNumEglH + b| the same with gain limit 1 (the "_egl_1" variant)
//   6 + b | kAdmDenH + b   | denominator, shared by both variants:
//         |                |   sum over rows i of the scored rect of (rowsum_i(den) + rnd(D)) >> D
//         |                |   (a uint64 stored bit for bit in the int64 slot)
// and after those 36, AIM: stats[kAdmAimBase + kAdmAimPerScale * s + 3 * v + b], variant v = 0
// (gain limit 100; or the options' gain limit), 1 (gain limit 1): the AIM numerator, formed
// like the DLM numerator (same shifts) from the impairment masked by the restored signal.
// admStatsWithOptions computes one variant, in the v = 0 slots, and leaves the v = 1 slots 0.
// rnd(s) = s > 0 ? 2^(s-1) : 0. The rounding shift applies to each ROW's sum (an exact
// 64-bit integer, non-negative): a GPU reduces every row to one value, shifts it, then sums
// the rows; any order is fine after that (all sums are exact, modulo 2^64).
//
// ---------------------------------------------------------------------------------------------
// Per-pixel algorithm (the spec for the WGSL port). ">>" is an arithmetic shift (floor);
// i16(x) / i32(x) are C's narrowing casts (keep the low 16 / 32 bits, two's complement); |x|
// is the absolute value. "(i64)" marks where an intermediate needs more than 32 bits.
//
// Sizes: W x H is the frame; scale s has detail bands of w_s x h_s, w_0 = (W+1)/2,
// w_s = (w_{s-1}+1)/2, same for h. Scale s > 0 filters the LL band of scale s-1.
//
// Mirroring m(i, n), used by the DWT and by the 3x3 masking neighbourhood:
//   -1 -> 1, n -> n-1, n+1 -> n-2, otherwise i.
// (The top/left edge is not repeated, the bottom/right edge is.)
//
// DWT. Filters L = {15826, 27411, 7345, -4240}, Hf = {-4240, -7345, 27411, -15826}. Band
// position (y, x) of scale s reads input rows m(2y-1+k, h_in) and columns m(2x-1+k, w_in),
// k = 0..3. Vertical pass first (per input column), then the horizontal pass over the
// vertical results: a = L(vertical L), v = Hf(vertical L), h = L(vertical Hf),
// d = Hf(vertical Hf). Outputs for all w_s x h_s positions (the LL band a feeds scale s+1).
//   scale 0, samples p at bit depth B, c = p - 2^(B-1) (fits i16):
//     vertical:   (sum F*c + 2^(B-1)) >> B          (i32; results fit i16)
//     horizontal: (sum F*v + 32768) >> 16            (i32; results fit i16, |band| <= 22930)
//     (libvmaf adds the samples uncentred and subtracts 46342 * 2^(B-1) afterwards: the same
//     value, but its sum overflows i32 at 16 bits. Centre first.)
//   scales 1..3, input q = LL of the previous scale (i32), sums (i64):
//     vertical:   s = 1: sum F*q (no shift; fits i32);  s = 2, 3: (sum + 32768) >> 16
//     horizontal: s = 1, 3: (sum + 16384) >> 15;        s = 2: (sum + 32768) >> 16
//     Every result fits i32 (|value| < 2.2e9 over all inputs); libvmaf's i32() never wraps.
//
// Regions of a w x h band. Scored rect: left = trunc(w*0.1 - 0.5), top = trunc(h*0.1 - 0.5)
// (double arithmetic), columns [left, w-left), rows [top, h-top). Decouple and CSF are
// needed on the scored rect grown by one row and column on each side, clipped to the band.
//
// Decouple, per position; o_b = ref band b, t_b = dis band b:
//   Angle test (one per position, on the h and v bands). libvmaf computes, in IEEE binary32 /
//   binary64 with no FMA:
//     dot = oh*th + ov*tv,  om = oh*oh + ov*ov,  tm = th*th + tv*tv              (i64 at s > 0)
//     D = f64(f32(dot))/4096, O = f64(f32(om))/4096, T = f64(f32(tm))/4096
//     angle = D >= 0 && D*D >= (f64(c) * O) * T,  c = f32(cos^2(1 deg)) = 8386053 * 2^-23
//   Integer form, exactly equivalent (checked on 29M random and near-threshold cases):
//     angle = false if dot < 0. Else round dot, om, tm to 24 significant bits, nearest-even
//     (Dm*2^ed, Om*2^eo, Tm*2^et; values below 2^24 are exact). Q = 8386053*Om*Tm (< 2^71,
//     exponent eo+et-23); round Q to 53 significant bits, nearest-even (the one rounding of
//     the double product; D*D and c*O are exact). angle = Dm^2 * 2^(2*ed) >= rounded Q (exact
//     comparison of the two integers with their exponents). The /4096 factors cancel.
//     Do not use WGSL's f32(i32) conversion: WGSL does not fix its rounding direction.
//   Ratio k_b in Q15, clamped to [0, 32768]; o == 0 gives 32768. R(v) = trunc(2^30 / v):
//     scale 0:  k = clamp((R(o) * t + 16384) >> 15)       (i64, or in i32: with R = Rh*2^15 + Rl,
//               Rl in [0, 2^15), it is Rh*t + ((Rl*t + 16384) >> 15))
//     s = 1..3: u = |o|; if u < 32768: e = 0, m = u; else e = bitlength(u) - 15,
//               m = (u + 2^(e-1)) >> e (<= 32768); k = clamp((R(m)*t*sign(o) + 2^(14+e)) >> (15+e)) (i64)
//   Restored: rst = (k*o + 16384) >> 15                    (i32 at scale 0, i64 at s > 0)
//   Gain limit g (100 default, 1 egl): if angle && k > 0 && o != 0:
//     rst = o > 0 ? min(rst*g, t) : max(rst*g, t)     (rst*100 needs i64 at s > 0; the result
//                                                       fits i32)
//   r_b = rst, a_b = t - rst (scale 0: through i16(); they fit).
//
// CSF weights W_b below are libvmaf's at default options; other CSF options give other
// weights (AdmKernelParams: scale 0 uint16(f * 2^21) for h/v and uint16(f * 2^23) for d,
// except the fixed {36453, 36453, 49417} of Watson at 3 x 1080; scales 1..3 uint32(f * 2^32),
// f the binary32 factors of adm_csf.h). A gain limit g that is not an integer is applied in
// double: rst = trunc(min(rst * g, t)) (max for o < 0), as libvmaf's int16/int32 stores do.
//
// CSF of the impairment a_b, per band and variant:
//   scale 0: W = {36453, 36453, 49417}, sh = {15, 15, 17}, rn = {16384, 16384, 65535} (sic)
//     ca = i16((W_b*a + rn_b) >> sh_b)                           (i32; fits, |ca| <= 25509)
//     nb = i16((4369*|ca| + 2048) >> 12)                         (fits)
//     ce = i16((8738*|ca| + 2048) >> 12)                         WRAPS when |ca| >= 15360: keep it
//   s = 1..3, W_b in Q32 (per scale: h, v, d):
//     s1 {137373792, 137373792, 61414028}, s2 {186284160, 186284160, 104783920},
//     s3 {196165808, 196165808, 134487184}
//     ca = i32((W_b*a + 2^27) >> 28)                                              (i64)
//     nb = i32((143165577*|ca| - 2^31) >> 32), ce = i32((286331153*|ca| - 2^31) >> 32) (i64)
//     (MINUS 2^31: libvmaf's rounding constant is (int32_t)(1u << 31). ca == 0 gives -1.)
//   F = nb_h + nb_v + nb_d,  C = ce_h + ce_v + ce_d                              (i32)
//
// Masking (numerator), at each position of the scored rect, per variant:
//   thr = (sum of F over the 3x3 neighbourhood, rows and columns through m(., n)) - F + C
//   (i32; at an edge the mirrored neighbourhood holds the centre position again: it counts.)
//   per band b:
//     scale 0:  x = max(|r_b*W_b| - (thr << tsh_b), 0), tsh = {10, 10, 12}          (i32)
//               xs = (x*x + 2^(q_b-1)) >> q_b, q = {29, 29, 30}                     (i64)
//               cube = (xs*x + rnd(c_b)) >> c_b                                       (i64)
//               c_h = c_v = ceil(log2(w_0) - 4), c_d = ceil(log2(w_0) - 3)
//               (x and xs are below 2^31 here: unsigned 32x32->64 products serve)
//     s = 1..3: x = max(|i32((r_b*W_b + 2^27) >> 28)| - thr, 0)                     (i64)
//               xs = i32((x*x + 2^29) >> 30); cube = (xs*x + rnd(c)) >> c, c = ceil(log2(w_s)) (i64)
//   row shift R = ceil(log2(h_s)) at every scale.
//   At scale 0 libvmaf narrows xs to int32 (x*x >> q needs 33 bits for weights much above
//   the defaults; it then wraps, and the cube's sign with it): kept.
//
// AIM numerator: the masking above with r and a exchanged. CSF of the restored r_b (the same
// formulas as for a_b): ca' -> nb', ce' -> F' = sum nb', C' = sum ce'; thr' from F', C' as thr
// from F, C; x from a_b (the impairment) in place of r_b; same shifts and row shift.
//
// Denominator, ref bands o_b over the scored rect (no decouple, no masking):
//   scale 0:  den = |o|^3 (u64);  D = max(0, ceil(log2(rect width * rect height) - 20))
//   s = 1..3: u = |o|, qs = {31, 30, 31}[s-1]; den = ((((u*u + 2^qs) >> qs) * u) + rnd(cd)) >> cd
//             (u64; the rounding constant is 2^qs, sic), cd = ceil(log2(rect width)),
//             D = ceil(log2(rect height))
// The ceil(log2(n) - k) shifts are libvmaf's double expressions; for sizes >= kAdmMinSize
// they are all >= 1.
//
// Not the SIMD code paths: libvmaf 3.2.0's AVX2 and AVX512 code differs from its C code (and
// from each other) on some inputs: e.g. they skip the i16() of the centre term ce, and the
// AVX2 path produces detail energy at scales 2-3 on flat frames of some widths (65x64, 201x69).
// On natural content, including every golden clip, all three agree.
//
// ---------------------------------------------------------------------------------------------
// Host math (admFinish), libvmaf's float/double types and operation order kept. Per scale:
//   noise = powf(f32(rect area * 0.03125), 1/3.f)
//   num_b = powf(f, 1/3.f) + noise, f = f32(f64(acc) / 2^E) at scale 0 (E = 52 - c_b - R for
//           h and v, 57 - c_d - R for d), f = f32(acc) / f32(2^E) at scales 1..3
//           (E = {45, 39, 36}[s-1] - c - R, uint32 arithmetic);
//   den_b = powf(f32(f64(acc) / 2^E' * pow(f64(w_b), 3)), 1/3.f) + noise, E' = 18 - D at
//           scale 0, {32, 27, 23}[s-1] - cd - D at 1..3 (uint32 arithmetic); w_b = the
//           binary32 CSF weights (adm.cpp, kCsfWeight);
//   num_s = (num_h + num_v) + num_d in float, den_s likewise.
// adm2 = sum_s num_s / sum_s den_s (double sums; either sum below 1e-10*W*H/(1920*1080)
// counts as 0; adm2 = 1 when the denominator is 0), scale s = num_s / den_s.
// noise uses adm_noise_weight in place of 0.03125. aim_s = sum_b powf(f, 1/3.f) + 0.0f (AIM's
// noise weight is 0), from the AIM stats as num_b from the numerator stats; aim = (sum_s
// aim_s, a double sum, not clipped) / the clipped denominator sum, and 0 when that is 0
// (libvmaf leaves it unset then; the denominator is 0 only at noise weight 0 on a flat
// reference). adm3 = max(adm2 * w + (1 - aim) * (1 - w), min_val), w = adm_dlm_weight.
// adm_skip_scale0: scale 0 is only low-pass filtered (its LL band feeds scale 1), num_0 = 0,
// aim_0 = 0, den_0 = 1e-10f. adm_skip_aim: the AIM stats are not computed (all 0).
// powf and pow come from the C library: the values match a libvmaf built on the same libm
// (glibc here); powf is not correctly rounded, so another libm may differ in the last bit.
#pragma once
#include <cstdint>

#include "plane.h"

namespace vmafs {

constexpr int kAdmScales = 4;
constexpr int kAdmStatsPerScale = 9;
constexpr int kAdmAimBase = kAdmScales * kAdmStatsPerScale;  // 36
constexpr int kAdmAimPerScale = 6;
constexpr int kAdmStatsLen = kAdmAimBase + kAdmScales * kAdmAimPerScale;  // 60
// admFinish's values per variant: adm2, aim, adm3, scale0..3.
constexpr int kAdmFeaturesPerVariant = 7;

enum AdmStat : int {
  kAdmNumH = 0,     // + band (h, v, d): numerator, gain limit 100
  kAdmNumEglH = 3,  // + band: numerator, gain limit 1
  kAdmDenH = 6,     // + band: denominator (uint64 bits)
};

// Smallest width and height admStats handles. The scale-3 DWT reads the scale-2 LL band
// (ceil(W/8) x ceil(H/8) samples), whose border mirroring needs at least 5 samples a side,
// and the scale-0 masking shift ceil(log2(w_0) - 4) must be at least 1. Below 33, libvmaf
// reads outside its buffers: from 17 to 32 it can run, on memory it never wrote (its scale-3
// and adm2 values are then garbage, and its C and SIMD paths disagree); at 16 it fails.
// admStats leaves all stats at 0 for smaller frames.
constexpr int kAdmMinSize = 33;

// libvmaf's integer_adm options: same meaning, defaults and ranges (admCheckOptions).
struct AdmOptions {
  int csfMode = 0;              // adm_csf_mode: 0 Watson97, 1 Barten, 2/3 Barten-Watson blends
  double csfScale = 1.0;        // adm_csf_scale (Barten only), [0, 50]
  double csfDiagScale = 1.0;    // adm_csf_diag_scale (Barten only), [0, 50]
  double normViewDist = 3.0;    // adm_norm_view_dist, [0.75, 24]
  int refDisplayHeight = 1080;  // adm_ref_display_height, [1, 4320]
  double noiseWeight = 0.03125; // adm_noise_weight, [0, 1500]
  double dlmWeight = 0.5;       // adm_dlm_weight, [0, 1]
  double minVal = 0.0;          // adm_min_val, [0, 1]
  double enhnGainLimit = 100.0; // adm_enhn_gain_limit, [1, 100]
  bool skipAim = false;         // adm_skip_aim
  bool skipScale0 = false;      // adm_skip_scale0
};

// What the pixel loops need from AdmOptions (see "CSF weights" above).
struct AdmKernelParams {
  int32_t baseWeight[3];        // scale 0: h, v in Q21, d in Q23
  uint32_t detailWeight[3][3];  // scales 1..3 [s - 1][band] in Q32
  float factor[kAdmScales][3];  // the binary32 CSF factors [scale][band] (denominator)
  int variants;                 // 2 at default options (gain limits 100 and 1), else 1
  double gainLimit[2];
  bool aim;                     // compute the AIM stats
  bool scale0;                  // score scale 0 (false: adm_skip_scale0)
};

// Throws std::invalid_argument naming the option when one is out of libvmaf's range, when
// norm_view_dist * ref_display_height < 3 * 1080 (libvmaf refuses those), or when a blend
// CSF mode has no table for the display height and distance.
void admCheckOptions(const AdmOptions& options);

// The kernel parameters of one instance at `options` (checked): one variant.
AdmKernelParams admKernelParams(const AdmOptions& options);

// Per-frame integer accumulators: everything ADM needs from the pixels, as int64 sums, at
// default options (both gain-limit variants). ref and dis must have the same width, height
// and bitDepth. Re-entrant: its scratch (about 5 bytes per sample, 10 MB at 1080p) is a
// per-thread workspace, kept and reused while the frame size and the options' shape stay.
// With egl1 false the gain-limit-1 variant is not computed (its slots stay 0; the default
// variant's are the same): a run without the _egl_1 keys skips half the masking work.
void admStats(const LumaPlane& ref, const LumaPlane& dis, int64_t* stats /* kAdmStatsLen */,
              bool egl1 = true);

// The same for one instance at `options` (checked: throws std::invalid_argument).
void admStatsWithOptions(const LumaPlane& ref, const LumaPlane& dis, const AdmOptions& options,
                         int64_t* stats /* kAdmStatsLen */);

// Turns default-option accumulators into 14 feature values: adm2, aim, adm3, scale0..3,
// then the same at gain limit 1 (the _egl_1 keys).
void admFinish(const int64_t* stats, int width, int height, int bitDepth,
               double out[2 * kAdmFeaturesPerVariant]);

// One instance's accumulators (admStatsWithOptions at the same options) into its 7 values.
void admFinishWithOptions(const int64_t* stats, int width, int height, const AdmOptions& options,
                          double out[kAdmFeaturesPerVariant]);

}  // namespace vmafs

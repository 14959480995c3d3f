// Lane-wise float (and double) arithmetic for the float extractors (float_vif, float_motion,
// float_adm, ssim-core), with one "ops" type per instruction set: Scalar (one lane, plain
// C++), Sse2 (4 lanes, x86-64's baseline), Avx2 (8) and Avx512 (16). Every op is one IEEE
// operation per lane (add, sub, mul and div are separate instructions: nothing is fused into
// an FMA), so code written once over these types gives, in each lane, exactly the scalar
// code's result: the vectorization is across pixels, never across the terms of one pixel's
// sum. D holds N doubles (two of the set's registers), for the sums libvmaf forms in double.
//
// The kernels written over them (the separable filters here, the VIF statistic in
// float_vif.cpp, float_adm-simd.h, ssim-core-simd.h) are templates that each extractor
// instantiates in one function per instruction set, marked with that set's target and
// `flatten` so the ops inline into it (the same scheme as src/kernels/cpu/vif.cpp). Per-
// function target attributes, unlike `#pragma GCC target` regions, are taken by Clang as
// well as GCC. floatIsa() picks the copy at run time from cpu_features.h's level (capped by
// limitIsa / --cpumask); kScalar runs the one-lane copy.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cpu_features.h"
#include "float-filter.h"

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define VMAFS_FLOAT_SIMD 1
#include <immintrin.h>
// The kernels pass vectors between functions of one target that flatten inlines; GCC still
// warns about the ABI such a call would have between targets.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 on _mm512_undefined_* in its own headers
#endif
#endif

namespace vmafs {
namespace fsimd {

enum class Isa { kScalar, kSse2, kAvx2, kAvx512 };

inline Isa floatIsa() {
#if defined(VMAFS_FLOAT_SIMD)
  const IsaLevel level = activeIsa();
  if (level >= IsaLevel::kAvx512) return Isa::kAvx512;
  if (level >= IsaLevel::kAvx2) return Isa::kAvx2;
  if (level >= IsaLevel::kBaseline) return Isa::kSse2;
#endif
  return Isa::kScalar;
}

// One lane. M is the lane's condition; select(m, a, b) is m ? a : b.
struct Scalar {
  using F = float;
  using M = bool;
  static constexpr int N = 1;
  static F load(const float* p) { return *p; }
  static void store(float* p, F v) { *p = v; }
  static F set1(float x) { return x; }
  static F zero() { return 0.0f; }
  static F add(F a, F b) { return a + b; }
  static F sub(F a, F b) { return a - b; }
  static F mul(F a, F b) { return a * b; }
  static F div(F a, F b) { return a / b; }
  static M lt(F a, F b) { return a < b; }
  static M eq(F a, F b) { return a == b; }
  static M mor(M a, M b) { return a || b; }
  static F select(M m, F a, F b) { return m ? a : b; }
  // The log2 approximation's pieces: the biased exponent minus 127 as a float, and the
  // mantissa with the exponent of 1.0 (a value in [1, 2)).
  static F exponentOf(F x) {
    uint32_t b;
    std::memcpy(&b, &x, sizeof b);
    return static_cast<float>(static_cast<int32_t>((b & 0x7F800000u) >> 23) - 127);
  }
  static F mantissaOf(F x) {
    uint32_t b;
    std::memcpy(&b, &x, sizeof b);
    b = (b & 0x007FFFFFu) | 0x3F800000u;
    float m;
    std::memcpy(&m, &b, sizeof m);
    return m;
  }
  // float(1 + double(a) / (double(b) + c)) and float(1 + double(a) / c): C's promotions
  // where a float meets a double option.
  static F onePlusRatio(F a, F b, double c) { return static_cast<float>(1.0f + a / (b + c)); }
  static F onePlusRatio(F a, double c) { return static_cast<float>(1.0f + a / c); }
  static M le(F a, F b) { return a <= b; }
  static M ge(F a, F b) { return a >= b; }
  static M mand(M a, M b) { return a && b; }
  static F abs(F a) {
    uint32_t b;
    std::memcpy(&b, &a, sizeof b);
    b &= 0x7FFFFFFFu;
    std::memcpy(&a, &b, sizeof a);
    return a;
  }
  // rcpss where there is SSE (float_adm's divisions), else the division it approximates.
  static F rcp(F a) {
#if defined(VMAFS_FLOAT_SIMD)
    return _mm_cvtss_f32(_mm_rcp_ss(_mm_set_ss(a)));
#else
    return 1.0f / a;
#endif
  }
  // p[0], p[2], ... and p[1], p[3], ... of 2N floats.
  static F evens(const float* p) { return p[0]; }
  static F odds(const float* p) { return p[1]; }
  using D = double;
  using DM = bool;
  static D dzero() { return 0.0; }
  static D dset1(double x) { return x; }
  static D dload(const double* p) { return *p; }
  static void dstore(double* p, D v) { *p = v; }
  static D dadd(D a, D b) { return a + b; }
  static D dsub(D a, D b) { return a - b; }
  static D dmul(D a, D b) { return a * b; }
  static D ddiv(D a, D b) { return a / b; }
  static D dsqrt(D a) { return std::sqrt(a); }
  static DM dlt(D a, D b) { return a < b; }
  static D dselect(DM m, D a, D b) { return m ? a : b; }
  static D toD(F a) { return a; }
  static F toF(D a) { return static_cast<float>(a); }
};

#if defined(VMAFS_FLOAT_SIMD)
// SSE2: four lanes, conditions as all-ones lanes.
struct Sse2 {
  using F = __m128;
  using M = __m128;
  static constexpr int N = 4;
  static F load(const float* p) { return _mm_loadu_ps(p); }
  static void store(float* p, F v) { _mm_storeu_ps(p, v); }
  static F set1(float x) { return _mm_set1_ps(x); }
  static F zero() { return _mm_setzero_ps(); }
  static F add(F a, F b) { return _mm_add_ps(a, b); }
  static F sub(F a, F b) { return _mm_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm_mul_ps(a, b); }
  static F div(F a, F b) { return _mm_div_ps(a, b); }
  static M lt(F a, F b) { return _mm_cmplt_ps(a, b); }
  static M eq(F a, F b) { return _mm_cmpeq_ps(a, b); }
  static M mor(M a, M b) { return _mm_or_ps(a, b); }
  static F select(M m, F a, F b) { return _mm_or_ps(_mm_and_ps(m, a), _mm_andnot_ps(m, b)); }
  static F exponentOf(F x) {
    const __m128i e = _mm_srli_epi32(_mm_and_si128(_mm_castps_si128(x), _mm_set1_epi32(0x7F800000)), 23);
    return _mm_cvtepi32_ps(_mm_sub_epi32(e, _mm_set1_epi32(127)));
  }
  static F mantissaOf(F x) {
    const __m128i m = _mm_and_si128(_mm_castps_si128(x), _mm_set1_epi32(0x007FFFFF));
    return _mm_castsi128_ps(_mm_or_si128(m, _mm_set1_epi32(0x3F800000)));
  }
  static F onePlusRatio(F a, F b, double c) {
    const __m128d cc = _mm_set1_pd(c), one = _mm_set1_pd(1.0);
    const __m128d lo = _mm_add_pd(one, _mm_div_pd(_mm_cvtps_pd(a), _mm_add_pd(_mm_cvtps_pd(b), cc)));
    const __m128d hi = _mm_add_pd(one, _mm_div_pd(_mm_cvtps_pd(_mm_movehl_ps(a, a)),
                                                  _mm_add_pd(_mm_cvtps_pd(_mm_movehl_ps(b, b)), cc)));
    return _mm_movelh_ps(_mm_cvtpd_ps(lo), _mm_cvtpd_ps(hi));
  }
  static F onePlusRatio(F a, double c) {
    const __m128d cc = _mm_set1_pd(c), one = _mm_set1_pd(1.0);
    const __m128d lo = _mm_add_pd(one, _mm_div_pd(_mm_cvtps_pd(a), cc));
    const __m128d hi = _mm_add_pd(one, _mm_div_pd(_mm_cvtps_pd(_mm_movehl_ps(a, a)), cc));
    return _mm_movelh_ps(_mm_cvtpd_ps(lo), _mm_cvtpd_ps(hi));
  }
  static M le(F a, F b) { return _mm_cmple_ps(a, b); }
  static M ge(F a, F b) { return _mm_cmpge_ps(a, b); }
  static M mand(M a, M b) { return _mm_and_ps(a, b); }
  static F abs(F a) { return _mm_and_ps(a, _mm_castsi128_ps(_mm_set1_epi32(0x7FFFFFFF))); }
  static F rcp(F a) { return _mm_rcp_ps(a); }
  static F evens(const float* p) { return _mm_shuffle_ps(load(p), load(p + 4), _MM_SHUFFLE(2, 0, 2, 0)); }
  static F odds(const float* p) { return _mm_shuffle_ps(load(p), load(p + 4), _MM_SHUFFLE(3, 1, 3, 1)); }
  struct D {
    __m128d lo, hi;  // lanes 0-1, 2-3
  };
  using DM = D;
  static D dzero() { return {_mm_setzero_pd(), _mm_setzero_pd()}; }
  static D dset1(double x) { return {_mm_set1_pd(x), _mm_set1_pd(x)}; }
  static D dload(const double* p) { return {_mm_loadu_pd(p), _mm_loadu_pd(p + 2)}; }
  static void dstore(double* p, D v) { _mm_storeu_pd(p, v.lo), _mm_storeu_pd(p + 2, v.hi); }
  static D dadd(D a, D b) { return {_mm_add_pd(a.lo, b.lo), _mm_add_pd(a.hi, b.hi)}; }
  static D dsub(D a, D b) { return {_mm_sub_pd(a.lo, b.lo), _mm_sub_pd(a.hi, b.hi)}; }
  static D dmul(D a, D b) { return {_mm_mul_pd(a.lo, b.lo), _mm_mul_pd(a.hi, b.hi)}; }
  static D ddiv(D a, D b) { return {_mm_div_pd(a.lo, b.lo), _mm_div_pd(a.hi, b.hi)}; }
  static D dsqrt(D a) { return {_mm_sqrt_pd(a.lo), _mm_sqrt_pd(a.hi)}; }
  static DM dlt(D a, D b) { return {_mm_cmplt_pd(a.lo, b.lo), _mm_cmplt_pd(a.hi, b.hi)}; }
  static D dselect(DM m, D a, D b) {
    return {_mm_or_pd(_mm_and_pd(m.lo, a.lo), _mm_andnot_pd(m.lo, b.lo)),
            _mm_or_pd(_mm_and_pd(m.hi, a.hi), _mm_andnot_pd(m.hi, b.hi))};
  }
  static D toD(F a) { return {_mm_cvtps_pd(a), _mm_cvtps_pd(_mm_movehl_ps(a, a))}; }
  static F toF(D a) { return _mm_movelh_ps(_mm_cvtpd_ps(a.lo), _mm_cvtpd_ps(a.hi)); }
};

#define VMAFS_AVX2_FN __attribute__((target("avx2"))) static
struct Avx2 {
  using F = __m256;
  using M = __m256;
  static constexpr int N = 8;
  VMAFS_AVX2_FN F load(const float* p) { return _mm256_loadu_ps(p); }
  VMAFS_AVX2_FN void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  VMAFS_AVX2_FN F set1(float x) { return _mm256_set1_ps(x); }
  VMAFS_AVX2_FN F zero() { return _mm256_setzero_ps(); }
  VMAFS_AVX2_FN F add(F a, F b) { return _mm256_add_ps(a, b); }
  VMAFS_AVX2_FN F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  VMAFS_AVX2_FN F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  VMAFS_AVX2_FN F div(F a, F b) { return _mm256_div_ps(a, b); }
  VMAFS_AVX2_FN M lt(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  VMAFS_AVX2_FN M eq(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
  VMAFS_AVX2_FN M mor(M a, M b) { return _mm256_or_ps(a, b); }
  VMAFS_AVX2_FN F select(M m, F a, F b) { return _mm256_blendv_ps(b, a, m); }
  VMAFS_AVX2_FN F exponentOf(F x) {
    const __m256i e = _mm256_srli_epi32(_mm256_and_si256(_mm256_castps_si256(x), _mm256_set1_epi32(0x7F800000)), 23);
    return _mm256_cvtepi32_ps(_mm256_sub_epi32(e, _mm256_set1_epi32(127)));
  }
  VMAFS_AVX2_FN F mantissaOf(F x) {
    const __m256i m = _mm256_and_si256(_mm256_castps_si256(x), _mm256_set1_epi32(0x007FFFFF));
    return _mm256_castsi256_ps(_mm256_or_si256(m, _mm256_set1_epi32(0x3F800000)));
  }
  VMAFS_AVX2_FN F onePlusRatio(F a, F b, double c) {
    const __m256d cc = _mm256_set1_pd(c), one = _mm256_set1_pd(1.0);
    const __m256d lo = _mm256_add_pd(
        one, _mm256_div_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(a)), _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(b)), cc)));
    const __m256d hi = _mm256_add_pd(
        one, _mm256_div_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(a, 1)), _mm256_add_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(b, 1)), cc)));
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(lo)), _mm256_cvtpd_ps(hi), 1);
  }
  VMAFS_AVX2_FN F onePlusRatio(F a, double c) {
    const __m256d cc = _mm256_set1_pd(c), one = _mm256_set1_pd(1.0);
    const __m256d lo = _mm256_add_pd(one, _mm256_div_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(a)), cc));
    const __m256d hi = _mm256_add_pd(one, _mm256_div_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(a, 1)), cc));
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(lo)), _mm256_cvtpd_ps(hi), 1);
  }
  VMAFS_AVX2_FN M le(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_LE_OQ); }
  VMAFS_AVX2_FN M ge(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }
  VMAFS_AVX2_FN M mand(M a, M b) { return _mm256_and_ps(a, b); }
  VMAFS_AVX2_FN F abs(F a) { return _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF))); }
  VMAFS_AVX2_FN F rcp(F a) { return _mm256_rcp_ps(a); }
  // Within-128-bit shuffles, then the 64-bit pairs put in order.
  VMAFS_AVX2_FN F evens(const float* p) {
    const __m256 s = _mm256_shuffle_ps(load(p), load(p + 8), _MM_SHUFFLE(2, 0, 2, 0));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
  }
  VMAFS_AVX2_FN F odds(const float* p) {
    const __m256 s = _mm256_shuffle_ps(load(p), load(p + 8), _MM_SHUFFLE(3, 1, 3, 1));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
  }
  struct D {
    __m256d lo, hi;  // lanes 0-3, 4-7
  };
  using DM = D;
  VMAFS_AVX2_FN D dzero() { return {_mm256_setzero_pd(), _mm256_setzero_pd()}; }
  VMAFS_AVX2_FN D dset1(double x) { return {_mm256_set1_pd(x), _mm256_set1_pd(x)}; }
  VMAFS_AVX2_FN D dload(const double* p) { return {_mm256_loadu_pd(p), _mm256_loadu_pd(p + 4)}; }
  VMAFS_AVX2_FN void dstore(double* p, D v) { _mm256_storeu_pd(p, v.lo), _mm256_storeu_pd(p + 4, v.hi); }
  VMAFS_AVX2_FN D dadd(D a, D b) { return {_mm256_add_pd(a.lo, b.lo), _mm256_add_pd(a.hi, b.hi)}; }
  VMAFS_AVX2_FN D dsub(D a, D b) { return {_mm256_sub_pd(a.lo, b.lo), _mm256_sub_pd(a.hi, b.hi)}; }
  VMAFS_AVX2_FN D dmul(D a, D b) { return {_mm256_mul_pd(a.lo, b.lo), _mm256_mul_pd(a.hi, b.hi)}; }
  VMAFS_AVX2_FN D ddiv(D a, D b) { return {_mm256_div_pd(a.lo, b.lo), _mm256_div_pd(a.hi, b.hi)}; }
  VMAFS_AVX2_FN D dsqrt(D a) { return {_mm256_sqrt_pd(a.lo), _mm256_sqrt_pd(a.hi)}; }
  VMAFS_AVX2_FN DM dlt(D a, D b) { return {_mm256_cmp_pd(a.lo, b.lo, _CMP_LT_OQ), _mm256_cmp_pd(a.hi, b.hi, _CMP_LT_OQ)}; }
  VMAFS_AVX2_FN D dselect(DM m, D a, D b) { return {_mm256_blendv_pd(b.lo, a.lo, m.lo), _mm256_blendv_pd(b.hi, a.hi, m.hi)}; }
  VMAFS_AVX2_FN D toD(F a) {
    return {_mm256_cvtps_pd(_mm256_castps256_ps128(a)), _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1))};
  }
  VMAFS_AVX2_FN F toF(D a) { return _mm256_set_m128(_mm256_cvtpd_ps(a.hi), _mm256_cvtpd_ps(a.lo)); }
};
#undef VMAFS_AVX2_FN

#define VMAFS_AVX512_FN __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"))) static
struct Avx512 {
  using F = __m512;
  using M = __mmask16;
  static constexpr int N = 16;
  VMAFS_AVX512_FN F load(const float* p) { return _mm512_loadu_ps(p); }
  VMAFS_AVX512_FN void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  VMAFS_AVX512_FN F set1(float x) { return _mm512_set1_ps(x); }
  VMAFS_AVX512_FN F zero() { return _mm512_setzero_ps(); }
  VMAFS_AVX512_FN F add(F a, F b) { return _mm512_add_ps(a, b); }
  VMAFS_AVX512_FN F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  VMAFS_AVX512_FN F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  VMAFS_AVX512_FN F div(F a, F b) { return _mm512_div_ps(a, b); }
  VMAFS_AVX512_FN M lt(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  VMAFS_AVX512_FN M eq(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
  VMAFS_AVX512_FN M mor(M a, M b) { return static_cast<M>(a | b); }
  VMAFS_AVX512_FN F select(M m, F a, F b) { return _mm512_mask_blend_ps(m, b, a); }
  VMAFS_AVX512_FN F exponentOf(F x) {
    const __m512i e = _mm512_srli_epi32(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7F800000)), 23);
    return _mm512_cvtepi32_ps(_mm512_sub_epi32(e, _mm512_set1_epi32(127)));
  }
  VMAFS_AVX512_FN F mantissaOf(F x) {
    const __m512i m = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x007FFFFF));
    return _mm512_castsi512_ps(_mm512_or_si512(m, _mm512_set1_epi32(0x3F800000)));
  }
  VMAFS_AVX512_FN F onePlusRatio(F a, F b, double c) {
    const __m512d cc = _mm512_set1_pd(c), one = _mm512_set1_pd(1.0);
    const __m512d lo = _mm512_add_pd(
        one, _mm512_div_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(a)), _mm512_add_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(b)), cc)));
    const __m512d hi = _mm512_add_pd(
        one, _mm512_div_pd(_mm512_cvtps_pd(_mm512_extractf32x8_ps(a, 1)), _mm512_add_pd(_mm512_cvtps_pd(_mm512_extractf32x8_ps(b, 1)), cc)));
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1);
  }
  VMAFS_AVX512_FN F onePlusRatio(F a, double c) {
    const __m512d cc = _mm512_set1_pd(c), one = _mm512_set1_pd(1.0);
    const __m512d lo = _mm512_add_pd(one, _mm512_div_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(a)), cc));
    const __m512d hi = _mm512_add_pd(one, _mm512_div_pd(_mm512_cvtps_pd(_mm512_extractf32x8_ps(a, 1)), cc));
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1);
  }
  VMAFS_AVX512_FN M le(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ); }
  VMAFS_AVX512_FN M ge(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
  VMAFS_AVX512_FN M mand(M a, M b) { return static_cast<M>(a & b); }
  VMAFS_AVX512_FN F abs(F a) {
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(0x7FFFFFFF)));
  }
  // Two 8-lane rcpps: rcpss's approximation per lane (vrcp14ps is a different, finer one).
  VMAFS_AVX512_FN F rcp(F a) {
    const __m256 lo = _mm256_rcp_ps(_mm512_castps512_ps256(a)), hi = _mm256_rcp_ps(_mm512_extractf32x8_ps(a, 1));
    return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
  }
  VMAFS_AVX512_FN F evens(const float* p) {
    const __m512i i = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    return _mm512_permutex2var_ps(load(p), i, load(p + 16));
  }
  VMAFS_AVX512_FN F odds(const float* p) {
    const __m512i i = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    return _mm512_permutex2var_ps(load(p), i, load(p + 16));
  }
  struct D {
    __m512d lo, hi;  // lanes 0-7, 8-15
  };
  struct DM {
    __mmask8 lo, hi;
  };
  VMAFS_AVX512_FN D dzero() { return {_mm512_setzero_pd(), _mm512_setzero_pd()}; }
  VMAFS_AVX512_FN D dset1(double x) { return {_mm512_set1_pd(x), _mm512_set1_pd(x)}; }
  VMAFS_AVX512_FN D dload(const double* p) { return {_mm512_loadu_pd(p), _mm512_loadu_pd(p + 8)}; }
  VMAFS_AVX512_FN void dstore(double* p, D v) { _mm512_storeu_pd(p, v.lo), _mm512_storeu_pd(p + 8, v.hi); }
  VMAFS_AVX512_FN D dadd(D a, D b) { return {_mm512_add_pd(a.lo, b.lo), _mm512_add_pd(a.hi, b.hi)}; }
  VMAFS_AVX512_FN D dsub(D a, D b) { return {_mm512_sub_pd(a.lo, b.lo), _mm512_sub_pd(a.hi, b.hi)}; }
  VMAFS_AVX512_FN D dmul(D a, D b) { return {_mm512_mul_pd(a.lo, b.lo), _mm512_mul_pd(a.hi, b.hi)}; }
  VMAFS_AVX512_FN D ddiv(D a, D b) { return {_mm512_div_pd(a.lo, b.lo), _mm512_div_pd(a.hi, b.hi)}; }
  VMAFS_AVX512_FN D dsqrt(D a) { return {_mm512_sqrt_pd(a.lo), _mm512_sqrt_pd(a.hi)}; }
  VMAFS_AVX512_FN DM dlt(D a, D b) {
    return {_mm512_cmp_pd_mask(a.lo, b.lo, _CMP_LT_OQ), _mm512_cmp_pd_mask(a.hi, b.hi, _CMP_LT_OQ)};
  }
  VMAFS_AVX512_FN D dselect(DM m, D a, D b) {
    return {_mm512_mask_blend_pd(m.lo, b.lo, a.lo), _mm512_mask_blend_pd(m.hi, b.hi, a.hi)};
  }
  VMAFS_AVX512_FN D toD(F a) {
    return {_mm512_cvtps_pd(_mm512_castps512_ps256(a)), _mm512_cvtps_pd(_mm512_extractf32x8_ps(a, 1))};
  }
  VMAFS_AVX512_FN F toF(D a) {
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(a.lo)), _mm512_cvtpd_ps(a.hi), 1);
  }
};
#undef VMAFS_AVX512_FN
#endif  // VMAFS_FLOAT_SIMD

// ---- Partial vectors (float_adm, ssim-core) ----
//
// Whole-vector loads past a row's end read what follows (never stored): every buffer read
// this way has kPad floats (or doubles) of room after its last sample.
constexpr int kPad = 16;

// The first n lanes (n <= N) of v to p.
template <class V>
void storeN(float* p, typename V::F v, int n) {
  if (n == V::N) return V::store(p, v);
  float t[V::N];
  V::store(t, v);
  std::memcpy(p, t, sizeof(float) * static_cast<size_t>(n));
}
template <class V>
void dstoreN(double* p, typename V::D v, int n) {
  if (n == V::N) return V::dstore(p, v);
  double t[V::N];
  V::dstore(t, v);
  std::memcpy(p, t, sizeof(double) * static_cast<size_t>(n));
}

// ---- Row sums: each row's floats added in column order to a sum from 0 ----
//
// A float sum along a row is one chain of dependent adds; rows are independent, so blocks
// of rows go one per lane: each square tile is transposed so that one vector add takes the
// next column of every row of the block (each lane's adds stay in column order).

#if defined(VMAFS_FLOAT_SIMD)
// acc + column 0 + column 1 + ... of the 4x4 tile d (lane r: row r).
inline __m128 addColumns4(__m128 acc, __m128 d0, __m128 d1, __m128 d2, __m128 d3) {
  _MM_TRANSPOSE4_PS(d0, d1, d2, d3);
  return _mm_add_ps(_mm_add_ps(_mm_add_ps(_mm_add_ps(acc, d0), d1), d2), d3);
}

// The same for an 8x8 tile.
__attribute__((target("avx2"))) inline __m256 addColumns8(__m256 acc, const __m256* d) {
  const __m256 u0 = _mm256_unpacklo_ps(d[0], d[1]), u1 = _mm256_unpackhi_ps(d[0], d[1]);
  const __m256 u2 = _mm256_unpacklo_ps(d[2], d[3]), u3 = _mm256_unpackhi_ps(d[2], d[3]);
  const __m256 u4 = _mm256_unpacklo_ps(d[4], d[5]), u5 = _mm256_unpackhi_ps(d[4], d[5]);
  const __m256 u6 = _mm256_unpacklo_ps(d[6], d[7]), u7 = _mm256_unpackhi_ps(d[6], d[7]);
  const __m256 v0 = _mm256_shuffle_ps(u0, u2, 0x44), v1 = _mm256_shuffle_ps(u0, u2, 0xEE);
  const __m256 v2 = _mm256_shuffle_ps(u1, u3, 0x44), v3 = _mm256_shuffle_ps(u1, u3, 0xEE);
  const __m256 v4 = _mm256_shuffle_ps(u4, u6, 0x44), v5 = _mm256_shuffle_ps(u4, u6, 0xEE);
  const __m256 v6 = _mm256_shuffle_ps(u5, u7, 0x44), v7 = _mm256_shuffle_ps(u5, u7, 0xEE);
  // Column c of the tile: lane r holds d[r] lane c.
  acc = _mm256_add_ps(acc, _mm256_permute2f128_ps(v0, v4, 0x20));
  acc = _mm256_add_ps(acc, _mm256_permute2f128_ps(v1, v5, 0x20));
  acc = _mm256_add_ps(acc, _mm256_permute2f128_ps(v2, v6, 0x20));
  acc = _mm256_add_ps(acc, _mm256_permute2f128_ps(v3, v7, 0x20));
  acc = _mm256_add_ps(acc, _mm256_permute2f128_ps(v0, v4, 0x31));
  acc = _mm256_add_ps(acc, _mm256_permute2f128_ps(v1, v5, 0x31));
  acc = _mm256_add_ps(acc, _mm256_permute2f128_ps(v2, v6, 0x31));
  return _mm256_add_ps(acc, _mm256_permute2f128_ps(v3, v7, 0x31));
}

// Rows [0, 8) of x (row r at x + r * stride, w floats each) summed into out[0 .. 8).
__attribute__((target("avx2"))) inline void rowSums8(const float* x, size_t stride, int w, float* out) {
  __m256 acc = _mm256_setzero_ps();
  int j = 0;
  for (; j + 8 <= w; j += 8) {
    __m256 d[8];
    for (int r = 0; r < 8; r++) d[r] = _mm256_loadu_ps(x + r * stride + j);
    acc = addColumns8(acc, d);
  }
  _mm256_storeu_ps(out, acc);
  for (int r = 0; r < 8; r++) {
    for (int c = j; c < w; c++) out[r] += x[r * stride + c];
  }
}

inline void rowSums4(const float* x, size_t stride, int w, float* out) {
  __m128 acc = _mm_setzero_ps();
  int j = 0;
  for (; j + 4 <= w; j += 4) {
    acc = addColumns4(acc, _mm_loadu_ps(x + j), _mm_loadu_ps(x + stride + j), _mm_loadu_ps(x + 2 * stride + j),
                      _mm_loadu_ps(x + 3 * stride + j));
  }
  _mm_storeu_ps(out, acc);
  for (int r = 0; r < 4; r++) {
    for (int c = j; c < w; c++) out[r] += x[r * stride + c];
  }
}
#endif

// Rows [0, rows) of x summed into out[], blocks of V's tile height first.
template <class V>
void rowSums(const float* x, size_t stride, int w, int rows, float* out) {
  int r = 0;
#if defined(VMAFS_FLOAT_SIMD)
  if constexpr (V::N >= 8) {
    for (; r + 8 <= rows; r += 8) rowSums8(x + r * stride, stride, w, out + r);
  } else if constexpr (V::N == 4) {
    for (; r + 4 <= rows; r += 4) rowSums4(x + r * stride, stride, w, out + r);
  }
#endif
  for (; r < rows; r++) {
    float sum = 0.0f;
    for (int c = 0; c < w; c++) sum += x[r * stride + c];
    out[r] = sum;
  }
}

// ---- Separable filtering, row by row (float-filter.h's arithmetic, lane per pixel) ----
//
// A row's vertical pass goes into a padded row (`radius` mirrored samples either side), so
// the horizontal pass reads taps at fixed offsets. Mirrored indices are clamped into the
// plane: they only leave it on planes smaller than the filter's radius, where the scalar
// reference would read outside its buffer.

inline int mirrorClamped(int i, int n) { return std::min(std::max(mirrorIndex(i, n), 0), n - 1); }

// The source rows one output row's vertical taps read.
inline void tapRows(const float* plane, int w, int h, int row, int taps, const float** out) {
  const int radius = taps / 2;
  for (int k = 0; k < taps; k++) out[k] = plane + static_cast<size_t>(mirrorClamped(row - radius + k, h)) * w;
}

// Fills the `radius` samples either side of padded[radius .. radius + w).
inline void mirrorPad(float* padded, int w, int radius) {
  float* row = padded + radius;
  for (int x = 1; x <= radius; x++) {
    row[-x] = row[mirrorClamped(-x, w)];
    row[w - 1 + x] = row[mirrorClamped(w - 1 + x, w)];
  }
}

// out[j] for j in [j, w): each tap's product added in filter order to a sum from 0.
// (Four vectors at a time where they fit: their sums are independent, so the adds overlap.)
template <class V>
int verticalPlain(const float* const* rows, const float* filter, int taps, int j, int w, float* out) {
  for (; j + 4 * V::N <= w; j += 4 * V::N) {
    typename V::F a0 = V::zero(), a1 = V::zero(), a2 = V::zero(), a3 = V::zero();
    for (int k = 0; k < taps; k++) {
      const typename V::F f = V::set1(filter[k]);
      const float* r = rows[k] + j;
      a0 = V::add(a0, V::mul(f, V::load(r)));
      a1 = V::add(a1, V::mul(f, V::load(r + V::N)));
      a2 = V::add(a2, V::mul(f, V::load(r + 2 * V::N)));
      a3 = V::add(a3, V::mul(f, V::load(r + 3 * V::N)));
    }
    V::store(out + j, a0);
    V::store(out + j + V::N, a1);
    V::store(out + j + 2 * V::N, a2);
    V::store(out + j + 3 * V::N, a3);
  }
  for (; j + V::N <= w; j += V::N) {
    typename V::F acc = V::zero();
    for (int k = 0; k < taps; k++) acc = V::add(acc, V::mul(V::set1(filter[k]), V::load(rows[k] + j)));
    V::store(out + j, acc);
  }
  return j;
}

template <class V>
int horizontal(const float* padded, const float* filter, int taps, int j, int w, float* out) {
  for (; j + 4 * V::N <= w; j += 4 * V::N) {
    typename V::F a0 = V::zero(), a1 = V::zero(), a2 = V::zero(), a3 = V::zero();
    for (int k = 0; k < taps; k++) {
      const typename V::F f = V::set1(filter[k]);
      const float* r = padded + j + k;
      a0 = V::add(a0, V::mul(f, V::load(r)));
      a1 = V::add(a1, V::mul(f, V::load(r + V::N)));
      a2 = V::add(a2, V::mul(f, V::load(r + 2 * V::N)));
      a3 = V::add(a3, V::mul(f, V::load(r + 3 * V::N)));
    }
    V::store(out + j, a0);
    V::store(out + j + V::N, a1);
    V::store(out + j + 2 * V::N, a2);
    V::store(out + j + 3 * V::N, a3);
  }
  for (; j + V::N <= w; j += V::N) {
    typename V::F acc = V::zero();
    for (int k = 0; k < taps; k++) acc = V::add(acc, V::mul(V::set1(filter[k]), V::load(padded + j + k)));
    V::store(out + j, acc);
  }
  return j;
}

// The five vertical sums VIF needs from one pair of planes: ref, dis, ref^2, dis^2 and
// ref*dis, each square or product formed before it is weighted (filter * (a * b)).
template <class V>
int verticalMoments(const float* const* ref, const float* const* dis, const float* filter, int taps, int j, int w,
                    float* const* out) {
  for (; j + V::N <= w; j += V::N) {
    typename V::F m1 = V::zero(), m2 = V::zero(), xx = V::zero(), yy = V::zero(), xy = V::zero();
    for (int k = 0; k < taps; k++) {
      const typename V::F f = V::set1(filter[k]);
      const typename V::F a = V::load(ref[k] + j), b = V::load(dis[k] + j);
      m1 = V::add(m1, V::mul(f, a));
      m2 = V::add(m2, V::mul(f, b));
      xx = V::add(xx, V::mul(f, V::mul(a, a)));
      yy = V::add(yy, V::mul(f, V::mul(b, b)));
      xy = V::add(xy, V::mul(f, V::mul(a, b)));
    }
    V::store(out[0] + j, m1);
    V::store(out[1] + j, m2);
    V::store(out[2] + j, xx);
    V::store(out[3] + j, yy);
    V::store(out[4] + j, xy);
  }
  return j;
}

// One filtered row into out[0 .. w) from the rows its vertical taps read; `padded` holds
// w + taps - 1 floats.
template <class V>
void filterRowFrom(const float* const* rowPtrs, const float* filter, int taps, int w, float* padded, float* out) {
  const int radius = taps / 2;
  int j = verticalPlain<V>(rowPtrs, filter, taps, 0, w, padded + radius);
  verticalPlain<Scalar>(rowPtrs, filter, taps, j, w, padded + radius);
  mirrorPad(padded, w, radius);
  j = horizontal<V>(padded, filter, taps, 0, w, out);
  horizontal<Scalar>(padded, filter, taps, j, w, out);
}

// One filtered row of a plane.
template <class V>
void filterRow(const float* filter, int taps, const float* plane, int w, int h, int row, float* padded, float* out,
               const float** rowPtrs) {
  tapRows(plane, w, h, row, taps, rowPtrs);
  filterRowFrom<V>(rowPtrs, filter, taps, w, padded, out);
}

// Row buffers for the filters: `count` padded rows and the tap pointers.
struct FilterScratch {
  std::vector<float> rows;
  std::vector<const float*> ptrs;
  size_t stride = 0;
  void reserve(int w, int taps, int count) {
    stride = static_cast<size_t>(w) + static_cast<size_t>(taps);
    if (rows.size() < stride * count) rows.assign(stride * count, 0.0f);
    if (ptrs.size() < static_cast<size_t>(2 * taps)) ptrs.resize(static_cast<size_t>(2 * taps));
  }
  float* row(int i) { return rows.data() + stride * static_cast<size_t>(i); }
};

// The whole plane filtered (filterPlane's values).
template <class V>
void filterPlaneT(const float* filter, int taps, const float* src, float* dst, int w, int h, FilterScratch& s) {
  s.reserve(w, taps, 1);
  for (int i = 0; i < h; i++) filterRow<V>(filter, taps, src, w, h, i, s.row(0), dst + static_cast<size_t>(i) * w, s.ptrs.data());
}

}  // namespace fsimd
}  // namespace vmafs

// Integer VIF for the cpu backend. The algorithm and its exact integer/double semantics are
// specified in vif.h; this file implements that spec for speed:
//
//  * One pass per scale, row by row. The samples of ref and dis and their products (ref^2,
//    dis^2, ref*dis) are computed once per input row into a ring holding the 2*half+1 rows
//    the vertical filter needs, instead of once per filter tap.
//  * Every quantity is filtered as a 16-bit "stream" with 32-bit accumulators: all filters
//    sum to 65536, so a filtered 16-bit stream never overflows 32 bits. Values wider than 16
//    bits (products of 16-bit samples, vertically filtered second moments) are split into
//    high and low 16-bit halves, filtered separately and recombined exactly.
//  * Filtering is a multiply-add of 16-bit pairs (pmaddwd on x86, AVX2 when the CPU has it),
//    over fixed-size column blocks of zero-padded rows that stay in L1.
//  * The down-sampling to the next scale is fused into the pass and reuses the ring rows.
#include "vif.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>

#include "cpu_features.h"

// Kernel selection. Define VMAFS_VIF_NO_SIMD (portable code only) or VMAFS_VIF_NO_AVX2 to
// build and test the other paths; all paths give identical results.
#if (defined(__SSE2__) || defined(_M_X64) || defined(_M_AMD64)) && !defined(VMAFS_VIF_NO_SIMD)
#define VMAFS_VIF_SSE2 1
#include <emmintrin.h>
#endif
#if defined(VMAFS_VIF_SSE2) && (defined(__GNUC__) || defined(__clang__)) && \
    defined(__x86_64__) && !defined(VMAFS_VIF_NO_AVX2)
#define VMAFS_VIF_AVX2 1  // compiled with a target attribute, chosen at run time
#include <immintrin.h>
#endif
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#endif

// The per-pixel double arithmetic must round after every operation, exactly like libvmaf's
// C build: no fused multiply-add, whatever the target. Build with -ffp-contract=off; the
// pragmas below make this file safe even without it (each rounding step is also its own
// statement, where contraction under clang's default rules stops).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace vmafs {
namespace {

// ----------------------------------------------------------------------------------------
// Constants

// A symmetric low-pass filter: taps[0] is the centre, taps[d] the weight at distance d.
struct Filter {
  int half;
  uint16_t taps[9];
};

// libvmaf's fixed-point Gaussian windows for scales 0..3 (each sums to 65536).
constexpr Filter kFilters[kVifScales] = {
    {8, {7784, 7455, 6547, 5274, 3896, 2640, 1640, 935, 489}},
    {4, {14692, 12590, 7925, 3663, 1244}},
    {2, {26386, 16004, 3571}},
    {1, {43728, 10904}},
};
constexpr int kMaxHalf = 8;

// The visual noise variance sigma_n^2 = 2, in the Q16 domain of the variances.
constexpr int32_t kSigmaNsq = 2 * 65536;
// libvmaf's guard against division by zero in the gain (sigma1_sq >= kSigmaNsq anyway).
constexpr double kGainEps = 65536 * 1.0e-10;
constexpr double kGainLimitDefault = 100.0;
constexpr double kGainLimitEgl = 1.0;

// Columns per block (a multiple of 16). Rows are padded to a multiple of it.
constexpr int kBlock = 256;
// Margin kept on both sides of every buffered row, for the mirrored samples.
constexpr int kMargin = 16;
static_assert(kMargin >= kMaxHalf, "the margin must hold the mirrored samples");

// ----------------------------------------------------------------------------------------
// Fixed-point log2 (Q11), via a table of the top 16 significant bits.

inline int bitLength(uint64_t x) {  // x > 0
#if defined(_MSC_VER) && !defined(__clang__)
  unsigned long index;
  _BitScanReverse64(&index, x);
  return static_cast<int>(index) + 1;
#else
  return 64 - __builtin_clzll(x);
#endif
}

class Log2Table {
 public:
  Log2Table() {
    for (int i = 0; i < kSize; ++i) {
      // libvmaf uses round(log2f(i) * 2048). log2 correctly rounded to float gives the same
      // table as glibc's log2f on every entry, and does not depend on the libm's log2f.
      const float l = static_cast<float>(std::log2(static_cast<double>(kFirst + i)));
      table_[i] = static_cast<uint16_t>(std::round(l * 2048.0f));
    }
  }

  // log2(x) * 2048, for x >= 2^17: the top 16 bits index the table, the rest adds k * 2048.
  int32_t operator()(uint64_t x) const {
    const int k = bitLength(x) - 16;
    return table_[(x >> k) - kFirst] + 2048 * k;
  }

  // Entry i is log2(32768 + i) in Q11. One spare entry after the last lets the SIMD code
  // read every entry as the low half of a 32-bit load.
  const uint16_t* entries() const { return table_; }

  static constexpr int kFirst = 32768;
  static constexpr int kSize = 32768;

 private:
  uint16_t table_[kSize + 1] = {};
};

const Log2Table& log2Q11() {
  static const Log2Table table;  // immutable after its (thread-safe) construction
  return table;
}

// ----------------------------------------------------------------------------------------
// Small helpers

inline int roundUp(int x, int m) { return (x + m - 1) / m * m; }

// Mirror an index into [0, n) without repeating the edge sample. Valid for -n < i < 2n - 1.
inline int mirror(int i, int n) {
  if (i < 0) return -i;
  if (i >= n) return 2 * (n - 1) - i;
  return i;
}

// Fill `half` entries on each side of row[0..n) with its mirror image.
inline void mirrorPad(uint16_t* row, int n, int half) {
  for (int d = 1; d <= half; ++d) {
    row[-d] = row[d];
    row[n - 1 + d] = row[n - 1 - d];
  }
}

// (x + 2^(s-1)) >> s, or x when s == 0.
inline uint32_t roundShift(uint32_t x, int shift) {
  const uint32_t half = shift == 0 ? 0 : 1u << (shift - 1);
  return (x + half) >> shift;
}

// Every 16-bit stream that goes through the filters is stored "biased": x ^ 0x8000, i.e.
// x - 32768 as an int16, the operand format of a signed 16-bit multiply-add.
constexpr uint16_t kBias16 = 0x8000;
inline uint16_t biased(uint32_t x) { return static_cast<uint16_t>(x) ^ kBias16; }

// ----------------------------------------------------------------------------------------
// The filter kernel
//
// out[i] = sum_d taps[d] * (up[d][i] + down[d][i]) for the kBlock lanes of a block, with the
// filter of scale S, on biased streams; up[0] == down[0] is the centre. Vertical filtering
// passes row pointers, horizontal filtering passes row - d and row + d. Exact: the unbiased
// result always fits 32 bits. With biased operands
//   sum t * (x - 32768) = sum t * x - 32768 * 65536 = sum t * x - 2^31  (mod 2^32),
// so flipping bit 31 of the signed sum gives the unsigned result. The SIMD versions pair the
// centre sample with itself against taps[0] / 2 (every centre tap is even; halving brings
// 43728 into int16 range).

template <int S>
inline void filterBlockScalar(const uint16_t* const* up, const uint16_t* const* down,
                              uint32_t* __restrict out) {
  constexpr Filter f = kFilters[S];
  for (int i = 0; i < kBlock; ++i) {
    uint32_t acc = uint32_t(f.taps[0]) * (up[0][i] ^ kBias16);
    for (int d = 1; d <= f.half; ++d) {
      acc += uint32_t(f.taps[d]) * (up[d][i] ^ kBias16) +
             uint32_t(f.taps[d]) * (down[d][i] ^ kBias16);
    }
    out[i] = acc;
  }
}

#if defined(VMAFS_VIF_SSE2)
template <int S>
inline void filterBlockSse2(const uint16_t* const* up, const uint16_t* const* down,
                            uint32_t* __restrict out) {
  constexpr Filter f = kFilters[S];
  static_assert(f.taps[0] % 2 == 0, "the centre tap must be even");
  const __m128i flip = _mm_set1_epi32(static_cast<int32_t>(0x80000000u));
  __m128i taps[f.half + 1];
  taps[0] = _mm_set1_epi16(static_cast<int16_t>(f.taps[0] / 2));
  for (int d = 1; d <= f.half; ++d) {
    taps[d] = _mm_set1_epi16(static_cast<int16_t>(f.taps[d]));
  }
  for (int i = 0; i < kBlock; i += 8) {
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(up[0] + i));
    __m128i lo = _mm_madd_epi16(_mm_unpacklo_epi16(c, c), taps[0]);
    __m128i hi = _mm_madd_epi16(_mm_unpackhi_epi16(c, c), taps[0]);
    for (int d = 1; d <= f.half; ++d) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(up[d] + i));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(down[d] + i));
      lo = _mm_add_epi32(lo, _mm_madd_epi16(_mm_unpacklo_epi16(a, b), taps[d]));
      hi = _mm_add_epi32(hi, _mm_madd_epi16(_mm_unpackhi_epi16(a, b), taps[d]));
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_xor_si128(lo, flip));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i + 4), _mm_xor_si128(hi, flip));
  }
}
#endif

#if defined(VMAFS_VIF_AVX2)
// kAlongRow: the taps are row[i - d] and row[i + d] of up[0] (constant offsets, no pointer
// table), instead of up[d][i] and down[d][i].
template <int S, bool kAlongRow>
__attribute__((target("avx2"))) void filterBlockAvx2(const uint16_t* const* up,
                                                     const uint16_t* const* down,
                                                     uint32_t* __restrict out) {
  constexpr Filter f = kFilters[S];
  const __m256i flip = _mm256_set1_epi32(static_cast<int32_t>(0x80000000u));
  __m256i taps[f.half + 1];
  taps[0] = _mm256_set1_epi16(static_cast<int16_t>(f.taps[0] / 2));
  for (int d = 1; d <= f.half; ++d) {
    taps[d] = _mm256_set1_epi16(static_cast<int16_t>(f.taps[d]));
  }
  const uint16_t* row = up[0];
  for (int i = 0; i < kBlock; i += 16) {
    // unpacklo/hi work per 128-bit lane: lo holds lanes 0-3 and 8-11, hi 4-7 and 12-15.
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + i));
    __m256i lo = _mm256_madd_epi16(_mm256_unpacklo_epi16(c, c), taps[0]);
    __m256i hi = _mm256_madd_epi16(_mm256_unpackhi_epi16(c, c), taps[0]);
    for (int d = 1; d <= f.half; ++d) {
      const uint16_t* pa;
      const uint16_t* pb;
      if constexpr (kAlongRow) {
        pa = row + i - d;
        pb = row + i + d;
      } else {
        pa = up[d] + i;
        pb = down[d] + i;
      }
      const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pa));
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb));
      lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(a, b), taps[d]));
      hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(a, b), taps[d]));
    }
    lo = _mm256_xor_si256(lo, flip);
    hi = _mm256_xor_si256(hi, flip);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm256_permute2x128_si256(lo, hi, 0x20));  // lanes 0-7
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i + 8),
                        _mm256_permute2x128_si256(lo, hi, 0x31));  // lanes 8-15
  }
}
// The AVX-512 kernels' one step that AVX-512 VNNI does differently: sum + madd(pairs, taps),
// the same wrapping 32-bit sum either way. VNNI's vpdpwssd does it in one instruction; the
// step without it is compiled for a target that cannot contain vpdpwssd (a compiler may fuse
// madd and add into it where VNNI is enabled), so the copies for CPUs without VNNI stay
// free of it. The kernels below are written once over the step; their ISA entry points are
// `flatten`, which inlines the step into them (it cannot be inlined into the body: the
// body's target has no VNNI).
struct MaddAdd {
  __attribute__((target("avx512f,avx512bw"))) static inline __m512i step(__m512i sum, __m512i pairs, __m512i taps) {
    return _mm512_add_epi32(sum, _mm512_madd_epi16(pairs, taps));
  }
};
struct Dpwssd {
  __attribute__((target("avx512f,avx512bw,avx512vnni"))) static inline __m512i step(__m512i sum, __m512i pairs, __m512i taps) {
    return _mm512_dpwssd_epi32(sum, pairs, taps);
  }
};

// filterBlockAvx2 with 32 lanes (AVX-512 BW). unpacklo/hi work per 128-bit lane: lo holds
// lanes 0-3, 8-11, 16-19, 24-27, hi the others; two permutes put them back in order.
template <int S, bool kAlongRow, class Acc>
__attribute__((target("avx512f,avx512bw"))) inline void filterBlock512(const uint16_t* const* up,
                                                                       const uint16_t* const* down,
                                                                       uint32_t* __restrict out) {
  constexpr Filter f = kFilters[S];
  const __m512i flip = _mm512_set1_epi32(static_cast<int32_t>(0x80000000u));
  const __m512i first = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
  const __m512i second = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
  __m512i taps[f.half + 1];
  taps[0] = _mm512_set1_epi16(static_cast<int16_t>(f.taps[0] / 2));
  for (int d = 1; d <= f.half; ++d) taps[d] = _mm512_set1_epi16(static_cast<int16_t>(f.taps[d]));
  const uint16_t* row = up[0];
  for (int i = 0; i < kBlock; i += 32) {
    const __m512i c = _mm512_loadu_si512(row + i);
    __m512i lo = _mm512_madd_epi16(_mm512_unpacklo_epi16(c, c), taps[0]);
    __m512i hi = _mm512_madd_epi16(_mm512_unpackhi_epi16(c, c), taps[0]);
    for (int d = 1; d <= f.half; ++d) {
      const __m512i a = _mm512_loadu_si512(kAlongRow ? row + i - d : up[d] + i);
      const __m512i b = _mm512_loadu_si512(kAlongRow ? row + i + d : down[d] + i);
      lo = Acc::step(lo, _mm512_unpacklo_epi16(a, b), taps[d]);
      hi = Acc::step(hi, _mm512_unpackhi_epi16(a, b), taps[d]);
    }
    lo = _mm512_xor_si512(lo, flip);
    hi = _mm512_xor_si512(hi, flip);
    _mm512_storeu_si512(out + i, _mm512_permutex2var_epi64(lo, first, hi));
    _mm512_storeu_si512(out + i + 16, _mm512_permutex2var_epi64(lo, second, hi));
  }
}
template <int S, bool kAlongRow>
__attribute__((target("avx512f,avx512bw"), flatten)) void filterBlockAvx512(const uint16_t* const* up,
                                                                            const uint16_t* const* down,
                                                                            uint32_t* __restrict out) {
  filterBlock512<S, kAlongRow, MaddAdd>(up, down, out);
}
template <int S, bool kAlongRow>
__attribute__((target("avx512f,avx512bw,avx512vnni"), flatten)) void filterBlockAvx512Vnni(
    const uint16_t* const* up, const uint16_t* const* down, uint32_t* __restrict out) {
  filterBlock512<S, kAlongRow, Dpwssd>(up, down, out);
}
#endif

// The kernel variants the build and the CPU allow (under cpu_features.h's cap).
enum class Isa { kScalar, kSse2, kAvx2, kAvx512, kAvx512Vnni };

Isa bestIsa() {
  const IsaLevel level = activeIsa();
#if defined(VMAFS_VIF_AVX2)
  if (level >= IsaLevel::kAvx512Vnni) return Isa::kAvx512Vnni;
  if (level >= IsaLevel::kAvx512) return Isa::kAvx512;
  if (level >= IsaLevel::kAvx2) return Isa::kAvx2;
#endif
#if defined(VMAFS_VIF_SSE2)
  if (level >= IsaLevel::kBaseline) return Isa::kSse2;
#endif
  (void)level;
  return Isa::kScalar;
}

template <int S>
inline void filterBlock(Isa isa, const uint16_t* const* up, const uint16_t* const* down,
                        uint32_t* out) {
#if defined(VMAFS_VIF_AVX2)
  if (isa == Isa::kAvx512Vnni) return filterBlockAvx512Vnni<S, false>(up, down, out);
  if (isa == Isa::kAvx512) return filterBlockAvx512<S, false>(up, down, out);
  if (isa == Isa::kAvx2) return filterBlockAvx2<S, false>(up, down, out);
#endif
#if defined(VMAFS_VIF_SSE2)
  if (isa != Isa::kScalar) return filterBlockSse2<S>(up, down, out);
#endif
  (void)isa;
  filterBlockScalar<S>(up, down, out);
}

// filterBlock along a row: taps at row[i - d] and row[i + d].
template <int S>
inline void filterAlongRow(Isa isa, const uint16_t* row, uint32_t* out) {
  constexpr int kHalf = kFilters[S].half;
#if defined(VMAFS_VIF_AVX2)
  if (isa == Isa::kAvx512Vnni) return filterBlockAvx512Vnni<S, true>(&row, &row, out);
  if (isa == Isa::kAvx512) return filterBlockAvx512<S, true>(&row, &row, out);
  if (isa == Isa::kAvx2) return filterBlockAvx2<S, true>(&row, &row, out);
#endif
  const uint16_t* left[kHalf + 1];
  const uint16_t* right[kHalf + 1];
  for (int d = 0; d <= kHalf; ++d) {
    left[d] = row - d;
    right[d] = row + d;
  }
  filterBlock<S>(isa, left, right, out);
}

// ----------------------------------------------------------------------------------------
// Horizontal filtering, de-interleaved
//
// Along a row the two samples of a madd pair can be neighbours instead of the mirror pair
// (row[x - d], row[x + d]): then one unaligned load gives the pairs of 16 (AVX-512) or 8
// (AVX2) outputs of the same parity, with no unpacking. Output x takes the pairs at offsets
// (2k - half, 2k - half + 1), k = 0..half, the last one's second tap 0, so that even and odd
// outputs come out in separate vectors. They are stored apart, out[0, kBlock/2) the even
// columns of the block and out[kBlock/2, kBlock) the odd ones; the consumers (per-pixel sums,
// down-sampling) either do not depend on the order or want the even columns only. The sum
// is the same as filterBlock's modulo 2^32 (the extra tap multiplies a defined sample by 0).
// Every tap must fit int16: scale 3's centre tap (43728) does not, so scale 3 keeps the
// mirror-pair kernel and is de-interleaved afterwards.
constexpr int kHalfBlock = kBlock / 2;

// The tap pair of madd k: (taps[|2k - half|], taps[|2k - half + 1|] or 0 past the end).
template <int S>
constexpr uint32_t pairTaps(int k) {
  constexpr Filter f = kFilters[S];
  const int o0 = 2 * k - f.half;
  const int o1 = o0 + 1;
  const uint32_t t0 = f.taps[o0 < 0 ? -o0 : o0];
  const uint32_t t1 = o1 > f.half ? 0 : f.taps[o1 < 0 ? -o1 : o1];
  return (t1 << 16) | t0;
}

template <int S>
constexpr bool pairTapsFitInt16() {
  for (int d = 0; d <= kFilters[S].half; ++d) {
    if (kFilters[S].taps[d] > 32767) return false;
  }
  return true;
}

// Portable and SSE2: the in-order kernel, then the columns split by parity.
template <int S, bool kOdd>
inline void splitColumns(const uint32_t* __restrict acc, uint32_t* __restrict out) {
  for (int i = 0; i < kHalfBlock; ++i) out[i] = acc[2 * i];
  if (kOdd) {
    for (int i = 0; i < kHalfBlock; ++i) out[kHalfBlock + i] = acc[2 * i + 1];
  }
}

#if defined(VMAFS_VIF_AVX2)
template <int S, bool kOdd>
__attribute__((target("avx2"))) void filterRowSplitAvx2(const uint16_t* row,
                                                        uint32_t* __restrict out) {
  static_assert(pairTapsFitInt16<S>(), "every tap must fit int16");
  constexpr int kPairs = kFilters[S].half + 1;
  const __m256i flip = _mm256_set1_epi32(static_cast<int32_t>(0x80000000u));
  __m256i taps[kPairs];
  for (int k = 0; k < kPairs; ++k) taps[k] = _mm256_set1_epi32(static_cast<int32_t>(pairTaps<S>(k)));
  const uint16_t* start = row - kFilters[S].half;
  for (int i = 0; i < kBlock; i += 16) {
    __m256i even = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(start + i)), taps[0]);
    __m256i odd = kOdd ? _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(start + i + 1)), taps[0])
                       : even;
    for (int k = 1; k < kPairs; ++k) {
      const uint16_t* p = start + i + 2 * k;
      even = _mm256_add_epi32(even, _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), taps[k]));
      if (kOdd) {
        odd = _mm256_add_epi32(odd, _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 1)), taps[k]));
      }
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i / 2), _mm256_xor_si256(even, flip));
    if (kOdd) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + kHalfBlock + i / 2), _mm256_xor_si256(odd, flip));
    }
  }
}

// filterRowSplitAvx2 with 32 lanes, over the step (see MaddAdd).
template <int S, bool kOdd, class Acc>
__attribute__((target("avx512f,avx512bw"))) inline void filterRowSplit512(const uint16_t* row,
                                                                          uint32_t* __restrict out) {
  static_assert(pairTapsFitInt16<S>(), "every tap must fit int16");
  constexpr int kPairs = kFilters[S].half + 1;
  const __m512i flip = _mm512_set1_epi32(static_cast<int32_t>(0x80000000u));
  __m512i taps[kPairs];
  for (int k = 0; k < kPairs; ++k) taps[k] = _mm512_set1_epi32(static_cast<int32_t>(pairTaps<S>(k)));
  const uint16_t* start = row - kFilters[S].half;
  for (int i = 0; i < kBlock; i += 32) {
    __m512i even = _mm512_madd_epi16(_mm512_loadu_si512(start + i), taps[0]);
    __m512i odd = kOdd ? _mm512_madd_epi16(_mm512_loadu_si512(start + i + 1), taps[0]) : even;
    for (int k = 1; k < kPairs; ++k) {
      const uint16_t* p = start + i + 2 * k;
      even = Acc::step(even, _mm512_loadu_si512(p), taps[k]);
      if (kOdd) odd = Acc::step(odd, _mm512_loadu_si512(p + 1), taps[k]);
    }
    _mm512_storeu_si512(out + i / 2, _mm512_xor_si512(even, flip));
    if (kOdd) _mm512_storeu_si512(out + kHalfBlock + i / 2, _mm512_xor_si512(odd, flip));
  }
}
template <int S, bool kOdd>
__attribute__((target("avx512f,avx512bw"), flatten)) void filterRowSplitAvx512(const uint16_t* row,
                                                                               uint32_t* __restrict out) {
  filterRowSplit512<S, kOdd, MaddAdd>(row, out);
}
template <int S, bool kOdd>
__attribute__((target("avx512f,avx512bw,avx512vnni"), flatten)) void filterRowSplitAvx512Vnni(
    const uint16_t* row, uint32_t* __restrict out) {
  filterRowSplit512<S, kOdd, Dpwssd>(row, out);
}
#endif

// One block of a row (kBlock columns from row[0], with `half` readable samples before it and
// half + 1 after), filtered horizontally: out[0, kBlock/2) the even columns, and with kOdd
// out[kBlock/2, kBlock) the odd ones.
template <int S, bool kOdd>
inline void filterAlongRowSplit(Isa isa, const uint16_t* row, uint32_t* out) {
#if defined(VMAFS_VIF_AVX2)
  if constexpr (pairTapsFitInt16<S>()) {
    if (isa == Isa::kAvx512Vnni) return filterRowSplitAvx512Vnni<S, kOdd>(row, out);
    if (isa == Isa::kAvx512) return filterRowSplitAvx512<S, kOdd>(row, out);
    if (isa == Isa::kAvx2) return filterRowSplitAvx2<S, kOdd>(row, out);
  }
#endif
  uint32_t acc[kBlock];
  filterAlongRow<S>(isa, row, acc);
  splitColumns<S, kOdd>(acc, out);
}

// ----------------------------------------------------------------------------------------
// Row loops (free functions so that __restrict lets the compiler vectorize them)

// Ring streams of one image row: samples and the low 16 bits of their products.
template <typename Sample>
void loadSamplesAndProducts(const Sample* __restrict a, const Sample* __restrict b, int w,
                            uint16_t* __restrict ra, uint16_t* __restrict rb,
                            uint16_t* __restrict aa, uint16_t* __restrict bb,
                            uint16_t* __restrict ab) {
  for (int x = 0; x < w; ++x) {
    const uint32_t va = a[x], vb = b[x];
    ra[x] = biased(va);
    rb[x] = biased(vb);
    aa[x] = biased(va * va);
    bb[x] = biased(vb * vb);
    ab[x] = biased(va * vb);
  }
}

// The high 16 bits of the products, for samples wider than 8 bits.
template <typename Sample>
void loadProductsHigh(const Sample* __restrict a, const Sample* __restrict b, int w,
                      uint16_t* __restrict aa, uint16_t* __restrict bb,
                      uint16_t* __restrict ab) {
  for (int x = 0; x < w; ++x) {
    const uint32_t va = a[x], vb = b[x];
    aa[x] = biased((va * va) >> 16);
    bb[x] = biased((vb * vb) >> 16);
    ab[x] = biased((va * vb) >> 16);
  }
}

// A vertically filtered mean, rounded, as a biased stream.
void finishMean(const uint32_t* __restrict acc, int shift, uint16_t* __restrict out) {
  const uint32_t half = shift == 0 ? 0 : 1u << (shift - 1);
  for (int i = 0; i < kBlock; ++i) out[i] = biased((acc[i] + half) >> shift);
}

// A vertically filtered second moment as biased high and low 16-bit streams. For wide
// input it is (hi * 2^16 + lo) >>r q truncated to 32 bits like libvmaf's, computed in 32
// bits (hi * 2^16 is a multiple of 2^q, q <= 16); 8-bit input has no high part and q = 0.
void finishMoment(const uint32_t* __restrict lo, const uint32_t* __restrict hi, bool wide,
                  int q, uint16_t* __restrict outHi, uint16_t* __restrict outLo) {
  if (!wide) {
    for (int i = 0; i < kBlock; ++i) {
      outHi[i] = biased(lo[i] >> 16);
      outLo[i] = biased(lo[i]);
    }
    return;
  }
  const uint32_t half = 1u << (q - 1);
  const int up = 16 - q;
  for (int i = 0; i < kBlock; ++i) {
    const uint32_t m = (hi[i] << up) + ((lo[i] + half) >> q);
    outHi[i] = biased(m >> 16);
    outLo[i] = biased(m);
  }
}

// The even columns of a horizontally filtered block (filterAlongRowSplit's first half),
// rounded to 16 bits: n down-sampled samples.
void keepEvenColumns(const uint32_t* __restrict even, int n, uint16_t* __restrict out) {
  for (int i = 0; i < n; ++i) out[i] = static_cast<uint16_t>(roundShift(even[i], 16));
}

// Q32 product of two filtered means, rounded to Q16.
inline uint32_t meanProduct(uint32_t a, uint32_t b) {
  return static_cast<uint32_t>((uint64_t(a) * b + 0x80000000u) >> 32);
}

// Local variances and covariance from the horizontally filtered streams. A filtered
// second moment is (hi * 2^16 + lo + 2^15) >> 16, done exactly in 32 bits. The
// subtractions wrap in 32 bits and are read back as signed, like libvmaf's.
void localMoments(const uint32_t* __restrict mu1, const uint32_t* __restrict mu2,
                  const uint32_t* __restrict xxHi, const uint32_t* __restrict xxLo,
                  const uint32_t* __restrict yyHi, const uint32_t* __restrict yyLo,
                  const uint32_t* __restrict xyHi, const uint32_t* __restrict xyLo,
                  int32_t* __restrict sigma1Sq, int32_t* __restrict sigma2Sq,
                  int32_t* __restrict sigma12) {
  for (int i = 0; i < kBlock; ++i) {
    const uint32_t xx = xxHi[i] + ((xxLo[i] + 32768u) >> 16);
    const uint32_t yy = yyHi[i] + ((yyLo[i] + 32768u) >> 16);
    const uint32_t xy = xyHi[i] + ((xyLo[i] + 32768u) >> 16);
    sigma1Sq[i] = static_cast<int32_t>(xx - meanProduct(mu1[i], mu1[i]));
    sigma2Sq[i] = std::max(static_cast<int32_t>(yy - meanProduct(mu2[i], mu2[i])), 0);
    sigma12[i] = static_cast<int32_t>(xy - meanProduct(mu1[i], mu2[i]));
  }
}

// ----------------------------------------------------------------------------------------
// The per-pixel contribution (everything after the local moments)

struct ScaleSums {
  int64_t numLog = 0;
  int64_t numLogEgl = 0;
  int64_t denLog = 0;
  int64_t numNonLog = 0;
  int64_t denNonLog = 0;
};

// Adds log2((base + gl^2 * sigma1_sq) / base) in Q11 for both gain limits.
inline void addGainTerms(int32_t sigma1Sq, int32_t sigma2Sq, int32_t sigma12,
                         const Log2Table& log2q, ScaleSums& sums) {
  const double gain = sigma12 / (sigma1Sq + kGainEps);
  const double explained = gain * sigma12;  // rounded on its own
  const double residual = sigma2Sq - explained;
  const int32_t svSq = std::max(static_cast<int32_t>(residual), 0);
  const uint32_t base = static_cast<uint32_t>(svSq) + kSigmaNsq;
  const int32_t logBase = log2q(base);

  const double gDefault = std::min(gain, kGainLimitDefault);
  const double gDefaultSq = gDefault * gDefault;
  const double signalDefault = gDefaultSq * sigma1Sq;

  const int32_t termDefault =
      log2q(static_cast<uint64_t>(static_cast<int64_t>(signalDefault) + base)) - logBase;
  sums.numLog += termDefault;

  // Gain limit 1, with the same operations where they give the same values: below the limit
  // min() picks the same gain, so the term is the default one; above it gl = 1 and
  // (1 * 1) * sigma1_sq is sigma1_sq exactly, so the product needs no doubles.
  if (gain <= kGainLimitEgl) {
    sums.numLogEgl += termDefault;
  } else {
    sums.numLogEgl += log2q(static_cast<uint64_t>(static_cast<int64_t>(sigma1Sq) + base)) - logBase;
  }
}

inline void addPixel(int32_t sigma1Sq, int32_t sigma2Sq, int32_t sigma12,
                     const Log2Table& log2q, ScaleSums& sums) {
  if (sigma1Sq < kSigmaNsq) {
    // Flat reference: libvmaf scores it in the linear domain.
    sums.numNonLog += sigma2Sq;
    sums.denNonLog += 1;
    return;
  }
  sums.denLog += log2q(static_cast<uint32_t>(sigma1Sq) + static_cast<uint32_t>(kSigmaNsq)) -
                 17 * 2048;
  if (sigma12 > 0 && sigma2Sq > 0) addGainTerms(sigma1Sq, sigma2Sq, sigma12, log2q, sums);
}

#if defined(VMAFS_VIF_AVX2)
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 headers start some conversions from a self-initialised "undefined"
// register, which -Wmaybe-uninitialized reports once inlined; the lanes are all written.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
// The same contributions for whole groups of pixels: 8 (AVX-512) or 4 (AVX2) lanes of
// binary64 and int64, the same IEEE operations in the same order (division, products,
// truncations), so every lane gives what addPixel gives. log2q in SIMD: floor(log2 x) is the
// exponent of x converted to a double, exact because every x here is below 2^53 (the largest,
// gl^2 * sigma1_sq + base, is below 100^2 * 2^31 + 2^32); the table is read with a gather,
// masked to the lanes that need it. Each returns how many pixels it handled (a multiple of its
// width); addPixel does the rest.

__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"))) inline __m256i log2qAvx512(
    __m512i x, __mmask8 lanes, const uint16_t* table) {
  const __m512i k = _mm512_sub_epi64(_mm512_srli_epi64(_mm512_castpd_si512(_mm512_cvtepu64_pd(x)), 52),
                                     _mm512_set1_epi64(1023 + 15));  // bit length - 16
  const __m512i index = _mm512_sub_epi64(_mm512_srlv_epi64(x, k), _mm512_set1_epi64(32768));
  const __m256i entry = _mm512_mask_i64gather_epi32(_mm256_setzero_si256(), lanes, index, table, 2);
  return _mm256_add_epi32(_mm256_and_si256(entry, _mm256_set1_epi32(0xFFFF)),
                          _mm256_slli_epi32(_mm512_cvtepi64_epi32(k), 11));
}

__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"))) int addPixelsAvx512(
    const int32_t* s1p, const int32_t* s2p, const int32_t* s12p, int n, const uint16_t* table,
    ScaleSums& sums) {
  const __m256i zero = _mm256_setzero_si256();
  const __m256i nsq = _mm256_set1_epi32(kSigmaNsq);
  const __m256i logOffset = _mm256_set1_epi32(17 * 2048);
  const __m512d eps = _mm512_set1_pd(kGainEps);
  const __m512d limit = _mm512_set1_pd(kGainLimitDefault);
  const __m512d limitEgl = _mm512_set1_pd(kGainLimitEgl);
  __m512i numLog = _mm512_setzero_si512(), numLogEgl = numLog, denLog = numLog, numNonLog = numLog;
  int64_t flatCount = 0;
  const int end = n - n % 8;
  for (int i = 0; i < end; i += 8) {
    const __m256i s1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s1p + i));
    const __m256i s2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s2p + i));
    const __m256i s12 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s12p + i));
    const __mmask8 flat = _mm256_cmplt_epi32_mask(s1, nsq);
    numNonLog = _mm512_mask_add_epi64(numNonLog, flat, numNonLog, _mm512_cvtepi32_epi64(s2));
    flatCount += __builtin_popcount(flat);
    const __mmask8 logged = static_cast<__mmask8>(~flat);
    if (logged == 0) continue;
    const __m512i s1Wide = _mm512_cvtepi32_epi64(s1);
    const __m256i den = log2qAvx512(_mm512_add_epi64(s1Wide, _mm512_set1_epi64(kSigmaNsq)), logged, table);
    denLog = _mm512_mask_add_epi64(denLog, logged, denLog,
                                   _mm512_cvtepi32_epi64(_mm256_sub_epi32(den, logOffset)));
    const __mmask8 gained = _mm256_mask_cmpgt_epi32_mask(logged, s12, zero) &
                            _mm256_mask_cmpgt_epi32_mask(logged, s2, zero);
    if (gained == 0) continue;
    const __m512d d1 = _mm512_cvtepi32_pd(s1);
    const __m512d d12 = _mm512_cvtepi32_pd(s12);
    const __m512d gain = _mm512_div_pd(d12, _mm512_add_pd(d1, eps));
    const __m512d explained = _mm512_mul_pd(gain, d12);
    const __m512d residual = _mm512_sub_pd(_mm512_cvtepi32_pd(s2), explained);
    const __m256i svSq = _mm256_max_epi32(_mm512_cvttpd_epi32(residual), zero);
    const __m512i base = _mm512_cvtepu32_epi64(_mm256_add_epi32(svSq, nsq));
    const __m256i logBase = log2qAvx512(base, gained, table);
    const __m512d g = _mm512_min_pd(gain, limit);
    const __m512i signal = _mm512_cvttpd_epi64(_mm512_mul_pd(_mm512_mul_pd(g, g), d1));
    const __m256i termDefault =
        _mm256_sub_epi32(log2qAvx512(_mm512_add_epi64(signal, base), gained, table), logBase);
    __m256i termEgl = termDefault;
    // Above gain 1 the limited gain is 1 and the signal is sigma1_sq itself.
    const __mmask8 above = _mm512_mask_cmp_pd_mask(gained, gain, limitEgl, _CMP_GT_OQ);
    if (above != 0) {
      const __m256i termAbove =
          _mm256_sub_epi32(log2qAvx512(_mm512_add_epi64(s1Wide, base), above, table), logBase);
      termEgl = _mm256_mask_blend_epi32(above, termDefault, termAbove);
    }
    numLog = _mm512_mask_add_epi64(numLog, gained, numLog, _mm512_cvtepi32_epi64(termDefault));
    numLogEgl = _mm512_mask_add_epi64(numLogEgl, gained, numLogEgl, _mm512_cvtepi32_epi64(termEgl));
  }
  sums.numLog += _mm512_reduce_add_epi64(numLog);
  sums.numLogEgl += _mm512_reduce_add_epi64(numLogEgl);
  sums.denLog += _mm512_reduce_add_epi64(denLog);
  sums.numNonLog += _mm512_reduce_add_epi64(numNonLog);
  sums.denNonLog += flatCount;
  return end;
}

// AVX2 has no conversions between int64 and double: for 0 <= x < 2^52, x | bits(2^52) read
// as a double is 2^52 + x exactly, and an integral double t in that range is the low bits
// of t + 2^52.
__attribute__((target("avx2"))) inline __m128i log2qAvx2(__m256i x, __m128i lanes,
                                                         const uint16_t* table) {
  const __m256i magic = _mm256_set1_epi64x(0x4330000000000000LL);
  const __m256d asDouble = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(x, magic)),
                                         _mm256_castsi256_pd(magic));
  const __m256i k = _mm256_sub_epi64(_mm256_srli_epi64(_mm256_castpd_si256(asDouble), 52),
                                     _mm256_set1_epi64x(1023 + 15));
  const __m256i index = _mm256_sub_epi64(_mm256_srlv_epi64(x, k), _mm256_set1_epi64x(32768));
  const __m128i entry = _mm256_mask_i64gather_epi32(
      _mm_setzero_si128(), reinterpret_cast<const int*>(table), index, lanes, 2);
  const __m128i k32 = _mm256_castsi256_si128(
      _mm256_permutevar8x32_epi32(k, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6)));
  return _mm_add_epi32(_mm_and_si128(entry, _mm_set1_epi32(0xFFFF)), _mm_slli_epi32(k32, 11));
}

__attribute__((target("avx2"))) inline __m256i maskedWiden(__m128i value, __m128i lanes) {
  return _mm256_cvtepi32_epi64(_mm_and_si128(value, lanes));
}

__attribute__((target("avx2"))) int addPixelsAvx2(const int32_t* s1p, const int32_t* s2p,
                                                  const int32_t* s12p, int n,
                                                  const uint16_t* table, ScaleSums& sums) {
  const __m128i zero = _mm_setzero_si128();
  const __m128i nsq = _mm_set1_epi32(kSigmaNsq);
  const __m128i logOffset = _mm_set1_epi32(17 * 2048);
  const __m256d eps = _mm256_set1_pd(kGainEps);
  const __m256d limit = _mm256_set1_pd(kGainLimitDefault);
  const __m256d limitEgl = _mm256_set1_pd(kGainLimitEgl);
  const __m256d magic = _mm256_set1_pd(4503599627370496.0);  // 2^52
  __m256i numLog = _mm256_setzero_si256(), numLogEgl = numLog, denLog = numLog, numNonLog = numLog;
  int64_t flatCount = 0;
  const int end = n - n % 4;
  for (int i = 0; i < end; i += 4) {
    const __m128i s1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s1p + i));
    const __m128i s2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s2p + i));
    const __m128i s12 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s12p + i));
    const __m128i flat = _mm_cmplt_epi32(s1, nsq);
    numNonLog = _mm256_add_epi64(numNonLog, maskedWiden(s2, flat));
    const int flatBits = _mm_movemask_ps(_mm_castsi128_ps(flat));
    flatCount += __builtin_popcount(flatBits);
    if (flatBits == 0xF) continue;
    const __m128i logged = _mm_xor_si128(flat, _mm_set1_epi32(-1));
    const __m256i s1Wide = _mm256_cvtepi32_epi64(s1);
    const __m128i den = log2qAvx2(_mm256_add_epi64(s1Wide, _mm256_set1_epi64x(kSigmaNsq)), logged, table);
    denLog = _mm256_add_epi64(denLog, maskedWiden(_mm_sub_epi32(den, logOffset), logged));
    const __m128i gained = _mm_and_si128(
        logged, _mm_and_si128(_mm_cmpgt_epi32(s12, zero), _mm_cmpgt_epi32(s2, zero)));
    if (_mm_movemask_ps(_mm_castsi128_ps(gained)) == 0) continue;
    const __m256d d1 = _mm256_cvtepi32_pd(s1);
    const __m256d d12 = _mm256_cvtepi32_pd(s12);
    const __m256d gain = _mm256_div_pd(d12, _mm256_add_pd(d1, eps));
    const __m256d explained = _mm256_mul_pd(gain, d12);
    const __m256d residual = _mm256_sub_pd(_mm256_cvtepi32_pd(s2), explained);
    const __m128i svSq = _mm_max_epi32(_mm256_cvttpd_epi32(residual), zero);
    const __m256i base = _mm256_cvtepu32_epi64(_mm_add_epi32(svSq, nsq));
    const __m128i logBase = log2qAvx2(base, gained, table);
    const __m256d g = _mm256_min_pd(gain, limit);
    // The product is in [0, 2^45) in the lanes that count: truncate, then take its bits.
    const __m256d product = _mm256_round_pd(_mm256_mul_pd(_mm256_mul_pd(g, g), d1),
                                            _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256i signal = _mm256_sub_epi64(_mm256_castpd_si256(_mm256_add_pd(product, magic)),
                                            _mm256_castpd_si256(magic));
    const __m128i termDefault =
        _mm_sub_epi32(log2qAvx2(_mm256_add_epi64(signal, base), gained, table), logBase);
    __m128i termEgl = termDefault;
    const __m256d aboveWide = _mm256_cmp_pd(gain, limitEgl, _CMP_GT_OQ);
    const __m128i above = _mm_and_si128(
        gained, _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(
                    _mm256_castpd_si256(aboveWide), _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6))));
    if (_mm_movemask_ps(_mm_castsi128_ps(above)) != 0) {
      const __m128i termAbove =
          _mm_sub_epi32(log2qAvx2(_mm256_add_epi64(s1Wide, base), above, table), logBase);
      termEgl = _mm_blendv_epi8(termDefault, termAbove, above);
    }
    numLog = _mm256_add_epi64(numLog, maskedWiden(termDefault, gained));
    numLogEgl = _mm256_add_epi64(numLogEgl, maskedWiden(termEgl, gained));
  }
  alignas(32) int64_t lanes[4][4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes[0]), numLog);
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes[1]), numLogEgl);
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes[2]), denLog);
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes[3]), numNonLog);
  sums.numLog += lanes[0][0] + lanes[0][1] + lanes[0][2] + lanes[0][3];
  sums.numLogEgl += lanes[1][0] + lanes[1][1] + lanes[1][2] + lanes[1][3];
  sums.denLog += lanes[2][0] + lanes[2][1] + lanes[2][2] + lanes[2][3];
  sums.numNonLog += lanes[3][0] + lanes[3][1] + lanes[3][2] + lanes[3][3];
  sums.denNonLog += flatCount;
  return end;
}
#endif

// The contributions of n pixels, with the widest kernel the isa allows.
inline void addPixels(Isa isa, const int32_t* sigma1Sq, const int32_t* sigma2Sq,
                      const int32_t* sigma12, int n, const Log2Table& log2q, ScaleSums& sums) {
  int done = 0;
#if defined(VMAFS_VIF_AVX2)
  if (isa == Isa::kAvx512 || isa == Isa::kAvx512Vnni) {
    done = addPixelsAvx512(sigma1Sq, sigma2Sq, sigma12, n, log2q.entries(), sums);
  } else if (isa == Isa::kAvx2) {
    done = addPixelsAvx2(sigma1Sq, sigma2Sq, sigma12, n, log2q.entries(), sums);
  }
#endif
  (void)isa;
  for (int i = done; i < n; ++i) addPixel(sigma1Sq[i], sigma2Sq[i], sigma12[i], log2q, sums);
}

// ----------------------------------------------------------------------------------------
// Buffers

// Streams kept per input row in the ring. Products of 8-bit samples fit 16 bits: only the
// Lo streams are used then. Wider products are split in Hi and Lo halves.
enum RingStream { kRef, kDis, kRefSqLo, kDisSqLo, kCrossLo, kRefSqHi, kDisSqHi, kCrossHi,
                  kRingStreams };
// Streams of one vertically filtered row: the input of the horizontal pass.
enum RowStream { kMu1, kMu2, kXxHi, kXxLo, kYyHi, kYyLo, kXyHi, kXyLo, kRowStreams };

// All scratch memory of one frame, sized for scale 0. The row buffers are zeroed once, so
// the block tails past the image width always hold defined values.
class Workspace {
 public:
  Workspace(int w, int h) : width_(w), height_(h), stride_(kMargin + roundUp(w, kBlock) + kMargin) {
    const size_t ring = size_t(2 * kMaxHalf + 1) * kRingStreams * stride_;
    const size_t rows = size_t(kRowStreams + 2) * stride_;  // + 2 down-sampling rows
    rowBuf_.reset(new uint16_t[ring + rows]());
    ring_ = rowBuf_.get();
    rows_ = ring_ + ring;
    for (int s = 1; s < kVifScales; ++s) pyramidLen_ += size_t(w >> s) * size_t(h >> s);
    pyramid_.reset(new uint16_t[2 * pyramidLen_]);  // every sample is written before use
  }

  int width() const { return width_; }
  int height() const { return height_; }
  int stride() const { return stride_; }

  // Row of image row y in a ring of `slots` rows, stream s; column 0 is kMargin in.
  uint16_t* ringRow(int y, int slots, int s) const {
    return ring_ + (size_t(y % slots) * kRingStreams + s) * stride_ + kMargin;
  }
  // Vertically filtered row, stream s (kRowStreams, kRowStreams + 1: down-sampling rows).
  uint16_t* row(int s) const { return rows_ + size_t(s) * stride_ + kMargin; }
  // Scale s >= 1 images of ref (which = 0) and dis (which = 1), one after the other.
  uint16_t* pyramid(int which, size_t offset) const {
    return pyramid_.get() + which * pyramidLen_ + offset;
  }

 private:
  int width_, height_;
  int stride_;
  size_t pyramidLen_ = 0;
  std::unique_ptr<uint16_t[]> rowBuf_;
  std::unique_ptr<uint16_t[]> pyramid_;
  uint16_t* ring_;
  uint16_t* rows_;
};

// ----------------------------------------------------------------------------------------
// One scale

// What one scale's pass needs besides its images.
struct ScaleParams {
  int w, h;
  int muShift;        // vertical rounding shift of the means
  int sqShift;        // vertical rounding shift of the second moments
  int downShift;      // vertical rounding shift of the down-sampling
  uint16_t* nextRef;  // down-sampled images ((w/2) x (h/2)); unused at scale 3
  uint16_t* nextDis;
  Isa isa;
};

// The pass over scale S: statistics with filter S, down-sampling with filter S+1.
// kWide: whether sample products need more than 16 bits (all but 8-bit scale 0).
template <typename Sample, bool kWide, int S>
class ScalePass {
  static constexpr int kHalf = kFilters[S].half;
  static constexpr int kSlots = 2 * kHalf + 1;
  static constexpr bool kDownsample = S + 1 < kVifScales;
  static constexpr int kNext = kDownsample ? S + 1 : S;
  static constexpr int kRingUsed = kWide ? kRingStreams : kCrossLo + 1;

  // Ring rows (stream 0, column 0) of the taps at distance 0..half around an image row.
  struct TapRows {
    const uint16_t* up[kMaxHalf + 1];
    const uint16_t* down[kMaxHalf + 1];
  };

 public:
  ScalePass(const Sample* ref, const Sample* dis, const ScaleParams& p, const Workspace& ws)
      : ref_(ref), dis_(dis), p_(p), ws_(ws), log2q_(log2Q11()) {}

  ScaleSums run() {
    int loaded = 0;  // image rows [0, loaded) have been put in the ring
    for (int y = 0; y < p_.h; ++y) {
      for (const int last = std::min(p_.h - 1, y + kHalf); loaded <= last; ++loaded) {
        loadRow(loaded);
      }
      filterStatRow(y);
      accumulateStatRow();
      if (kDownsample && y % 2 == 0 && y / 2 < p_.h / 2) downsampleRow(y);
    }
    return sums_;
  }

 private:
  uint16_t* ring(int y, int s) const { return ws_.ringRow(y, kSlots, s); }

  void loadRow(int y) {
    const Sample* a = ref_ + size_t(y) * p_.w;
    const Sample* b = dis_ + size_t(y) * p_.w;
    loadSamplesAndProducts(a, b, p_.w, ring(y, kRef), ring(y, kDis), ring(y, kRefSqLo),
                           ring(y, kDisSqLo), ring(y, kCrossLo));
    if (kWide) {
      loadProductsHigh(a, b, p_.w, ring(y, kRefSqHi), ring(y, kDisSqHi), ring(y, kCrossHi));
    }
  }

  TapRows tapRows(int half, int y) const {
    TapRows t;
    for (int d = 0; d <= half; ++d) {
      t.up[d] = ring(mirror(y - d, p_.h), 0);
      t.down[d] = ring(mirror(y + d, p_.h), 0);
    }
    return t;
  }

  // The same rows moved to ring stream s and column x0.
  TapRows shifted(const TapRows& base, int half, int s, int x0) const {
    const ptrdiff_t offset = ptrdiff_t(s) * ws_.stride() + x0;
    TapRows t;
    for (int d = 0; d <= half; ++d) {
      t.up[d] = base.up[d] + offset;
      t.down[d] = base.down[d] + offset;
    }
    return t;
  }

  // Vertical pass for image row y into the kRowStreams rows, mirror-padded.
  void filterStatRow(int y) {
    const TapRows rows = tapRows(kHalf, y);
    for (int x0 = 0; x0 < p_.w; x0 += kBlock) {
      uint32_t acc[kRingStreams][kBlock];
      for (int s = 0; s < kRingUsed; ++s) {
        const TapRows t = shifted(rows, kHalf, s, x0);
        filterBlock<S>(p_.isa, t.up, t.down, acc[s]);
      }
      finishMean(acc[kRef], p_.muShift, ws_.row(kMu1) + x0);
      finishMean(acc[kDis], p_.muShift, ws_.row(kMu2) + x0);
      finishMoment(acc[kRefSqLo], acc[kRefSqHi], kWide, p_.sqShift, ws_.row(kXxHi) + x0,
                   ws_.row(kXxLo) + x0);
      finishMoment(acc[kDisSqLo], acc[kDisSqHi], kWide, p_.sqShift, ws_.row(kYyHi) + x0,
                   ws_.row(kYyLo) + x0);
      finishMoment(acc[kCrossLo], acc[kCrossHi], kWide, p_.sqShift, ws_.row(kXyHi) + x0,
                   ws_.row(kXyLo) + x0);
    }
    for (int k = 0; k < kRowStreams; ++k) mirrorPad(ws_.row(k), p_.w, kHalf);
  }

  // Horizontal pass over the filtered row, then the per-pixel contributions.
  void accumulateStatRow() {
    for (int x0 = 0; x0 < p_.w; x0 += kBlock) {
      uint32_t acc[kRowStreams][kBlock];
      for (int s = 0; s < kRowStreams; ++s) {
        filterAlongRowSplit<S, true>(p_.isa, ws_.row(s) + x0, acc[s]);
      }
      int32_t sigma1Sq[kBlock], sigma2Sq[kBlock], sigma12[kBlock];
      localMoments(acc[kMu1], acc[kMu2], acc[kXxHi], acc[kXxLo], acc[kYyHi], acc[kYyLo],
                   acc[kXyHi], acc[kXyLo], sigma1Sq, sigma2Sq, sigma12);
      // Even columns first, then odd: the sums are integers, the order does not matter.
      const int n = std::min(kBlock, p_.w - x0);
      addPixels(p_.isa, sigma1Sq, sigma2Sq, sigma12, (n + 1) / 2, log2q_, sums_);
      addPixels(p_.isa, sigma1Sq + kHalfBlock, sigma2Sq + kHalfBlock, sigma12 + kHalfBlock, n / 2,
                log2q_, sums_);
    }
  }

  // Low-pass image row y (even) with the next scale's filter and keep its even columns as
  // row y/2 of the next scale's images.
  void downsampleRow(int y) {
    constexpr Filter f = kFilters[kNext];
    const TapRows rows = tapRows(f.half, y);
    const int outW = p_.w / 2;
    for (int which = 0; which < 2; ++which) {
      uint16_t* row = ws_.row(kRowStreams + which);
      for (int x0 = 0; x0 < p_.w; x0 += kBlock) {
        uint32_t acc[kBlock];
        const TapRows t = shifted(rows, f.half, which == 0 ? kRef : kDis, x0);
        filterBlock<kNext>(p_.isa, t.up, t.down, acc);
        finishMean(acc, p_.downShift, row + x0);
      }
      mirrorPad(row, p_.w, f.half);

      // Only the even columns are kept, and only they are filtered (whole blocks of them).
      uint16_t* dst = (which == 0 ? p_.nextRef : p_.nextDis) + size_t(y / 2) * outW;
      for (int x0 = 0; x0 < p_.w; x0 += kBlock) {
        uint32_t acc[kBlock];
        filterAlongRowSplit<kNext, false>(p_.isa, row + x0, acc);
        keepEvenColumns(acc, std::min(kBlock / 2, outW - x0 / 2), dst + x0 / 2);
      }
    }
  }

  const Sample* ref_;
  const Sample* dis_;
  ScaleParams p_;
  const Workspace& ws_;
  const Log2Table& log2q_;
  ScaleSums sums_;
};

// ----------------------------------------------------------------------------------------
// Whole frame

void storeSums(const ScaleSums& sums, int scale, int64_t* stats) {
  int64_t* s = stats + kVifStatsPerScale * scale;
  s[kVifNumLog] = sums.numLog;
  s[kVifNumLogEgl] = sums.numLogEgl;
  s[kVifDenLog] = sums.denLog;
  s[kVifNumNonLog] = sums.numNonLog;
  s[kVifDenNonLog] = sums.denNonLog;
}

// The scratch memory of the frames of one size, kept per thread: a stream of frames then
// allocates (and faults in) nothing per frame. Nothing in it carries over into results:
// every sample a result depends on is written in the frame before it is read.
Workspace& workspaceFor(int w, int h) {
  thread_local std::unique_ptr<Workspace> cached;
  if (!cached || cached->width() != w || cached->height() != h) {
    cached.reset();
    cached.reset(new Workspace(w, h));
  }
  return *cached;
}

template <typename Sample>
void computeStats(const Sample* ref, const Sample* dis, int w, int h, int bitDepth, Isa isa,
                  int64_t* stats) {
  const Workspace& ws = workspaceFor(w, h);
  size_t offset = 0;  // of the current scale's image in the pyramid
  for (int s = 0; s < kVifScales; ++s) {
    ScaleParams p;
    p.w = w;
    p.h = h;
    // Scale 0's shifts bring the input to the Q16 domain of an 8-bit sample (means) and of
    // its square (second moments); the pyramid images are already in that domain.
    p.muShift = s == 0 ? bitDepth : 16;
    p.sqShift = s == 0 ? 2 * (bitDepth - 8) : 16;
    p.downShift = s == 0 ? bitDepth : 16;
    const size_t nextOffset = offset + (s == 0 ? 0 : size_t(w) * size_t(h));
    p.nextRef = ws.pyramid(0, nextOffset);
    p.nextDis = ws.pyramid(1, nextOffset);
    p.isa = isa;
    const uint16_t* pyrRef = ws.pyramid(0, offset);
    const uint16_t* pyrDis = ws.pyramid(1, offset);

    ScaleSums sums;
    switch (s) {
      case 0:
        sums = bitDepth == 8 ? ScalePass<Sample, false, 0>(ref, dis, p, ws).run()
                             : ScalePass<Sample, true, 0>(ref, dis, p, ws).run();
        break;
      case 1: sums = ScalePass<uint16_t, true, 1>(pyrRef, pyrDis, p, ws).run(); break;
      case 2: sums = ScalePass<uint16_t, true, 2>(pyrRef, pyrDis, p, ws).run(); break;
      default: sums = ScalePass<uint16_t, true, 3>(pyrRef, pyrDis, p, ws).run(); break;
    }
    storeSums(sums, s, stats);

    offset = nextOffset;
    w /= 2;
    h /= 2;
  }
}

void computeFrame(const LumaPlane& ref, const LumaPlane& dis, Isa isa, int64_t* stats) {
  if (ref.bitDepth == 8) {
    computeStats(static_cast<const uint8_t*>(ref.data), static_cast<const uint8_t*>(dis.data),
                 ref.width, ref.height, 8, isa, stats);
  } else {
    computeStats(static_cast<const uint16_t*>(ref.data), static_cast<const uint16_t*>(dis.data),
                 ref.width, ref.height, ref.bitDepth, isa, stats);
  }
}

// One copy of the whole frame computation per instruction set: flatten inlines the row loops
// (plain C++) into each copy, so that the compiler vectorizes them for that copy's target.
#if defined(__GNUC__) || defined(__clang__)
__attribute__((flatten))
#endif
void computeFrameBaseline(const LumaPlane& ref, const LumaPlane& dis, Isa isa, int64_t* stats) {
  computeFrame(ref, dis, isa, stats);
}

#if defined(VMAFS_VIF_AVX2)
__attribute__((target("avx2"), flatten)) void computeFrameAvx2(const LumaPlane& ref,
                                                                const LumaPlane& dis, Isa isa,
                                                                int64_t* stats) {
  computeFrame(ref, dis, isa, stats);
}

__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"), flatten)) void computeFrameAvx512(
    const LumaPlane& ref, const LumaPlane& dis, Isa isa, int64_t* stats) {
  computeFrame(ref, dis, isa, stats);
}

__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni"), flatten)) void
computeFrameAvx512Vnni(const LumaPlane& ref, const LumaPlane& dis, Isa isa, int64_t* stats) {
  computeFrame(ref, dis, isa, stats);
}
#endif

}  // namespace

void vifStats(const LumaPlane& ref, const LumaPlane& dis, int64_t* stats) {
  std::fill(stats, stats + kVifStatsLen, int64_t(0));
  if (ref.width < kVifMinWidth || ref.height < kVifMinHeight) return;
  const Isa isa = bestIsa();
#if defined(VMAFS_VIF_AVX2)
  if (isa == Isa::kAvx512Vnni) return computeFrameAvx512Vnni(ref, dis, isa, stats);
  if (isa == Isa::kAvx512) return computeFrameAvx512(ref, dis, isa, stats);
  if (isa == Isa::kAvx2) return computeFrameAvx2(ref, dis, isa, stats);
#endif
  computeFrameBaseline(ref, dis, isa, stats);
}

void vifFinish(const int64_t* stats, double out[8]) {
  for (int s = 0; s < kVifScales; ++s) {
    const int64_t* st = stats + kVifStatsPerScale * s;
    // libvmaf keeps num and den of each scale as float, and divides in float.
    const double nonLogNum = static_cast<double>(st[kVifDenNonLog]) -
                             (static_cast<double>(st[kVifNumNonLog]) / 16384.0) / 65025.0;
    const float den = static_cast<float>(static_cast<double>(st[kVifDenLog]) / 2048.0 +
                                         static_cast<double>(st[kVifDenNonLog]));
    const float num =
        static_cast<float>(static_cast<double>(st[kVifNumLog]) / 2048.0 + nonLogNum);
    const float numEgl =
        static_cast<float>(static_cast<double>(st[kVifNumLogEgl]) / 2048.0 + nonLogNum);
    const float score = num / den;
    const float scoreEgl = numEgl / den;
    out[s] = score;
    out[kVifScales + s] = scoreEgl;
  }
}

}  // namespace vmafs

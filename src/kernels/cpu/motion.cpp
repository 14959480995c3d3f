// Motion: see motion.h for the exact arithmetic.
#include "motion.h"

#include <algorithm>
#include <vector>

#include "cpu_features.h"

// On x86-64 with GCC or Clang: the row passes are also compiled for AVX2 and AVX-512 (target
// attributes, chosen at run time), and the horizontal pass has SIMD kernels. Every copy gives
// the same SAD: integer arithmetic only, exact in every width used.
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) && \
    !defined(VMAFS_MOTION_NO_AVX2)
#define VMAFS_MOTION_AVX2 1
#include <immintrin.h>
#endif

#if defined(__GNUC__) && !defined(__clang__)
// False positives of GCC 12 once everything is inlined into the per-ISA copies: the AVX-512
// headers start conversions from a self-initialised register, and reflect() keeps the edge
// columns' indices inside the row, which the bounds analysis cannot see.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Warray-bounds"
#endif

namespace vmafs {
namespace {

constexpr int32_t kF0 = kMotionFilter[0];  // outer taps
constexpr int32_t kF1 = kMotionFilter[1];  // inner taps
constexpr int32_t kF2 = kMotionFilter[2];  // centre tap

// Mirror without repeating the edge sample: -1 -> 1, n -> n - 2.
inline int reflect(int i, int n) {
  if (i < 0) return -i;
  if (i >= n) return 2 * n - i - 2;
  return i;
}

// Step 1 for one row: Y[x] = (vertical filter of P - C + 2^(bd-1)) >> bd.
// Acc is int32 for 8-bit samples (|sum| < 2^24), int64 for 16-bit storage.
// Returns non-zero when some Y is non-zero.
template <typename Sample, typename Acc>
int32_t verticalRow(const Sample* prev, const Sample* cur, int width, int height, int y,
                    int bitDepth, int32_t* out) {
  size_t rows[5];
  for (int k = 0; k < 5; ++k) rows[k] = static_cast<size_t>(reflect(y - 2 + k, height)) * width;
  const Sample* p0 = prev + rows[0];
  const Sample* p1 = prev + rows[1];
  const Sample* p2 = prev + rows[2];
  const Sample* p3 = prev + rows[3];
  const Sample* p4 = prev + rows[4];
  const Sample* c0 = cur + rows[0];
  const Sample* c1 = cur + rows[1];
  const Sample* c2 = cur + rows[2];
  const Sample* c3 = cur + rows[3];
  const Sample* c4 = cur + rows[4];
  const Acc half = Acc{1} << (bitDepth - 1);
  int32_t nonzero = 0;
  for (int x = 0; x < width; ++x) {
    const Acc outer = (static_cast<Acc>(p0[x]) - c0[x]) + (static_cast<Acc>(p4[x]) - c4[x]);
    const Acc inner = (static_cast<Acc>(p1[x]) - c1[x]) + (static_cast<Acc>(p3[x]) - c3[x]);
    const Acc centre = static_cast<Acc>(p2[x]) - c2[x];
    const Acc d = Acc{kF0} * outer + Acc{kF1} * inner + Acc{kF2} * centre;
    out[x] = static_cast<int32_t>((d + half) >> bitDepth);
    nonzero |= out[x];
  }
  return nonzero;
}

// (acc + 2^15) >> 16, flooring.
inline uint32_t absRounded(int64_t acc) {
  const int32_t v = static_cast<int32_t>((acc + (int64_t{1} << 15)) >> 16);
  return static_cast<uint32_t>(v < 0 ? -v : v);
}

#if defined(VMAFS_MOTION_AVX2)
// Steps 2 and 3 for the columns [2, 2 + 16k) of a row: each filtered value needs up to 35
// bits, so the products and sums are int64 lanes (pmuldq on sign-extended int32 lanes); the
// rounded result fits int32 again. Lane sums wrap modulo 2^32 like the row's uint32 sum.
// Returns the columns done (a multiple of 16).
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"))) int interiorSadAvx512(
    const int32_t* yr, int end, uint32_t* sad) {
  const __m512i f0 = _mm512_set1_epi64(kF0), f1 = _mm512_set1_epi64(kF1);
  const __m512i f2 = _mm512_set1_epi64(kF2), half = _mm512_set1_epi64(int64_t{1} << 15);
  __m512i total = _mm512_setzero_si512();
  int x = 2;
  for (; x + 16 <= end; x += 16) {
    const __m512i outer = _mm512_add_epi32(_mm512_loadu_si512(yr + x - 2), _mm512_loadu_si512(yr + x + 2));
    const __m512i inner = _mm512_add_epi32(_mm512_loadu_si512(yr + x - 1), _mm512_loadu_si512(yr + x + 1));
    const __m512i centre = _mm512_loadu_si512(yr + x);
    __m256i rounded[2];
    for (int h = 0; h < 2; ++h) {
      const __m512i o = _mm512_cvtepi32_epi64(h == 0 ? _mm512_castsi512_si256(outer) : _mm512_extracti64x4_epi64(outer, 1));
      const __m512i i = _mm512_cvtepi32_epi64(h == 0 ? _mm512_castsi512_si256(inner) : _mm512_extracti64x4_epi64(inner, 1));
      const __m512i c = _mm512_cvtepi32_epi64(h == 0 ? _mm512_castsi512_si256(centre) : _mm512_extracti64x4_epi64(centre, 1));
      const __m512i acc = _mm512_add_epi64(_mm512_add_epi64(_mm512_mul_epi32(o, f0), _mm512_mul_epi32(i, f1)),
                                           _mm512_mul_epi32(c, f2));
      rounded[h] = _mm512_cvtepi64_epi32(_mm512_srai_epi64(_mm512_add_epi64(acc, half), 16));
    }
    const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(rounded[0]), rounded[1], 1);
    total = _mm512_add_epi32(total, _mm512_abs_epi32(both));
  }
  *sad += static_cast<uint32_t>(_mm512_reduce_add_epi32(total));
  return x - 2;
}

// The same, 8 columns at a time. AVX2 has no 64-bit arithmetic shift: adding 2^47 makes every
// sum positive, and the logical shift then gives the rounded value plus 2^31.
__attribute__((target("avx2"))) int interiorSadAvx2(const int32_t* yr, int end, uint32_t* sad) {
  const __m256i f0 = _mm256_set1_epi64x(kF0), f1 = _mm256_set1_epi64x(kF1);
  const __m256i f2 = _mm256_set1_epi64x(kF2);
  const __m256i offset = _mm256_set1_epi64x((int64_t{1} << 15) + (int64_t{1} << 47));
  const __m256i low32 = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
  const __m256i signBit = _mm256_set1_epi32(static_cast<int32_t>(0x80000000u));
  __m256i total = _mm256_setzero_si256();
  int x = 2;
  for (; x + 8 <= end; x += 8) {
    const __m256i outer = _mm256_add_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(yr + x - 2)),
                                           _mm256_loadu_si256(reinterpret_cast<const __m256i*>(yr + x + 2)));
    const __m256i inner = _mm256_add_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(yr + x - 1)),
                                           _mm256_loadu_si256(reinterpret_cast<const __m256i*>(yr + x + 1)));
    const __m256i centre = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(yr + x));
    __m128i rounded[2];
    for (int h = 0; h < 2; ++h) {
      const __m256i o = _mm256_cvtepi32_epi64(h == 0 ? _mm256_castsi256_si128(outer) : _mm256_extracti128_si256(outer, 1));
      const __m256i i = _mm256_cvtepi32_epi64(h == 0 ? _mm256_castsi256_si128(inner) : _mm256_extracti128_si256(inner, 1));
      const __m256i c = _mm256_cvtepi32_epi64(h == 0 ? _mm256_castsi256_si128(centre) : _mm256_extracti128_si256(centre, 1));
      const __m256i acc = _mm256_add_epi64(_mm256_add_epi64(_mm256_mul_epi32(o, f0), _mm256_mul_epi32(i, f1)),
                                           _mm256_mul_epi32(c, f2));
      const __m256i shifted = _mm256_srli_epi64(_mm256_add_epi64(acc, offset), 16);
      rounded[h] = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(shifted, low32));
    }
    const __m256i both = _mm256_xor_si256(
        _mm256_inserti128_si256(_mm256_castsi128_si256(rounded[0]), rounded[1], 1), signBit);
    total = _mm256_add_epi32(total, _mm256_abs_epi32(both));
  }
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), total);
  for (uint32_t v : lanes) *sad += v;
  return x - 2;
}
#endif

// Steps 2 and 3 for one row of Y.
uint32_t horizontalRowSad(const int32_t* yr, int width, IsaLevel isa) {
  auto mirrored = [&](int x) {
    int64_t acc = 0;
    for (int k = 0; k < 5; ++k) {
      acc += static_cast<int64_t>(kMotionFilter[k]) * yr[reflect(x - 2 + k, width)];
    }
    return absRounded(acc);
  };
  // Columns whose taps all lie inside the row: [inLo, inHi).
  const int inLo = std::min(2, width);
  const int inHi = std::max(inLo, width - 2);
  uint32_t sad = 0;  // 32 bits on purpose: libvmaf sums each row in a uint32
  for (int x = 0; x < inLo; ++x) sad += mirrored(x);
  int first = inLo;  // of the interior columns the scalar loop does
#if defined(VMAFS_MOTION_AVX2)
  if (inLo == 2 && isa >= IsaLevel::kAvx512) first += interiorSadAvx512(yr, inHi, &sad);
  else if (inLo == 2 && isa >= IsaLevel::kAvx2) first += interiorSadAvx2(yr, inHi, &sad);
#endif
  (void)isa;
  for (int x = first; x < inHi; ++x) {
    const int64_t acc = static_cast<int64_t>(kF0) * (yr[x - 2] + yr[x + 2]) +
                        static_cast<int64_t>(kF1) * (yr[x - 1] + yr[x + 1]) +
                        static_cast<int64_t>(kF2) * yr[x];
    sad += absRounded(acc);
  }
  for (int x = inHi; x < width; ++x) sad += mirrored(x);
  return sad;
}

template <typename Sample, typename Acc>
uint64_t sadOf(const Sample* prev, const Sample* cur, int width, int height, int bitDepth,
               IsaLevel isa) {
  std::vector<int32_t> row(static_cast<size_t>(width));
  uint64_t sad = 0;
  for (int y = 0; y < height; ++y) {
    // An all-zero Y row filters to all-zero H: skip it (static regions, still frames).
    if (verticalRow<Sample, Acc>(prev, cur, width, height, y, bitDepth, row.data()) != 0) {
      sad += horizontalRowSad(row.data(), width, isa);
    }
  }
  return sad;
}

uint64_t frameSad(const LumaPlane& prev, const LumaPlane& cur, IsaLevel isa) {
  const int w = cur.width;
  const int h = cur.height;
  if (cur.bitDepth == 8) {
    return sadOf<uint8_t, int32_t>(static_cast<const uint8_t*>(prev.data),
                                   static_cast<const uint8_t*>(cur.data), w, h, 8, isa);
  }
  // int64 above 8 bits, as libvmaf: exact even for samples beyond the stated bit depth.
  return sadOf<uint16_t, int64_t>(static_cast<const uint16_t*>(prev.data),
                                  static_cast<const uint16_t*>(cur.data), w, h, cur.bitDepth,
                                  isa);
}

// One copy per instruction set; flatten inlines the row loops so that each copy is
// vectorized for its target.
#if defined(__GNUC__) || defined(__clang__)
__attribute__((flatten))
#endif
uint64_t frameSadBaseline(const LumaPlane& prev, const LumaPlane& cur, IsaLevel isa) {
  return frameSad(prev, cur, isa);
}

#if defined(VMAFS_MOTION_AVX2)
__attribute__((target("avx2"), flatten)) uint64_t frameSadAvx2(const LumaPlane& prev,
                                                               const LumaPlane& cur,
                                                               IsaLevel isa) {
  return frameSad(prev, cur, isa);
}

__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"), flatten)) uint64_t frameSadAvx512(
    const LumaPlane& prev, const LumaPlane& cur, IsaLevel isa) {
  return frameSad(prev, cur, isa);
}
#endif

}  // namespace

uint64_t motionSad(const LumaPlane& prev, const LumaPlane& cur) {
  if (cur.width < kMotionMinSize || cur.height < kMotionMinSize) return 0;  // callers refuse such frames
  const IsaLevel isa = activeIsa();
#if defined(VMAFS_MOTION_AVX2)
  if (isa >= IsaLevel::kAvx512) return frameSadAvx512(prev, cur, isa);
  if (isa >= IsaLevel::kAvx2) return frameSadAvx2(prev, cur, isa);
#endif
  return frameSadBaseline(prev, cur, isa);
}

double motionScore(uint64_t sad, int width, int height) {
  const uint32_t area = static_cast<uint32_t>(width) * static_cast<uint32_t>(height);
  return std::min(static_cast<double>(sad) / 256.0 / static_cast<double>(area), kMotionMaxVal);
}

}  // namespace vmafs

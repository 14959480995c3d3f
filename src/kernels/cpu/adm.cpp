// Integer ADM, bit-exact with libvmaf 3.2.0's "integer_adm" (its C code path). adm.h holds
// the specification this file implements: every shift, rounding constant and integer width.
//
// Structure: each scale is one streaming pass over the rows of its detail bands. For band
// row y the DWT produces the LL/h/v/d rows of ref and dis; the LL row is kept (it is the next
// scale's input), the ref detail rows feed the denominator, and decouple + CSF turn both into
// the per-pixel quantities the masking step needs, kept in a ring of three rows. Row y - 1 is
// then scored, its neighbours above and below being available. Only the LL planes are ever
// stored for a whole frame; everything else lives in row buffers.
//
// The kernels are plain C++ written as short loops over rows with simple bodies: in that form
// GCC and Clang vectorize them at baseline SSE2 (fused bodies mixing 64-bit products, doubles
// and selects defeat their vectorizers), and a second copy is compiled for AVX2 and chosen at
// run time. Scale 0 works on 16-bit coefficients. Scales 1..3 need more than 32 bits: their
// DWT sums run in double (exact, see roundedShift); their decouple gains have an AVX-512
// copy (detailGainsAvx512), the rest of their int64 arithmetic is left to the vectorizer.
// All scratch lives in a per-thread Workspace reused from frame to frame.
#include "adm.h"

#include <math.h>  // powf: the binary32 function libvmaf calls

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "adm_csf.h"
#include "cpu_features.h"

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) && \
    !defined(VMAFS_ADM_NO_AVX2)
#include <immintrin.h>
#endif

// On x86-64 with GCC or Clang the whole per-frame computation is compiled twice more, for
// AVX2 and for AVX-512 (target attributes, chosen at run time); the code is the same, so are
// the results (no FMA contraction, integer and exact double arithmetic only).
// Define VMAFS_ADM_NO_AVX2 to build without it.
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) && \
    !defined(VMAFS_ADM_NO_AVX2)
#define VMAFS_ADM_AVX2 1
#endif

// No contraction into FMA (GCC needs -ffp-contract=off on the command line as well). Only
// the angle test depends on it; every other double sum here is exact anyway.
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace vmafs {
namespace {

constexpr int kScales = 4;
constexpr int kBands = 3;     // detail bands, in the order h, v, d
// At most two gain-limit variants share one pass: at default options 0 is gain limit 100,
// 1 is gain limit 1 (egl_1); an instance at other options has variant 0 only.
constexpr int kVariants = 2;

// Daubechies-2 analysis filters in fixed point. The low-pass taps sum to 46342, the high-pass
// taps to 0, which is what lets scale 0 centre its samples before filtering (see adm.h).
constexpr int32_t kLo[4] = {15826, 27411, 7345, -4240};
constexpr int32_t kHi[4] = {-4240, -7345, 27411, -15826};

// cos(1 degree)^2 rounded to binary32: the constant of the decouple angle test.
constexpr double kCosOneDegreeSq = static_cast<double>(0x1.ffd814p-1f);

// The CSF weight of each band, [scale][band]: libvmaf's 1.0f / dwt_quant_step(Y params,
// lambda = scale, theta = 1 for h and v, 2 for d) at viewing distance 3 x 1080 lines. That
// evaluates r = f32(3*1080*pi/180), temp = f32(log10(2^(lambda+1) * f0 * g[theta] / r)),
// Q = f32(2*a*pow(10, f32(k*temp*temp)) / A[lambda][theta]) with Watson (1997)'s luma
// parameters (a 0.495, k 0.466, f0 0.401, g {1.501, 1, 0.534}, A the 7/9 basis amplitudes).
// Kept as the binary32 results so that the weights do not depend on the C library.
constexpr float kCsfWeight[kScales][kBands] = {
    {0x1.1cc774p-6f, 0x1.1cc774p-6f, 0x1.820d54p-8f},
    {0x1.06050cp-5f, 0x1.06050cp-5f, 0x1.d48d46p-7f},
    {0x1.634f1p-5f, 0x1.634f1p-5f, 0x1.8fb80cp-6f},
    {0x1.762816p-5f, 0x1.762816p-5f, 0x1.008392p-5f},
};

// libvmaf's fixed scale-0 weights for Watson's CSF at 3 x 1080 (its truncations of the
// factors above times 2^21, 2^21, 2^23, but written as constants).
constexpr int32_t kBaseWeightDefault[kBands] = {36453, 36453, 49417};

// Rounding offset of a right shift by s. libvmaf's expression for it is undefined at s == 0,
// which only sizes below kAdmMinSize reach; 0 is used there.
inline int64_t roundOffset(int s) { return s > 0 ? int64_t{1} << (s - 1) : 0; }

// Border reflection shared by the DWT and the masking neighbourhood: index -1 maps to 1,
// n to n - 1 and n + 1 to n - 2. The clamp only matters below kAdmMinSize.
inline int mirror(int i, int n) {
  if (i < 0) i = -i;
  if (i >= n) i = 2 * n - 1 - i;
  return std::min(std::max(i, 0), n - 1);
}

inline int32_t abs32(int32_t x) { return x < 0 ? -x : x; }
inline uint32_t uabs32(int32_t x) {
  return x < 0 ? 0u - static_cast<uint32_t>(x) : static_cast<uint32_t>(x);
}
inline int32_t select(bool c, int32_t a, int32_t b) { return c ? a : b; }
inline int bitLength(uint32_t x) {
#if defined(__GNUC__) || defined(__clang__)
  return x == 0 ? 0 : 32 - __builtin_clz(x);
#else
  int n = 0;
  for (; x != 0; x >>= 1) ++n;
  return n;
#endif
}
inline int32_t min32(int32_t a, int32_t b) { return a < b ? a : b; }
inline int32_t max32(int32_t a, int32_t b) { return a > b ? a : b; }

// ---------------------------------------------------------------------------------------------
// Geometry

struct Rect {
  int top, bottom, left, right;  // half-open
  int width() const { return right - left; }
  int height() const { return bottom - top; }
};

// libvmaf derives its shifts as ceil(log2(n) - bias), in double precision.
int log2Shift(double n, double bias) {
  const double v = std::ceil(std::log2(n) - bias);
  return v > 0 ? static_cast<int>(v) : 0;
}

struct ScalePlan {
  int w = 0, h = 0;            // detail band size
  Rect score{};                // the scored rect: about 10% of the band left out on each side
  int cubeShift[kBands] = {};  // numerator: per-pixel shift after cubing
  int rowShift = 0;            // numerator: per-row shift
  int denCubeShift = 0;        // denominator, scales 1..3: per-pixel shift after cubing
  int denRowShift = 0;         // denominator: per-row shift
};

ScalePlan makePlan(int width, int height, int scale) {
  ScalePlan p;
  int w = width, h = height;
  for (int s = 0; s <= scale; ++s) {
    w = (w + 1) / 2;
    h = (h + 1) / 2;
  }
  p.w = w;
  p.h = h;
  const int left = static_cast<int>(w * 0.1 - 0.5);
  const int top = static_cast<int>(h * 0.1 - 0.5);
  p.score = {top, h - top, left, w - left};
  p.rowShift = log2Shift(h, 0);
  if (scale == 0) {
    p.cubeShift[0] = p.cubeShift[1] = log2Shift(w, 4);
    p.cubeShift[2] = log2Shift(w, 3);
    p.denRowShift = log2Shift(static_cast<double>(p.score.height() * p.score.width()), 20);
  } else {
    p.cubeShift[0] = p.cubeShift[1] = p.cubeShift[2] = log2Shift(w, 0);
    p.denCubeShift = log2Shift(p.score.width(), 0);
    p.denRowShift = log2Shift(p.score.height(), 0);
  }
  return p;
}

// Reciprocal table of the decouple division: R(v) = trunc(2^30 / v) for v in
// [-32768, 32768] \ {0}. Built once, immutable afterwards, and never destroyed: a
// process.exit() runs static destructors while the worker pool's jobs may still read it.
const int32_t* reciprocals() {
  static const int32_t* const table = [] {
    auto* t = new int32_t[65537]();
    for (int i = 1; i <= 32768; ++i) {
      const int32_t r = static_cast<int32_t>(1073741824 / i);
      t[32768 + i] = r;
      t[32768 - i] = -r;
    }
    return t;
  }();
  return table + 32768;
}

// ---------------------------------------------------------------------------------------------
// Row buffers

// One band row of what the masking step reads, for one gain-limit variant.
template <typename Coef>
struct MaskRow {
  std::vector<int32_t> neighbour;        // F: sum over bands of the neighbour term of CSF(a)
  std::vector<int32_t> centre;           // C: sum over bands of the centre term of CSF(a)
  std::vector<Coef> restored[kBands];    // r: the restored coefficients
  // AIM only: the impairment a = t - r, and F', C' from CSF(r).
  std::vector<int32_t> neighbourR, centreR;
  std::vector<Coef> impaired[kBands];
};

template <typename Coef>
struct Rows {
  std::vector<Coef> vert[2][2];      // [ref/dis][lo/hi] vertical-pass rows, padded 1 + 2
  std::vector<Coef> band[2][4];      // [ref/dis][a/h/v/d] one band row
  MaskRow<Coef> ring[3][kVariants];  // band rows y-2, y-1, y (by y % 3)
  // scratch rows
  std::vector<int32_t> angle, k, colSum, thr;
  std::vector<Coef> impairedScratch;  // a, when AIM is not computed
  std::vector<uint32_t> x, xs;
  std::vector<float> f0, f1, f2;

  // The shape this set of rows was made for (a workspace reuses it while it stays).
  int inWidth_, w_, variants_;
  bool aim_;
  bool fits(int inWidth, int w, int variants, bool aim) const {
    return inWidth == inWidth_ && w == w_ && variants == variants_ && aim == aim_;
  }

  Rows(int inWidth, int w, int variants, bool aim)
      : inWidth_(inWidth), w_(w), variants_(variants), aim_(aim) {
    const size_t padded = static_cast<size_t>(inWidth) + 3, n = static_cast<size_t>(w);
    for (auto& side : vert)
      for (auto& row : side) row.assign(padded, 0);
    for (auto& side : band)
      for (auto& row : side) row.assign(n, 0);
    for (auto& slot : ring)
      for (int var = 0; var < variants; ++var) {
        MaskRow<Coef>& m = slot[var];
        m.neighbour.assign(n, 0);
        m.centre.assign(n, 0);
        for (auto& r : m.restored) r.assign(n, 0);
        if (aim) {
          m.neighbourR.assign(n, 0);
          m.centreR.assign(n, 0);
          for (auto& a : m.impaired) a.assign(n, 0);
        }
      }
    for (auto* v : {&angle, &k, &thr}) v->assign(n, 0);
    colSum.assign(n + 2, 0);
    impairedScratch.assign(n, 0);
    x.assign(n, 0);
    xs.assign(n, 0);
    for (auto* v : {&f0, &f1, &f2}) v->assign(n, 0.0f);
  }
};

// Extends a vertical-pass row (values at [0, width)) by its mirrored neighbours at -1, width
// and width + 1; `row` points at element 0 of a buffer with room for them.
template <typename Coef>
void padRow(Coef* row, int width) {
  row[-1] = row[mirror(-1, width)];
  row[width] = row[mirror(width, width)];
  row[width + 1] = row[mirror(width + 1, width)];
}

// Decouple angle test for a row of positions: is the angle between (oh, ov) and (th, tv)
// below one degree? libvmaf's expression: float-rounded integers, products in double.
template <typename Coef, typename Wide>
void angleRow(const Coef* __restrict oh, const Coef* __restrict ov, const Coef* __restrict th,
              const Coef* __restrict tv, int begin, int end, Rows<Coef>& rows) {
  float* __restrict fd = rows.f0.data();
  float* __restrict fo = rows.f1.data();
  float* __restrict ft = rows.f2.data();
  for (int j = begin; j < end; ++j) {
    const Wide a = oh[j], b = ov[j], c = th[j], d = tv[j];
    fd[j] = static_cast<float>(a * c + b * d);
    fo[j] = static_cast<float>(a * a + b * b);
    ft[j] = static_cast<float>(c * c + d * d);
  }
  int32_t* __restrict angle = rows.angle.data();
  for (int j = begin; j < end; ++j) {
    const double dd = static_cast<double>(fd[j]) / 4096.0;
    const double o = static_cast<double>(fo[j]) / 4096.0;
    const double t = static_cast<double>(ft[j]) / 4096.0;
    angle[j] = (dd >= 0.0) & (dd * dd >= kCosOneDegreeSq * o * t);
  }
}

// ---------------------------------------------------------------------------------------------
// Scale 0: 16-bit coefficients (libvmaf's int16 buffers; the int16 casts reproduce them).

// A gain limit as the decouple step applies it: integral ones (100, 1, ...) in integers,
// others in double as libvmaf does for all of them (the same values for integral ones).
struct GainLimit {
  bool integral = true;
  int32_t whole = 100;
  double value = 100.0;

  explicit GainLimit(double g) : integral(g == std::floor(g)), whole(static_cast<int32_t>(g)), value(g) {}
  GainLimit() = default;
};

// What both scale kinds share: variants, their gain limits, whether AIM is wanted.
struct Instance {
  int variants = 2;
  GainLimit gain[kVariants];
  bool aim = true;
};

#if defined(VMAFS_ADM_AVX2)
#define VMAFS_ADM_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))

// BaseScale's decouple gains for sixteen positions per step: the reciprocals gathered from the
// table (indexed by o itself), then the split product of decouple(), the clamp, and 32768
// where o == 0. Returns the first position it left for the scalar loops.
VMAFS_ADM_TARGET_AVX512 inline int baseGainsAvx512(const int16_t* __restrict o,
                                                   const int16_t* __restrict t, int begin,
                                                   int end, const int32_t* recip,
                                                   int32_t* __restrict k) {
  const __m512i zero = _mm512_setzero_si512();
  const __m512i full = _mm512_set1_epi32(32768);
  const __m512i lowMask = _mm512_set1_epi32(32767);
  const __m512i round = _mm512_set1_epi32(16384);
  int j = begin;
  for (; j + 16 <= end; j += 16) {
    const __m512i o32 =
        _mm512_cvtepi16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(o + j)));
    const __m512i t32 =
        _mm512_cvtepi16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(t + j)));
    const __m512i r = _mm512_i32gather_epi32(o32, recip, 4);
    const __m512i high = _mm512_mullo_epi32(_mm512_srai_epi32(r, 15), t32);
    const __m512i low = _mm512_srai_epi32(
        _mm512_add_epi32(_mm512_mullo_epi32(_mm512_and_si512(r, lowMask), t32), round), 15);
    __m512i q = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(high, low), zero), full);
    q = _mm512_mask_mov_epi32(q, _mm512_cmpeq_epi32_mask(o32, zero), full);
    _mm512_storeu_si512(k + j, q);
  }
  return j;
}

// Two taps as the int16 pair of each 32-bit lane: (t0, t1) multiply samples 2i and 2i + 1.
VMAFS_ADM_TARGET_AVX512 inline __m512i tapPairAvx512(int32_t t0, int32_t t1) {
  return _mm512_set1_epi32(static_cast<int32_t>((static_cast<uint32_t>(t1) << 16) | (static_cast<uint32_t>(t0) & 0xFFFFu)));
}

// One 4-tap filter for sixteen outputs: from `from` (= row + 2j - 1) the pairs (2j-1, 2j) and
// (2j+1, 2j+2) of each output j, each multiply-add two taps' products in 32 bits (exact:
// every tap and sample fits int16, so no pair sum reaches 2^31), then + 32768, >> 16 and the
// low 16 bits (vpmovdw truncates, as the scalar loop's int16 cast).
VMAFS_ADM_TARGET_AVX512 inline __m256i filterPairsAvx512(const int16_t* from, __m512i t01, __m512i t23) {
  const __m512i x = _mm512_loadu_si512(from);
  const __m512i y = _mm512_loadu_si512(from + 2);
  const __m512i sum = _mm512_add_epi32(_mm512_add_epi32(_mm512_madd_epi16(x, t01), _mm512_madd_epi16(y, t23)),
                                       _mm512_set1_epi32(32768));
  return _mm512_cvtepi32_epi16(_mm512_srai_epi32(sum, 16));
}

// BaseScale::horizontal for sixteen outputs per step; returns the first output it left. The
// last step reads up to lo[2j + 32] for j + 15, as the scalar loop does.
VMAFS_ADM_TARGET_AVX512 inline int horizontalBaseAvx512(const int16_t* __restrict lo,
                                                        const int16_t* __restrict hi, int w,
                                                        int16_t* __restrict a, int16_t* __restrict h,
                                                        int16_t* __restrict v, int16_t* __restrict d) {
  const __m512i lo01 = tapPairAvx512(kLo[0], kLo[1]), lo23 = tapPairAvx512(kLo[2], kLo[3]);
  const __m512i hi01 = tapPairAvx512(kHi[0], kHi[1]), hi23 = tapPairAvx512(kHi[2], kHi[3]);
  int j = 0;
  for (; j + 16 <= w; j += 16) {
    const int16_t* l = lo + 2 * j - 1;
    const int16_t* u = hi + 2 * j - 1;
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(a + j), filterPairsAvx512(l, lo01, lo23));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(v + j), filterPairsAvx512(l, hi01, hi23));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(h + j), filterPairsAvx512(u, lo01, lo23));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + j), filterPairsAvx512(u, hi01, hi23));
  }
  return j;
}
#endif

// BaseScale::mask's sum (the unsigned case: x and xs below 2^31, see there) for sixteen
// positions per step, fused: x = max(|v * weight| - (thr << tsh), 0), xs = the low 32 bits
// of (x * x + rq) >> q, then (xs * x + rc) >> cubeShift summed, each product in 64-bit lanes
// (even and odd positions apart; vpmuludq reads the low 32 bits, which is the truncation).
// The integer sum is the scalar loop's in any order. Sets *next to the first position left.
VMAFS_ADM_TARGET_AVX512 inline uint64_t maskSumAvx512(const int16_t* __restrict v,
                                                      const int32_t* __restrict thr, int begin,
                                                      int end, int32_t weight, int tsh, int q,
                                                      uint64_t rq, uint64_t rc, int cubeShift,
                                                      int* next) {
  const __m512i w = _mm512_set1_epi32(weight);
  const __m512i zero = _mm512_setzero_si512();
  const __m512i rq64 = _mm512_set1_epi64(static_cast<int64_t>(rq));
  const __m512i rc64 = _mm512_set1_epi64(static_cast<int64_t>(rc));
  const __m128i qCount = _mm_cvtsi32_si128(q), tshCount = _mm_cvtsi32_si128(tsh);
  const __m128i cubeCount = _mm_cvtsi32_si128(cubeShift);
  __m512i sum = zero;
  int j = begin;
  for (; j + 16 <= end; j += 16) {
    const __m512i v32 = _mm512_cvtepi16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + j)));
    const __m512i t = _mm512_sll_epi32(_mm512_loadu_si512(thr + j), tshCount);
    const __m512i x = _mm512_max_epi32(_mm512_sub_epi32(_mm512_abs_epi32(_mm512_mullo_epi32(v32, w)), t), zero);
    const __m512i xOdd = _mm512_srli_epi64(x, 32);
    const __m512i sqEven = _mm512_srl_epi64(_mm512_add_epi64(_mm512_mul_epu32(x, x), rq64), qCount);
    const __m512i sqOdd = _mm512_srl_epi64(_mm512_add_epi64(_mm512_mul_epu32(xOdd, xOdd), rq64), qCount);
    const __m512i cubeEven = _mm512_srl_epi64(_mm512_add_epi64(_mm512_mul_epu32(sqEven, x), rc64), cubeCount);
    const __m512i cubeOdd = _mm512_srl_epi64(_mm512_add_epi64(_mm512_mul_epu32(sqOdd, xOdd), rc64), cubeCount);
    sum = _mm512_add_epi64(sum, _mm512_add_epi64(cubeEven, cubeOdd));
  }
  *next = j;
  return static_cast<uint64_t>(_mm512_reduce_add_epi64(sum));
}

template <IsaLevel L>
struct BaseScale {
  using Coef = int16_t;
  static constexpr int kCsfShift[kBands] = {15, 15, 17};
  static constexpr int32_t kCsfRound[kBands] = {16384, 16384, 65535};  // sic: 65535
  static constexpr int kThresholdShift[kBands] = {10, 10, 12};
  static constexpr int kSquareShift[kBands] = {29, 29, 30};

  const int32_t* recip = reciprocals();
  Instance inst;
  int32_t csf[kBands];  // weights in Q21, Q21, Q23
  // Whether a masked square can pass 2^31 (weights well above the defaults; see mask()).
  bool wideSquares = false;

  BaseScale(const Instance& instance, const int32_t weight[kBands]) : inst(instance) {
    for (int b = 0; b < kBands; ++b) {
      csf[b] = weight[b];
      // |r| and |a| stay below 22931 at scale 0.
      const uint64_t x = uint64_t{22931} * static_cast<uint32_t>(weight[b]);
      if (((x * x) >> kSquareShift[b]) >= (uint64_t{1} << 31)) wideSquares = true;
    }
  }

  // Horizontal DWT pass: band = (sum F * v + 32768) >> 16 over columns 2j-1 .. 2j+2 of the
  // padded vertical rows. Every sum fits int32 and every result int16.
  static void horizontal(const int16_t* __restrict lo, const int16_t* __restrict hi, int w,
                         int16_t* __restrict a, int16_t* __restrict h, int16_t* __restrict v,
                         int16_t* __restrict d) {
    int j0 = 0;
#if defined(VMAFS_ADM_AVX2)
    if constexpr (L >= IsaLevel::kAvx512) j0 = horizontalBaseAvx512(lo, hi, w, a, h, v, d);
#endif
    for (int j = j0; j < w; ++j) {
      const int32_t l0 = lo[2 * j - 1], l1 = lo[2 * j], l2 = lo[2 * j + 1], l3 = lo[2 * j + 2];
      const int32_t h0 = hi[2 * j - 1], h1 = hi[2 * j], h2 = hi[2 * j + 1], h3 = hi[2 * j + 2];
      a[j] = static_cast<int16_t>((kLo[0] * l0 + kLo[1] * l1 + kLo[2] * l2 + kLo[3] * l3 + 32768) >> 16);
      v[j] = static_cast<int16_t>((kHi[0] * l0 + kHi[1] * l1 + kHi[2] * l2 + kHi[3] * l3 + 32768) >> 16);
      h[j] = static_cast<int16_t>((kLo[0] * h0 + kLo[1] * h1 + kLo[2] * h2 + kLo[3] * h3 + 32768) >> 16);
      d[j] = static_cast<int16_t>((kHi[0] * h0 + kHi[1] * h1 + kHi[2] * h2 + kHi[3] * h3 + 32768) >> 16);
    }
  }

  static void angles(const int16_t* const o[kBands], const int16_t* const t[kBands], int begin,
                     int end, Rows<int16_t>& rows) {
    // Products of int16 values: dot and magnitudes fit int32 (|band| <= 22930 at scale 0).
    angleRow<int16_t, int32_t>(o[0], o[1], t[0], t[1], begin, end, rows);
  }

  // The CSF of v (band b) reduced to its neighbour and centre terms, added into nb and ce
  // (or written, for the first band).
  void csfTerms(int b, const int16_t* __restrict v, int begin, int end, bool first,
                int32_t* __restrict nb, int32_t* __restrict ce) const {
    const int32_t weight = csf[b], round = kCsfRound[b];
    const int shift = kCsfShift[b];
    for (int j = begin; j < end; ++j) {
      const int32_t c = abs32(static_cast<int16_t>((weight * v[j] + round) >> shift));
      const int32_t n = static_cast<int16_t>((4369 * c + 2048) >> 12);
      const int32_t m = static_cast<int16_t>((8738 * c + 2048) >> 12);
      nb[j] = first ? n : nb[j] + n;
      ce[j] = first ? m : ce[j] + m;
    }
  }

  // Decouple + CSF of band b over [begin, end): restored coefficients of each variant, and
  // the neighbour/centre terms of their CSF-weighted impairment added into F and C (for
  // AIM also the impairment, and the terms of the CSF-weighted restored values in F', C').
  void decouple(int b, const int16_t* __restrict o, const int16_t* __restrict t, int begin,
                int end, bool first, Rows<int16_t>& rows, MaskRow<int16_t>* out) const {
    int32_t* __restrict k = rows.k.data();
    const int32_t* __restrict rcp = recip;
    int j0 = begin;
#if defined(VMAFS_ADM_AVX2)
    if constexpr (L >= IsaLevel::kAvx512) j0 = baseGainsAvx512(o, t, begin, end, rcp, k);
#endif
    for (int j = j0; j < end; ++j) k[j] = rcp[o[j]];  // gather, kept out of the math loops
    // k = clamp((R(o) * t + 16384) >> 15, 0, 32768) without 64-bit products: with
    // R = Rh * 2^15 + Rl (Rl in [0, 2^15)), the floor splits exactly into
    // Rh * t + ((Rl * t + 16384) >> 15), and for int16 t every term fits int32.
    for (int j = j0; j < end; ++j) {
      const int32_t tt = t[j];
      const int32_t q = (k[j] >> 15) * tt + (((k[j] & 32767) * tt + 16384) >> 15);
      k[j] = select(o[j] == 0, 32768, min32(max32(q, 0), 32768));
    }
    const int32_t* __restrict angle = rows.angle.data();
    for (int var = 0; var < inst.variants; ++var) {
      int16_t* __restrict r = out[var].restored[b].data();
      const GainLimit& gain = inst.gain[var];
      if (gain.integral) {
        const int32_t g = gain.whole;
        for (int j = begin; j < end; ++j) {
          const int32_t oo = o[j], tt = t[j], kk = k[j];
          const int32_t rst = (kk * oo + 16384) >> 15;
          // Enhancement gain limit: after a passed angle test the restored value may grow
          // up to `g` times, but not past the distorted value.
          const bool limited = (angle[j] != 0) & (kk > 0) & (oo != 0);
          const int32_t gr = rst * g;
          r[j] = static_cast<int16_t>(
              select(limited, select(oo > 0, min32(gr, tt), max32(gr, tt)), rst));
        }
      } else {
        for (int j = begin; j < end; ++j) {
          const int32_t oo = o[j], tt = t[j], kk = k[j];
          const int32_t rst = (kk * oo + 16384) >> 15;
          const bool limited = (angle[j] != 0) & (kk > 0) & (oo != 0);
          const double gr = rst * gain.value;
          r[j] = limited ? static_cast<int16_t>(oo > 0 ? std::min(gr, static_cast<double>(tt))
                                                       : std::max(gr, static_cast<double>(tt)))
                         : static_cast<int16_t>(rst);
        }
      }
      MaskRow<int16_t>& m = out[var];
      if (inst.aim) {
        int16_t* __restrict a = m.impaired[b].data();
        for (int j = begin; j < end; ++j) a[j] = static_cast<int16_t>(t[j] - r[j]);
        csfTerms(b, a, begin, end, first, m.neighbour.data(), m.centre.data());
        csfTerms(b, r, begin, end, first, m.neighbourR.data(), m.centreR.data());
      } else {
        int16_t* __restrict a = rows.impairedScratch.data();
        for (int j = begin; j < end; ++j) a[j] = static_cast<int16_t>(t[j] - r[j]);
        csfTerms(b, a, begin, end, first, m.neighbour.data(), m.centre.data());
      }
    }
  }

  // Sum over [begin, end) of the masked cubes of band b (values v: r for DLM, a for AIM).
  // With weights near the defaults every x and xs is non-negative and below 2^31
  // (x <= 22931 * 49417), so unsigned 32x32->64 products serve; above them libvmaf's int32
  // xs can wrap negative, which the signed loop keeps.
  int64_t mask(int b, const int16_t* __restrict v, const int32_t* __restrict thr, int begin,
               int end, int cubeShift, Rows<int16_t>& rows) const {
    uint32_t* __restrict x = rows.x.data();
    uint32_t* __restrict xs = rows.xs.data();
    const int32_t weight = csf[b];
    const int tsh = kThresholdShift[b], q = kSquareShift[b];
    uint64_t fused = 0;
#if defined(VMAFS_ADM_AVX2)
    if constexpr (L >= IsaLevel::kAvx512) {
      if (!wideSquares) {
        fused = maskSumAvx512(v, thr, begin, end, weight, tsh, q, uint64_t{1} << (q - 1),
                              static_cast<uint64_t>(roundOffset(cubeShift)), cubeShift, &begin);
      }
    }
#endif
    for (int j = begin; j < end; ++j) {
      const int32_t d = abs32(v[j] * weight) -
                        static_cast<int32_t>(static_cast<uint32_t>(thr[j]) << tsh);
      x[j] = static_cast<uint32_t>(max32(d, 0));
    }
    const uint64_t rq = uint64_t{1} << (q - 1);
    for (int j = begin; j < end; ++j) {
      xs[j] = static_cast<uint32_t>((static_cast<uint64_t>(x[j]) * x[j] + rq) >> q);
    }
    if (wideSquares) {
      const int64_t rc = roundOffset(cubeShift);
      int64_t sum = 0;
      for (int j = begin; j < end; ++j) {
        sum += (int64_t{static_cast<int32_t>(xs[j])} * static_cast<int32_t>(x[j]) + rc) >> cubeShift;
      }
      return sum;
    }
    const uint64_t rc = static_cast<uint64_t>(roundOffset(cubeShift));
    uint64_t sum = fused;
    for (int j = begin; j < end; ++j) sum += (static_cast<uint64_t>(xs[j]) * x[j] + rc) >> cubeShift;
    return static_cast<int64_t>(sum);
  }

  // Sum over [begin, end) of |o|^3 (u^2 <= 2^30 fits 32 bits).
  static uint64_t den(const int16_t* __restrict o, int begin, int end, int /*cubeShift*/,
                      Rows<int16_t>& rows) {
    uint32_t* __restrict u = rows.x.data();
    uint32_t* __restrict u2 = rows.xs.data();
    for (int j = begin; j < end; ++j) {
      u[j] = uabs32(o[j]);
      u2[j] = u[j] * u[j];
    }
    uint64_t sum = 0;
    for (int j = begin; j < end; ++j) sum += static_cast<uint64_t>(u2[j]) * u[j];
    return sum;
  }
};

// ---------------------------------------------------------------------------------------------
// Scales 1..3: 32-bit coefficients, 64-bit intermediates.

// (sum + 2^(shift-1)) >> shift as int32, for a 4-tap filter sum over int32 inputs, computed
// in double without compares (which keep compilers from vectorizing): for an integer sum the
// result is the nearest integer to (sum + 0.5) / 2^shift, never a tie, and adding then
// subtracting 1.5 * 2^52 rounds to nearest. Everything is exact: |sum| < 2^48. The results
// (band values of scales 1..3) stay below 2^31 in magnitude, so libvmaf's int64 -> int32
// narrowing never wraps: the worst case over all inputs, from |scale-0 LL| <= 22930 and the
// filters' absolute tap sum 54822, is about 2.1e9.
inline int32_t roundedShift(double sum, double inverseScale) {
  constexpr double kRoundingMagic = 0x1.8p52;
  const double v = (sum + 0.5) * inverseScale;
  return static_cast<int32_t>((v + kRoundingMagic) - kRoundingMagic);
}

#if defined(VMAFS_ADM_AVX2)
// DetailScale::gain for eight positions per step, in 64-bit lanes: |o| rounded to 15
// significant bits (the bit length from the exponent of its exact double), the reciprocal
// gathered from the table, the product, the rounding shift and the clamp as in gain().
// Returns the first position it left for the scalar loop.
VMAFS_ADM_TARGET_AVX512 inline int detailGainsAvx512(const int32_t* __restrict o,
                                                     const int32_t* __restrict t, int begin,
                                                     int end, const int32_t* recip,
                                                     int32_t* __restrict k) {
  const __m512i zero = _mm512_setzero_si512();
  const __m512i one = _mm512_set1_epi64(1);
  const __m512i full = _mm512_set1_epi64(32768);
  const __m512i bias = _mm512_set1_epi64(1023 + 14);  // exponent bias; bitLength - 15 = exp - 14
  const __m512i rndBase = _mm512_set1_epi64(int64_t{1} << 14);
  const __m512i shiftBase = _mm512_set1_epi64(15);
  int j = begin;
  for (; j + 8 <= end; j += 8) {
    const __m256i o32 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(o + j));
    const __m256i t32 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t + j));
    // |INT32_MIN| stays 0x80000000, which zero-extends to 2^31 (uabs32's value).
    const __m512i u = _mm512_cvtepu32_epi64(_mm256_abs_epi32(o32));
    const __m512i exponent = _mm512_sub_epi64(
        _mm512_srli_epi64(_mm512_castpd_si512(_mm512_cvtepu64_pd(u)), 52), bias);
    const __m512i e = _mm512_maskz_mov_epi64(_mm512_cmpge_epu64_mask(u, full), exponent);
    const __m512i half = _mm512_srli_epi64(_mm512_sllv_epi64(one, e), 1);  // 0 when e == 0
    const __m512i m = _mm512_srlv_epi64(_mm512_add_epi64(u, half), e);     // <= 32768
    const __m256i r = _mm512_i64gather_epi32(m, recip, 4);
    __m512i num = _mm512_mul_epi32(_mm512_cvtepi32_epi64(r), _mm512_cvtepi32_epi64(t32));
    const __mmask8 negative = _mm256_cmplt_epi32_mask(o32, _mm256_setzero_si256());
    num = _mm512_mask_sub_epi64(num, negative, zero, num);
    __m512i q = _mm512_srav_epi64(_mm512_add_epi64(num, _mm512_sllv_epi64(rndBase, e)),
                                  _mm512_add_epi64(e, shiftBase));
    q = _mm512_min_epi64(_mm512_max_epi64(q, zero), full);
    q = _mm512_mask_mov_epi64(q, _mm256_cmpeq_epi32_mask(o32, _mm256_setzero_si256()), full);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(k + j), _mm512_cvtepi64_epi32(q));
  }
  return j;
}
#endif

template <IsaLevel L>
struct DetailScale {
  using Coef = int32_t;
  Instance inst;
  uint32_t weight[kBands];  // the CSF weights in Q32: uint32(factor * 2^32)
  int horizontalShift;      // scales 1, 2, 3: 15, 16, 15
  int denSquareShift;       // scales 1, 2, 3: 31, 30, 31
  const int32_t* recip = reciprocals();

  DetailScale(int s, const Instance& instance, const uint32_t w[kBands])
      : inst(instance), horizontalShift(s == 2 ? 16 : 15), denSquareShift(s == 2 ? 30 : 31) {
    for (int b = 0; b < kBands; ++b) weight[b] = w[b];
  }

  // Horizontal DWT pass, (sum F * v + round) >> shift. The sums need more than 32 bits;
  // they are evaluated in double, which is exact here (see roundedShift).
  void horizontal(const int32_t* __restrict lo, const int32_t* __restrict hi, int w,
                  int32_t* __restrict a, int32_t* __restrict h, int32_t* __restrict v,
                  int32_t* __restrict d) const {
    const double scale = std::ldexp(1.0, -horizontalShift);
    for (int j = 0; j < w; ++j) {
      const double l0 = lo[2 * j - 1], l1 = lo[2 * j], l2 = lo[2 * j + 1], l3 = lo[2 * j + 2];
      a[j] = roundedShift(kLo[0] * l0 + kLo[1] * l1 + kLo[2] * l2 + kLo[3] * l3, scale);
      v[j] = roundedShift(kHi[0] * l0 + kHi[1] * l1 + kHi[2] * l2 + kHi[3] * l3, scale);
    }
    for (int j = 0; j < w; ++j) {
      const double h0 = hi[2 * j - 1], h1 = hi[2 * j], h2 = hi[2 * j + 1], h3 = hi[2 * j + 2];
      h[j] = roundedShift(kLo[0] * h0 + kLo[1] * h1 + kLo[2] * h2 + kLo[3] * h3, scale);
      d[j] = roundedShift(kHi[0] * h0 + kHi[1] * h1 + kHi[2] * h2 + kHi[3] * h3, scale);
    }
  }

  static void angles(const int32_t* const o[kBands], const int32_t* const t[kBands], int begin,
                     int end, Rows<int32_t>& rows) {
    angleRow<int32_t, int64_t>(o[0], o[1], t[0], t[1], begin, end, rows);
  }

  // Q15 ratio t / o clamped to [0, 32768]; o is first rounded to 15 significant bits.
  int32_t gain(int32_t o, int32_t t) const {
    if (o == 0) return 32768;
    const uint32_t u = uabs32(o);
    int e = 0;
    uint32_t m = u;
    if (u >= 32768) {
      e = bitLength(u) - 15;
      m = (u + (1u << (e - 1))) >> e;
    }
    const int64_t num = static_cast<int64_t>(recip[m]) * t * (o < 0 ? -1 : 1);
    const int64_t q = (num + (int64_t{1} << (14 + e))) >> (15 + e);
    return static_cast<int32_t>(std::min<int64_t>(std::max<int64_t>(q, 0), 32768));
  }

  // gain() over [begin, end) into k; eight positions at a time with AVX-512.
  void gains(const int32_t* __restrict o, const int32_t* __restrict t, int begin, int end,
             int32_t* __restrict k) const {
    int j = begin;
#if defined(VMAFS_ADM_AVX2)
    if constexpr (L >= IsaLevel::kAvx512) j = detailGainsAvx512(o, t, begin, end, recip, k);
#endif
    for (; j < end; ++j) k[j] = gain(o[j], t[j]);
  }

  void csfTerms(int b, const int32_t* __restrict v, int begin, int end, bool first,
                int32_t* __restrict nb, int32_t* __restrict ce) const {
    const int64_t w = weight[b];
    for (int j = begin; j < end; ++j) {
      const int64_t c = abs32(static_cast<int32_t>((w * v[j] + (1 << 27)) >> 28));
      // libvmaf's rounding constant here is (int32_t)(1u << 31): it subtracts 2^31.
      const int32_t n = static_cast<int32_t>((143165577 * c - 2147483648LL) >> 32);
      const int32_t m = static_cast<int32_t>((286331153 * c - 2147483648LL) >> 32);
      nb[j] = first ? n : nb[j] + n;
      ce[j] = first ? m : ce[j] + m;
    }
  }

  void decouple(int b, const int32_t* __restrict o, const int32_t* __restrict t, int begin,
                int end, bool first, Rows<int32_t>& rows, MaskRow<int32_t>* out) const {
    const int32_t* __restrict angle = rows.angle.data();
    int32_t* __restrict k = rows.k.data();
    gains(o, t, begin, end, k);
    for (int var = 0; var < inst.variants; ++var) {
      int32_t* __restrict r = out[var].restored[b].data();
      const GainLimit& g = inst.gain[var];
      for (int j = begin; j < end; ++j) {
        const int32_t oo = o[j], tt = t[j], kk = k[j];
        const int32_t rst = static_cast<int32_t>((int64_t{kk} * oo + 16384) >> 15);
        const bool limited = (angle[j] != 0) & (kk > 0) & (oo != 0);
        int32_t lim;
        if (g.integral) {
          // rst * 100 can pass 2^31 here; the limited result always fits.
          const int64_t gr = int64_t{rst} * g.whole;
          lim = static_cast<int32_t>(oo > 0 ? std::min<int64_t>(gr, tt) : std::max<int64_t>(gr, tt));
        } else {
          const double gr = rst * g.value;
          lim = static_cast<int32_t>(oo > 0 ? std::min(gr, static_cast<double>(tt))
                                            : std::max(gr, static_cast<double>(tt)));
        }
        r[j] = select(limited, lim, rst);
      }
      MaskRow<int32_t>& m = out[var];
      int32_t* __restrict a = inst.aim ? m.impaired[b].data() : rows.impairedScratch.data();
      for (int j = begin; j < end; ++j) a[j] = static_cast<int32_t>(int64_t{t[j]} - r[j]);
      csfTerms(b, a, begin, end, first, m.neighbour.data(), m.centre.data());
      if (inst.aim) csfTerms(b, r, begin, end, first, m.neighbourR.data(), m.centreR.data());
    }
  }

  int64_t mask(int b, const int32_t* v, const int32_t* thr, int begin, int end, int cubeShift,
               Rows<int32_t>& /*rows*/) const {
    const int64_t w = weight[b];
    const int64_t rc = roundOffset(cubeShift);
    int64_t sum = 0;
    for (int j = begin; j < end; ++j) {
      const int32_t c = static_cast<int32_t>((v[j] * w + (1 << 27)) >> 28);
      const int32_t x = max32(abs32(c) - thr[j], 0);
      const int32_t sq = static_cast<int32_t>((int64_t{x} * x + (1 << 29)) >> 30);
      sum += (int64_t{sq} * x + rc) >> cubeShift;
    }
    return sum;
  }

  uint64_t den(const int32_t* o, int begin, int end, int cubeShift, Rows<int32_t>& /*rows*/) const {
    const int qs = denSquareShift;
    const uint64_t rq = uint64_t{1} << qs;  // sic: 2^qs, not 2^(qs-1)
    const uint64_t rc = static_cast<uint64_t>(roundOffset(cubeShift));
    uint64_t sum = 0;
    for (int j = begin; j < end; ++j) {
      const uint64_t u = uabs32(o[j]);
      sum += ((((u * u + rq) >> qs) * u) + rc) >> cubeShift;
    }
    return sum;
  }
};

// ---------------------------------------------------------------------------------------------
// The per-scale pass

// Vertical DWT pass of scale 0 for band row y: the four mirrored source rows 2y-1 .. 2y+2,
// samples centred on 2^(B-1) (fits int16), sums in int32, rounded down by B bits.
#if defined(VMAFS_ADM_AVX2)
// 32 centred samples of a row as int16 (the scalar loop's static_cast<int16_t>).
VMAFS_ADM_TARGET_AVX512 inline __m512i centredAvx512(const uint8_t* row, __m512i centre) {
  return _mm512_sub_epi16(
      _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row))), centre);
}
VMAFS_ADM_TARGET_AVX512 inline __m512i centredAvx512(const uint16_t* row, __m512i centre) {
  return _mm512_sub_epi16(_mm512_loadu_si512(row), centre);
}

// One filter over four centred rows, 32 columns: pairs of rows interleaved so that each
// multiply-add forms two taps' products in 32 bits, then rounding, shift and a pack back to
// int16 in column order. The pack keeps the low 16 bits (the scalar loop's int16 cast; they
// only differ from the value for samples beyond the bit depth), hence the mask and the
// unsigned pack, which never saturates on values below 2^16.
VMAFS_ADM_TARGET_AVX512 inline __m512i filterColumnsAvx512(__m512i c0, __m512i c1, __m512i c2,
                                                         __m512i c3, const int32_t* taps,
                                                         __m512i round, __m128i shift) {
  const __m512i t01 = _mm512_set1_epi32(static_cast<int32_t>(
      (static_cast<uint32_t>(taps[1]) << 16) | (static_cast<uint32_t>(taps[0]) & 0xffffu)));
  const __m512i t23 = _mm512_set1_epi32(static_cast<int32_t>(
      (static_cast<uint32_t>(taps[3]) << 16) | (static_cast<uint32_t>(taps[2]) & 0xffffu)));
  const __m512i lowHalf = _mm512_add_epi32(
      _mm512_add_epi32(_mm512_madd_epi16(_mm512_unpacklo_epi16(c0, c1), t01),
                       _mm512_madd_epi16(_mm512_unpacklo_epi16(c2, c3), t23)),
      round);
  const __m512i highHalf = _mm512_add_epi32(
      _mm512_add_epi32(_mm512_madd_epi16(_mm512_unpackhi_epi16(c0, c1), t01),
                       _mm512_madd_epi16(_mm512_unpackhi_epi16(c2, c3), t23)),
      round);
  const __m512i low16 = _mm512_set1_epi32(0xffff);
  return _mm512_packus_epi32(_mm512_and_si512(_mm512_sra_epi32(lowHalf, shift), low16),
                             _mm512_and_si512(_mm512_sra_epi32(highHalf, shift), low16));
}

// verticalBase for 32 columns per step; returns the first column it left for the scalar loop.
template <typename Sample>
VMAFS_ADM_TARGET_AVX512 inline int verticalBaseAvx512(const Sample* r0, const Sample* r1,
                                                      const Sample* r2, const Sample* r3,
                                                      int width, int bitDepth,
                                                      int16_t* __restrict lo,
                                                      int16_t* __restrict hi) {
  const __m512i centre16 = _mm512_set1_epi16(static_cast<int16_t>(1 << (bitDepth - 1)));
  const __m512i round = _mm512_set1_epi32(1 << (bitDepth - 1));
  const __m128i shift = _mm_cvtsi32_si128(bitDepth);
  int x = 0;
  for (; x + 32 <= width; x += 32) {
    const __m512i c0 = centredAvx512(r0 + x, centre16), c1 = centredAvx512(r1 + x, centre16);
    const __m512i c2 = centredAvx512(r2 + x, centre16), c3 = centredAvx512(r3 + x, centre16);
    _mm512_storeu_si512(lo + x, filterColumnsAvx512(c0, c1, c2, c3, kLo, round, shift));
    _mm512_storeu_si512(hi + x, filterColumnsAvx512(c0, c1, c2, c3, kHi, round, shift));
  }
  return x;
}
#endif

template <IsaLevel L, typename Sample>
void verticalBase(const Sample* img, int width, int height, int bitDepth, int y,
                  int16_t* __restrict lo, int16_t* __restrict hi) {
  const Sample* r0 = img + static_cast<size_t>(mirror(2 * y - 1, height)) * width;
  const Sample* r1 = img + static_cast<size_t>(mirror(2 * y, height)) * width;
  const Sample* r2 = img + static_cast<size_t>(mirror(2 * y + 1, height)) * width;
  const Sample* r3 = img + static_cast<size_t>(mirror(2 * y + 2, height)) * width;
  const int32_t centre = 1 << (bitDepth - 1);
  int x0 = 0;
#if defined(VMAFS_ADM_AVX2)
  if constexpr (L >= IsaLevel::kAvx512) {
    x0 = verticalBaseAvx512(r0, r1, r2, r3, width, bitDepth, lo, hi);
  }
#endif
  for (int x = x0; x < width; ++x) {
    const int32_t c0 = static_cast<int16_t>(r0[x] - centre);
    const int32_t c1 = static_cast<int16_t>(r1[x] - centre);
    const int32_t c2 = static_cast<int16_t>(r2[x] - centre);
    const int32_t c3 = static_cast<int16_t>(r3[x] - centre);
    lo[x] = static_cast<int16_t>((kLo[0] * c0 + kLo[1] * c1 + kLo[2] * c2 + kLo[3] * c3 + centre) >> bitDepth);
    hi[x] = static_cast<int16_t>((kHi[0] * c0 + kHi[1] * c1 + kHi[2] * c2 + kHi[3] * c3 + centre) >> bitDepth);
  }
}

// Vertical DWT pass of scales 1..3 over the previous scale's LL band. Scale 1 does not shift:
// its sum is narrowed to int32 as is, which modular 32-bit arithmetic gives directly.
void verticalDetail(const int32_t* ll, int width, int height, int scale, int y,
                    int32_t* __restrict lo, int32_t* __restrict hi) {
  const int32_t* r0 = ll + static_cast<size_t>(mirror(2 * y - 1, height)) * width;
  const int32_t* r1 = ll + static_cast<size_t>(mirror(2 * y, height)) * width;
  const int32_t* r2 = ll + static_cast<size_t>(mirror(2 * y + 1, height)) * width;
  const int32_t* r3 = ll + static_cast<size_t>(mirror(2 * y + 2, height)) * width;
  if (scale == 1) {
    auto u = [](int32_t v) { return static_cast<uint32_t>(v); };
    for (int x = 0; x < width; ++x) {
      lo[x] = static_cast<int32_t>(u(kLo[0]) * u(r0[x]) + u(kLo[1]) * u(r1[x]) +
                                   u(kLo[2]) * u(r2[x]) + u(kLo[3]) * u(r3[x]));
      hi[x] = static_cast<int32_t>(u(kHi[0]) * u(r0[x]) + u(kHi[1]) * u(r1[x]) +
                                   u(kHi[2]) * u(r2[x]) + u(kHi[3]) * u(r3[x]));
    }
    return;
  }
  for (int x = 0; x < width; ++x) {
    const double s0 = r0[x], s1 = r1[x], s2 = r2[x], s3 = r3[x];
    lo[x] = roundedShift(kLo[0] * s0 + kLo[1] * s1 + kLo[2] * s2 + kLo[3] * s3, 0x1p-16);
    hi[x] = roundedShift(kHi[0] * s0 + kHi[1] * s1 + kHi[2] * s2 + kHi[3] * s3, 0x1p-16);
  }
}

// The 3x3 threshold of row i from one pair of (neighbour, centre) rows of the ring: the
// neighbourhood sum of F without its centre, plus the centre term C.
template <typename Coef>
void thresholdRow(Rows<Coef>& rows, const ScalePlan& p, int i, int colBegin, int colEnd,
                  int var, bool ofRestored) {
  const int up = mirror(i - 1, p.h) % 3, mid = i % 3, down = mirror(i + 1, p.h) % 3;
  auto neighbours = [&](int slot) {
    const MaskRow<Coef>& m = rows.ring[slot][var];
    return (ofRestored ? m.neighbourR : m.neighbour).data();
  };
  int32_t* __restrict colSum = rows.colSum.data() + 1;
  int32_t* __restrict thr = rows.thr.data();
  const int32_t* __restrict fu = neighbours(up);
  const int32_t* __restrict fm = neighbours(mid);
  const int32_t* __restrict fd = neighbours(down);
  const MaskRow<Coef>& m = rows.ring[mid][var];
  const int32_t* __restrict ce = (ofRestored ? m.centreR : m.centre).data();
  for (int j = colBegin; j < colEnd; ++j) colSum[j] = fu[j] + fm[j] + fd[j];
  colSum[-1] = colSum[mirror(-1, p.w)];
  colSum[p.w] = colSum[mirror(p.w, p.w)];
  for (int j = p.score.left; j < p.score.right; ++j) {
    thr[j] = colSum[j - 1] + colSum[j] + colSum[j + 1] - fm[j] + ce[j];
  }
}

// Contrast masking of band row i (a row of the scored rect), every variant: per band, the
// row's sum of masked cubes, shifted with rounding, added to the numerator stats; with AIM
// the same for the impairment masked by the restored signal, added to aimStats.
template <class Fx>
void maskRow(const Fx& fx, const ScalePlan& p, int i, int colBegin, int colEnd,
             Rows<typename Fx::Coef>& rows, uint64_t* stats, uint64_t* aimStats) {
  const int mid = i % 3;
  const int left = p.score.left, right = p.score.right;
  const int32_t* thr = rows.thr.data();
  auto add = [&](uint64_t* to, int b, int64_t sum) {
    to[b] += static_cast<uint64_t>((sum + roundOffset(p.rowShift)) >> p.rowShift);
  };
  for (int var = 0; var < fx.inst.variants; ++var) {
    const auto& m = rows.ring[mid][var];
    thresholdRow(rows, p, i, colBegin, colEnd, var, false);
    uint64_t* num = stats + (var == 0 ? kAdmNumH : kAdmNumEglH);
    for (int b = 0; b < kBands; ++b) {
      add(num, b, fx.mask(b, m.restored[b].data(), thr, left, right, p.cubeShift[b], rows));
    }
    if (!fx.inst.aim) continue;
    thresholdRow(rows, p, i, colBegin, colEnd, var, true);
    for (int b = 0; b < kBands; ++b) {
      add(aimStats + 3 * var, b,
          fx.mask(b, m.impaired[b].data(), thr, left, right, p.cubeShift[b], rows));
    }
  }
}

// One scale: DWT row by row, denominator, decouple/CSF into the ring, masking one row behind.
// `vertical(side, y, lo, hi)` fills the vertical-pass rows of ref (side 0) or dis (side 1);
// `nextLl`, when not null, receives the LL band of ref and dis (the next scale's input).
// Unless `scored`, only the LL bands are produced (adm_skip_scale0).
template <class Fx, class Vertical>
void runScale(const Fx& fx, const ScalePlan& p, int inWidth, Vertical vertical,
              int32_t* const* nextLl, bool scored, Rows<typename Fx::Coef>& rows,
              uint64_t* stats, uint64_t* aimStats) {
  using Coef = typename Fx::Coef;
  const Rect& sc = p.score;
  // Decouple/CSF are needed on the scored rect grown by the 3x3 neighbourhood.
  const int maskRowBegin = std::max(sc.top - 1, 0), maskRowEnd = std::min(sc.bottom + 1, p.h);
  const int colBegin = std::max(sc.left - 1, 0), colEnd = std::min(sc.right + 1, p.w);
  // Without a next scale only the rows the scores read are needed.
  const int yBegin = nextLl ? 0 : maskRowBegin, yEnd = nextLl ? p.h : maskRowEnd;

  for (int y = yBegin; y < yEnd; ++y) {
    const Coef* ref[kBands];
    const Coef* dis[kBands];
    for (int side = 0; side < 2; ++side) {
      Coef* lo = rows.vert[side][0].data() + 1;
      Coef* hi = rows.vert[side][1].data() + 1;
      vertical(side, y, lo, hi);
      padRow(lo, inWidth);
      padRow(hi, inWidth);
      Coef* a = rows.band[side][0].data();
      Coef* h = rows.band[side][1].data();
      Coef* v = rows.band[side][2].data();
      Coef* d = rows.band[side][3].data();
      fx.horizontal(lo, hi, p.w, a, h, v, d);
      if (nextLl) {
        int32_t* ll = nextLl[side] + static_cast<size_t>(y) * p.w;
        for (int j = 0; j < p.w; ++j) ll[j] = a[j];
      }
      const Coef** bands = side == 0 ? ref : dis;
      bands[0] = h;
      bands[1] = v;
      bands[2] = d;
    }
    if (!scored) continue;
    if (y >= sc.top && y < sc.bottom) {
      for (int b = 0; b < kBands; ++b) {
        const uint64_t sum = fx.den(ref[b], sc.left, sc.right, p.denCubeShift, rows);
        stats[kAdmDenH + b] +=
            (sum + static_cast<uint64_t>(roundOffset(p.denRowShift))) >> p.denRowShift;
      }
    }
    if (y >= maskRowBegin && y < maskRowEnd) {
      Fx::angles(ref, dis, colBegin, colEnd, rows);
      for (int b = 0; b < kBands; ++b) {
        fx.decouple(b, ref[b], dis[b], colBegin, colEnd, b == 0, rows, rows.ring[y % 3]);
      }
    }
    // Row y - 1 is complete once row y (its lower neighbour) exists.
    if (y - 1 >= sc.top && y - 1 < sc.bottom) {
      maskRow(fx, p, y - 1, colBegin, colEnd, rows, stats, aimStats);
    }
  }
  // The last band row is its own lower neighbour.
  if (scored && p.h - 1 >= sc.top && p.h - 1 < sc.bottom && yEnd == p.h) {
    maskRow(fx, p, p.h - 1, colBegin, colEnd, rows, stats, aimStats);
  }
}

// Everything a frame's computation needs besides its inputs: the LL planes and each scale's
// row buffers. One per thread (workspace()), reused from frame to frame while the frame size
// and the instance's shape stay: no allocation per frame. Every element a frame reads is
// written earlier in the same frame, so nothing carries over between frames.
struct Workspace {
  // LL planes: [ref/dis][ping/pong]; scales 0 and 2 write ping, scale 1 writes pong. Each
  // scale writes every element of its plane before the next one reads it.
  std::vector<int32_t> ll[2][2];
  std::unique_ptr<Rows<int16_t>> base;
  std::unique_ptr<Rows<int32_t>> detail[kScales - 1];

  template <typename Coef>
  static Rows<Coef>& rowsFor(std::unique_ptr<Rows<Coef>>& slot, int inWidth, int w,
                             const Instance& inst) {
    if (!slot || !slot->fits(inWidth, w, inst.variants, inst.aim)) {
      slot.reset();  // release the old rows before making the new ones
      slot.reset(new Rows<Coef>(inWidth, w, inst.variants, inst.aim));
    }
    return *slot;
  }

  void sizeLl(int width, int height) {
    const size_t w0 = static_cast<size_t>((width + 1) / 2), h0 = static_cast<size_t>((height + 1) / 2);
    for (auto& side : ll) {
      if (side[0].size() != w0 * h0) side[0].assign(w0 * h0, 0);
      const size_t n1 = ((w0 + 1) / 2) * ((h0 + 1) / 2);
      if (side[1].size() != n1) side[1].assign(n1, 0);
    }
  }
};

Workspace& workspace() {
  thread_local Workspace ws;
  return ws;
}

// All four scales of one frame; acc receives the stats (modulo 2^64).
template <IsaLevel L>
inline void computeStats(const LumaPlane& ref, const LumaPlane& dis, const AdmKernelParams& kp,
                         Workspace& ws, uint64_t* acc) {
  const int width = ref.width, height = ref.height, bitDepth = ref.bitDepth;
  Instance inst;
  inst.variants = kp.variants;
  inst.aim = kp.aim;
  for (int v = 0; v < kp.variants; ++v) inst.gain[v] = GainLimit(kp.gainLimit[v]);
  ws.sizeLl(width, height);
  auto& ll = ws.ll;

  int inWidth = width, inHeight = height;
  for (int scale = 0; scale < kScales; ++scale) {
    const ScalePlan p = makePlan(width, height, scale);
    const int out = scale % 2, in = 1 - out;
    int32_t* const nextBufs[2] = {ll[0][out].data(), ll[1][out].data()};
    int32_t* const* nextLl = scale + 1 < kScales ? nextBufs : nullptr;
    uint64_t* st = acc + scale * kAdmStatsPerScale;
    uint64_t* aimSt = acc + kAdmAimBase + scale * kAdmAimPerScale;
    if (scale == 0) {
      auto vertical = [&](int side, int y, int16_t* lo, int16_t* hi) {
        const LumaPlane& plane = side == 0 ? ref : dis;
        if (bitDepth == 8) {
          verticalBase<L>(static_cast<const uint8_t*>(plane.data), width, height, 8, y, lo, hi);
        } else {
          verticalBase<L>(static_cast<const uint16_t*>(plane.data), width, height, bitDepth, y,
                       lo, hi);
        }
      };
      runScale(BaseScale<L>(inst, kp.baseWeight), p, inWidth, vertical, nextLl, kp.scale0,
               Workspace::rowsFor(ws.base, inWidth, p.w, inst), st, aimSt);
    } else {
      const int32_t* input[2] = {ll[0][in].data(), ll[1][in].data()};
      auto vertical = [&](int side, int y, int32_t* lo, int32_t* hi) {
        verticalDetail(input[side], inWidth, inHeight, scale, y, lo, hi);
      };
      runScale(DetailScale<L>(scale, inst, kp.detailWeight[scale - 1]), p, inWidth, vertical,
               nextLl, true, Workspace::rowsFor(ws.detail[scale - 1], inWidth, p.w, inst), st,
               aimSt);
    }
    inWidth = p.w;
    inHeight = p.h;
  }
}

// One copy per instruction set; flatten inlines every kernel so that each copy is compiled
// (and vectorized) for its target.
#if defined(__GNUC__) || defined(__clang__)
__attribute__((flatten))
#endif
void computeStatsBaseline(const LumaPlane& ref, const LumaPlane& dis, const AdmKernelParams& kp,
                          Workspace& ws, uint64_t* acc) {
  computeStats<IsaLevel::kBaseline>(ref, dis, kp, ws, acc);
}

#if defined(VMAFS_ADM_AVX2)
__attribute__((target("avx2"), flatten)) void computeStatsAvx2(const LumaPlane& ref,
                                                               const LumaPlane& dis,
                                                               const AdmKernelParams& kp,
                                                               Workspace& ws, uint64_t* acc) {
  computeStats<IsaLevel::kAvx2>(ref, dis, kp, ws, acc);
}

__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"), flatten)) void computeStatsAvx512(
    const LumaPlane& ref, const LumaPlane& dis, const AdmKernelParams& kp, Workspace& ws,
    uint64_t* acc) {
  computeStats<IsaLevel::kAvx512>(ref, dis, kp, ws, acc);
}
#endif

void runStats(const LumaPlane& ref, const LumaPlane& dis, const AdmKernelParams& kp,
              int64_t* stats) {
  std::fill(stats, stats + kAdmStatsLen, int64_t{0});
  if (ref.width < kAdmMinSize || ref.height < kAdmMinSize) return;
  uint64_t acc[kAdmStatsLen] = {};
  Workspace& ws = workspace();
#if defined(VMAFS_ADM_AVX2)
  const IsaLevel isa = activeIsa();
  if (isa >= IsaLevel::kAvx512) {
    computeStatsAvx512(ref, dis, kp, ws, acc);
  } else if (isa >= IsaLevel::kAvx2) {
    computeStatsAvx2(ref, dis, kp, ws, acc);
  } else {
    computeStatsBaseline(ref, dis, kp, ws, acc);
  }
#else
  computeStatsBaseline(ref, dis, kp, ws, acc);
#endif
  for (int i = 0; i < kAdmStatsLen; ++i) stats[i] = static_cast<int64_t>(acc[i]);
}

// Default options: Watson's weights at 3 x 1080 as constants, both gain-limit variants.
AdmKernelParams defaultKernelParams() {
  AdmKernelParams kp{};
  for (int b = 0; b < kBands; ++b) {
    kp.baseWeight[b] = kBaseWeightDefault[b];
    for (int s = 0; s < kScales; ++s) kp.factor[s][b] = kCsfWeight[s][b];
    for (int s = 1; s < kScales; ++s) {
      kp.detailWeight[s - 1][b] = static_cast<uint32_t>(kCsfWeight[s][b] * 4294967296.0);
    }
  }
  kp.variants = 2;
  kp.gainLimit[0] = 100.0;
  kp.gainLimit[1] = 1.0;
  kp.aim = true;
  kp.scale0 = true;
  return kp;
}

[[noreturn]] void badOption(const std::string& name, const std::string& why) {
  throw std::invalid_argument("adm option " + name + " " + why);
}

void checkRange(const char* name, double v, double lo, double hi) {
  if (!(v >= lo && v <= hi)) {
    badOption(name, "= " + std::to_string(v) + " is outside [" + std::to_string(lo) + ", " +
                        std::to_string(hi) + "]");
  }
}

// The same conversions libvmaf's code does. float -> uint16 for a value past 65535 is
// undefined in C; x86-64 compilers truncate to int32 and keep the low 16 bits, as here.
int32_t baseWeightOf(float factor, double scale) {
  const double v = static_cast<double>(factor) * scale;
  const int64_t whole = static_cast<int64_t>(v);
  return static_cast<int32_t>(static_cast<uint16_t>(static_cast<uint32_t>(whole)));
}

// libvmaf applies its fixed scale-0 weights when norm_view_dist * ref_display_height is
// 3 * 1080 to within 1e-8, in Watson mode.
bool isDefaultViewing(const AdmOptions& o) {
  return std::fabs(o.normViewDist * o.refDisplayHeight - 3.0 * 1080) < 1.0e-8 && o.csfMode == 0;
}

}  // namespace

void admCheckOptions(const AdmOptions& o) {
  if (o.csfMode < 0 || o.csfMode > 3) badOption("adm_csf_mode", "must be 0, 1, 2 or 3");
  checkRange("adm_csf_scale", o.csfScale, 0.0, 50.0);
  checkRange("adm_csf_diag_scale", o.csfDiagScale, 0.0, 50.0);
  checkRange("adm_norm_view_dist", o.normViewDist, 0.75, 24.0);
  if (o.refDisplayHeight < 1 || o.refDisplayHeight > 4320) {
    badOption("adm_ref_display_height", "= " + std::to_string(o.refDisplayHeight) +
                                            " is outside [1, 4320]");
  }
  checkRange("adm_noise_weight", o.noiseWeight, 0.0, 1500.0);
  checkRange("adm_dlm_weight", o.dlmWeight, 0.0, 1.0);
  checkRange("adm_min_val", o.minVal, 0.0, 1.0);
  checkRange("adm_enhn_gain_limit", o.enhnGainLimit, 1.0, 100.0);
  // libvmaf's 16-bit pipeline cannot represent angular frequencies above 1080 lines at 3H.
  if (o.normViewDist * o.refDisplayHeight < 3.0 * 1080) {
    badOption("adm_norm_view_dist * adm_ref_display_height",
              "= " + std::to_string(o.normViewDist * o.refDisplayHeight) +
                  " is below 3 * 1080, which libvmaf refuses");
  }
  AdmCsfFactors f;
  if (!admCsfFactors(static_cast<AdmCsfMode>(o.csfMode), o.normViewDist, o.refDisplayHeight,
                     o.csfScale, o.csfDiagScale, &f)) {
    badOption("adm_csf_mode", "= " + std::to_string(o.csfMode) +
                                  " has no table for adm_ref_display_height " +
                                  std::to_string(o.refDisplayHeight) + " at adm_norm_view_dist " +
                                  std::to_string(o.normViewDist) +
                                  " (480, 720, 1080, 2160 lines at 3 or 5, or 2160 at 1.5)");
  }
}

AdmKernelParams admKernelParams(const AdmOptions& o) {
  admCheckOptions(o);
  AdmKernelParams kp = defaultKernelParams();
  AdmCsfFactors f;
  admCsfFactors(static_cast<AdmCsfMode>(o.csfMode), o.normViewDist, o.refDisplayHeight,
                o.csfScale, o.csfDiagScale, &f);
  for (int s = 0; s < kScales; ++s) {
    kp.factor[s][0] = kp.factor[s][1] = f.hv[s];
    kp.factor[s][2] = f.d[s];
  }
  if (!isDefaultViewing(o)) {
    kp.baseWeight[0] = kp.baseWeight[1] = baseWeightOf(f.hv[0], 2097152.0);
    kp.baseWeight[2] = baseWeightOf(f.d[0], 8388608.0);
  }
  for (int s = 1; s < kScales; ++s) {
    for (int b = 0; b < kBands; ++b) {
      kp.detailWeight[s - 1][b] = static_cast<uint32_t>(
          static_cast<int64_t>(static_cast<double>(kp.factor[s][b]) * 4294967296.0));
    }
  }
  kp.variants = 1;
  kp.gainLimit[0] = o.enhnGainLimit;
  kp.gainLimit[1] = 1.0;
  kp.aim = !o.skipAim;
  kp.scale0 = !o.skipScale0;
  return kp;
}

void admStats(const LumaPlane& ref, const LumaPlane& dis, int64_t* stats, bool egl1) {
  static const AdmKernelParams kDefault = defaultKernelParams();
  static const AdmKernelParams kDefaultOnly = [] {
    AdmKernelParams kp = defaultKernelParams();
    kp.variants = 1;
    return kp;
  }();
  runStats(ref, dis, egl1 ? kDefault : kDefaultOnly, stats);
}

void admStatsWithOptions(const LumaPlane& ref, const LumaPlane& dis, const AdmOptions& options,
                         int64_t* stats) {
  runStats(ref, dis, admKernelParams(options), stats);
}

// ---------------------------------------------------------------------------------------------
// Host arithmetic: libvmaf's post-loop float/double code, operation for operation.

namespace {

// The finish of one variant v of stats computed with kp: 7 values.
void finishVariant(const int64_t* stats, int width, int height, const AdmKernelParams& kp,
                   const AdmOptions& o, int v, double* out) {
  const float third = 1.0f / 3.0f;
  float num[kScales], den[kScales], aim[kScales];
  for (int s = 0; s < kScales; ++s) {
    const ScalePlan p = makePlan(width, height, s);
    const int64_t* st = stats + s * kAdmStatsPerScale;
    const int64_t* aimSt = stats + kAdmAimBase + s * kAdmAimPerScale + 3 * v;
    if (s == 0 && !kp.scale0) {
      num[0] = 0.0f;
      aim[0] = 0.0f;
      den[0] = 1e-10f;  // libvmaf's "avoid divide by zero"
      continue;
    }
    // libvmaf's int area times the double weight.
    const float noise =
        ::powf(static_cast<float>(p.score.height() * p.score.width() * o.noiseWeight), third);

    // Denominator: the ref cubes, weighted by the CSF weight cubed. The exponent is a signed
    // int at scale 0 and a (wrapping) uint32 at scales 1..3, as in libvmaf.
    const double denExp =
        s == 0 ? static_cast<double>(18 - p.denRowShift)
               : static_cast<double>((s == 1 ? 32u : s == 2 ? 27u : 23u) -
                                     static_cast<uint32_t>(p.denRowShift) -
                                     static_cast<uint32_t>(p.denCubeShift));
    const double denScale = std::pow(2.0, denExp);
    float d = 0.0f;
    for (int b = 0; b < kBands; ++b) {
      const uint64_t acc = static_cast<uint64_t>(st[kAdmDenH + b]);
      const double csf = static_cast<double>(acc) / denScale *
                         std::pow(static_cast<double>(kp.factor[s][b]), 3);
      d += ::powf(static_cast<float>(csf), third) + noise;
    }
    den[s] = d;

    // Numerators (DLM's and AIM's). Scale 0 converts through double, scales 1..3 through
    // float, as libvmaf. AIM's noise weight is 0: powf(0, 1/3) = 0.
    auto numerator = [&](const int64_t* acc, float noiseTerm) {
      float n = 0.0f;
      for (int b = 0; b < kBands; ++b) {
        const uint32_t shifts =
            static_cast<uint32_t>(p.cubeShift[b]) + static_cast<uint32_t>(p.rowShift);
        float f;
        if (s == 0) {
          const uint32_t e = (b == 2 ? 57u : 52u) - shifts;
          f = static_cast<float>(static_cast<double>(acc[b]) /
                                 std::pow(2.0, static_cast<double>(e)));
        } else {
          const uint32_t e = (s == 1 ? 45u : s == 2 ? 39u : 36u) - shifts;
          const float scaleF = static_cast<float>(std::pow(2.0, static_cast<double>(e)));
          f = static_cast<float>(acc[b]) / scaleF;
        }
        n += ::powf(f, third) + noiseTerm;
      }
      return n;
    };
    num[s] = numerator(st + (v == 0 ? kAdmNumH : kAdmNumEglH), noise);
    aim[s] = kp.aim ? numerator(aimSt, 0.0f) : 0.0f;
  }

  const double limit = 1e-10 * (width * height) / (1920.0 * 1080.0);
  double n = 0.0, d = 0.0, a = 0.0;
  for (int s = 0; s < kScales; ++s) {
    n += num[s];
    d += den[s];
    a += aim[s];
  }
  n = n < limit ? 0 : n;
  d = d < limit ? 0 : d;
  const double adm2 = d == 0.0 ? 1.0 : n / d;
  const double aimScore = d == 0.0 ? 0.0 : a / d;
  const double adm3 = adm2 * o.dlmWeight + (1 - aimScore) * (1 - o.dlmWeight);
  out[0] = adm2;
  out[1] = aimScore;
  out[2] = adm3 > o.minVal ? adm3 : o.minVal;
  for (int s = 0; s < kScales; ++s) {
    out[3 + s] = static_cast<double>(num[s]) / static_cast<double>(den[s]);
  }
}

}  // namespace

void admFinish(const int64_t* stats, int width, int height, int /*bitDepth*/,
               double out[2 * kAdmFeaturesPerVariant]) {
  static const AdmKernelParams kDefault = defaultKernelParams();
  const AdmOptions defaults;
  for (int v = 0; v < 2; ++v) {
    finishVariant(stats, width, height, kDefault, defaults, v, out + kAdmFeaturesPerVariant * v);
  }
}

void admFinishWithOptions(const int64_t* stats, int width, int height, const AdmOptions& options,
                          double out[kAdmFeaturesPerVariant]) {
  finishVariant(stats, width, height, admKernelParams(options), options, 0, out);
}

}  // namespace vmafs

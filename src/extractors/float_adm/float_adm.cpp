// float_adm (libvmaf 3.2.0's float_adm.c, adm.c, adm_tools.c): ADM at four scales in float
// arithmetic on luma offset by -128 (8-bit scale).
//
// Per scale: a db2 wavelet step (edges mirrored with the last sample repeated: -1 -> 1,
// n -> n - 1); the distorted detail bands split into a restored part (the reference scaled
// by a clipped gain, or the distorted itself up to the enhancement gain limit when the
// angles agree within 1 degree) and an additive part; CSF weights per band; contrast
// masking thresholds from a 3x3 neighbourhood of the masker's CSF-weighted magnitudes
// (mirrored: -1 -> 1, n -> n - 1); p-norms over the frame less a 10 % border, summed per row
// in float. DLM (adm2) is sum(num) / sum(den) over scales, AIM the additive part masked by
// the restored one, over the same denominators.
//
// Divisions of the decoupling gain are reciprocal multiplications with SSE's rcpss plus one
// Newton step, as libvmaf's x86 build does (ADM_OPT_RECIP_DIVISION).
//
// The work is split where the backends meet: compute() gives each scored row's float sums
// of the p-norm terms (denominator, DLM numerator and AIM numerator, per band), which the
// gpu backend computes with the same bits in float_adm.wgsl, and finishStats() sums the
// rows and scales and forms the scores, for both backends. rcpss is an approximation whose
// bits depend on the CPU model; gpuParams() hands the gpu kernel this CPU's own (a table
// over the leading mantissa bits it depends on, see rcpTable()).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <math.h>
#include <stdexcept>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include "adm_csf.h"
#include "cpu_features.h"
#include "extractor.h"
#include "../common/float-picture.h"
#include "../common/float-simd.h"

namespace vmafs {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kBorderFactor = 0.1;
// libvmaf's FLOAT_ONE_BY_30 / _15: double literals, so the products are formed in double.
constexpr double kOneBy30 = 0.0333333351;
constexpr double kOneBy15 = 0.0666666701;

constexpr float kLo[4] = {0.482962913144690f, 0.836516303737469f, 0.224143868041857f, -0.129409522550921f};
constexpr float kHi[4] = {-0.129409522550921f, -0.224143868041857f, 0.836516303737469f, -0.482962913144690f};

inline float divide(float n, float d) {
#if defined(__SSE2__)
  const float r = _mm_cvtss_f32(_mm_rcp_ss(_mm_set_ss(d)));
  return n * (r + r * (1.0f - d * r));
#else
  return n / d;
#endif
}

inline uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
inline float floatOf(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// This CPU's rcpss as a table the gpu kernel can index: rcp(1.m) for the leading `bits` bits
// of m, when rcpss's result depends on no more of them (found by trying every mantissa of
// [1, 2)) and every other input follows from it as Intel's rcpss does: rcp(m * 2^e) is
// rcp(m) * 2^-e (the table's exponent less e; a result below the normal range is a signed
// zero), zero and subnormal inputs give a signed infinity, infinities a signed zero, a NaN
// itself made quiet. That is checked for every table entry at every exponent and for the
// special inputs; the Intel Xeon this was written on passes with 11 bits (checked there
// over all 2^32 inputs). Empty when it does not hold or above 16 bits (a CPU whose rcpss
// differs keeps float_adm on the host), or without SSE (the kernel divides then).
struct RcpTable {
  int bits = -1;  // -1: no table (see above); 0 with no SSE: plain division
  std::vector<uint32_t> entries;
};
#if defined(__SSE2__)
inline uint32_t rcpBits(uint32_t x) { return bitsOf(_mm_cvtss_f32(_mm_rcp_ss(_mm_set_ss(floatOf(x))))); }
#endif
uint32_t rcpModel(const RcpTable& t, uint32_t x) {
  const uint32_t sign = x & 0x80000000u, e = (x >> 23) & 0xffu, m = x & 0x7fffffu;
  if (e == 0) return sign | 0x7f800000u;
  if (e == 0xffu) return m != 0 ? (x | 0x400000u) : sign;
  const uint32_t r = t.entries[m >> (23 - t.bits)];
  const int re = static_cast<int>((r >> 23) & 0xffu) - (static_cast<int>(e) - 127);
  if (re <= 0) return sign;
  if (re >= 255) return sign | 0x7f800000u;
  return sign | (static_cast<uint32_t>(re) << 23) | (r & 0x7fffffu);
}
const RcpTable& rcpTable() {
  static const RcpTable table = [] {
    RcpTable t;
#if defined(__SSE2__)
    // One pass over [1, 2): the result changes only at mantissas that are multiples of
    // 2^(23 - bits), so the lowest bit set in any of those mantissas gives `bits`.
    uint32_t changes = 0, previous = rcpBits(0x3f800000u);
    for (uint32_t m = 1; m < (1u << 23); m++) {
      const uint32_t r = rcpBits(0x3f800000u | m);
      if (r != previous) changes |= m;
      previous = r;
    }
    int bits = 0;
    if (changes != 0) bits = 23 - __builtin_ctz(changes);
    if (bits < 1 || bits > 16) return t;
    t.bits = bits;
    for (uint32_t i = 0; i < (1u << bits); i++) t.entries.push_back(rcpBits(0x3f800000u | (i << (23 - bits))));
    bool holds = true;
    for (uint32_t s = 0; s < 2 && holds; s++) {
      for (uint32_t e = 0; e < 256 && holds; e++) {
        // Every entry's first and last mantissa, and the subnormal / NaN extremes.
        for (uint32_t i = 0; i < (1u << bits) && holds; i++) {
          const uint32_t lo = (s << 31) | (e << 23) | (i << (23 - bits));
          const uint32_t hi = lo | ((1u << (23 - bits)) - 1);
          holds = rcpBits(lo) == rcpModel(t, lo) && rcpBits(hi) == rcpModel(t, hi);
        }
      }
    }
    if (!holds) t = RcpTable{};
#else
    t.bits = 0;
#endif
    return t;
  }();
  return table;
}

// Room after a plane's last sample for the vector copies' whole-vector loads (their lanes
// past the plane are computed and never stored).
constexpr size_t kSimdPad = 16;

struct Bands {
  std::vector<float> a, h, v, d;
  void resize(size_t n) {
    a.resize(n + kSimdPad);
    h.resize(n + kSimdPad);
    v.resize(n + kSimdPad);
    d.resize(n + kSimdPad);
  }
};

// One db2 step of a w x h plane into (w+1)/2 x (h+1)/2 bands (band `a` only when `details` is false).
void dwt(const float* src, int w, int h, Bands& out, bool details) {
  const int ow = (w + 1) / 2, oh = (h + 1) / 2;
  auto reflect = [](int i, int n) { return i < 0 ? -i : (i >= n ? 2 * n - i - 1 : i); };
  std::vector<int> ix(static_cast<size_t>(ow) * 4);
  for (int j = 0; j < ow; ++j)
    for (int k = 0; k < 4; ++k) ix[j * 4 + k] = reflect(2 * j - 1 + k, w);
  std::vector<float> lo(static_cast<size_t>(w)), hi(static_cast<size_t>(w));
  for (int i = 0; i < oh; ++i) {
    const float* rows[4];
    for (int k = 0; k < 4; ++k) rows[k] = src + static_cast<size_t>(reflect(2 * i - 1 + k, h)) * w;
    for (int j = 0; j < w; ++j) {
      const float s0 = rows[0][j], s1 = rows[1][j], s2 = rows[2][j], s3 = rows[3][j];
      float acc = 0;
      acc += kLo[0] * s0;
      acc += kLo[1] * s1;
      acc += kLo[2] * s2;
      acc += kLo[3] * s3;
      lo[j] = acc;
      if (details) {
        acc = 0;
        acc += kHi[0] * s0;
        acc += kHi[1] * s1;
        acc += kHi[2] * s2;
        acc += kHi[3] * s3;
        hi[j] = acc;
      }
    }
    for (int j = 0; j < ow; ++j) {
      const int* x = &ix[j * 4];
      const size_t o = static_cast<size_t>(i) * ow + j;
      auto apply = [&](const float* f, const std::vector<float>& t) {
        float acc = 0;
        acc += f[0] * t[x[0]];
        acc += f[1] * t[x[1]];
        acc += f[2] * t[x[2]];
        acc += f[3] * t[x[3]];
        return acc;
      };
      out.a[o] = apply(kLo, lo);
      if (details) {
        out.v[o] = apply(kHi, lo);
        out.h[o] = apply(kLo, hi);
        out.d[o] = apply(kHi, hi);
      }
    }
  }
}

// The rectangle an ADM stage computes: the frame less the border, widened by `widen` for
// filter taps and clamped to the frame. libvmaf truncates toward zero.
struct Region {
  int left, top, right, bottom;
};
Region scoredRegion(int w, int h) {
  const int left = static_cast<int>(w * kBorderFactor - 0.5);
  const int top = static_cast<int>(h * kBorderFactor - 0.5);
  return {left, top, w - left, h - top};
}
Region tapRegion(int w, int h) {
  int left = static_cast<int>(w * kBorderFactor - 0.5 - 1);
  int top = static_cast<int>(h * kBorderFactor - 0.5 - 1);
  int right = w - left + 2;
  int bottom = h - top + 2;
  return {std::max(left, 0), std::max(top, 0), std::min(right, w), std::min(bottom, h)};
}

// Per-thread working memory, kept between frames: fresh multi-megabyte vectors per frame
// cost more in page faults and zeroing than the arithmetic.
struct AdmScratch {
  std::vector<float> ref, dis;
  Bands refB, disB, r, a, csfA, csfF;
  std::vector<float> lo, hi, terms;
};

// Row word k of the stats (kRowWords to a row, two words to an accumulator).
constexpr int kRowWords = 10;
inline void putRow(uint64_t* stats, int row, int k, float v) {
  uint64_t& slot = stats[static_cast<size_t>(row) * kRowWords / 2 + k / 2];
  const int shift = 32 * (k % 2);
  slot = (slot & ~(uint64_t{0xffffffffu} << shift)) | (static_cast<uint64_t>(bitsOf(v)) << shift);
}

// The stages an instruction-set copy provides (float_adm-simd.inc), for p-norm 3.
struct AdmStages {
  void (*dwt)(const float* src, int w, int h, Bands& out, bool details, AdmScratch& s);
  void (*decouple)(const Bands& ref, const Bands& dis, Bands& r, Bands& a, int w, int h, double limit,
                   float cos1degSq);
  void (*csf)(const Bands& src, Bands& dst, Bands& flt, const float* factor, int w, int h);
  void (*denominator)(const Bands& ref, const float* factor, int w, int h, uint64_t* stats, AdmScratch& s);
  void (*masked)(const Bands& src, const Bands& flt, const Bands& masker, const float* factor, bool bypass, int w,
                 int h, uint64_t* stats, int word, AdmScratch& s);
};

#include "float_adm-simd.inc"

#if defined(VMAFS_FLOAT_SIMD)
// One copy per instruction set (flatten: the lane ops inline into each stage, compiled for
// its target). rcpps gives, per lane, rcpss's bits (the same approximation; checked on all
// 2^32 inputs on the Xeon this was written on, and at start-up by rcpLanesAgree() on the CPU
// it runs on). AVX-512 has no 16-lane rcpps (vrcp14ps is a different, finer approximation),
// so its V::rcp takes two 8-lane ones.
#define VMAFS_ADM_COPY(NS, ATTR, OPS)                                                                              \
  namespace NS {                                                                                                   \
  ATTR void dwt(const float* src, int w, int h, Bands& out, bool details, AdmScratch& s) {                          \
    admsimd::dwtV<OPS>(src, w, h, out, details, s);                                                                 \
  }                                                                                                                \
  ATTR void decouple(const Bands& ref, const Bands& dis, Bands& r, Bands& a, int w, int h, double limit,           \
                     float cos1degSq) {                                                                            \
    admsimd::decoupleV<OPS>(ref, dis, r, a, w, h, limit, cos1degSq);                                                \
  }                                                                                                                \
  ATTR void csf(const Bands& src, Bands& dst, Bands& flt, const float* factor, int w, int h) {                      \
    admsimd::csfV<OPS>(src, dst, flt, factor, w, h);                                                                \
  }                                                                                                                \
  ATTR void denominator(const Bands& ref, const float* factor, int w, int h, uint64_t* stats, AdmScratch& s) {      \
    admsimd::denominatorV<OPS>(ref, factor, w, h, stats, s);                                                        \
  }                                                                                                                \
  ATTR void masked(const Bands& src, const Bands& flt, const Bands& masker, const float* factor, bool bypass, int w, \
                   int h, uint64_t* stats, int word, AdmScratch& s) {                                              \
    admsimd::maskedV<OPS>(src, flt, masker, factor, bypass, w, h, stats, word, s);                                  \
  }                                                                                                                \
  const AdmStages kStages = {dwt, decouple, csf, denominator, masked};                                             \
  }
VMAFS_ADM_COPY(sse2, __attribute__((flatten)), fsimd::Sse2)
VMAFS_ADM_COPY(avx2, __attribute__((target("avx2"), flatten)), fsimd::Avx2)
VMAFS_ADM_COPY(avx512, __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"), flatten)), fsimd::Avx512)
#undef VMAFS_ADM_COPY

// Every 4- and 8-lane rcpps result equals rcpss's, over a spread of mantissas and
// exponents: the premise of the vector copies (false keeps float_adm scalar).
__attribute__((target("avx2"))) bool rcpLanesAgree() {
  for (uint32_t e : {1u, 100u, 126u, 127u, 128u, 200u, 253u, 254u}) {
    for (uint32_t m = 0; m < (1u << 23); m += 8 * 37) {
      alignas(32) float in[8], out[8];
      for (int k = 0; k < 8; k++) in[k] = floatOf((e << 23) | ((m + static_cast<uint32_t>(k)) & 0x7fffffu));
      _mm256_store_ps(out, _mm256_rcp_ps(_mm256_load_ps(in)));
      alignas(16) float out4[4];
      _mm_store_ps(out4, _mm_rcp_ps(_mm_load_ps(in + 4)));
      for (int k = 0; k < 8; k++) {
        const uint32_t want = bitsOf(_mm_cvtss_f32(_mm_rcp_ss(_mm_set_ss(in[k]))));
        if (bitsOf(out[k]) != want || (k >= 4 && bitsOf(out4[k - 4]) != want)) return false;
      }
    }
  }
  return true;
}

// The copy for the active instruction set (floatIsa(): cpu_features.h's cap), or none: the
// scalar stages.
const AdmStages* simdStages() {
  static const bool agree = detectedIsa() < IsaLevel::kAvx2 || rcpLanesAgree();
  if (!agree) return nullptr;
  switch (fsimd::floatIsa()) {
    case fsimd::Isa::kAvx512: return &avx512::kStages;
    case fsimd::Isa::kAvx2: return &avx2::kStages;
    case fsimd::Isa::kSse2: return &sse2::kStages;
    case fsimd::Isa::kScalar: break;
  }
  return nullptr;
}
#else
const AdmStages* simdStages() { return nullptr; }
#endif

struct Options {
  double gainLimit, normViewDist, noiseWeight, csfScale, csfDiagScale, minVal, pNorm, dlmWeight;
  int refDisplayHeight, csfMode, bypassCm, skipAimScale;
  bool applyHm, skipScale0, debug;
  double f1[4], f2[4];
};

float nativeCsf(int scale, double nvd, int rdh, int theta) {
  const float r = static_cast<float>(nvd * rdh * kPi / 180.0);
  float frequency = static_cast<float>(r / std::pow(2, scale + 1));
  if (theta == 45) frequency = static_cast<float>(frequency / 0.7);
  return static_cast<float>((0.31 + 0.69 * frequency) * std::exp(-0.29 * frequency));
}

class FloatAdm final : public Extractor {
 public:
  FloatAdm(const ExtractorOptions& o, const ExtractorGeometry& g) : width_(g.width), height_(g.height) {
    Options& p = opt_;
    p.gainLimit = o.number("adm_enhn_gain_limit");
    p.normViewDist = o.number("adm_norm_view_dist");
    p.noiseWeight = o.number("adm_noise_weight");
    p.csfScale = o.number("adm_csf_scale");
    p.csfDiagScale = o.number("adm_csf_diag_scale");
    p.minVal = o.number("adm_min_val");
    p.pNorm = o.number("adm_p_norm");
    p.dlmWeight = o.number("adm_dlm_weight");
    p.refDisplayHeight = static_cast<int>(o.number("adm_ref_display_height"));
    p.csfMode = static_cast<int>(o.number("adm_csf_mode"));
    p.bypassCm = static_cast<int>(o.number("adm_bypass_cm"));
    p.skipAimScale = static_cast<int>(o.number("adm_skip_aim_scale"));
    p.applyHm = o.flag("adm_adm3_apply_hm");
    p.skipScale0 = o.flag("adm_skip_scale0");
    p.debug = o.flag("debug");
    for (int s = 0; s < 4; s++) {
      p.f1[s] = o.number("adm_f1s" + std::to_string(s));
      p.f2[s] = o.number("adm_f2s" + std::to_string(s));
    }
    // libvmaf's modes: 1 Barten, 2 the DLM paper's CSF, anything else Watson's thresholds.
    AdmCsfFactors base{};
    if (p.csfMode == 1) {
      admCsfFactors(AdmCsfMode::kBarten, p.normViewDist, p.refDisplayHeight, p.csfScale, p.csfDiagScale, &base);
    } else if (p.csfMode != 2) {
      admCsfFactors(AdmCsfMode::kWatson97, p.normViewDist, p.refDisplayHeight, p.csfScale, p.csfDiagScale, &base);
    }
    for (int s = 0; s < 4; s++) {
      float f1 = p.csfMode == 2 ? nativeCsf(s, p.normViewDist, p.refDisplayHeight, 0) : base.hv[s];
      float f2 = p.csfMode == 2 ? nativeCsf(s, p.normViewDist, p.refDisplayHeight, 45) : base.d[s];
      if (p.f1[s] >= 0) f1 = static_cast<float>(p.f1[s]);
      if (p.f2[s] >= 0) f2 = static_cast<float>(p.f2[s]);
      factor_[s][0] = f1;
      factor_[s][1] = f1;
      factor_[s][2] = f2;
    }
  }

  size_t outputCount() const override { return opt_.debug ? 18 : 7; }

  void extract(const FrameWindow& f, double* out) const override {
    std::vector<uint64_t> rows(statsCount());
    compute(f.ref->plane[0], f.ref->bitDepth, f.dis->plane[0], f.dis->bitDepth, rows.data());
    finishStats(rows.data(), out);
  }

  // Per scored row of every computed scale (first scale first), kRowWords float sums in
  // column order (the denominator's h, v, d terms, the DLM numerator's, the AIM numerator's,
  // one unused word), two to an accumulator, low word first: what compute() gives and the
  // gpu kernel (float_adm-gpu.ts) does. From here on the arithmetic is order-dependent float
  // and double summation: it runs here for both backends.
  size_t statsCount() const override {
    size_t rows = 0;
    int w = width_, h = height_;
    for (int s = 0; s < 4; s++) {
      w = (w + 1) / 2;
      h = (h + 1) / 2;
      if (detail(s)) {
        const Region g = scoredRegion(w, h);
        rows += static_cast<size_t>(g.bottom - g.top);
      }
    }
    return rows * kRowWords / 2;
  }

  void finishStats(const uint64_t* stats, double* out) const override {
    const Options& p = opt_;
    int w = width_, h = height_;
    const double numDenLimit = 1e-10 * (w * h) / (1920.0 * 1080.0);
    double num = 0, den = 0, aimNum = 0, aimDen = 0;
    double scores[8];
    for (int scale = 0; scale < 4; ++scale) {
      float numScale = 0.0f, denScale = 0.0f, aimNumScale = 0.0f;
      w = (w + 1) / 2;
      h = (h + 1) / 2;
      if (!detail(scale)) {
        denScale = 1e-10f;
      } else {
        const Region g = scoredRegion(w, h);
        float acc[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
        for (int i = g.top; i < g.bottom; ++i, stats += kRowWords / 2) {
          for (int k = 0; k < 9; k++) acc[k] += floatOf(static_cast<uint32_t>(stats[k / 2] >> (32 * (k % 2))));
        }
        auto total = [&](const float* a, double noiseWeight) {
          const float x = finish(a[0], g, noiseWeight);
          const float y = finish(a[1], g, noiseWeight);
          const float z = finish(a[2], g, noiseWeight);
          return x + y + z;
        };
        denScale = total(acc, p.noiseWeight);
        numScale = total(acc + 3, p.noiseWeight);
        aimNumScale = total(acc + 6, 0.0);
      }
      num += numScale;
      den += denScale;
      if (p.skipAimScale != scale) {
        aimDen += denScale;
        aimNum += aimNumScale;
      }
      scores[2 * scale] = numScale;
      scores[2 * scale + 1] = denScale;
    }
    num = num < numDenLimit ? 0 : num;
    den = den < numDenLimit ? 0 : den;
    double score, aim;
    if (den == 0.0) {
      // libvmaf leaves AIM unset here (an uninitialised value); 0 says "no additive impairment".
      score = 1.0;
      aim = 0.0;
    } else {
      aim = std::min(aimNum / aimDen, 1.0);
      score = num / den;
    }
    out[0] = score;
    out[1] = aim;
    out[2] = p.applyHm ? std::max(2 * score * aim / (score + aim), p.minVal)
                       : std::max(score * p.dlmWeight + (1 - aim) * (1 - p.dlmWeight), p.minVal);
    for (int s = 0; s < 4; s++) out[3 + s] = scores[2 * s] / scores[2 * s + 1];
    if (!p.debug) return;
    out[7] = score;
    out[8] = num;
    out[9] = den;
    for (int i = 0; i < 8; i++) out[10 + i] = scores[i];
  }

  // What the gpu kernel takes from here (float_adm-gpu.ts reads this layout): the rcp
  // table's bits (-1: none, 0: divide), the gain limit (a double), cos^2(1 degree) as a
  // float, whether scale 0 is skipped, whether masking is bypassed, the p-norm, the twelve
  // CSF factors (scale-major, h v d), then the table's entries as bit patterns.
  std::vector<double> gpuParams() const override {
    const RcpTable& t = rcpTable();
    std::vector<double> p = {static_cast<double>(t.bits), opt_.gainLimit, cos1degSq(), opt_.skipScale0 ? 1.0 : 0.0,
                             static_cast<double>(opt_.bypassCm), opt_.pNorm};
    for (int s = 0; s < 4; s++)
      for (int b = 0; b < 3; b++) p.push_back(factor_[s][b]);
    for (uint32_t e : t.entries) p.push_back(e);
    return p;
  }

 private:
  bool detail(int scale) const { return !(scale == 0 && opt_.skipScale0); }
  static float cos1degSq() { return static_cast<float>(std::cos(1.0 * kPi / 180.0) * std::cos(1.0 * kPi / 180.0)); }

  // floatPlane()'s values (luma - 128 on the 8-bit scale) into `out`, with kSimdPad after them.
  static void lumaInto(const PlaneView& plane, int bitDepth, std::vector<float>& out) {
    out.resize(static_cast<size_t>(plane.width) * plane.height + kSimdPad);
    float* dst = out.data();
    const float off = -128.0f;
    if (bitDepth == 8) {
      for (int y = 0; y < plane.height; y++) {
        const uint8_t* row = plane.row<uint8_t>(y);
        for (int x = 0; x < plane.width; x++) *dst++ = static_cast<float>(row[x]) + off;
      }
      return;
    }
    const float scale = bitDepth == 10 ? 4.0f : bitDepth == 12 ? 16.0f : 256.0f;
    for (int y = 0; y < plane.height; y++) {
      const uint16_t* row = plane.row<uint16_t>(y);
      for (int x = 0; x < plane.width; x++) *dst++ = static_cast<float>(row[x]) / scale + off;
    }
  }

  void compute(const PlaneView& refPlane, int refDepth, const PlaneView& disPlane, int disDepth,
               uint64_t* stats) const {
    const Options& p = opt_;
    thread_local AdmScratch sc;
    lumaInto(refPlane, refDepth, sc.ref);
    lumaInto(disPlane, disDepth, sc.dis);
    const AdmStages* simd = p.pNorm == 3.0 ? simdStages() : nullptr;
    int w = width_, h = height_;
    const size_t n = static_cast<size_t>((w + 1) / 2) * ((h + 1) / 2);
    for (Bands* b : {&sc.refB, &sc.disB, &sc.r, &sc.a, &sc.csfA, &sc.csfF}) b->resize(n);
    Bands &refB = sc.refB, &disB = sc.disB, &r = sc.r, &a = sc.a, &csfA = sc.csfA, &csfF = sc.csfF;
    for (int scale = 0; scale < 4; ++scale) {
      if (scale > 0) {
        // The previous scale's approximation band is this scale's input.
        sc.ref.assign(refB.a.begin(), refB.a.begin() + static_cast<size_t>(w) * h + kSimdPad);
        sc.dis.assign(disB.a.begin(), disB.a.begin() + static_cast<size_t>(w) * h + kSimdPad);
      }
      if (simd) {
        simd->dwt(sc.ref.data(), w, h, refB, detail(scale), sc);
        simd->dwt(sc.dis.data(), w, h, disB, detail(scale), sc);
      } else {
        dwt(sc.ref.data(), w, h, refB, detail(scale));
        dwt(sc.dis.data(), w, h, disB, detail(scale));
      }
      w = (w + 1) / 2;
      h = (h + 1) / 2;
      if (!detail(scale)) continue;
      const Region g = scoredRegion(w, h);
      const float* f = factor_[scale];
      if (simd) {
        simd->decouple(refB, disB, r, a, w, h, p.gainLimit, cos1degSq());
        simd->denominator(refB, f, w, h, stats, sc);
        simd->csf(a, csfA, csfF, f, w, h);
        simd->masked(r, csfF, csfA, f, p.bypassCm != 0, w, h, stats, 3, sc);
        simd->csf(r, csfF, csfA, f, w, h);
        simd->masked(a, csfA, csfF, f, p.bypassCm != 0, w, h, stats, 6, sc);
      } else {
        decouple(refB, disB, r, a, w, h);
        denominator(refB, scale, w, h, stats);
        csf(a, csfA, csfF, scale, w, h);
        masked(r, csfF, csfA, scale, w, h, stats, 3);
        csf(r, csfF, csfA, scale, w, h);
        masked(a, csfA, csfF, scale, w, h, stats, 6);
      }
      stats += static_cast<size_t>(g.bottom - g.top) * kRowWords / 2;
    }
  }

  void decouple(const Bands& ref, const Bands& dis, Bands& r, Bands& a, int w, int h) const {
    const float cos1degSq = FloatAdm::cos1degSq();
    const float eps = 1e-30f;
    const double limit = opt_.gainLimit;
    const Region g = tapRegion(w, h);
    for (int i = g.top; i < g.bottom; ++i) {
      for (int j = g.left; j < g.right; ++j) {
        const size_t o = static_cast<size_t>(i) * w + j;
        const float oh = ref.h[o], ov = ref.v[o], od = ref.d[o];
        const float th = dis.h[o], tv = dis.v[o], td = dis.d[o];
        auto clip01 = [](float k) { return k < 0.0f ? 0.0f : (k > 1.0f ? 1.0f : k); };
        const float kh = clip01(divide(th, oh + eps));
        const float kv = clip01(divide(tv, ov + eps));
        const float kd = clip01(divide(td, od + eps));
        float rh = kh * oh, rv = kv * ov, rd = kd * od;
        const float dot = oh * th + ov * tv;
        const float oMagSq = oh * oh + ov * ov;
        const float tMagSq = th * th + tv * tv;
        const bool sameAngle = (dot >= 0.0f) && (dot * dot >= cos1degSq * oMagSq * tMagSq);
        // The gain limit is a double, so these products and comparisons are in double.
        auto enhance = [&](float rst, float t) -> float {
          if (sameAngle && rst > 0.0) return static_cast<float>(std::min(rst * limit, static_cast<double>(t)));
          if (sameAngle && rst < 0.0) return static_cast<float>(std::max(rst * limit, static_cast<double>(t)));
          return rst;
        };
        rh = enhance(rh, th);
        rv = enhance(rv, tv);
        rd = enhance(rd, td);
        r.h[o] = rh;
        r.v[o] = rv;
        r.d[o] = rd;
        a.h[o] = th - rh;
        a.v[o] = tv - rv;
        a.d[o] = td - rd;
      }
    }
  }

  // dst = the CSF-weighted bands, flt = |dst| / 30 (the masker's share of a threshold).
  void csf(const Bands& src, Bands& dst, Bands& flt, int scale, int w, int h) const {
    const Region g = tapRegion(w, h);
    const std::vector<float>* s[3] = {&src.h, &src.v, &src.d};
    std::vector<float>* d[3] = {&dst.h, &dst.v, &dst.d};
    std::vector<float>* fl[3] = {&flt.h, &flt.v, &flt.d};
    for (int theta = 0; theta < 3; ++theta) {
      for (int i = g.top; i < g.bottom; ++i) {
        for (int j = g.left; j < g.right; ++j) {
          const size_t o = static_cast<size_t>(i) * w + j;
          const float v = factor_[scale][theta] * (*s[theta])[o];
          (*d[theta])[o] = v;
          (*fl[theta])[o] = static_cast<float>(kOneBy30 * std::fabs(v));
        }
      }
    }
  }

  float pnormTerm(float x) const { return opt_.pNorm == 3.0 ? x * x * x : ::powf(x, static_cast<float>(opt_.pNorm)); }

  float noiseConstant(int w, int h, double weight) const {
    return ::powf(static_cast<float>(w * h * weight), static_cast<float>(1.0f / opt_.pNorm));
  }

  float finish(float accum, const Region& g, double noiseWeight) const {
    return ::powf(accum, static_cast<float>(1.0f / opt_.pNorm)) +
           noiseConstant(g.right - g.left, g.bottom - g.top, noiseWeight);
  }

  // Each scored row's sums of the reference's CSF-weighted p-norm terms per band (words 0-2).
  void denominator(const Bands& ref, int scale, int w, int h, uint64_t* stats) const {
    const Region g = scoredRegion(w, h);
    const std::vector<float>* s[3] = {&ref.h, &ref.v, &ref.d};
    for (int i = g.top; i < g.bottom; ++i) {
      float row[3] = {0, 0, 0};
      for (int j = g.left; j < g.right; ++j) {
        const size_t o = static_cast<size_t>(i) * w + j;
        for (int b = 0; b < 3; ++b) row[b] += pnormTerm(std::fabs(factor_[scale][b] * (*s[b])[o]));
      }
      for (int b = 0; b < 3; ++b) putRow(stats, i - g.top, b, row[b]);
    }
  }

  // The masking threshold at (i, j): the masker's |CSF| / 30 over the 3x3 neighbourhood,
  // the centre counted at / 15 instead, each band's sum added in turn.
  static float threshold(const Bands& masker, const Bands& flt, int w, int h, int i, int j) {
    const int ym = i == 0 ? 1 : i - 1, yp = i == h - 1 ? h - 1 : i + 1;
    const int xm = j == 0 ? 1 : j - 1, xp = j == w - 1 ? w - 1 : j + 1;
    const std::vector<float>* m[3] = {&masker.h, &masker.v, &masker.d};
    const std::vector<float>* f[3] = {&flt.h, &flt.v, &flt.d};
    float thr = 0;
    for (int b = 0; b < 3; ++b) {
      const float* F = f[b]->data();
      const size_t r0 = static_cast<size_t>(ym) * w, r1 = static_cast<size_t>(i) * w, r2 = static_cast<size_t>(yp) * w;
      float sum = 0;
      sum += F[r0 + xm];
      sum += F[r0 + j];
      sum += F[r0 + xp];
      sum += F[r1 + xm];
      sum = static_cast<float>(sum + kOneBy15 * std::fabs((*m[b])[r1 + j]));
      sum += F[r1 + xp];
      sum += F[r2 + xm];
      sum += F[r2 + j];
      sum += F[r2 + xp];
      thr += sum;
    }
    return thr;
  }

  // Each scored row's sums of the p-norm terms of src's CSF-weighted bands less the masking
  // threshold (floored at 0), into words `word`..`word` + 2.
  void masked(const Bands& src, const Bands& flt, const Bands& masker, int scale, int w, int h, uint64_t* stats,
              int word) const {
    const Region g = scoredRegion(w, h);
    const int top = std::max(g.top, 0), bottom = std::min(g.bottom, h);
    const int left = std::max(g.left, 0), right = std::min(g.right, w);
    const std::vector<float>* s[3] = {&src.h, &src.v, &src.d};
    for (int i = top; i < bottom; ++i) {
      float row[3] = {0, 0, 0};
      for (int j = left; j < right; ++j) {
        const size_t o = static_cast<size_t>(i) * w + j;
        const float thr = opt_.bypassCm == 0 ? threshold(masker, flt, w, h, i, j) : 0.0f;
        for (int b = 0; b < 3; ++b) {
          float x = (*s[b])[o] * factor_[scale][b];
          x = std::fabs(x) - thr;
          x = x < 0.0f ? 0.0f : x;
          row[b] += pnormTerm(x);
        }
      }
      for (int b = 0; b < 3; ++b) putRow(stats, i - g.top, word + b, row[b]);
    }
  }

  int width_, height_;
  Options opt_{};
  float factor_[4][3];
};

std::unique_ptr<Extractor> make(const ExtractorOptions& o, const ExtractorGeometry& g) {
  return std::make_unique<FloatAdm>(o, g);
}

}  // namespace

VMAFS_REGISTER_EXTRACTOR("float_adm", make);

}  // namespace vmafs

// float_vif (libvmaf 3.2.0's float_vif.c, vif.c, vif_tools.c): VIF at four scales in float
// arithmetic on luma offset by -128 (8-bit scale). Each scale's Gaussian (its size and
// sigma from vif_kernelscale) blurs the planes, scales 1-3 first blur and keep every second
// sample; per pixel the "matching_matlab" statistic with libvmaf's polynomial log2
// approximation, summed per row in float. Types follow libvmaf's: where a float meets a
// double option the step is done in double.
//
// The work is split where the backends meet: compute() gives each row's float sums (the
// per-pixel part, which the gpu backend does in float_vif.wgsl with the same bits), and
// finishStats() sums the rows and scales and forms the scores, for both backends.
#include <algorithm>
#include <cmath>
#include <math.h>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "extractor.h"
#include "../common/float-filter.h"
#include "../common/float-picture.h"
#include "../common/float-scale.h"
#include "../common/float-simd.h"

namespace vmafs {
namespace {

// libvmaf's VIF_OPT_FAST_LOG2 approximation: exponent plus a degree-8 polynomial of the
// mantissa, evaluated in float by Horner's rule (lane-wise: fsimd's ops).
constexpr float kLog2Poly[9] = {-0.012671635276421f, 0.064841182402670f, -0.157048836463065f,
                                0.257167726303123f,  -0.353800560300520f, 0.480131410397451f,
                                -0.721314327952201f, 1.442694803896991f,  0.0f};

template <class V>
typename V::F fastLog2(typename V::F x) {
  const typename V::F t = V::sub(V::mantissaOf(x), V::set1(1.0f));
  typename V::F v = V::zero();
  for (float c : kLog2Poly) v = V::add(V::mul(v, t), V::set1(c));
  typename V::F r = V::add(V::exponentOf(x), v);
  r = V::select(V::lt(x, V::zero()), V::set1(NAN), r);
  return V::select(V::eq(x, V::zero()), V::set1(-INFINITY), r);
}

// The statistic's constants. sigma1_sq < sigma_nsq compares a float with a double: for a
// float s that is s < nsqFloat, the least float not below the double (so lanes compare in float).
struct StatConsts {
  double nsq;
  // 1 / nsq where nsq is a power of two (else 0): then for the lanes whose value is used
  // (sigma1_sq >= nsq) double(s) / nsq is exact and a float, s * invNsqPow2 in float, and
  // float(1.0 + it) is the float sum 1.0f + it (a double's 53 bits exceed 2 * 24 + 2, so
  // rounding twice equals rounding once): the SIMD copies skip a double division. The
  // scalar copy keeps the double steps; cpu-isa compares them.
  float invNsqPow2;
  float nsqFloat;
  float sigmaMaxInv;
  float gainLimit;
};

StatConsts statConsts(double nsq, double gainLimit) {
  StatConsts c;
  c.nsq = nsq;
  float f = static_cast<float>(nsq);
  if (static_cast<double>(f) < nsq) f = std::nextafter(f, INFINITY);
  while (static_cast<double>(std::nextafter(f, -INFINITY)) >= nsq) f = std::nextafter(f, -INFINITY);
  c.nsqFloat = f;
  int exponent = 0;
  const bool pow2 = nsq > 0 && std::isfinite(nsq) && std::frexp(nsq, &exponent) == 0.5;
  const double inv = 1.0 / nsq;
  c.invNsqPow2 = pow2 && static_cast<double>(static_cast<float>(inv)) == inv ? static_cast<float>(inv) : 0.0f;
  c.sigmaMaxInv = static_cast<float>(::powf(static_cast<float>(nsq), 2.0f) / (255.0 * 255.0));
  c.gainLimit = static_cast<float>(gainLimit);
  return c;
}

// The "matching_matlab" statistic of pixels [j, w) of a row into num[] and den[] (libvmaf's
// vif_statistic_s, per pixel, in its order; conditions as selects, std::max(a, b) as
// a < b ? b : a and std::min(a, b) as b < a ? b : a).
template <class V>
int statPixels(const float* const* q, int j, int w, const StatConsts& c, float* num, float* den) {
  using F = typename V::F;
  using M = typename V::M;
  const F zero = V::zero(), one = V::set1(1.0f), eps = V::set1(1.0e-10f);
  const F gainLimit = V::set1(c.gainLimit), nsqFloat = V::set1(c.nsqFloat), sigmaMaxInv = V::set1(c.sigmaMaxInv);
  for (; j + V::N <= w; j += V::N) {
    const F m1 = V::load(q[0] + j), m2 = V::load(q[1] + j);
    F sigma1Sq = V::sub(V::load(q[2] + j), V::mul(m1, m1));
    F sigma2Sq = V::sub(V::load(q[3] + j), V::mul(m2, m2));
    const F sigma12 = V::sub(V::load(q[4] + j), V::mul(m1, m2));
    sigma1Sq = V::select(V::lt(sigma1Sq, zero), zero, sigma1Sq);
    sigma2Sq = V::select(V::lt(sigma2Sq, zero), zero, sigma2Sq);
    F g = V::div(sigma12, V::add(sigma1Sq, eps));
    F svSq = V::sub(sigma2Sq, V::mul(g, sigma12));
    const M flat1 = V::lt(sigma1Sq, eps);
    g = V::select(flat1, zero, g);
    svSq = V::select(flat1, sigma2Sq, svSq);
    sigma1Sq = V::select(flat1, zero, sigma1Sq);
    const M flat2 = V::lt(sigma2Sq, eps);
    g = V::select(flat2, zero, g);
    svSq = V::select(flat2, zero, svSq);
    const M negative = V::lt(g, zero);
    svSq = V::select(negative, sigma2Sq, svSq);
    g = V::select(negative, zero, g);
    svSq = V::select(V::lt(svSq, eps), eps, svSq);
    g = V::select(V::lt(gainLimit, g), gainLimit, g);
    F numVal = fastLog2<V>(V::onePlusRatio(V::mul(V::mul(g, g), sigma1Sq), svSq, c.nsq));
    F denVal = fastLog2<V>(V::N > 1 && c.invNsqPow2 != 0.0f ? V::add(one, V::mul(sigma1Sq, V::set1(c.invNsqPow2)))
                                                             : V::onePlusRatio(sigma1Sq, c.nsq));
    numVal = V::select(V::lt(sigma12, zero), zero, numVal);
    const M low = V::lt(sigma1Sq, nsqFloat);
    numVal = V::select(low, V::sub(one, V::mul(sigma2Sq, sigmaMaxInv)), numVal);
    denVal = V::select(low, one, denVal);
    V::store(num + j, numVal);
    V::store(den + j, denVal);
  }
  return j;
}

uint32_t bitsOf(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
float floatOf(uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

// The kernel scales libvmaf accepts (as floats, compared within 1e-3).
bool validKernelScale(float ks) {
  static const float kValid[] = {1.0f,         1.0f / 2.0f,  3.0f / 2.0f,  2.0f,        2.0f / 3.0f,  24.0f / 10.0f,
                                 360.0f / 97.0f, 4.0f / 3.0f, 3.5f / 3.0f, 3.75f / 3.0f, 4.25f / 3.0f, 5.0f / 3.0f,
                                 3.0f,         1.0f / 2.25f, 1.4746f,     1.54f,       1.6f,         1.06667f,
                                 0.711111f,    0.740740f,    1.111111f};
  for (float v : kValid) {
    if (std::fabs(ks - v) < 1e-3) return true;
  }
  return false;
}

int filterSize(int scale, float ks) {
  const int n = (1 << (4 - scale)) + 1;
  int ceiling = static_cast<int>(std::ceil(n * ks));
  if (ceiling % 2 == 0) ceiling += 1;
  return std::max(ceiling, 3);
}

// libvmaf's Gaussian: float pdf samples (its pdf divides by the normalisation instead of
// multiplying, which the normalisation by the float sum undoes up to rounding).
std::vector<float> gaussian(int scale, float ks) {
  const int size = filterSize(scale, ks);
  const float sigma = size / 5.0f;
  std::vector<float> out(static_cast<size_t>(size));
  float sum = 0;
  const int k = (size - 1) / 2;
  for (int i = 0; i < size; i++) {
    const float x = static_cast<float>(i - k);
    const float num = static_cast<float>(std::exp(-0.5 * x / sigma * x / sigma));
    const float den = static_cast<float>(1 / (sigma * std::sqrt(2 * 3.14159265358979323846)));
    out[i] = num / den;
    sum += out[i];
  }
  for (float& v : out) v /= sum;
  return out;
}

struct VifPlanes {
  std::vector<float>* ref;
  std::vector<float>* dis;
  int width, height;
};

// Every computed scale's per-row sums (FloatVif::statsCount's layout), row by row: scales
// 1-3 first blur the previous scale's planes and keep every second sample of every second
// row (only those rows are filtered); then each row's five filtered moments (float-filter.h's
// filterSeparable values) and the statistic, the row's terms summed in column order in float.
template <class V>
void computeT(const std::vector<float>* filters, int firstScale, const StatConsts& c, const VifPlanes& planes,
              uint64_t* rows) {
  std::vector<float>& ref = *planes.ref;
  std::vector<float>& dis = *planes.dis;
  int w = planes.width, h = planes.height;
  fsimd::FilterScratch scratch;
  std::vector<float> nextRef, nextDis, out, num, den;
  for (int scale = firstScale; scale < 4; ++scale) {
    const float* filter = filters[scale].data();
    const int taps = static_cast<int>(filters[scale].size());
    const int radius = taps / 2;
    if (scale > 0) {
      const int hw = w / 2, hh = h / 2;
      nextRef.resize(static_cast<size_t>(hw) * hh);
      nextDis.resize(static_cast<size_t>(hw) * hh);
      out.resize(static_cast<size_t>(w));
      scratch.reserve(w, taps, 1);
      for (int i = 0; i < hh; i++) {
        fsimd::filterRow<V>(filter, taps, ref.data(), w, h, 2 * i, scratch.row(0), out.data(), scratch.ptrs.data());
        for (int j = 0; j < hw; j++) nextRef[static_cast<size_t>(i) * hw + j] = out[2 * static_cast<size_t>(j)];
        fsimd::filterRow<V>(filter, taps, dis.data(), w, h, 2 * i, scratch.row(0), out.data(), scratch.ptrs.data());
        for (int j = 0; j < hw; j++) nextDis[static_cast<size_t>(i) * hw + j] = out[2 * static_cast<size_t>(j)];
      }
      ref.swap(nextRef);
      dis.swap(nextDis);
      w = hw;
      h = hh;
    }
    scratch.reserve(w, taps, 5);
    out.resize(static_cast<size_t>(5) * w);
    // The terms of kBlock rows, then their row sums (fsimd::rowSums: one row per lane).
    constexpr int kBlock = 8;
    num.resize(static_cast<size_t>(kBlock) * w);
    den.resize(static_cast<size_t>(kBlock) * w);
    float numSums[kBlock], denSums[kBlock];
    float* padded[5];
    float* moments[5];
    for (int k = 0; k < 5; k++) {
      padded[k] = scratch.row(k) + radius;
      moments[k] = out.data() + static_cast<size_t>(k) * w;
    }
    const float** refRows = scratch.ptrs.data();
    const float** disRows = refRows + taps;
    for (int i = 0; i < h; ++i) {
      fsimd::tapRows(ref.data(), w, h, i, taps, refRows);
      fsimd::tapRows(dis.data(), w, h, i, taps, disRows);
      int j = fsimd::verticalMoments<V>(refRows, disRows, filter, taps, 0, w, padded);
      fsimd::verticalMoments<fsimd::Scalar>(refRows, disRows, filter, taps, j, w, padded);
      for (int k = 0; k < 5; k++) {
        fsimd::mirrorPad(scratch.row(k), w, radius);
        j = fsimd::horizontal<V>(scratch.row(k), filter, taps, 0, w, moments[k]);
        fsimd::horizontal<fsimd::Scalar>(scratch.row(k), filter, taps, j, w, moments[k]);
      }
      float* rowNum = num.data() + static_cast<size_t>(i % kBlock) * w;
      float* rowDen = den.data() + static_cast<size_t>(i % kBlock) * w;
      j = statPixels<V>(moments, 0, w, c, rowNum, rowDen);
      statPixels<fsimd::Scalar>(moments, j, w, c, rowNum, rowDen);
      if (i % kBlock == kBlock - 1 || i == h - 1) {
        const int first = i - i % kBlock, count = i % kBlock + 1;
        fsimd::rowSums<V>(num.data(), static_cast<size_t>(w), w, count, numSums);
        fsimd::rowSums<V>(den.data(), static_cast<size_t>(w), w, count, denSums);
        for (int r = 0; r < count; r++) {
          rows[first + r] = static_cast<uint64_t>(bitsOf(denSums[r])) << 32 | bitsOf(numSums[r]);
        }
      }
    }
    rows += h;
  }
}

// One copy per instruction set (flatten: fsimd's ops inline into each, compiled for its target).
#define VMAFS_VIF_COPY(NAME, ATTR, OPS)                                                                             \
  ATTR void NAME(const std::vector<float>* filters, int firstScale, const StatConsts& c, const VifPlanes& planes, \
                 uint64_t* rows) {                                                                                \
    computeT<OPS>(filters, firstScale, c, planes, rows);                                                          \
  }
#if defined(__GNUC__) || defined(__clang__)
VMAFS_VIF_COPY(computeScalar, __attribute__((flatten)), fsimd::Scalar)
#else
VMAFS_VIF_COPY(computeScalar, , fsimd::Scalar)
#endif
#if defined(VMAFS_FLOAT_SIMD)
VMAFS_VIF_COPY(computeSse2, __attribute__((flatten)), fsimd::Sse2)
VMAFS_VIF_COPY(computeAvx2, __attribute__((target("avx2"), flatten)), fsimd::Avx2)
VMAFS_VIF_COPY(computeAvx512, __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"), flatten)), fsimd::Avx512)
#endif
#undef VMAFS_VIF_COPY

class FloatVif final : public Extractor {
 public:
  FloatVif(const ExtractorOptions& o, const ExtractorGeometry& g)
      : debug_(o.flag("debug")),
        gainLimit_(o.number("vif_enhn_gain_limit")),
        kernelScale_(o.number("vif_kernelscale")),
        sigmaNsq_(o.number("vif_sigma_nsq")),
        skipScale0_(o.flag("vif_skip_scale0")),
        minVal_{0.0, o.number("vif_scale1_min_val"), o.number("vif_scale2_min_val"), o.number("vif_scale3_min_val")} {
    if (!scaleMethodByName(o.text("vif_prescale_method"), &method_)) {
      throw std::invalid_argument("invalid vif_prescale_method " + o.text("vif_prescale_method") +
                                  " (nearest, bilinear, bicubic or lanczos4)");
    }
    if (!validKernelScale(static_cast<float>(kernelScale_))) {
      throw std::invalid_argument("invalid vif_kernelscale " + std::to_string(kernelScale_));
    }
    const double prescale = o.number("vif_prescale");
    width_ = g.width;
    height_ = g.height;
    scaledWidth_ = static_cast<int>(g.width * prescale + 0.5);
    scaledHeight_ = static_cast<int>(g.height * prescale + 0.5);
    for (int s = 0; s < 4; s++) filters_[s] = gaussian(s, static_cast<float>(kernelScale_));
  }

  size_t outputCount() const override { return debug_ ? 15 : 4; }

  void extract(const FrameWindow& f, double* out) const override {
    std::vector<float> ref = floatPlane(f.ref->plane[0], f.ref->bitDepth, -128);
    std::vector<float> dis = floatPlane(f.dis->plane[0], f.dis->bitDepth, -128);
    if (scaledWidth_ != width_ || scaledHeight_ != height_) {  // (at the same size scalePlane is a copy)
      const size_t n = static_cast<size_t>(scaledWidth_) * scaledHeight_;
      std::vector<float> refScaled(n), disScaled(n);
      scalePlane(method_, ref.data(), width_, height_, refScaled.data(), scaledWidth_, scaledHeight_);
      scalePlane(method_, dis.data(), width_, height_, disScaled.data(), scaledWidth_, scaledHeight_);
      ref.swap(refScaled);
      dis.swap(disScaled);
    }
    std::vector<uint64_t> rows(statsCount());
    compute(std::move(ref), std::move(dis), rows.data());
    finishStats(rows.data(), out);
  }

  // The per-row sums (one accumulator per row of each computed scale, first scale first:
  // the row's float sum of the numerator terms in the low word, of the denominator terms in
  // the high word), as compute() gives them and the gpu kernel (float_vif-gpu.ts) does.
  // From here on the arithmetic is order-dependent float and double summation: it runs
  // here for both backends.
  size_t statsCount() const override {
    size_t rows = 0;
    int h = scaledHeight_;
    for (int s = 0; s < 4; s++) {
      if (s > 0) h /= 2;
      if (s >= firstScale()) rows += static_cast<size_t>(h);
    }
    return rows;
  }

  void finishStats(const uint64_t* rows, double* out) const override {
    double scores[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int h = scaledHeight_;
    for (int s = 0; s < 4; s++) {
      if (s > 0) h /= 2;
      if (s < firstScale()) continue;
      float accumNum = 0.0f, accumDen = 0.0f;
      for (int i = 0; i < h; i++, rows++) {
        accumNum += floatOf(static_cast<uint32_t>(*rows));
        accumDen += floatOf(static_cast<uint32_t>(*rows >> 32));
      }
      scores[2 * s] = accumNum;
      scores[2 * s + 1] = accumDen;
    }
    const int start = firstScale();
    double num = 0, den = 0;
    for (int s = start; s < 4; s++) {
      num += scores[2 * s];
      den += scores[2 * s + 1];
    }
    const double score = den == 0.0 ? 1.0 : num / den;

    out[0] = skipScale0_ ? 0.0 : scores[0] / scores[1];
    for (int s = 1; s < 4; s++) out[s] = std::max(scores[2 * s] / scores[2 * s + 1], minVal_[s]);
    if (!debug_) return;
    out[4] = score;
    out[5] = num;
    out[6] = den;
    out[7] = skipScale0_ ? 0.0 : scores[0];
    out[8] = skipScale0_ ? -1.0 : scores[1];
    for (int i = 2; i < 8; i++) out[7 + i] = scores[i];
  }

  // What the gpu kernel takes from here (float_vif-gpu.ts reads this layout): the size it
  // runs at, the first scale, the statistic's constants (sigma_max_inv and the gain limit
  // as floats, sigma_nsq as the double it is), each scale's filter length, then the filters.
  std::vector<double> gpuParams() const override {
    const float sigmaMaxInv = static_cast<float>(::powf(static_cast<float>(sigmaNsq_), 2.0f) / (255.0 * 255.0));
    std::vector<double> p = {static_cast<double>(scaledWidth_), static_cast<double>(scaledHeight_),
                             static_cast<double>(firstScale()), sigmaMaxInv, static_cast<float>(gainLimit_), sigmaNsq_};
    for (const auto& f : filters_) p.push_back(static_cast<double>(f.size()));
    for (const auto& f : filters_) p.insert(p.end(), f.begin(), f.end());
    return p;
  }

 private:
  // The per-row sums of every computed scale into `rows` (statsCount() of them, in order).
  void compute(std::vector<float> ref, std::vector<float> dis, uint64_t* rows) const {
    const StatConsts c = statConsts(sigmaNsq_, gainLimit_);
    const VifPlanes p{&ref, &dis, scaledWidth_, scaledHeight_};
    switch (fsimd::floatIsa()) {
#if defined(VMAFS_FLOAT_SIMD)
      case fsimd::Isa::kAvx512: return computeAvx512(filters_, firstScale(), c, p, rows);
      case fsimd::Isa::kAvx2: return computeAvx2(filters_, firstScale(), c, p, rows);
      case fsimd::Isa::kSse2: return computeSse2(filters_, firstScale(), c, p, rows);
#endif
      default: return computeScalar(filters_, firstScale(), c, p, rows);
    }
  }

  int firstScale() const { return skipScale0_ ? 1 : 0; }

  bool debug_;
  double gainLimit_;
  double kernelScale_;
  double sigmaNsq_;
  bool skipScale0_;
  double minVal_[4];
  ScaleMethod method_ = ScaleMethod::kNearest;
  int width_ = 0, height_ = 0, scaledWidth_ = 0, scaledHeight_ = 0;
  std::vector<float> filters_[4];
};

std::unique_ptr<Extractor> make(const ExtractorOptions& o, const ExtractorGeometry& g) {
  return std::make_unique<FloatVif>(o, g);
}

}  // namespace

VMAFS_REGISTER_EXTRACTOR("float_vif", make);

}  // namespace vmafs

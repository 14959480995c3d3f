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

namespace vmafs {
namespace {

// libvmaf's VIF_OPT_FAST_LOG2 approximation: exponent plus a degree-8 polynomial of the
// mantissa, evaluated in float by Horner's rule.
float fastLog2(float x) {
  static const float kPoly[9] = {-0.012671635276421f, 0.064841182402670f, -0.157048836463065f,
                                 0.257167726303123f,  -0.353800560300520f, 0.480131410397451f,
                                 -0.721314327952201f, 1.442694803896991f,  0.0f};
  if (x == 0) return -INFINITY;
  if (x < 0) return NAN;
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const uint32_t exponent = (bits & 0x7F800000u) >> 23;
  const uint32_t mantissaOne = (bits & 0x007FFFFFu) | 0x3F800000u;
  float m;
  std::memcpy(&m, &mantissaOne, sizeof m);
  const float t = m - 1.0f;
  float v = 0;
  for (float c : kPoly) v = v * t + c;
  const float base = static_cast<float>(static_cast<int32_t>(exponent) - 127);
  return base + v;
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
    const std::vector<float> refFull = floatPlane(f.ref->plane[0], f.ref->bitDepth, -128);
    const std::vector<float> disFull = floatPlane(f.dis->plane[0], f.dis->bitDepth, -128);
    const size_t n = static_cast<size_t>(scaledWidth_) * scaledHeight_;
    std::vector<float> ref(n), dis(n);
    scalePlane(method_, refFull.data(), width_, height_, ref.data(), scaledWidth_, scaledHeight_);
    scalePlane(method_, disFull.data(), width_, height_, dis.data(), scaledWidth_, scaledHeight_);
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
    int w = scaledWidth_, h = scaledHeight_;
    const size_t n = static_cast<size_t>(w) * h;
    std::vector<float> mu1(n), mu2(n), xx(n), yy(n), xy(n), tmp;
    for (int scale = skipScale0_ ? 1 : 0; scale < 4; ++scale) {
      const float* filter = filters_[scale].data();
      const int taps = static_cast<int>(filters_[scale].size());
      if (scale > 0) {
        // Blur with this scale's filter, then keep every second sample of every second row.
        filterPlane(filter, taps, ref.data(), mu1.data(), w, h, tmp);
        filterPlane(filter, taps, dis.data(), mu2.data(), w, h, tmp);
        const int hw = w / 2, hh = h / 2;
        for (int i = 0; i < hh; i++) {
          for (int j = 0; j < hw; j++) {
            ref[static_cast<size_t>(i) * hw + j] = mu1[static_cast<size_t>(2 * i) * w + 2 * j];
            dis[static_cast<size_t>(i) * hw + j] = mu2[static_cast<size_t>(2 * i) * w + 2 * j];
          }
        }
        w = hw;
        h = hh;
      }
      filterPlane(filter, taps, ref.data(), mu1.data(), w, h, tmp);
      filterPlane(filter, taps, dis.data(), mu2.data(), w, h, tmp);
      filterSeparable(filter, taps, TapSquare{ref.data()}, xx.data(), w, h, tmp);
      filterSeparable(filter, taps, TapSquare{dis.data()}, yy.data(), w, h, tmp);
      filterSeparable(filter, taps, TapProduct{ref.data(), dis.data()}, xy.data(), w, h, tmp);
      statistic(mu1.data(), mu2.data(), xx.data(), yy.data(), xy.data(), w, h, rows);
      rows += h;
    }
  }

  // Per row: the float sums of the numerator and denominator terms, in column order.
  void statistic(const float* mu1, const float* mu2, const float* xxf, const float* yyf, const float* xyf, int w, int h,
                 uint64_t* rows) const {
    const double nsq = sigmaNsq_;
    const float sigmaMaxInv = static_cast<float>(::powf(static_cast<float>(nsq), 2.0f) / (255.0 * 255.0));
    const float eps = 1.0e-10f;
    const float gainLimit = static_cast<float>(gainLimit_);
    for (int i = 0; i < h; ++i) {
      float rowNum = 0, rowDen = 0;
      for (int j = 0; j < w; ++j) {
        const size_t p = static_cast<size_t>(i) * w + j;
        const float m1 = mu1[p], m2 = mu2[p];
        float sigma1Sq = xxf[p] - m1 * m1;
        float sigma2Sq = yyf[p] - m2 * m2;
        const float sigma12 = xyf[p] - m1 * m2;
        sigma1Sq = std::max(sigma1Sq, 0.0f);
        sigma2Sq = std::max(sigma2Sq, 0.0f);
        float g = sigma12 / (sigma1Sq + eps);
        float svSq = sigma2Sq - g * sigma12;
        if (sigma1Sq < eps) {
          g = 0.0f;
          svSq = sigma2Sq;
          sigma1Sq = 0.0f;
        }
        if (sigma2Sq < eps) {
          g = 0.0f;
          svSq = 0.0f;
        }
        if (g < 0.0f) {
          svSq = sigma2Sq;
          g = 0.0f;
        }
        svSq = std::max(svSq, eps);
        g = std::min(g, gainLimit);
        // (sv_sq + nsq) and (sigma1_sq / nsq) are double in libvmaf: nsq is a double.
        float numVal = fastLog2(static_cast<float>(1.0f + (g * g * sigma1Sq) / (svSq + nsq)));
        float denVal = fastLog2(static_cast<float>(1.0f + sigma1Sq / nsq));
        if (sigma12 < 0.0f) numVal = 0.0f;
        if (sigma1Sq < nsq) {
          numVal = 1.0f - sigma2Sq * sigmaMaxInv;
          denVal = 1.0f;
        }
        rowNum += numVal;
        rowDen += denVal;
      }
      rows[i] = static_cast<uint64_t>(bitsOf(rowDen)) << 32 | bitsOf(rowNum);
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

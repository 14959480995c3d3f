// float_ms_ssim (libvmaf's float_ms_ssim.c with ms_ssim.c): Wang's multi-scale SSIM of the
// luma as floats over 5 scales, each half the previous one through a 9x9 low-pass (the 9/7
// biorthogonal wavelet's); the score is the product over scales of l^alpha c^beta s^gamma,
// in dB under enable_db; enable_lcs adds each scale's mean l, c and s.
#include <cmath>
#include <vector>

#include "../common/ssim-core.h"
#include "extractor.h"

namespace vmafs {
namespace {

constexpr int kScales = 5;
constexpr float kAlpha[kScales] = {0.0000f, 0.0000f, 0.0000f, 0.0000f, 0.1333f};
constexpr float kBeta[kScales] = {0.0448f, 0.2856f, 0.3001f, 0.2363f, 0.1333f};
constexpr float kGamma[kScales] = {0.0448f, 0.2856f, 0.3001f, 0.2363f, 0.1333f};

// libvmaf's 9x9 low-pass, as its float constants (not an exact outer product of a 1-D filter).
constexpr int kLowPass = 9;
constexpr float kLowPassKernel[kLowPass * kLowPass] = {
    0.000714f,  -0.000450f, -0.002090f, 0.007132f,  0.016114f,  0.007132f,  -0.002090f, -0.000450f, 0.000714f,
    -0.000450f, 0.000283f,  0.001316f,  -0.004490f, -0.010146f, -0.004490f, 0.001316f,  0.000283f,  -0.000450f,
    -0.002090f, 0.001316f,  0.006115f,  -0.020867f, -0.047149f, -0.020867f, 0.006115f,  0.001316f,  -0.002090f,
    0.007132f,  -0.004490f, -0.020867f, 0.071207f,  0.160885f,  0.071207f,  -0.020867f, -0.004490f, 0.007132f,
    0.016114f,  -0.010146f, -0.047149f, 0.160885f,  0.363505f,  0.160885f,  -0.047149f, -0.010146f, 0.016114f,
    0.007132f,  -0.004490f, -0.020867f, 0.071207f,  0.160885f,  0.071207f,  -0.020867f, -0.004490f, 0.007132f,
    -0.002090f, 0.001316f,  0.006115f,  -0.020867f, -0.047149f, -0.020867f, 0.006115f,  0.001316f,  -0.002090f,
    -0.000450f, 0.000283f,  0.001316f,  -0.004490f, -0.010146f, -0.004490f, 0.001316f,  0.000283f,  -0.000450f,
    0.000714f,  -0.000450f, -0.002090f, 0.007132f,  0.016114f,  0.007132f,  -0.002090f, -0.000450f, 0.000714f,
};

class FloatMsSsim final : public Extractor {
 public:
  FloatMsSsim(const ExtractorOptions& o, const ExtractorGeometry& g)
      : lcs_(o.flag("enable_lcs")),
        db_(o.flag("enable_db")),
        maxDb_(ssim::maxDecibels(o.flag("clip_db"), g.bitDepth, g.width, g.height)) {
    // The TypeScript definition refuses these sizes first (E_FRAME_TOO_SMALL).
    int w = g.width, h = g.height;
    for (int i = 0; i < kScales; i++, w /= 2, h /= 2)
      if (w < ssim::kWindow || h < ssim::kWindow) throw std::invalid_argument("frames too small for 5 MS-SSIM scales");
    w = g.width, h = g.height;
    for (int i = 0; i < kScales; i++) {
      if (i > 0) w = ssim::decimatedSize(w, 2), h = ssim::decimatedSize(h, 2);
      widths_[i] = w;
      heights_[i] = h;
    }
  }

  size_t outputCount() const override { return lcs_ ? 1 + 3 * kScales : 1; }

  void extract(const FrameWindow& f, double* out) const override {
    ssim::FloatImage ref = ssim::lumaAsFloat(f.ref->plane[0], f.ref->bitDepth);
    ssim::FloatImage dis = ssim::lumaAsFloat(f.dis->plane[0], f.dis->bitDepth);
    ssim::SsimMeans means[kScales];
    for (int i = 0; i < kScales; i++) {
      if (i > 0) {
        ref = ssim::decimate(ref, 2, kLowPassKernel, kLowPass);
        dis = ssim::decimate(dis, 2, kLowPassKernel, kLowPass);
      }
      means[i] = ssim::meanSsim(ref, dis);
    }
    finish(means, out);
  }

  // The gpu kernel (float_ms_ssim-gpu.ts) pools on the device and gives each scale's four
  // double sums (ssim::meansFromSums), scale 0 first; the scales' combination runs here, as
  // extract() runs it.
  size_t statsCount() const override { return static_cast<size_t>(ssim::kPoolSums) * kScales; }
  void finishStats(const uint64_t* stats, double* out) const override {
    ssim::SsimMeans means[kScales];
    for (int i = 0; i < kScales; i++) means[i] = ssim::meansFromSums(stats + ssim::kPoolSums * i, widths_[i], heights_[i]);
    finish(means, out);
  }

 private:
  void finish(const ssim::SsimMeans* means, double* out) const {
    double lum[kScales], con[kScales], str[kScales];
    double msssim = 1.0;
    for (int i = 0; i < kScales; i++) {
      const ssim::SsimMeans& m = means[i];
      msssim *= std::pow(static_cast<double>(m.luminance), static_cast<double>(kAlpha[i])) *
                std::pow(static_cast<double>(m.contrast), static_cast<double>(kBeta[i])) *
                std::pow(static_cast<double>(m.structure), static_cast<double>(kGamma[i]));
      lum[i] = m.luminance;
      con[i] = m.contrast;
      str[i] = m.structure;
    }
    *out++ = db_ ? ssim::toDecibels(msssim, maxDb_) : msssim;
    if (lcs_) {
      for (double v : lum) *out++ = v;
      for (double v : con) *out++ = v;
      for (double v : str) *out++ = v;
    }
  }

  bool lcs_;
  bool db_;
  double maxDb_;
  int widths_[kScales];
  int heights_[kScales];
};

std::unique_ptr<Extractor> makeFloatMsSsim(const ExtractorOptions& o, const ExtractorGeometry& g) {
  return std::make_unique<FloatMsSsim>(o, g);
}

}  // namespace

VMAFS_REGISTER_EXTRACTOR("float_ms_ssim", makeFloatMsSsim);

}  // namespace vmafs

// float_ssim (libvmaf's float_ssim.c with ssim.c): SSIM of the luma as floats, after a box
// decimation by `scale` (0: round(min(w, h) / 256), at least 1), with the mean luminance,
// contrast and structure terms under enable_lcs and the score in dB under enable_db.
#include <algorithm>
#include <vector>

#include "../common/ssim-core.h"
#include "extractor.h"

namespace vmafs {
namespace {

// libvmaf rounds the automatic factor with its own half-up rule on a float.
int automaticScale(int width, int height) {
  const float a = static_cast<float>(std::min(width, height)) / 256.0f;
  const int whole = static_cast<int>(a);
  const int rounded = a - static_cast<float>(whole) >= 0.5 ? whole + (a > 0.0f ? 1 : -1) : whole;
  return std::max(1, rounded);
}

class FloatSsim final : public Extractor {
 public:
  FloatSsim(const ExtractorOptions& o, const ExtractorGeometry& g)
      : lcs_(o.flag("enable_lcs")),
        db_(o.flag("enable_db")),
        maxDb_(ssim::maxDecibels(o.flag("clip_db"), g.bitDepth, g.width, g.height)) {
    const int given = static_cast<int>(o.number("scale"));
    scale_ = given > 0 ? given : automaticScale(g.width, g.height);
    // The box filter's taps: 1 / scale^2 each, as a float.
    box_.assign(static_cast<size_t>(scale_) * scale_, 1.0f / static_cast<float>(scale_ * scale_));
    width_ = scale_ > 1 ? ssim::decimatedSize(g.width, scale_) : g.width;
    height_ = scale_ > 1 ? ssim::decimatedSize(g.height, scale_) : g.height;
  }

  size_t outputCount() const override { return lcs_ ? 4 : 1; }

  void extract(const FrameWindow& f, double* out) const override {
    ssim::FloatImage ref = ssim::lumaAsFloat(f.ref->plane[0], f.ref->bitDepth);
    ssim::FloatImage dis = ssim::lumaAsFloat(f.dis->plane[0], f.dis->bitDepth);
    if (scale_ > 1) {
      ref = ssim::decimate(ref, scale_, box_.data(), scale_);
      dis = ssim::decimate(dis, scale_, box_.data(), scale_);
    }
    finish(ssim::meanSsim(ref, dis), out);
  }

  // The gpu kernel (float_ssim-gpu.ts) pools on the device and gives the four double sums
  // of the pooling at the decimated size (ssim::meansFromSums); everything after them runs
  // here, as extract() runs it.
  size_t statsCount() const override { return ssim::kPoolSums; }
  void finishStats(const uint64_t* stats, double* out) const override {
    finish(ssim::meansFromSums(stats, width_, height_), out);
  }

 private:
  void finish(const ssim::SsimMeans& m, double* out) const {
    double score = m.ssim;
    if (db_) score = ssim::toDecibels(score, maxDb_);
    *out++ = score;
    if (lcs_) {
      *out++ = m.luminance;
      *out++ = m.contrast;
      *out++ = m.structure;
    }
  }

  bool lcs_;
  bool db_;
  double maxDb_;
  int scale_;
  int width_;
  int height_;
  std::vector<float> box_;
};

std::unique_ptr<Extractor> makeFloatSsim(const ExtractorOptions& o, const ExtractorGeometry& g) {
  return std::make_unique<FloatSsim>(o, g);
}

}  // namespace

VMAFS_REGISTER_EXTRACTOR("float_ssim", makeFloatSsim);

}  // namespace vmafs

// float_psnr (libvmaf's float_psnr.c and psnr.c): luma on the 8-bit scale as floats, the
// squared differences in float summed in double, then 10*log10(peak^2 / mse) capped, with
// the peak and cap libvmaf picks per bit depth.
#include <algorithm>
#include <cmath>

#include "extractor.h"
#include "../common/float-picture.h"

namespace vmafs {
namespace {

class FloatPsnr final : public Extractor {
 public:
  explicit FloatPsnr(const ExtractorGeometry& g) {
    switch (g.bitDepth) {
      case 8: peak_ = 255.0; max_ = 60.0; break;
      case 10: peak_ = 255.75; max_ = 72.0; break;
      case 12: peak_ = 255.9375; max_ = 84.0; break;
      default: peak_ = 255.99609375; max_ = 108.0; break;
    }
  }
  size_t outputCount() const override { return 1; }
  void extract(const FrameWindow& f, double* out) const override {
    const std::vector<float> ref = floatPlane(f.ref->plane[0], f.ref->bitDepth);
    const std::vector<float> dis = floatPlane(f.dis->plane[0], f.dis->bitDepth);
    double noise = 0;
    for (size_t i = 0; i < ref.size(); i++) {
      const float diff = ref[i] - dis[i];
      noise += diff * diff;  // float product, double sum: libvmaf's order
    }
    noise /= static_cast<int>(ref.size());
    out[0] = std::min(10 * std::log10(peak_ * peak_ / std::max(noise, 1e-10)), max_);
  }

 private:
  double peak_;
  double max_;
};

std::unique_ptr<Extractor> make(const ExtractorOptions&, const ExtractorGeometry& g) { return std::make_unique<FloatPsnr>(g); }

}  // namespace

VMAFS_REGISTER_EXTRACTOR("float_psnr", make);

}  // namespace vmafs

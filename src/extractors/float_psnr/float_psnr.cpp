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
  explicit FloatPsnr(const ExtractorGeometry& g) : samples_(g.width * g.height), bitDepth_(g.bitDepth) {
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
    fromNoise(noise, out);
  }

  // The GPU kernel sums the squared differences of the integer samples. At 8 to 12 bits
  // every float difference and square above is exact (|d| < 2^12 samples, so d^2 < 2^24
  // fits a float's mantissa) and every partial double sum is an integer multiple of the
  // scale^-2 below 2^53, so the double sum is exact whatever its order: it equals that
  // integer sum times scale^-2 (exact: a power of two). The gpu part only runs where that
  // holds (float_psnr-gpu.ts).
  size_t statsCount() const override { return 1; }
  void finishStats(const uint64_t* stats, double* out) const override {
    const double scale = bitDepth_ == 8 ? 1.0 : bitDepth_ == 10 ? 4.0 : bitDepth_ == 12 ? 16.0 : 256.0;
    fromNoise(static_cast<double>(stats[0]) / (scale * scale), out);
  }

 private:
  void fromNoise(double noise, double* out) const {
    noise /= samples_;
    out[0] = std::min(10 * std::log10(peak_ * peak_ / std::max(noise, 1e-10)), max_);
  }

  int samples_;
  int bitDepth_;
  double peak_;
  double max_;
};

std::unique_ptr<Extractor> make(const ExtractorOptions&, const ExtractorGeometry& g) { return std::make_unique<FloatPsnr>(g); }

}  // namespace

VMAFS_REGISTER_EXTRACTOR("float_psnr", make);

}  // namespace vmafs

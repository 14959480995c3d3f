// speed_chroma (libvmaf 3.2.0's speed.c): the SpEED score of the U plane and of the V plane
// (../common/speed-core), their mean as uv (a float, halved in double), or the other
// channel's score where exactly one channel's covariance is singular; each clipped to
// speed_max_val. libvmaf sizes the chroma planes by truncating halves.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "extractor.h"
#include "../common/speed-core.h"
#include "../common/speed-plane.h"

namespace vmafs {
namespace {

SpeedParams paramsOf(const ExtractorOptions& o) {
  SpeedParams p;
  p.kernelScale = o.number("speed_kernelscale");
  p.prescale = o.number("speed_prescale");
  p.prescaleMethod = o.text("speed_prescale_method");
  p.sigmaNn = o.number("speed_sigma_nn");
  p.nnFloor = o.number("speed_nn_floor");
  p.weightVarMode = static_cast<int>(o.number("speed_weight_var_mode"));
  return p;
}

// The chroma size libvmaf gives SpEED: w / 2 and h / 2 truncated where subsampled.
int chromaSide(int luma, int chroma) {
  if (chroma == 0) throw std::invalid_argument("speed_chroma needs chroma planes (the input is gray)");
  return chroma == luma ? luma : luma / 2;
}

class SpeedChroma final : public Extractor {
 public:
  SpeedChroma(const ExtractorOptions& o, const ExtractorGeometry& g)
      : width_(chromaSide(g.width, g.chromaWidth)),
        height_(chromaSide(g.height, g.chromaHeight)),
        maxVal_(o.number("speed_max_val")),
        scorer_(width_, height_, paramsOf(o)) {}

  size_t outputCount() const override { return 3; }

  void extract(const FrameWindow& f, double* out) const override {
    std::vector<float> planes[kPlanes];
    for (int p = 0; p < kPlanes; p++) {
      const Picture* picture = p % 2 == 0 ? f.ref : f.dis;
      planes[p] = scorer_.decimate(PictureSpeedSource(picture->plane[1 + p / 2], picture->bitDepth));
    }
    finish(planes[0].data(), planes[1].data(), planes[2].data(), planes[3].data(), out);
  }

  // The gpu kernel (speed_chroma-gpu.ts) gives decimate()'s four planes, U ref, U dis,
  // V ref, V dis (SpeedScorer::unpackDecimated's layout).
  size_t statsCount() const override { return kPlanes * scorer_.decimatedSamples() / 2; }

  void finishStats(const uint64_t* stats, double* out) const override {
    const std::vector<float> floats = scorer_.unpackDecimated(stats, kPlanes);
    const float* f = floats.data();
    const size_t n = scorer_.decimatedSamples();
    finish(f, f + n, f + 2 * n, f + 3 * n, out);
  }

  // SpeedScorer::gpuParams: the chroma plane's filters and prescale tables.
  std::vector<double> gpuParams() const override { return scorer_.gpuParams(); }

 private:
  static constexpr int kPlanes = 4;

  // Both backends' values from the decimated planes.
  void finish(const float* uRef, const float* uDis, const float* vRef, const float* vDis, double* out) const {
    bool singularU = false, singularV = false;
    const float u = scorer_.scoreDecimated(uRef, uDis, &singularU);
    const float v = scorer_.scoreDecimated(vRef, vDis, &singularV);
    float uv;
    if (singularU && !singularV) uv = v;
    else if (singularV && !singularU) uv = u;
    else uv = static_cast<float>((u + v) / 2.0);
    out[0] = std::min(static_cast<double>(u), maxVal_);
    out[1] = std::min(static_cast<double>(v), maxVal_);
    out[2] = std::min(static_cast<double>(uv), maxVal_);
  }

  int width_, height_;
  double maxVal_;
  SpeedScorer scorer_;
};

std::unique_ptr<Extractor> make(const ExtractorOptions& o, const ExtractorGeometry& g) {
  return std::make_unique<SpeedChroma>(o, g);
}

}  // namespace

VMAFS_REGISTER_EXTRACTOR("speed_chroma", make);

}  // namespace vmafs

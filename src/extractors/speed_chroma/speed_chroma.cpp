// speed_chroma (libvmaf 3.2.0's speed.c): the SpEED score of the U plane and of the V plane
// (../common/speed-core), their mean as uv (a float, halved in double), or the other
// channel's score where exactly one channel's covariance is singular; each clipped to
// speed_max_val. libvmaf sizes the chroma planes by truncating halves.
#include <algorithm>
#include <memory>
#include <stdexcept>

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
    bool singularU = false, singularV = false;
    const float u = channel(f, 1, &singularU);
    const float v = channel(f, 2, &singularV);
    float uv;
    if (singularU && !singularV) uv = v;
    else if (singularV && !singularU) uv = u;
    else uv = static_cast<float>((u + v) / 2.0);
    out[0] = std::min(static_cast<double>(u), maxVal_);
    out[1] = std::min(static_cast<double>(v), maxVal_);
    out[2] = std::min(static_cast<double>(uv), maxVal_);
  }

 private:
  float channel(const FrameWindow& f, int plane, bool* singular) const {
    const PictureSpeedSource ref(f.ref->plane[plane], f.ref->bitDepth);
    const PictureSpeedSource dis(f.dis->plane[plane], f.dis->bitDepth);
    return scorer_.score(ref, dis, singular);
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

// speed_chroma (libvmaf 3.2.0's speed.c): the SpEED score of the U plane and of the V plane
// (../common/speed-core), their mean as uv (a float, halved in double), or the other
// channel's score where exactly one channel's covariance is singular; each clipped to
// speed_max_val. libvmaf sizes the chroma planes by truncating halves.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "extractor.h"
#include "../common/float-scale.h"
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
  // V ref, V dis, each decimatedWidth x decimatedHeight floats, as float bits two to an
  // accumulator (low word first).
  size_t statsCount() const override { return kPlanes * planeSamples() / 2; }

  void finishStats(const uint64_t* stats, double* out) const override {
    const size_t n = planeSamples();
    std::vector<float> floats(kPlanes * n);
    for (size_t k = 0; k < floats.size(); k++) {
      const uint32_t bits = static_cast<uint32_t>(k % 2 == 0 ? stats[k / 2] : stats[k / 2] >> 32);
      std::memcpy(&floats[k], &bits, sizeof bits);
    }
    const float* f = floats.data();
    finish(f, f + n, f + 2 * n, f + 3 * n, out);
  }

  // What the gpu kernel takes from here (speed_chroma-gpu.ts reads this layout): the SpEED
  // plane's width and height, the decimated size, the two filters' lengths, the antialias
  // filter and the local-mean filter (floats, exact as doubles); then the prescale: how the
  // plane is resampled (0 not at all: the scaled size is the plane's; 1 nearest; 2 bilinear;
  // 3 bicubic or lanczos4, which the kernel does not do), the scaled width and height, and for
  // 1 and 2 per scaled column, then per scaled row, the two source samples it reads, 1 minus
  // the bilinear fraction and the fraction (nearest: one sample twice, 1, 0), as float-scale.h
  // computes them.
  std::vector<double> gpuParams() const override {
    const SpeedGeometry& g = scorer_.geometry();
    const std::vector<float>& aa = scorer_.antialiasTaps();
    const std::vector<float>& mean = scorer_.localMeanTaps();
    std::vector<double> p = {static_cast<double>(g.width),          static_cast<double>(g.height),
                             static_cast<double>(g.decimatedWidth), static_cast<double>(g.decimatedHeight),
                             static_cast<double>(aa.size()),        static_cast<double>(mean.size())};
    p.insert(p.end(), aa.begin(), aa.end());
    p.insert(p.end(), mean.begin(), mean.end());
    const auto method = static_cast<ScaleMethod>(scorer_.scaleMethod());
    const bool same = g.scaledWidth == g.width && g.scaledHeight == g.height;  // scalePlane copies
    const int code = same ? 0 : method == ScaleMethod::kNearest ? 1 : method == ScaleMethod::kBilinear ? 2 : 3;
    p.insert(p.end(), {static_cast<double>(code), static_cast<double>(g.scaledWidth), static_cast<double>(g.scaledHeight)});
    if (code == 1 || code == 2) {
      auto axis = [&](int from, int to) {
        const float ratio = scale_detail::scaleRatio(from, to);
        for (int i = 0; i < to; i++) {
          if (code == 1) {
            const int at = scale_detail::nearestIndex(i, ratio);
            p.insert(p.end(), {static_cast<double>(at), static_cast<double>(at), 1.0, 0.0});
          } else {
            const scale_detail::BilinearAxis a = scale_detail::bilinearAxis(scale_detail::scaleCentre(i, ratio), from);
            const float rest = 1 - a.fraction;  // bilinearAt's (1 - dx), in float
            p.insert(p.end(), {static_cast<double>(a.first), static_cast<double>(a.second), rest, a.fraction});
          }
        }
      };
      axis(g.width, g.scaledWidth);
      axis(g.height, g.scaledHeight);
    }
    return p;
  }

 private:
  static constexpr int kPlanes = 4;

  size_t planeSamples() const {
    const SpeedGeometry& g = scorer_.geometry();
    return static_cast<size_t>(g.decimatedWidth) * static_cast<size_t>(g.decimatedHeight);
  }

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

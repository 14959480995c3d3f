// speed_temporal (libvmaf 3.2.0's speed.c): the SpEED score (../common/speed-core) of the
// luma frame differences, previous minus current in float: the reference's against the
// distorted's (or, with speed_use_ref_diff, previous distorted minus current reference).
// 0 for the first frame. libvmaf neither clips it to speed_max_val nor reads a weighting
// mode here (mode 0). On the gpu backend the decimated planes come from the GPU
// (speed_temporal-gpu.ts) and finishStats scores them as extract() does its own.
#include <cstdint>
#include <memory>
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
  p.weightVarMode = 0;
  return p;
}

class SpeedTemporal final : public Extractor {
 public:
  SpeedTemporal(const ExtractorOptions& o, const ExtractorGeometry& g)
      : useRefDiff_(o.flag("speed_use_ref_diff")), scorer_(g.width, g.height, paramsOf(o)) {}

  size_t outputCount() const override { return 1; }

  void extract(const FrameWindow& f, double* out) const override {
    // No previous frame (a stream's first; previousDis too for an input without one there).
    if (f.previousRef.empty() || f.previousDis.empty()) {
      out[0] = 0.0;
      return;
    }
    const int depth = f.ref->bitDepth;
    const PlaneView& disNow = useRefDiff_ ? f.ref->plane[0] : f.dis->plane[0];
    const DifferenceSpeedSource refDiff(f.previousRef[0]->plane[0], f.ref->plane[0], depth);
    const DifferenceSpeedSource disDiff(f.previousDis[0]->plane[0], disNow, depth);
    out[0] = scorer_.score(refDiff, disDiff, nullptr);  // decimate() both, then scoreDecimated()
  }

  // The gpu kernel's accumulators: the first says whether the frame had a previous one (1)
  // or not (0: the score is 0, the rest unused); then decimate()'s two planes, the
  // reference's difference and the distorted's (SpeedScorer::unpackDecimated's layout).
  size_t statsCount() const override { return 1 + kPlanes * scorer_.decimatedSamples() / 2; }

  void finishStats(const uint64_t* stats, double* out) const override {
    if (stats[0] == 0) {
      out[0] = 0.0;
      return;
    }
    const std::vector<float> floats = scorer_.unpackDecimated(stats + 1, kPlanes);
    out[0] = scorer_.scoreDecimated(floats.data(), floats.data() + scorer_.decimatedSamples(), nullptr);
  }

  // SpeedScorer::gpuParams: the luma plane's filters and prescale tables.
  std::vector<double> gpuParams() const override { return scorer_.gpuParams(); }

 private:
  static constexpr int kPlanes = 2;
  bool useRefDiff_;
  SpeedScorer scorer_;
};

std::unique_ptr<Extractor> make(const ExtractorOptions& o, const ExtractorGeometry& g) {
  return std::make_unique<SpeedTemporal>(o, g);
}

}  // namespace

VMAFS_REGISTER_EXTRACTOR("speed_temporal", make);

}  // namespace vmafs

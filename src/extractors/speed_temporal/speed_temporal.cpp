// speed_temporal (libvmaf 3.2.0's speed.c): the SpEED score (../common/speed-core) of the
// luma frame differences, previous minus current in float: the reference's against the
// distorted's (or, with speed_use_ref_diff, previous distorted minus current reference).
// 0 for the first frame. libvmaf neither clips it to speed_max_val nor reads a weighting
// mode here (mode 0).
#include <memory>

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
    if (f.previousRef.empty()) {
      out[0] = 0.0;
      return;
    }
    const int depth = f.ref->bitDepth;
    const PlaneView& disNow = useRefDiff_ ? f.ref->plane[0] : f.dis->plane[0];
    const DifferenceSpeedSource refDiff(f.previousRef[0]->plane[0], f.ref->plane[0], depth);
    const DifferenceSpeedSource disDiff(f.previousDis[0]->plane[0], disNow, depth);
    out[0] = scorer_.score(refDiff, disDiff, nullptr);
  }

 private:
  bool useRefDiff_;
  SpeedScorer scorer_;
};

std::unique_ptr<Extractor> make(const ExtractorOptions& o, const ExtractorGeometry& g) {
  return std::make_unique<SpeedTemporal>(o, g);
}

}  // namespace

VMAFS_REGISTER_EXTRACTOR("speed_temporal", make);

}  // namespace vmafs

// float_moment (libvmaf's float_moment.c and moment.c): the mean and the mean square of each
// luma plane on the 8-bit scale, float samples summed in double.
#include "extractor.h"
#include "../common/float-picture.h"

namespace vmafs {
namespace {

double firstMoment(const std::vector<float>& p) {
  double sum = 0;
  for (float v : p) sum += v;
  return sum / static_cast<int>(p.size());
}

double secondMoment(const std::vector<float>& p) {
  double sum = 0;
  for (float v : p) sum += v * v;  // float square, double sum
  return sum / static_cast<int>(p.size());
}

class FloatMoment final : public Extractor {
 public:
  size_t outputCount() const override { return 4; }
  void extract(const FrameWindow& f, double* out) const override {
    const std::vector<float> ref = floatPlane(f.ref->plane[0], f.ref->bitDepth);
    const std::vector<float> dis = floatPlane(f.dis->plane[0], f.dis->bitDepth);
    out[0] = firstMoment(ref);
    out[1] = firstMoment(dis);
    out[2] = secondMoment(ref);
    out[3] = secondMoment(dis);
  }
};

std::unique_ptr<Extractor> make(const ExtractorOptions&, const ExtractorGeometry&) { return std::make_unique<FloatMoment>(); }

}  // namespace

VMAFS_REGISTER_EXTRACTOR("float_moment", make);

}  // namespace vmafs

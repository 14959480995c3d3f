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
  explicit FloatMoment(const ExtractorGeometry& g) : samples_(g.width * g.height), bitDepth_(g.bitDepth) {}
  size_t outputCount() const override { return 4; }
  void extract(const FrameWindow& f, double* out) const override {
    const std::vector<float> ref = floatPlane(f.ref->plane[0], f.ref->bitDepth);
    const std::vector<float> dis = floatPlane(f.dis->plane[0], f.dis->bitDepth);
    out[0] = firstMoment(ref);
    out[1] = firstMoment(dis);
    out[2] = secondMoment(ref);
    out[3] = secondMoment(dis);
  }

  // The GPU kernel gives the integer sums of the samples and of their squares, ref then
  // dis: [sum ref, sum dis, sum ref^2, sum dis^2]. At 8 to 12 bits each float sample is
  // s / scale exactly, its float square s^2 / scale^2 exactly (s^2 < 2^24), and every
  // partial double sum an integer multiple of the scale's power below 2^53: the double
  // sums above are exact, so they equal the integer sums scaled by a power of two.
  size_t statsCount() const override { return 4; }
  void finishStats(const uint64_t* stats, double* out) const override {
    const double scale = bitDepth_ == 8 ? 1.0 : bitDepth_ == 10 ? 4.0 : bitDepth_ == 12 ? 16.0 : 256.0;
    out[0] = static_cast<double>(stats[0]) / scale / samples_;
    out[1] = static_cast<double>(stats[1]) / scale / samples_;
    out[2] = static_cast<double>(stats[2]) / (scale * scale) / samples_;
    out[3] = static_cast<double>(stats[3]) / (scale * scale) / samples_;
  }

 private:
  int samples_;
  int bitDepth_;
};

std::unique_ptr<Extractor> make(const ExtractorOptions&, const ExtractorGeometry& g) { return std::make_unique<FloatMoment>(g); }

}  // namespace

VMAFS_REGISTER_EXTRACTOR("float_moment", make);

}  // namespace vmafs

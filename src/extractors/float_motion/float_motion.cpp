// float_motion (libvmaf 3.2.0's float_motion.c, motion.c): the mean absolute difference
// between this reference frame and the previous one, both offset by -128 (8-bit scale) and
// blurred by a separable 5-tap (or 3-tap, or identity) filter with mirrored edges; per row
// summed in float, the mean in float. Optionally plus the same at half size (bilinear) and
// of the chroma planes.
//
// This is the frame's own score. The outputs that depend on the next frame (motion2, motion3)
// are finished in TypeScript (float_motion.ts's finishFrame) from this score and the next
// frame's, so here their slots carry the raw score; motion is final.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "extractor.h"
#include "../common/float-filter.h"
#include "../common/float-picture.h"
#include "../common/float-scale.h"

namespace vmafs {
namespace {

constexpr float kFilter5[5] = {0.054488685f, 0.244201342f, 0.402619947f, 0.244201342f, 0.054488685f};
constexpr float kFilter3[3] = {0.166378498f, 0.667243004f, 0.166378498f};
constexpr float kIdentity5[5] = {0.0f, 0.0f, 1.0f, 0.0f, 0.0f};

// Sum of |a - b| per row (each |.| added in double, as fabs is, and kept in float), then the
// mean as a float division.
float meanAbsDiff(const float* a, const float* b, int w, int h) {
  float accum = 0.0f;
  for (int i = 0; i < h; ++i) {
    float row = 0.0f;
    for (int j = 0; j < w; ++j) {
      const size_t o = static_cast<size_t>(i) * w + j;
      row = static_cast<float>(row + std::fabs(static_cast<double>(a[o] - b[o])));
    }
    accum += row;
  }
  return accum / (w * h);
}

class FloatMotion final : public Extractor {
 public:
  FloatMotion(const ExtractorOptions& o, const ExtractorGeometry& g)
      : debug_(o.flag("debug")),
        forceZero_(o.flag("motion_force_zero")),
        addScale1_(o.flag("motion_add_scale1")),
        addUv_(o.flag("motion_add_uv")),
        fpsWeight_(o.number("motion_fps_weight")),
        maxVal_(o.number("motion_max_val")),
        geometry_(g) {
    const int size = static_cast<int>(o.number("motion_filter_size"));
    if (size == 1) filter_.assign(kIdentity5, kIdentity5 + 5);
    else if (size == 3) filter_.assign(kFilter3, kFilter3 + 3);
    else filter_.assign(kFilter5, kFilter5 + 5);
    if (addUv_ && g.chromaWidth == 0) throw std::invalid_argument("motion_add_uv needs chroma planes (the input is gray)");
  }

  size_t outputCount() const override { return debug_ ? 3 : 2; }

  void extract(const FrameWindow& f, double* out) const override {
    if (forceZero_) {
      std::fill(out, out + outputCount(), 0.0);
      return;
    }
    const bool hasPrevious = !f.previousRef.empty();
    double score = 0;
    if (hasPrevious) {
      const Picture& prev = *f.previousRef[0];
      score = planeScore(f.ref->plane[0], prev.plane[0], f.ref->bitDepth);
      if (addUv_) {
        const double u = planeScore(f.ref->plane[1], prev.plane[1], f.ref->bitDepth);
        const double v = planeScore(f.ref->plane[2], prev.plane[2], f.ref->bitDepth);
        score += u;
        score += v;
      }
    }
    fromScore(hasPrevious, score, out);
  }

  // The GPU kernel (float_motion-gpu.ts; luma at scale 0 only: without motion_add_scale1 and
  // motion_add_uv) gives whether there was a previous frame and the float sum of the per-row
  // float sums of |a - b| (meanAbsDiff's accum, summed in its order), as its bit pattern.
  size_t statsCount() const override { return 2; }
  void finishStats(const uint64_t* stats, double* out) const override {
    if (forceZero_) {
      std::fill(out, out + outputCount(), 0.0);
      return;
    }
    if (addScale1_ || addUv_) throw std::logic_error("float_motion's GPU accumulators cover luma at scale 0 only");
    const bool hasPrevious = stats[0] != 0;
    const uint32_t word = static_cast<uint32_t>(stats[1]);
    float accum;
    std::memcpy(&accum, &word, sizeof accum);
    const double score = hasPrevious ? static_cast<double>(accum / (geometry_.width * geometry_.height)) : 0.0;
    fromScore(hasPrevious, score, out);
  }

 private:
  void fromScore(bool hasPrevious, double score, double* out) const {
    size_t k = 0;
    out[k++] = score;
    if (debug_) out[k++] = hasPrevious ? std::min(score * fpsWeight_, maxVal_) : 0.0;
    out[k++] = score;
  }

  std::vector<float> blurred(const PlaneView& plane, int bitDepth, std::vector<float>& tmp) const {
    const std::vector<float> samples = floatPlane(plane, bitDepth, -128);
    std::vector<float> out(samples.size());
    filterPlane(filter_.data(), static_cast<int>(filter_.size()), samples.data(), out.data(), plane.width, plane.height, tmp);
    return out;
  }

  double planeScore(const PlaneView& cur, const PlaneView& prev, int bitDepth) const {
    std::vector<float> tmp;
    const std::vector<float> a = blurred(prev, bitDepth, tmp);
    const std::vector<float> b = blurred(cur, bitDepth, tmp);
    const int w = cur.width, h = cur.height;
    const float scale0 = meanAbsDiff(a.data(), b.data(), w, h);
    if (!addScale1_) return scale0;
    const int sw = static_cast<int>(w * 0.5 + 0.5), sh = static_cast<int>(h * 0.5 + 0.5);
    std::vector<float> as(static_cast<size_t>(sw) * sh), bs(static_cast<size_t>(sw) * sh);
    scalePlane(ScaleMethod::kBilinear, a.data(), w, h, as.data(), sw, sh);
    scalePlane(ScaleMethod::kBilinear, b.data(), w, h, bs.data(), sw, sh);
    const float scale1 = meanAbsDiff(as.data(), bs.data(), sw, sh);
    return scale0 + scale1;
  }

  bool debug_, forceZero_, addScale1_, addUv_;
  double fpsWeight_, maxVal_;
  ExtractorGeometry geometry_;
  std::vector<float> filter_;
};

std::unique_ptr<Extractor> make(const ExtractorOptions& o, const ExtractorGeometry& g) {
  return std::make_unique<FloatMotion>(o, g);
}

}  // namespace

VMAFS_REGISTER_EXTRACTOR("float_motion", make);

}  // namespace vmafs

// float_ansnr (libvmaf 3.2.0's float_ansnr.c, ansnr.c, ansnr_tools.c): luma offset by -128
// on the 8-bit scale; the reference filtered by a 3x3 binomial kernel and the distorted by
// a 5x5 one (2-D, not separable: per output sample each kernel row is summed in float, then
// the rows), edges mirrored with the last row/column repeated at the far side (-1 -> 1,
// n -> n - 1). Signal and noise energies are summed per row in float; ANSNR is
// 10 log10(signal / noise) and ANPSNR the PSNR of the filtered pair, with libvmaf's peak and
// cap per bit depth.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "extractor.h"
#include "../common/float-picture.h"

namespace vmafs {
namespace {

constexpr float kRefKernel[9] = {
    static_cast<float>(1.0 / 16.0), static_cast<float>(2.0 / 16.0), static_cast<float>(1.0 / 16.0),
    static_cast<float>(2.0 / 16.0), static_cast<float>(4.0 / 16.0), static_cast<float>(2.0 / 16.0),
    static_cast<float>(1.0 / 16.0), static_cast<float>(2.0 / 16.0), static_cast<float>(1.0 / 16.0)};

constexpr float k571(double v) { return static_cast<float>(v / 571.0); }
constexpr float kDisKernel[25] = {
    k571(2),  k571(7),  k571(12), k571(7),  k571(2),  k571(7),  k571(31), k571(52), k571(31),
    k571(7),  k571(12), k571(52), k571(127), k571(52), k571(12), k571(7),  k571(31), k571(52),
    k571(31), k571(7),  k571(2),  k571(7),  k571(12), k571(7),  k571(2)};

int mirrorRepeat(int i, int n) { return i < 0 ? -i : (i >= n ? 2 * n - i - 1 : i); }

std::vector<float> filter2d(const float* kernel, int size, const std::vector<float>& src, int w, int h) {
  std::vector<float> dst(src.size());
  const int radius = size / 2;
  for (int i = 0; i < h; ++i) {
    for (int j = 0; j < w; ++j) {
      float accum = 0;
      for (int fi = 0; fi < size; ++fi) {
        float row = 0;
        const int ii = mirrorRepeat(i - radius + fi, h);
        for (int fj = 0; fj < size; ++fj) {
          const int jj = mirrorRepeat(j - radius + fj, w);
          row += kernel[fi * size + fj] * src[static_cast<size_t>(ii) * w + jj];
        }
        accum += row;
      }
      dst[static_cast<size_t>(i) * w + j] = accum;
    }
  }
  return dst;
}

class FloatAnsnr final : public Extractor {
 public:
  explicit FloatAnsnr(const ExtractorGeometry& g) : width_(g.width), height_(g.height) {
    switch (g.bitDepth) {
      case 8: peak_ = 255.0; max_ = 60.0; break;
      case 10: peak_ = 255.75; max_ = 72.0; break;
      case 12: peak_ = 255.9375; max_ = 84.0; break;
      default: peak_ = 255.99609375; max_ = 108.0; break;
    }
  }
  size_t outputCount() const override { return 2; }
  void extract(const FrameWindow& f, double* out) const override {
    const int w = width_, h = height_;
    const std::vector<float> ref = filter2d(kRefKernel, 3, floatPlane(f.ref->plane[0], f.ref->bitDepth, -128), w, h);
    const std::vector<float> dis = filter2d(kDisKernel, 5, floatPlane(f.dis->plane[0], f.dis->bitDepth, -128), w, h);
    float signal = 0, noise = 0;
    for (int i = 0; i < h; ++i) {
      float rowSignal = 0, rowNoise = 0;
      for (int j = 0; j < w; ++j) {
        const float r = ref[static_cast<size_t>(i) * w + j];
        const float d = dis[static_cast<size_t>(i) * w + j];
        rowSignal += r * r;
        rowNoise += (r - d) * (r - d);
      }
      signal += rowSignal;
      noise += rowNoise;
    }
    fromEnergies(signal, noise, out);
  }

  // The GPU kernel (float_ansnr-gpu.ts) gives the two float energies themselves, summed in
  // the order above with integer-exact float arithmetic: their bit patterns, one per slot.
  size_t statsCount() const override { return 2; }
  void finishStats(const uint64_t* stats, double* out) const override {
    fromEnergies(floatOfBits(stats[0]), floatOfBits(stats[1]), out);
  }

 private:
  static float floatOfBits(uint64_t bits) {
    const uint32_t word = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &word, sizeof f);
    return f;
  }

  void fromEnergies(float signal, float noise, double* out) const {
    const int w = width_, h = height_;
    out[0] = noise == 0 ? max_ : 10.0 * std::log10(static_cast<double>(signal / noise));
    out[1] = std::min(10 * std::log10(peak_ * peak_ * w * h / std::max(static_cast<double>(noise), 1e-10)), max_);
  }

  int width_, height_;
  double peak_, max_;
};

std::unique_ptr<Extractor> make(const ExtractorOptions&, const ExtractorGeometry& g) { return std::make_unique<FloatAnsnr>(g); }

}  // namespace

VMAFS_REGISTER_EXTRACTOR("float_ansnr", make);

}  // namespace vmafs

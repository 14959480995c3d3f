// psnr (libvmaf's integer_psnr.c): per plane, the sum of squared differences over the
// whole plane in 64-bit integers, then 10*log10(peak^2 / mse), capped at psnr_max.
// The double steps are libvmaf's, in its order, with glibc's log10, so the values match
// bit for bit. 8-bit pictures use a peak of 255; higher depths (1 << bpc) - 1, or
// 255 << (bpc - 8) with reduced_hbd_peak.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "extractor.h"

namespace vmafs {
namespace {

template <typename T>
uint64_t sumSquaredError(const PlaneView& a, const PlaneView& b) {
  uint64_t sse = 0;
  for (int y = 0; y < a.height; y++) {
    const T* ra = a.row<T>(y);
    const T* rb = b.row<T>(y);
    uint64_t row = 0;
    for (int x = 0; x < a.width; x++) {
      const int64_t e = static_cast<int64_t>(ra[x]) - static_cast<int64_t>(rb[x]);
      row += static_cast<uint64_t>(e * e);
    }
    sse += row;
  }
  return sse;
}

class Psnr final : public Extractor {
 public:
  Psnr(const ExtractorOptions& o, const ExtractorGeometry& g)
      : mse_(o.flag("enable_mse")), apsnr_(o.flag("enable_apsnr")), planes_(o.flag("enable_chroma") && g.chromaWidth > 0 ? 3 : 1) {
    const int bpc = g.bitDepth;
    bitDepth_ = bpc;
    width_ = g.width;
    height_ = g.height;
    chromaWidth_ = g.chromaWidth;
    chromaHeight_ = g.chromaHeight;
    peak_ = o.flag("reduced_hbd_peak") ? 255u * (1u << (bpc - 8)) : (1u << bpc) - 1u;
    const double minSse = o.number("min_sse");
    for (int p = 0; p < 3; p++) {
      if (minSse != 0.0) {
        // libvmaf sizes the chroma planes with a truncating w / 2 here (not the ceil the
        // planes have); the cap only depends on it through its ceil().
        const bool sub = p > 0;
        const int w = sub && g.chromaWidth < g.width ? g.width / 2 : g.width;
        const int h = sub && g.chromaHeight < g.height ? g.height / 2 : g.height;
        const double mse = minSse / (static_cast<double>(w) * h);
        psnrMax_[p] = std::ceil(10. * std::log10(static_cast<double>(peak_) * peak_ / mse));
      } else {
        psnrMax_[p] = 6.0 * bpc + 12;
      }
    }
  }

  size_t outputCount() const override { return static_cast<size_t>(planes_) * (mse_ ? 2 : 1); }

  void extract(const FrameWindow& f, double* out) const override {
    const bool eight = f.ref->bitDepth == 8;
    uint64_t sse[3];
    for (int p = 0; p < planes_; p++) {
      const PlaneView& a = f.ref->plane[p];
      const PlaneView& b = f.dis->plane[p];
      sse[p] = eight ? sumSquaredError<uint8_t>(a, b) : sumSquaredError<uint16_t>(a, b);
    }
    finishStats(sse, out);
  }

  // The GPU kernel gives the same per-plane sums of squared error.
  size_t statsCount() const override { return static_cast<size_t>(planes_); }

  void finishStats(const uint64_t* sse, double* out) const override {
    // libvmaf's 8-bit path squares a constant 255 rather than the computed peak (equal at 8 bits).
    const double peak = bitDepth_ == 8 ? 255.0 : static_cast<double>(peak_);
    for (int p = 0; p < planes_; p++) {
      const unsigned w = static_cast<unsigned>(p == 0 ? width_ : chromaWidth_);
      const unsigned h = static_cast<unsigned>(p == 0 ? height_ : chromaHeight_);
      if (apsnr_) {
        apsnrSse_[p].fetch_add(sse[p], std::memory_order_relaxed);
        apsnrPixels_[p].fetch_add(static_cast<uint64_t>(w) * h, std::memory_order_relaxed);
      }
      const double mse = static_cast<double>(sse[p]) / (w * h);
      const double psnr = std::min(10. * std::log10(peak * peak / std::max(mse, 1e-16)), psnrMax_[p]);
      *out++ = psnr;
      if (mse_) *out++ = mse;
    }
  }

  // libvmaf's APSNR: 10 * log10(peak^2 * pixels / sse) over the whole run, per plane (all
  // three, chroma or not, as libvmaf writes them), capped at ceil(10 * log10(2 * peak^2 * pixels)).
  std::vector<std::pair<std::string, double>> aggregate() const override {
    if (!apsnr_) return {};
    static const char* const names[3] = {"apsnr_y", "apsnr_cb", "apsnr_cr"};
    std::vector<std::pair<std::string, double>> out;
    for (int p = 0; p < 3; p++) {
      const uint64_t n = apsnrPixels_[p].load();
      const uint64_t sse = apsnrSse_[p].load();
      const uint32_t peak2 = peak_ * peak_;
      const double apsnr = 10 * (std::log10(static_cast<double>(peak2)) + std::log10(static_cast<double>(n)) -
                                 std::log10(static_cast<double>(sse)));
      const double cap = std::ceil(10 * std::log10(static_cast<double>(peak2 * n * 2)));
      out.emplace_back(names[p], apsnr < cap ? apsnr : cap);  // libvmaf's MIN(): NaN gives the cap
    }
    return out;
  }

 private:
  bool mse_;
  bool apsnr_;
  mutable std::atomic<uint64_t> apsnrSse_[3] = {};
  mutable std::atomic<uint64_t> apsnrPixels_[3] = {};
  int planes_;
  int bitDepth_, width_, height_, chromaWidth_, chromaHeight_;
  uint32_t peak_;
  double psnrMax_[3];
};

std::unique_ptr<Extractor> makePsnr(const ExtractorOptions& o, const ExtractorGeometry& g) {
  return std::make_unique<Psnr>(o, g);
}

}  // namespace

VMAFS_REGISTER_EXTRACTOR("psnr", makePsnr);

}  // namespace vmafs

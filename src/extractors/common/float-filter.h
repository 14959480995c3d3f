// Separable float filtering as libvmaf's float VIF and motion do it (vif_tools.c,
// common/convolution.c): a vertical pass, then a horizontal one, each tap added in filter
// order to a float accumulator that starts at 0; samples outside the plane are mirrored
// about the edge sample without repeating it (-1 -> 1, n -> n - 2). The VIF variants filter
// the square of a plane or the product of two planes, squared/multiplied before weighting.
// Planes are packed (stride == width).
#pragma once
#include <vector>

namespace vmafs {

inline int mirrorIndex(int i, int n) { return i < 0 ? -i : (i >= n ? 2 * n - i - 2 : i); }

// What a tap reads from one or two planes at an offset.
struct TapPlain {
  const float* a;
  float operator()(size_t i) const { return a[i]; }
};
struct TapSquare {
  const float* a;
  float operator()(size_t i) const { return a[i] * a[i]; }
};
struct TapProduct {
  const float* a;
  const float* b;
  float operator()(size_t i) const { return a[i] * b[i]; }
};

// dst = the filtered plane (w x h); `tmp` holds one row.
template <typename Tap>
void filterSeparable(const float* filter, int taps, Tap src, float* dst, int w, int h, std::vector<float>& tmp) {
  tmp.resize(static_cast<size_t>(w));
  const int radius = taps / 2;
  for (int i = 0; i < h; ++i) {
    for (int j = 0; j < w; ++j) {
      float accum = 0;
      for (int k = 0; k < taps; ++k) {
        const int ii = mirrorIndex(i - radius + k, h);
        accum += filter[k] * src(static_cast<size_t>(ii) * w + j);
      }
      tmp[j] = accum;
    }
    float* out = dst + static_cast<size_t>(i) * w;
    for (int j = 0; j < w; ++j) {
      float accum = 0;
      for (int k = 0; k < taps; ++k) accum += filter[k] * tmp[mirrorIndex(j - radius + k, w)];
      out[j] = accum;
    }
  }
}

inline void filterPlane(const float* filter, int taps, const float* src, float* dst, int w, int h, std::vector<float>& tmp) {
  filterSeparable(filter, taps, TapPlain{src}, dst, w, h, tmp);
}

}  // namespace vmafs

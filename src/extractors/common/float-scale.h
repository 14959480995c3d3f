// Resampling a float plane as libvmaf's VIF prescale and motion's scale-1 term do it
// (vif_tools.c's vif_scale_frame_s): nearest, bilinear, bicubic (a = -0.75) or lanczos4,
// sample centres at (x + 0.5) * ratio - 0.5, edges mirrored (-i, 2 * last - i); the same
// size is a plain copy. Float and double steps are kept where C has them (the centres are
// computed in double, the weights in float).
#pragma once
#include <cmath>
#include <cstring>
#include <string>

namespace vmafs {

enum class ScaleMethod { kNearest, kBilinear, kBicubic, kLanczos4 };

// False for a name libvmaf does not know.
inline bool scaleMethodByName(const std::string& name, ScaleMethod* out) {
  if (name == "nearest") *out = ScaleMethod::kNearest;
  else if (name == "bilinear") *out = ScaleMethod::kBilinear;
  else if (name == "bicubic") *out = ScaleMethod::kBicubic;
  else if (name == "lanczos4") *out = ScaleMethod::kLanczos4;
  else return false;
  return true;
}

namespace scale_detail {

constexpr double kPi = 3.14159265358979323846;

inline float mirrorCoord(float i, float left, float right) { return i < left ? -i : (i > right ? 2 * right - i : i); }

inline float bicubicWeight(float t) {
  const float a = -0.75f;
  if (t < 0) t = -t;
  if (t < 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return (((t - 5) * t + 8) * t - 4) * a;
  return 0;
}

inline float lanczosWeight(float x, float a) {
  if (x == 0.0) return 1.0f;
  if (x > -a && x < a) return static_cast<float>(a * std::sin(kPi * x) * std::sin(kPi * x / a) / (kPi * kPi * x * x));
  return 0.0f;
}

// The scale ratio (source over destination size), and where destination sample i's centre
// falls in the source (in double, rounded to float), as scalePlane computes them; the source
// sample the nearest method takes for i.
inline float scaleRatio(int from, int to) { return static_cast<float>(from) / to; }
inline float scaleCentre(int i, float ratio) { return static_cast<float>((i + 0.5) * ratio - 0.5); }
inline int nearestIndex(int i, float ratio) { return static_cast<int>(i * ratio); }

// One axis of a bilinear sample at coordinate c of n samples: the mirrored samples below and
// above it, and c minus the first (in float). Shared with the gpu kernels that tabulate it.
struct BilinearAxis {
  int first, second;
  float fraction;
};
inline BilinearAxis bilinearAxis(float c, int n) {
  const int first = static_cast<int>(mirrorCoord(static_cast<float>(std::floor(c)), 0, static_cast<float>(n - 1)));
  const int second = static_cast<int>(mirrorCoord(static_cast<float>(std::ceil(c)), 0, static_cast<float>(n - 1)));
  return {first, second, c - first};
}

inline float bilinearAt(const float* src, int w, int h, float x, float y) {
  const BilinearAxis ax = bilinearAxis(x, w), ay = bilinearAxis(y, h);
  const int x1 = ax.first, x2 = ax.second, y1 = ay.first, y2 = ay.second;
  const float dx = ax.fraction;
  const float dy = ay.fraction;
  return (1 - dy) * (1 - dx) * src[y1 * w + x1] + (1 - dy) * dx * src[y1 * w + x2] + dy * (1 - dx) * src[y2 * w + x1] +
         dy * dx * src[y2 * w + x2];
}

inline float bicubicAt(const float* src, int w, int h, float x, float y) {
  const int x0 = static_cast<int>(std::floor(x));
  const int y0 = static_cast<int>(std::floor(y));
  const float dx = x - x0;
  const float dy = y - y0;
  float wx[4], wy[4];
  for (int i = -1; i <= 2; i++) {
    wx[i + 1] = bicubicWeight(i - dx);
    wy[i + 1] = bicubicWeight(i - dy);
  }
  float value = 0.0f;
  for (int j = -1; j <= 2; j++) {
    for (int i = -1; i <= 2; i++) {
      const int xi = static_cast<int>(mirrorCoord(static_cast<float>(x0 + i), 0, static_cast<float>(w - 1)));
      const int yi = static_cast<int>(mirrorCoord(static_cast<float>(y0 + j), 0, static_cast<float>(h - 1)));
      const float weight = wx[i + 1] * wy[j + 1];
      value += src[yi * w + xi] * weight;
    }
  }
  return value;
}

inline float lanczosAt(const float* src, int w, int h, float x, float y) {
  const int a = 4;
  const int x0 = static_cast<int>(std::floor(x));
  const int y0 = static_cast<int>(std::floor(y));
  const float dx = x - x0;
  const float dy = y - y0;
  float wx[9], wy[9];
  for (int i = -a; i <= a; i++) {
    wx[i + a] = lanczosWeight(i - dx, static_cast<float>(a));
    wy[i + a] = lanczosWeight(i - dy, static_cast<float>(a));
  }
  float value = 0.0f;
  float weightSum = 0.0f;
  for (int iy = -a; iy <= a; iy++) {
    for (int ix = -a; ix <= a; ix++) {
      const float weight = wx[ix + a] * wy[iy + a];
      weightSum += weight;
      const int xi = static_cast<int>(mirrorCoord(static_cast<float>(x0 + ix), 0, static_cast<float>(w - 1)));
      const int yi = static_cast<int>(mirrorCoord(static_cast<float>(y0 + iy), 0, static_cast<float>(h - 1)));
      value += src[yi * w + xi] * weight;
    }
  }
  return value / weightSum;
}

}  // namespace scale_detail

// dst (dw x dh, packed) from src (sw x sh, packed).
inline void scalePlane(ScaleMethod method, const float* src, int sw, int sh, float* dst, int dw, int dh) {
  using namespace scale_detail;
  if (sw == dw && sh == dh) {
    std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(dw) * dh);
    return;
  }
  const float rx = scaleRatio(sw, dw);
  const float ry = scaleRatio(sh, dh);
  for (int y = 0; y < dh; y++) {
    const float yy = scaleCentre(y, ry);
    for (int x = 0; x < dw; x++) {
      float* out = dst + static_cast<size_t>(y) * dw + x;
      if (method == ScaleMethod::kNearest) {
        *out = src[nearestIndex(y, ry) * sw + nearestIndex(x, rx)];
        continue;
      }
      const float xx = scaleCentre(x, rx);
      switch (method) {
        case ScaleMethod::kBilinear: *out = bilinearAt(src, sw, sh, xx, yy); break;
        case ScaleMethod::kBicubic: *out = bicubicAt(src, sw, sh, xx, yy); break;
        default: *out = lanczosAt(src, sw, sh, xx, yy); break;
      }
    }
  }
}

}  // namespace vmafs

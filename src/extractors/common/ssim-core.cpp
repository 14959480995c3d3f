// See ssim-core.h. The float/double mix below is deliberate: libvmaf multiplies in float,
// accumulates filter taps in double and rounds each filtered sample back to float; some
// SSIM terms divide in double, the structure term in float. Changing any of these changes
// the last bits of the scores.
#include "ssim-core.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "cpu_features.h"
#include "float-simd.h"

namespace vmafs::ssim {
namespace {

// The 11-tap Gaussian (sigma 1.5) libvmaf applies separably, as its float constants.
constexpr float kGaussian[kWindow] = {0.001028f, 0.007599f, 0.036001f, 0.109361f, 0.213006f, 0.266012f,
                                      0.213006f, 0.109361f, 0.036001f, 0.007599f, 0.001028f};

// One horizontal pass: out[x] = sum_k in[x + k] * g[k] for the ow positions where the
// window fits, each product in float, the sum in double from 0, in tap order.
void filterRow(const float* in, float* out, double* acc, int ow) {
  for (int x = 0; x < ow; x++) acc[x] = 0.0;
  for (int k = 0; k < kWindow; k++) {
    const float g = kGaussian[k];
    const float* p = in + k;
    for (int x = 0; x < ow; x++) acc[x] += static_cast<double>(p[x] * g);
  }
  for (int x = 0; x < ow; x++) out[x] = static_cast<float>(acc[x]);
}

int mirror(int i, int n) {
  if (i < 0) return -1 - i;
  if (i >= n) return 2 * n - 1 - i;
  return i;
}

// The vector copies of meanSsim's filtering and terms (as the four pooling sums) and of
// decimate() (ssim-core-simd.inc), one per instruction set.
struct SsimKernels {
  void (*meanSsim)(const FloatImage& ref, const FloatImage& dis, double sums[4]);
  void (*decimate)(const FloatImage& src, int factor, const float* kernel, int size, FloatImage& dst);
};

#include "ssim-core-simd.inc"

#if defined(VMAFS_FLOAT_SIMD)
// One copy per instruction set (flatten: the lane ops inline into each, compiled for its
// target).
#define VMAFS_SSIM_COPY(NS, ATTR, OPS)                                                                  \
  namespace NS {                                                                                        \
  ATTR void meanSsim(const FloatImage& ref, const FloatImage& dis, double sums[4]) {                    \
    ssimsimd::meanSsimV<OPS>(ref, dis, sums);                                                           \
  }                                                                                                     \
  ATTR void decimate(const FloatImage& src, int factor, const float* kernel, int size, FloatImage& dst) { \
    ssimsimd::decimateV<OPS>(src, factor, kernel, size, dst);                                           \
  }                                                                                                     \
  const SsimKernels kKernels = {meanSsim, decimate};                                                    \
  }
VMAFS_SSIM_COPY(sse2, __attribute__((flatten)), fsimd::Sse2)
VMAFS_SSIM_COPY(avx2, __attribute__((target("avx2"), flatten)), fsimd::Avx2)
VMAFS_SSIM_COPY(avx512, __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"), flatten)), fsimd::Avx512)
#undef VMAFS_SSIM_COPY

// The copy for the active instruction set (floatIsa(): cpu_features.h's cap), or none: the
// scalar code.
const SsimKernels* simdKernels() {
  switch (fsimd::floatIsa()) {
    case fsimd::Isa::kAvx512: return &avx512::kKernels;
    case fsimd::Isa::kAvx2: return &avx2::kKernels;
    case fsimd::Isa::kSse2: return &sse2::kKernels;
    case fsimd::Isa::kScalar: break;
  }
  return nullptr;
}
#else
const SsimKernels* simdKernels() { return nullptr; }
#endif

}  // namespace

// The per-sample SSIM terms of one output row from its five filtered quantities (mu(ref),
// mu(dis), mean(ref^2), mean(dis^2), mean(ref*dis), ow floats each) and their running
// double sums, row after row (ssim-maps.wgsl's `terms` computes the same terms and
// reproduces these sums on the gpu).
struct SsimPool {
  int ow, oh;
  double ssimSum = 0.0, lSum = 0.0, cSum = 0.0, sSum = 0.0;
  SsimPool(int w, int h) : ow(w), oh(h) {}

  void row(const float* filtered) {
    const float l = 255;
    const float c1 = (0.01f * l) * (0.01f * l);
    const float c2 = (0.03f * l) * (0.03f * l);
    const float c3 = c2 / 2.0f;
    const float* muA = filtered;
    const float* muB = muA + ow;
    const float* meanAA = muB + ow;
    const float* meanBB = meanAA + ow;
    const float* meanAB = meanBB + ow;
    for (int x = 0; x < ow; x++) {
      const float mu1 = muA[x], mu2 = muB[x];
      float var1 = meanAA[x] - mu1 * mu1;
      float var2 = meanBB[x] - mu2 * mu2;
      // Rounding can leave a tiny negative variance; libvmaf clamps it (through a double compare).
      var1 = 0.0 > var1 ? 0.0f : var1;
      var2 = 0.0 > var2 ? 0.0f : var2;
      const float cov = meanAB[x] - mu1 * mu2;
      const float sigmas = static_cast<float>(std::sqrt(static_cast<double>(var1 * var2)));
      const double lum = (2.0 * mu1 * mu2 + c1) / static_cast<double>(mu1 * mu1 + mu2 * mu2 + c1);
      const double con = (2.0 * sigmas + c2) / static_cast<double>(var1 + var2 + c2);
      // Identical flat regions can give a slightly negative covariance with zero sigmas;
      // libvmaf treats it as 0 so such a window scores 1.
      const float covClamped = (cov < 0.0f && sigmas <= 0.0f) ? 0.0f : cov;
      const double str = static_cast<double>((covClamped + c3) / (sigmas + c3));
      ssimSum += lum * con * str;
      lSum += lum;
      cSum += con;
      sSum += str;
    }
  }

  SsimMeans means() const {
    const double n = static_cast<double>(ow * oh);
    return {static_cast<float>(ssimSum / n), static_cast<float>(lSum / n), static_cast<float>(cSum / n),
            static_cast<float>(sSum / n)};
  }
};

FloatImage lumaAsFloat(const PlaneView& plane, int bitDepth) {
  FloatImage img;
  img.width = plane.width;
  img.height = plane.height;
  img.data.resize(static_cast<size_t>(plane.width) * plane.height);
  float* out = img.data.data();
  if (bitDepth == 8) {
    for (int y = 0; y < plane.height; y++) {
      const uint8_t* r = plane.row<uint8_t>(y);
      for (int x = 0; x < plane.width; x++) *out++ = static_cast<float>(r[x]);
    }
  } else {
    const float scaler = static_cast<float>(1 << (bitDepth - 8));
    for (int y = 0; y < plane.height; y++) {
      const uint16_t* r = plane.row<uint16_t>(y);
      for (int x = 0; x < plane.width; x++) *out++ = static_cast<float>(r[x]) / scaler;
    }
  }
  return img;
}

int decimatedSize(int size, int factor) { return size / factor + (size & 1); }

FloatImage decimate(const FloatImage& src, int factor, const float* kernel, int size) {
  const int w = src.width, h = src.height;
  FloatImage dst;
  dst.width = decimatedSize(w, factor);
  dst.height = decimatedSize(h, factor);
  dst.data.resize(static_cast<size_t>(dst.width) * dst.height);
  const int sw = dst.width;
  // Taps sit at offsets -size/2 .. size/2 (one fewer on the right for even sizes).
  const int centre = size / 2;
  if (const SsimKernels* k = simdKernels()) {
    k->decimate(src, factor, kernel, size, dst);
    return dst;
  }
  std::vector<int> columns(static_cast<size_t>(size) * sw);
  for (int u = 0; u < size; u++)
    for (int x = 0; x < sw; x++) columns[static_cast<size_t>(u) * sw + x] = mirror(x * factor + u - centre, w);
  std::vector<double> acc(sw);
  for (int y = 0; y < dst.height; y++) {
    for (int x = 0; x < sw; x++) acc[x] = 0.0;
    for (int v = 0; v < size; v++) {
      const float* row = src.data.data() + static_cast<size_t>(mirror(y * factor + v - centre, h)) * w;
      for (int u = 0; u < size; u++) {
        const float k = kernel[v * size + u];
        const int* col = columns.data() + static_cast<size_t>(u) * sw;
        for (int x = 0; x < sw; x++) acc[x] += static_cast<double>(row[col[x]] * k);
      }
    }
    float* out = dst.data.data() + static_cast<size_t>(y) * sw;
    for (int x = 0; x < sw; x++) out[x] = static_cast<float>(acc[x]);
  }
  return dst;
}

SsimMeans meanSsim(const FloatImage& ref, const FloatImage& dis) {
  const int w = ref.width, h = ref.height;
  const int ow = w - kWindow + 1, oh = h - kWindow + 1;
  SsimPool pool(ow, oh);
  if (const SsimKernels* k = simdKernels()) {
    double sums[kPoolSums];
    k->meanSsim(ref, dis, sums);
    pool.ssimSum = sums[0], pool.lSum = sums[1], pool.cSum = sums[2], pool.sSum = sums[3];
    return pool.means();
  }

  // The five filtered quantities (means of ref, dis, ref^2, dis^2, ref*dis): each source
  // row is filtered horizontally once into a ring of the last kWindow rows, then each
  // output row is filtered vertically from the ring; the taps add up in the same order as
  // filtering whole planes would.
  constexpr int kQuantities = 5;
  std::vector<float> products(static_cast<size_t>(3) * w);
  std::vector<float> ring(static_cast<size_t>(kQuantities) * kWindow * ow);
  std::vector<double> acc(ow);
  std::vector<float> filtered(static_cast<size_t>(kQuantities) * ow);
  auto ringRow = [&](int q, int row) { return ring.data() + (static_cast<size_t>(q) * kWindow + row % kWindow) * ow; };
  auto filterSourceRow = [&](int row) {
    const float* a = ref.data.data() + static_cast<size_t>(row) * w;
    const float* b = dis.data.data() + static_cast<size_t>(row) * w;
    float* aa = products.data();
    float* bb = aa + w;
    float* ab = bb + w;
    for (int x = 0; x < w; x++) {
      aa[x] = a[x] * a[x];
      bb[x] = b[x] * b[x];
      ab[x] = a[x] * b[x];
    }
    const float* sources[kQuantities] = {a, b, aa, bb, ab};
    for (int q = 0; q < kQuantities; q++) filterRow(sources[q], ringRow(q, row), acc.data(), ow);
  };

  for (int row = 0; row < kWindow - 1; row++) filterSourceRow(row);
  for (int y = 0; y < oh; y++) {
    filterSourceRow(y + kWindow - 1);
    for (int q = 0; q < kQuantities; q++) {
      for (int x = 0; x < ow; x++) acc[x] = 0.0;
      for (int k = 0; k < kWindow; k++) {
        const float g = kGaussian[k];
        const float* p = ringRow(q, y + k);
        for (int x = 0; x < ow; x++) acc[x] += static_cast<double>(p[x] * g);
      }
      float* out = filtered.data() + static_cast<size_t>(q) * ow;
      for (int x = 0; x < ow; x++) out[x] = static_cast<float>(acc[x]);
    }
    pool.row(filtered.data());
  }
  return pool.means();
}

SsimMeans meansFromSums(const uint64_t* sumBits, int width, int height) {
  SsimPool pool(width - kWindow + 1, height - kWindow + 1);
  double* sums[kPoolSums] = {&pool.ssimSum, &pool.lSum, &pool.cSum, &pool.sSum};
  for (int q = 0; q < kPoolSums; q++) std::memcpy(sums[q], sumBits + q, sizeof(double));
  return pool.means();
}

double toDecibels(double score, double maxDb) {
  const double db = -10. * std::log10(1 - score);
  return db < maxDb ? db : maxDb;
}

double maxDecibels(bool clip, int bitDepth, int width, int height) {
  if (!clip) return std::numeric_limits<double>::infinity();
  const unsigned peak = (1u << bitDepth) - 1u;
  const double mse = 0.5 / (static_cast<unsigned>(width) * static_cast<unsigned>(height));
  return std::ceil(10. * std::log10(static_cast<double>(peak * peak) / mse));
}

}  // namespace vmafs::ssim

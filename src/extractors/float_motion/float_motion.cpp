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
#include "../common/float-simd.h"

namespace vmafs {
namespace {

constexpr float kFilter5[5] = {0.054488685f, 0.244201342f, 0.402619947f, 0.244201342f, 0.054488685f};
constexpr float kFilter3[3] = {0.166378498f, 0.667243004f, 0.166378498f};
constexpr float kIdentity5[5] = {0.0f, 0.0f, 1.0f, 0.0f, 0.0f};

// Per row, the float sum of |a - b| in column order (libvmaf adds fabs(a - b), a double, to
// a float accumulator: float(row + double(|d|)), which is the float sum row + |d| exactly,
// since a double has more than 2 * 24 + 2 bits and so rounding twice is the same as once).
// Rows [i, h) one after another.
void absRowSumsScalar(const float* a, const float* b, int w, int i, int h, float* rowSums) {
  for (; i < h; ++i) {
    const float* pa = a + static_cast<size_t>(i) * w;
    const float* pb = b + static_cast<size_t>(i) * w;
    float row = 0.0f;
    for (int j = 0; j < w; ++j) row = static_cast<float>(row + std::fabs(static_cast<double>(pa[j] - pb[j])));
    rowSums[i] = row;
  }
}

#if defined(VMAFS_FLOAT_SIMD)
// The same for blocks of four (SSE2) or eight (AVX2, AVX-512) rows at once, one row per
// lane, through fsimd's transposed tiles; the columns past the last whole tile finish each
// row one by one. Gives the rows done.
int absRowSumsSse2(const float* a, const float* b, int w, int h, float* rowSums) {
  const __m128 absMask = _mm_castsi128_ps(_mm_set1_epi32(0x7FFFFFFF));
  int i = 0;
  for (; i + 4 <= h; i += 4) {
    const size_t base = static_cast<size_t>(i) * w;
    __m128 acc = _mm_setzero_ps();
    int j = 0;
    for (; j + 4 <= w; j += 4) {
      __m128 d[4];
      for (int r = 0; r < 4; r++) {
        const size_t o = base + static_cast<size_t>(r) * w + j;
        d[r] = _mm_and_ps(_mm_sub_ps(_mm_loadu_ps(a + o), _mm_loadu_ps(b + o)), absMask);
      }
      acc = fsimd::addColumns4(acc, d[0], d[1], d[2], d[3]);
    }
    float rows[4];
    _mm_storeu_ps(rows, acc);
    for (int r = 0; r < 4; r++) {
      const size_t o = base + static_cast<size_t>(r) * w;
      for (int x = j; x < w; x++) rows[r] += std::fabs(a[o + x] - b[o + x]);
      rowSums[i + r] = rows[r];
    }
  }
  return i;
}

__attribute__((target("avx2"))) int absRowSumsAvx2(const float* a, const float* b, int w, int h, float* rowSums) {
  const __m256 absMask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  int i = 0;
  for (; i + 8 <= h; i += 8) {
    const size_t base = static_cast<size_t>(i) * w;
    __m256 acc = _mm256_setzero_ps();
    int j = 0;
    for (; j + 8 <= w; j += 8) {
      __m256 d[8];
      for (int r = 0; r < 8; r++) {
        const size_t o = base + static_cast<size_t>(r) * w + j;
        d[r] = _mm256_and_ps(_mm256_sub_ps(_mm256_loadu_ps(a + o), _mm256_loadu_ps(b + o)), absMask);
      }
      acc = fsimd::addColumns8(acc, d);
    }
    float rows[8];
    _mm256_storeu_ps(rows, acc);
    for (int r = 0; r < 8; r++) {
      const size_t o = base + static_cast<size_t>(r) * w;
      for (int x = j; x < w; x++) rows[r] += std::fabs(a[o + x] - b[o + x]);
      rowSums[i + r] = rows[r];
    }
  }
  return i;
}
#endif

// The mean of |a - b|: the row sums added in row order in float, divided as a float.
float meanAbsDiff(const float* a, const float* b, int w, int h, fsimd::Isa isa) {
  std::vector<float> rowSums(static_cast<size_t>(h));
  int i = 0;
#if defined(VMAFS_FLOAT_SIMD)
  if (isa == fsimd::Isa::kAvx2 || isa == fsimd::Isa::kAvx512) i = absRowSumsAvx2(a, b, w, h, rowSums.data());
  else if (isa == fsimd::Isa::kSse2) i = absRowSumsSse2(a, b, w, h, rowSums.data());
#endif
  absRowSumsScalar(a, b, w, i, h, rowSums.data());
  float accum = 0.0f;
  for (float row : rowSums) accum += row;
  return accum / (w * h);
}

// Rows [0, h) of a block: the ISA's row blocks, then the rest one by one.
template <class V>
void absRowSums(const float* a, const float* b, int w, int h, float* rowSums) {
  int i = 0;
#if defined(VMAFS_FLOAT_SIMD)
  if constexpr (V::N >= 8) i = absRowSumsAvx2(a, b, w, h, rowSums);
  else if constexpr (V::N == 4) i = absRowSumsSse2(a, b, w, h, rowSums);
#endif
  absRowSumsScalar(a, b, w, i, h, rowSums);
}

// A plane's rows as floats (floatRow, offset -128) where the vertical taps read them, each
// converted once into a ring of `taps` rows: the rows one output row reads (mirrored at
// the edges) lie within `taps` consecutive rows, so their slots (row % taps) differ.
class RowRing {
 public:
  RowRing(const PlaneView& plane, int bitDepth, int taps)
      : plane_(plane), bitDepth_(bitDepth), taps_(taps), rows_(static_cast<size_t>(taps) * plane.width), tag_(taps, -1) {}
  const float* row(int y) {
    const int slot = y % taps_;
    float* p = rows_.data() + static_cast<size_t>(slot) * plane_.width;
    if (tag_[slot] != y) {
      floatRow(plane_, bitDepth_, y, p, -128);
      tag_[slot] = y;
    }
    return p;
  }

 private:
  const PlaneView& plane_;
  int bitDepth_, taps_;
  std::vector<float> rows_;
  std::vector<int> tag_;
};

// The scale-0 score without whole-plane buffers: blocks of eight rows of both planes
// blurred (filterPlane's values, row by row), their |a - b| row sums, added in row order
// and divided as meanAbsDiff does.
template <class V>
float scale0MeanT(const PlaneView& prev, const PlaneView& cur, int bitDepth, const float* filter, int taps) {
  const int w = cur.width, h = cur.height, radius = taps / 2;
  constexpr int kBlock = 8;
  RowRing ringA(prev, bitDepth, taps), ringB(cur, bitDepth, taps);
  std::vector<float> blockA(static_cast<size_t>(kBlock) * w), blockB(static_cast<size_t>(kBlock) * w);
  std::vector<float> padded(static_cast<size_t>(w) + taps);
  std::vector<const float*> ptrs(static_cast<size_t>(taps));
  float sums[kBlock];
  float accum = 0.0f;
  for (int i0 = 0; i0 < h; i0 += kBlock) {
    const int count = std::min(kBlock, h - i0);
    for (int r = 0; r < count; r++) {
      for (int k = 0; k < taps; k++) ptrs[k] = ringA.row(fsimd::mirrorClamped(i0 + r - radius + k, h));
      fsimd::filterRowFrom<V>(ptrs.data(), filter, taps, w, padded.data(), blockA.data() + static_cast<size_t>(r) * w);
      for (int k = 0; k < taps; k++) ptrs[k] = ringB.row(fsimd::mirrorClamped(i0 + r - radius + k, h));
      fsimd::filterRowFrom<V>(ptrs.data(), filter, taps, w, padded.data(), blockB.data() + static_cast<size_t>(r) * w);
    }
    absRowSums<V>(blockA.data(), blockB.data(), w, count, sums);
    for (int r = 0; r < count; r++) accum += sums[r];
  }
  return accum / (w * h);
}

#define VMAFS_SCALE0_COPY(NAME, ATTR, OPS)                                                                  \
  ATTR float NAME(const PlaneView& prev, const PlaneView& cur, int bitDepth, const float* filter, int taps) { \
    return scale0MeanT<OPS>(prev, cur, bitDepth, filter, taps);                                            \
  }
#if defined(__GNUC__) || defined(__clang__)
VMAFS_SCALE0_COPY(scale0Scalar, __attribute__((flatten)), fsimd::Scalar)
#else
VMAFS_SCALE0_COPY(scale0Scalar, , fsimd::Scalar)
#endif
#if defined(VMAFS_FLOAT_SIMD)
VMAFS_SCALE0_COPY(scale0Sse2, __attribute__((flatten)), fsimd::Sse2)
VMAFS_SCALE0_COPY(scale0Avx2, __attribute__((target("avx2"), flatten)), fsimd::Avx2)
VMAFS_SCALE0_COPY(scale0Avx512, __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"), flatten)), fsimd::Avx512)
#endif
#undef VMAFS_SCALE0_COPY

float scale0Mean(fsimd::Isa isa, const PlaneView& prev, const PlaneView& cur, int bitDepth, const float* filter, int taps) {
  switch (isa) {
#if defined(VMAFS_FLOAT_SIMD)
    case fsimd::Isa::kAvx512: return scale0Avx512(prev, cur, bitDepth, filter, taps);
    case fsimd::Isa::kAvx2: return scale0Avx2(prev, cur, bitDepth, filter, taps);
    case fsimd::Isa::kSse2: return scale0Sse2(prev, cur, bitDepth, filter, taps);
#endif
    default: return scale0Scalar(prev, cur, bitDepth, filter, taps);
  }
}

// float-filter.h's filterPlane, one copy per instruction set.
#define VMAFS_BLUR_COPY(NAME, ATTR, OPS)                                                               \
  ATTR void NAME(const float* filter, int taps, const float* src, float* dst, int w, int h) {          \
    fsimd::FilterScratch scratch;                                                                     \
    fsimd::filterPlaneT<OPS>(filter, taps, src, dst, w, h, scratch);                                  \
  }
#if defined(__GNUC__) || defined(__clang__)
VMAFS_BLUR_COPY(blurScalar, __attribute__((flatten)), fsimd::Scalar)
#else
VMAFS_BLUR_COPY(blurScalar, , fsimd::Scalar)
#endif
#if defined(VMAFS_FLOAT_SIMD)
VMAFS_BLUR_COPY(blurSse2, __attribute__((flatten)), fsimd::Sse2)
VMAFS_BLUR_COPY(blurAvx2, __attribute__((target("avx2"), flatten)), fsimd::Avx2)
VMAFS_BLUR_COPY(blurAvx512, __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"), flatten)), fsimd::Avx512)
#endif
#undef VMAFS_BLUR_COPY

void blur(fsimd::Isa isa, const float* filter, int taps, const float* src, float* dst, int w, int h) {
  switch (isa) {
#if defined(VMAFS_FLOAT_SIMD)
    case fsimd::Isa::kAvx512: return blurAvx512(filter, taps, src, dst, w, h);
    case fsimd::Isa::kAvx2: return blurAvx2(filter, taps, src, dst, w, h);
    case fsimd::Isa::kSse2: return blurSse2(filter, taps, src, dst, w, h);
#endif
    default: return blurScalar(filter, taps, src, dst, w, h);
  }
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

  // The GPU kernel (float_motion-gpu.ts) gives whether there was a previous frame, then per
  // plane (luma; with motion_add_uv also Cb and Cr) and scale (0; with motion_add_scale1 also
  // 1) the float sum of the per-row float sums of |a - b| (meanAbsDiff's accum, summed in its
  // order), as its bit pattern.
  size_t statsCount() const override { return 1 + (addUv_ ? 3 : 1) * (addScale1_ ? 2 : 1); }
  void finishStats(const uint64_t* stats, double* out) const override {
    if (forceZero_) {
      std::fill(out, out + outputCount(), 0.0);
      return;
    }
    const bool hasPrevious = stats[0] != 0;
    double score = 0;
    if (hasPrevious) {
      const size_t scales = addScale1_ ? 2 : 1;
      score = statsPlaneScore(stats + 1, geometry_.width, geometry_.height);
      if (addUv_) {
        const double u = statsPlaneScore(stats + 1 + scales, geometry_.chromaWidth, geometry_.chromaHeight);
        const double v = statsPlaneScore(stats + 1 + 2 * scales, geometry_.chromaWidth, geometry_.chromaHeight);
        score += u;
        score += v;
      }
    }
    fromScore(hasPrevious, score, out);
  }

 private:
  void fromScore(bool hasPrevious, double score, double* out) const {
    size_t k = 0;
    out[k++] = score;
    if (debug_) out[k++] = hasPrevious ? std::min(score * fpsWeight_, maxVal_) : 0.0;
    out[k++] = score;
  }

  std::vector<float> blurred(const PlaneView& plane, int bitDepth, fsimd::Isa isa) const {
    const std::vector<float> samples = floatPlane(plane, bitDepth, -128);
    std::vector<float> out(samples.size());
    blur(isa, filter_.data(), static_cast<int>(filter_.size()), samples.data(), out.data(), plane.width, plane.height);
    return out;
  }

  // planeScore's arithmetic on a w x h plane's accums (scale 0, then with motion_add_scale1 scale 1).
  double statsPlaneScore(const uint64_t* accums, int w, int h) const {
    const float scale0 = accumOf(accums[0]) / (w * h);
    if (!addScale1_) return scale0;
    const int sw = halfSize(w), sh = halfSize(h);
    const float scale1 = accumOf(accums[1]) / (sw * sh);
    return scale0 + scale1;
  }

  static float accumOf(uint64_t stat) {
    const uint32_t word = static_cast<uint32_t>(stat);
    float accum;
    std::memcpy(&accum, &word, sizeof accum);
    return accum;
  }

  // libvmaf's row stride in floats for a row of n floats (ALIGN_CEIL to 32 bytes).
  static int alignedFloats(int n) { return (n + 7) / 8 * 8; }

  // The w x h blurred plane as libvmaf's scale-1 resampler reads it. libvmaf keeps every
  // plane's blurred floats at the luma's row stride, but the resampler (vmaf_image_sad_c)
  // reads them at the stride of the plane's own width: for subsampled chroma it sees the
  // buffer's rows folded, and where it reads past a row's last sample it finds the buffer's
  // unwritten padding, which is 0 in libvmaf's runs (freshly allocated). For luma and 4:4:4
  // chroma the two strides are one and this is the plane.
  std::vector<float> asScalerReads(const std::vector<float>& plane, int w, int h) const {
    const int bufferStride = alignedFloats(geometry_.width), readStride = alignedFloats(w);
    if (readStride == bufferStride) return plane;
    std::vector<float> out(static_cast<size_t>(w) * h);
    for (int y = 0; y < h; y++) {
      for (int x = 0; x < w; x++) {
        const int e = y * readStride + x, row = e / bufferStride, col = e % bufferStride;
        out[static_cast<size_t>(y) * w + x] = col < w ? plane[static_cast<size_t>(row) * w + col] : 0.0f;
      }
    }
    return out;
  }

  // The scale-1 term's plane size (libvmaf's w * 0.5 + 0.5, truncated).
  static int halfSize(int n) { return static_cast<int>(n * 0.5 + 0.5); }

  double planeScore(const PlaneView& cur, const PlaneView& prev, int bitDepth) const {
    const fsimd::Isa isa = fsimd::floatIsa();
    const int taps = static_cast<int>(filter_.size());
    if (!addScale1_) return scale0Mean(isa, prev, cur, bitDepth, filter_.data(), taps);
    // With the scale-1 term the blurred planes are kept whole (it resamples them).
    const std::vector<float> a = blurred(prev, bitDepth, isa);
    const std::vector<float> b = blurred(cur, bitDepth, isa);
    const int w = cur.width, h = cur.height;
    const float scale0 = meanAbsDiff(a.data(), b.data(), w, h, isa);
    if (!addScale1_) return scale0;
    const int sw = halfSize(w), sh = halfSize(h);
    std::vector<float> as(static_cast<size_t>(sw) * sh), bs(static_cast<size_t>(sw) * sh);
    const std::vector<float> af = asScalerReads(a, w, h), bf = asScalerReads(b, w, h);
    scalePlane(ScaleMethod::kBilinear, af.data(), w, h, as.data(), sw, sh);
    scalePlane(ScaleMethod::kBilinear, bf.data(), w, h, bs.data(), sw, sh);
    const float scale1 = meanAbsDiff(as.data(), bs.data(), sw, sh, isa);
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

// cambi (libvmaf 3.2.0's cambi.c): Netflix's contrast-aware multiscale banding index of the
// distorted luma (and, with full_ref, of the reference and their difference).
//
// Per picture: bring the luma to 10 bits at the encode size (nearest-neighbour pick, then an
// anti-dithering 2x2 average when the encode had fewer than 10 bits); a spatial mask of flat
// pixels (7x7 count of zero-derivative pixels above a size-dependent threshold); then at five
// scales, each the previous one decimated by 2: a 3x3 separable mode filter, per masked pixel
// the contrast value c from the window histogram (counts of the pixel's value p0 and of the
// values d+1 above / below it, weighted by the suprathreshold contrast weights, where the
// luminance step is visible), and the mean of the top-k c values. The score is the
// scale-weighted sum over the window area. Everything up to c is integer; c is float, the
// pooling double, in libvmaf's order (its selection algorithm decides the summation order).
//
// Where libvmaf 3.2.0 reads memory it did not write, this measures the pictures themselves:
// - a window wider than a scale's picture (very wide or tall frames, e.g. 1920x120: the
//   half-window exceeds the 5th scale's height): libvmaf reads past its rows and crashes;
//   here the window is clipped to the picture as everywhere else;
// - full_ref with a src_width whose row stride exceeds the frame's, on 10-bit input: libvmaf
//   copies the distorted picture with the input's stride into the wider buffer and then
//   measures misplaced rows (and what earlier frames left); here the distorted's own CAMBI.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu_features.h"
#include "extractor.h"

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define VMAFS_CAMBI_X86 1
#else
#define VMAFS_CAMBI_X86 0
#endif

// No contraction into FMA in any copy (GCC: -ffp-contract=off on the command line).
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

#if VMAFS_CAMBI_X86
#include <immintrin.h>
#define VMAFS_CAMBI_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))
#endif

namespace vmafs {
namespace {

constexpr int kScales = 5;
constexpr int kScaleWeight[kScales] = {16, 8, 4, 2, 1};
// Suprathreshold contrast response: the weight of a luma step of d+1 levels.
constexpr int kContrastWeight[32] = {1, 2, 3, 4, 4, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 8,
                                     8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9};
constexpr int kMaskSide = 7;
constexpr int kMinSide = 216;
// c = w * p0 * p / (p0 + p) takes 1/(p0 + p) from libvmaf's table of float reciprocals; p0 + p
// is at most the window's area, so the window may hold at most this many pixels minus one.
// libvmaf's entries are 1/i printed with 9 significant digits, then read as float literals:
// 42 of them differ from 1.0f / i by an ulp, so the table is made the same way.
constexpr int kReciprocals = 4226;

std::vector<float> reciprocalTable() {
  std::vector<float> t(kReciprocals, 0.0f);
  char text[32];
  for (int i = 1; i < kReciprocals; i++) {
    std::snprintf(text, sizeof text, "%.9g", 1.0 / i);
    t[i] = std::strtof(text, nullptr);
  }
  return t;
}

// ---- luminance model (10-bit limited range) -------------------------------------------

constexpr int kFoot = 16 << 2;
constexpr int kHead = 235 << 2;

enum class Eotf { Bt1886, Pq };

double bt1886(double v) {
  const double gamma = 2.4, white = 300.0, black = 0.01;
  const double span = std::pow(white, 1.0 / gamma) - std::pow(black, 1.0 / gamma);
  const double gain = std::pow(span, gamma);
  const double lift = std::pow(black, 1.0 / gamma) / span;
  const double x = v + lift;
  return gain * std::pow(x > 0 ? x : 0, gamma);
}

double pq(double v) {
  const double m1 = 0.1593017578125, m2 = 78.84375;
  const double c1 = 0.8359375, c2 = 18.8515625, c3 = 18.6875;
  const double root = std::pow(v, 1.0 / m2);
  const double num = root - c1;
  const double den = c2 - c3 * std::pow(v, 1.0 / m2);
  return 10000 * std::pow((num > 0 ? num : 0) / den, 1.0 / m1);
}

double luminance(int sample, Eotf eotf) {
  const int s = std::clamp(sample, kFoot, kHead);
  const double v = static_cast<double>(s - kFoot) / (kHead - kFoot);
  return eotf == Eotf::Pq ? pq(v) : bt1886(v);
}

bool stepVisible(int sample, int diff, double threshold, Eotf eotf) {
  const double base = luminance(sample, eotf);
  const double stepped = luminance(sample + diff, eotf);
  return stepped - base > threshold * base;
}

// Where a sample lies relative to the last sample whose step of `diff` is still visible.
enum class Side { Below, At, Above };

Side sideOf(int sample, int diff, double threshold, Eotf eotf) {
  if (!stepVisible(sample, diff, threshold, eotf)) return Side::Above;
  if (stepVisible(sample + 1, diff, threshold, eotf)) return Side::Below;
  return Side::At;
}

// The largest 10-bit sample at which a step of `diff` is visible (bisection over the
// limited range, the same probes as libvmaf so a non-monotone model ends the same way).
int visibilityLimit(int diff, double threshold, Eotf eotf) {
  int lo = kFoot, hi = kHead - diff - 1;
  Side s = sideOf(lo, diff, threshold, eotf);
  if (s == Side::Above) return 0;
  if (s == Side::At) return lo;
  s = sideOf(hi, diff, threshold, eotf);
  if (s == Side::Below) return 1023;
  if (s == Side::At) return hi;
  for (;;) {
    const int mid = lo + (hi - lo) / 2;
    s = sideOf(mid, diff, threshold, eotf);
    if (s == Side::At) return mid;
    if (s == Side::Above) hi = mid;
    else lo = mid;
  }
}

// The smallest sample whose luminance reaches the threshold; 0 when the foot already does.
int lowestVisibleLuma(double threshold, Eotf eotf) {
  uint16_t s = kFoot;
  while (luminance(s, eotf) < threshold) s++;
  return s == kFoot ? 0 : s;
}

int adjustedWindow(int window, int w, int h, bool halve) {
  int a = ((window * (w + h)) / 375) >> 4;
  if (halve) a = (a + 1) >> 1;
  return a | 1;
}

int ceilLog2(uint32_t n) {
  if (n == 0) return 0;
  int bits = 0;
  for (uint32_t t = n - 1; t > 0; t >>= 1) bits++;
  return bits;
}

// ---- per-picture steps ----------------------------------------------------------------

// The source index of each of `to` samples picked from `from` (libvmaf's float stepping).
std::vector<int> nearestPicks(int from, int to) {
  const float r = static_cast<float>(from) / to;
  std::vector<int> picks(static_cast<size_t>(to));
  float x = static_cast<float>(r / 2 - 0.5);
  for (int j = 0; j < to; j++) {
    picks[j] = std::min(static_cast<int>(x + 0.5), from - 1);
    x += r;
  }
  return picks;
}

// The luma at out_w x out_h and 10 bits: nearest source sample (libvmaf's float stepping),
// 8 and 9 bits shifted up, deeper ones rounded down.
void toTenBits(const PlaneView& in, int bpc, uint16_t* out, int ow, int oh) {
  auto convert = [bpc](unsigned v) -> uint16_t {
    if (bpc <= 8) return static_cast<uint16_t>(v << (10 - bpc));
    if (bpc == 9) return static_cast<uint16_t>(v << 1);
    const int shift = bpc - 10;
    const unsigned half = shift == 0 ? 0 : 1u << (shift - 1);
    return static_cast<uint16_t>((v + half) >> shift);
  };
  const bool wide = bpc > 8;
  auto sample = [&](int y, int x) -> unsigned {
    return wide ? in.row<uint16_t>(y)[x] : in.row<uint8_t>(y)[x];
  };
  if (in.width == ow && in.height == oh) {
    if (!wide) {  // the common case, in a loop that vectorises
      const int shift = 10 - bpc;
      for (int y = 0; y < oh; y++) {
        const uint8_t* row = in.row<uint8_t>(y);
        uint16_t* to = out + static_cast<size_t>(y) * ow;
        for (int x = 0; x < ow; x++) to[x] = static_cast<uint16_t>(row[x] << shift);
      }
      return;
    }
    if (bpc == 10) {  // already 10 bits (convert() is the identity): row copies
      for (int y = 0; y < oh; y++) std::memcpy(out + static_cast<size_t>(y) * ow, in.row<uint16_t>(y), sizeof(uint16_t) * ow);
      return;
    }
    for (int y = 0; y < oh; y++)
      for (int x = 0; x < ow; x++) out[static_cast<size_t>(y) * ow + x] = convert(sample(y, x));
    return;
  }
  const std::vector<int> cols = nearestPicks(in.width, ow);
  const std::vector<int> rows = nearestPicks(in.height, oh);
  for (int i = 0; i < oh; i++)
    for (int j = 0; j < ow; j++) out[static_cast<size_t>(i) * ow + j] = convert(sample(rows[i], cols[j]));
}

// Averages each sample with its right, lower and lower-right neighbours (those that exist);
// in place, row by row, each sample reads only neighbours not yet rewritten.
void antiDither(uint16_t* p, int w, int h) {
  for (int i = 0; i + 1 < h; i++) {
    uint16_t* r = p + static_cast<size_t>(i) * w;
    const uint16_t* below = r + w;
    for (int j = 0; j + 1 < w; j++) r[j] = static_cast<uint16_t>((r[j] + r[j + 1] + below[j] + below[j + 1]) >> 2);
    r[w - 1] = static_cast<uint16_t>((r[w - 1] + below[w - 1]) >> 1);
  }
  uint16_t* last = p + static_cast<size_t>(h - 1) * w;
  for (int j = 0; j + 1 < w; j++) last[j] = static_cast<uint16_t>((last[j] + last[j + 1]) >> 1);
}

// 1 where the 7x7 neighbourhood (clipped to the picture) holds more than `threshold`
// zero-derivative pixels: pixels equal to their right and lower neighbours (edges count).
uint32_t maskThreshold(int w, int h) {
  return static_cast<uint16_t>(
      (kMaskSide * kMaskSide + 3 * (ceilLog2(static_cast<uint32_t>(w >> 6) * static_cast<uint32_t>(h >> 6)) - 11) - 1) >> 1);
}

// Buffers a worker keeps between pictures: fresh pages for every frame cost more than the work.
struct Scratch {
  std::vector<uint16_t> image, hist, ring;
  std::vector<uint8_t> mask, zero;
  std::vector<int16_t> bins;
  std::vector<uint32_t> column, prefix;
  std::vector<float> c;
};

// At least n elements of v, which never shrinks: a smaller scale (or full_ref's other picture)
// must not make the next larger one pay for zeroing what it writes anyway.
template <typename T>
T* atLeast(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

void flatMask(const uint16_t* p, int w, int h, uint8_t* mask, Scratch& k) {
  const uint32_t threshold = maskThreshold(w, h);
  const int r = kMaskSide / 2;
  uint8_t* zero = atLeast(k.zero, static_cast<size_t>(w) * h);  // every element is written below
  // Loops split at the edges so that the inner ones vectorise.
  for (int i = 0; i < h; i++) {
    const uint16_t* row = p + static_cast<size_t>(i) * w;
    uint8_t* z = zero + static_cast<size_t>(i) * w;
    if (i + 1 < h) {
      const uint16_t* below = row + w;
      for (int j = 0; j + 1 < w; j++) z[j] = (row[j] == row[j + 1]) & (row[j] == below[j]);
      z[w - 1] = row[w - 1] == below[w - 1];
    } else {
      for (int j = 0; j + 1 < w; j++) z[j] = row[j] == row[j + 1];
      z[w - 1] = 1;
    }
  }
  k.column.assign(static_cast<size_t>(w), 0);
  k.prefix.assign(static_cast<size_t>(w) + 1, 0);
  uint32_t* column = k.column.data();
  uint32_t* prefix = k.prefix.data();
  for (int i = 0; i < std::min(r, h); i++)
    for (int j = 0; j < w; j++) column[j] += zero[static_cast<size_t>(i) * w + j];
  const int innerEnd = std::max(w - r - 1, r);  // columns j in [r, innerEnd) have the whole span
  for (int i = 0; i < h; i++) {
    if (i + r < h)
      for (int j = 0; j < w; j++) column[j] += zero[static_cast<size_t>(i + r) * w + j];
    if (i - r - 1 >= 0)
      for (int j = 0; j < w; j++) column[j] -= zero[static_cast<size_t>(i - r - 1) * w + j];
    for (int j = 0; j < w; j++) prefix[j + 1] = prefix[j] + column[j];
    uint8_t* m = mask + static_cast<size_t>(i) * w;
    auto clipped = [&](int j) { m[j] = prefix[std::min(j + r + 1, w)] - prefix[std::max(j - r, 0)] > threshold; };
    for (int j = 0; j < std::min(r, w); j++) clipped(j);
    for (int j = r; j < innerEnd; j++) m[j] = prefix[j + r + 1] - prefix[j - r] > threshold;
    for (int j = std::max(innerEnd, std::min(r, w)); j < w; j++) clipped(j);
  }
}

// Keeps every other row and column (the even ones), repacked at the new width.
template <typename T>
void halve(T* p, int w, int h, int nw, int nh) {
  for (int i = 0; i < nh; i++)
    for (int j = 0; j < nw; j++) p[static_cast<size_t>(i) * nw + j] = p[static_cast<size_t>(2 * i) * w + 2 * j];
}

inline uint16_t modeOf3(uint16_t a, uint16_t b, uint16_t c) {
  if (a == b || a == c) return a;
  if (b == c) return b;
  return std::min(a, std::min(b, c));
}

// 3x3 mode filter, separable: each row's horizontal mode of three (its first and last samples
// kept), then the vertical mode of three of those for the inner rows; first and last rows
// keep their original samples.
void modeFilter(uint16_t* p, int w, int h, std::vector<uint16_t>& ring) {
  atLeast(ring, static_cast<size_t>(3) * w);
  auto horizontal = [&](int i, uint16_t* out) {
    const uint16_t* row = p + static_cast<size_t>(i) * w;
    out[0] = row[0];
    for (int j = 1; j + 1 < w; j++) out[j] = modeOf3(row[j - 1], row[j], row[j + 1]);
    out[w - 1] = row[w - 1];
  };
  for (int i = 0; i < h; i++) {
    horizontal(i, ring.data() + static_cast<size_t>(i % 3) * w);
    if (i >= 2) {
      const uint16_t* a = ring.data();
      const uint16_t* b = a + w;
      const uint16_t* c = b + w;
      uint16_t* out = p + static_cast<size_t>(i - 1) * w;
      for (int j = 0; j < w; j++) out[j] = modeOf3(a[j], b[j], c[j]);
    }
  }
}

// The first k elements become the k largest (Wirth's selection with the pivot at k, the
// partition libvmaf uses: their order decides the rounding of the double sum).
void selectLargest(float* a, int n, int k) {
  if (n == k) return;
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    const float pivot = a[k];
    int i = lo, j = hi;
    do {
      while (a[i] > pivot) i++;
      while (a[j] < pivot) j--;
      if (i <= j) {
        std::swap(a[i], a[j]);
        i++;
        j--;
      }
    } while (i <= j);
    if (j < k) lo = i;
    if (k < i) hi = j;
  }
}

struct Settings {
  int frameWidth, frameHeight, encWidth, encHeight, srcWidth, srcHeight, encBitDepth;
  int window, srcWindow;
  bool halveFirst;  // cambi_high_res_speedup in effect
  double topk, maxValue;
  bool fullRef;
  int diffs;                 // 2^max_log_contrast
  std::vector<int> visible;  // per step d+1: the largest (sample + diffs) where it is visible
  int lowestLuma;            // vlt luma (0: none)
  int bandBase, bandSize;    // the sample values any c value can depend on
  // Per sample value in the band (bandBase + bandSize entries): bit d set where a step of
  // d + 1 is visible there (sample + diffs, at most visible[d], plus d + 1 above lowestLuma).
  std::vector<uint32_t> stepsAt;
  std::vector<float> reciprocal;
};

// The contrast values of one scale: per masked pixel, from the counts of masked pixels of
// each value in its window (rows and columns within `pad`, clipped), kept per column and
// slid down the rows.
#if VMAFS_CAMBI_X86
// row[lo, hi) += delta (+1 or -1, modulo 2^16 as the scalar loop), 32 counts per step.
VMAFS_CAMBI_AVX512 inline void spreadAvx512(uint16_t* row, int lo, int hi, int delta) {
  const __m512i step = _mm512_set1_epi16(static_cast<int16_t>(delta));
  int c = lo;
  for (; c + 32 <= hi; c += 32) {
    __m512i* at = reinterpret_cast<__m512i*>(row + c);
    _mm512_storeu_si512(at, _mm512_add_epi16(_mm512_loadu_si512(at), step));
  }
  if (c < hi) {
    const __mmask32 m = static_cast<__mmask32>((uint64_t{1} << (hi - c)) - 1);
    _mm512_mask_storeu_epi16(row + c, m, _mm512_add_epi16(_mm512_maskz_loadu_epi16(m, row + c), step));
  }
}

// Adds delta (+1 or -1, modulo 2^16) to row[c] once for every pixel j of the run [j0, j1]
// whose window [j - pad, j + pad] holds c, c in [0, w): the sum of spreadAvx512 over the run,
// min(c + pad, j1) - max(c - pad, j0) + 1 where positive, in one pass over the cells.
VMAFS_CAMBI_AVX512 inline void spreadRunAvx512(uint16_t* row, int j0, int j1, int pad, int w, int delta) {
  const int lo = std::max(j0 - pad, 0), hi = std::min(j1 + pad + 1, w);
  const __m512i lanes = _mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13,
                                         12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);  // lane t holds t
  const __m512i padV = _mm512_set1_epi16(static_cast<int16_t>(pad));
  const __m512i first = _mm512_set1_epi16(static_cast<int16_t>(j0)), last = _mm512_set1_epi16(static_cast<int16_t>(j1));
  const __m512i one = _mm512_set1_epi16(1);
  for (int c = lo; c < hi; c += 32) {
    const __m512i cells = _mm512_add_epi16(_mm512_set1_epi16(static_cast<int16_t>(c)), lanes);
    const __m512i count = _mm512_add_epi16(
        _mm512_sub_epi16(_mm512_min_epi16(_mm512_add_epi16(cells, padV), last), _mm512_max_epi16(_mm512_sub_epi16(cells, padV), first)),
        one);  // at least 1 on [lo, hi): every cell there is within pad of the run
    const __m512i step = delta > 0 ? count : _mm512_sub_epi16(_mm512_setzero_si512(), count);
    const __mmask32 m = hi - c >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((uint64_t{1} << (hi - c)) - 1);
    _mm512_mask_storeu_epi16(row + c, m, _mm512_add_epi16(_mm512_maskz_loadu_epi16(m, row + c), step));
  }
}

// Bit t set where column j + t of the leaving and entering rows differ (a null row: all -1).
VMAFS_CAMBI_AVX512 inline uint32_t changedColumnsAvx512(const int16_t* leaving, const int16_t* entering, int j) {
  const __m512i none = _mm512_set1_epi16(-1);
  const __m512i out = leaving ? _mm512_loadu_si512(leaving + j) : none;
  const __m512i in = entering ? _mm512_loadu_si512(entering + j) : none;
  return _mm512_cmpneq_epi16_mask(out, in);
}

// The c values of one row, 16 pixels per step (contrastValues' scalar loop, lane by lane):
// the counts are gathered as 32 bits from their 16-bit cells and masked (the histogram
// has room past its end), the steps visible at each value likewise. The product is the
// same int32, converted and multiplied by the same float reciprocal; the maximum of the
// non-negative, finite values is the scalar loop's. Returns the first column it left.
VMAFS_CAMBI_AVX512 inline int contrastRowAvx512(const int16_t* brow, const uint16_t* hist, int w, int base,
                                               const uint32_t* steps, int diffs, const float* recip, float* crow) {
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i zero = _mm512_setzero_si512();
  const __m512i low16 = _mm512_set1_epi32(0xFFFF);
  const __m512i width = _mm512_set1_epi32(w);
  int j = 0;
  for (; j + 16 <= w; j += 16) {
    const __m512i b = _mm512_cvtepi16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(brow + j)));
    const __mmask16 valid = _mm512_cmpge_epi32_mask(b, zero);
    __m512 best = _mm512_setzero_ps();
    if (valid) {
      const __m512i at = _mm512_add_epi32(_mm512_mullo_epi32(b, width), _mm512_add_epi32(lanes, _mm512_set1_epi32(j)));
      const __m512i p0 = _mm512_and_si512(_mm512_mask_i32gather_epi32(zero, valid, at, hist, 2), low16);
      const __m512i visible =
          _mm512_mask_i32gather_epi32(zero, valid, _mm512_add_epi32(b, _mm512_set1_epi32(base)), steps, 4);
      for (int d = 0; d < diffs; d++) {
        const __mmask16 on = _mm512_test_epi32_mask(visible, _mm512_set1_epi32(static_cast<int>(1u << d)));
        if (!on) continue;
        const __m512i off = _mm512_set1_epi32((d + 1) * w);
        const __m512i p1 = _mm512_and_si512(_mm512_mask_i32gather_epi32(zero, on, _mm512_add_epi32(at, off), hist, 2), low16);
        const __m512i p2 = _mm512_and_si512(_mm512_mask_i32gather_epi32(zero, on, _mm512_sub_epi32(at, off), hist, 2), low16);
        const __m512i p = _mm512_max_epi32(p1, p2);
        const __m512i product = _mm512_mullo_epi32(_mm512_mullo_epi32(_mm512_set1_epi32(kContrastWeight[d]), p0), p);
        const __m512 r = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), on, _mm512_add_epi32(p, p0), recip, 4);
        best = _mm512_mask_max_ps(best, on, best, _mm512_mul_ps(_mm512_cvtepi32_ps(product), r));
      }
    }
    _mm512_storeu_ps(crow + j, best);
  }
  return j;
}
#endif

template <bool kAvx512>
void contrastValues(const Settings& s, const uint16_t* img, const uint8_t* mask, int w, int h, int pad, Scratch& k) {
  const int base = s.bandBase, band = s.bandSize;
  const size_t area = static_cast<size_t>(w) * h;
  // Each pixel's histogram row, or -1 where it counts in no histogram (unmasked, or outside
  // the band any c value depends on).
  int16_t* bins = atLeast(k.bins, area);
  for (size_t at = 0; at < area; at++) {
    const unsigned b = static_cast<unsigned>(img[at]) - static_cast<unsigned>(base);
    bins[at] = mask[at] && b < static_cast<unsigned>(band) ? static_cast<int16_t>(b) : static_cast<int16_t>(-1);
  }
  // The band's rows between `diffs` rows of zeros above and below, which the c values read
  // as the counts of values outside the band, without a bounds check.
  const int n = s.diffs;
  // (2 spare cells: the AVX-512 loop reads each count as 32 bits.) The histogram is all zero
  // between calls (the last rows are taken out at the end), so only growth clears it.
  const size_t cells = static_cast<size_t>(band + 2 * n) * w + 2;
  if (k.hist.size() < cells) k.hist.assign(cells, 0);
  atLeast(k.c, area);  // every element is written below
  uint16_t* hist = k.hist.data() + static_cast<size_t>(n) * w;
  auto spread = [&](int b, int j, int delta) {
    uint16_t* row = hist + static_cast<size_t>(b) * w;
    const int lo = std::max(j - pad, 0), hi = std::min(j + pad + 1, w);
#if VMAFS_CAMBI_X86
    if constexpr (kAvx512) {
      spreadAvx512(row, lo, hi, delta);
      return;
    }
#endif
    if (delta > 0)
      for (int c = lo; c < hi; c++) row[c]++;
    else
      for (int c = lo; c < hi; c++) row[c]--;
  };
  for (int i = 0; i <= std::min(pad, h - 1); i++) {
    const int16_t* brow = bins + static_cast<size_t>(i) * w;
    for (int j = 0; j < w; j++)
      if (brow[j] >= 0) spread(brow[j], j, +1);
  }
  const float* recip = s.reciprocal.data();
  const uint32_t* steps = s.stepsAt.data();
  for (int i = 0; i < h; i++) {
    if (i > 0) {
      const int out = i - pad - 1, in = i + pad;
      const int16_t* leaving = out >= 0 ? bins + static_cast<size_t>(out) * w : nullptr;
      const int16_t* entering = in < h ? bins + static_cast<size_t>(in) * w : nullptr;
      auto slide = [&](int j) {
        const int bo = leaving ? leaving[j] : -1;
        const int bi = entering ? entering[j] : -1;
        if (bo >= 0) spread(bo, j, -1);
        if (bi >= 0) spread(bi, j, +1);
      };
      int j = 0;
#if VMAFS_CAMBI_X86
      if constexpr (kAvx512) {
        // The changed columns found 32 at a time; runs of neighbouring ones whose leaving (or
        // entering) pixels share a bin are spread at once (the counts are sums: any order
        // and grouping of the updates gives the same histogram).
        int outBin = -1, outFirst = 0, outLast = -2, inBin = -1, inFirst = 0, inLast = -2;
        auto flushOut = [&] { if (outBin >= 0) spreadRunAvx512(hist + static_cast<size_t>(outBin) * w, outFirst, outLast, pad, w, -1); };
        auto flushIn = [&] { if (inBin >= 0) spreadRunAvx512(hist + static_cast<size_t>(inBin) * w, inFirst, inLast, pad, w, +1); };
        for (; j + 32 <= w; j += 32) {
          for (uint32_t todo = changedColumnsAvx512(leaving, entering, j); todo != 0; todo &= todo - 1) {
            const int at = j + __builtin_ctz(todo);
            const int bo = leaving ? leaving[at] : -1;
            const int bi = entering ? entering[at] : -1;
            if (bo >= 0) {
              if (bo == outBin && at == outLast + 1) outLast = at;
              else flushOut(), outBin = bo, outFirst = outLast = at;
            }
            if (bi >= 0) {
              if (bi == inBin && at == inLast + 1) inLast = at;
              else flushIn(), inBin = bi, inFirst = inLast = at;
            }
          }
        }
        flushOut();
        flushIn();
      }
#endif
      for (; j < w; j++)
        if ((leaving ? leaving[j] : -1) != (entering ? entering[j] : -1)) slide(j);  // equal: no change
    }
    const int16_t* brow = bins + static_cast<size_t>(i) * w;
    const uint16_t* irow = img + static_cast<size_t>(i) * w;
    float* crow = k.c.data() + static_cast<size_t>(i) * w;
    int j0 = 0;
#if VMAFS_CAMBI_X86
    if constexpr (kAvx512) j0 = contrastRowAvx512(brow, hist, w, base, steps, s.diffs, recip, crow);
#endif
    for (int j = j0; j < w; j++) {
      const int b = brow[j];
      crow[j] = 0.0f;
      if (b < 0) continue;
      const uint16_t* column = hist + static_cast<size_t>(b) * w + j;
      const int p0 = *column;
      float best = 0.0f;
      // The steps d + 1 visible at this value (the largest c is the same in any order).
      for (uint32_t todo = steps[irow[j]]; todo != 0; todo &= todo - 1) {
        const int d = __builtin_ctz(todo);
        const int p1 = column[static_cast<ptrdiff_t>(d + 1) * w];
        const int p2 = column[-static_cast<ptrdiff_t>(d + 1) * w];
        const int p = std::max(p1, p2);
        const float v = static_cast<float>(kContrastWeight[d] * p0 * p) * recip[p + p0];
        if (v > best) best = v;
      }
      crow[j] = best;
    }
  }
  // Take out the rows the window still holds, leaving the histogram zero for the next call.
  for (int i = std::max(h - 1 - pad, 0); i < h; i++) {
    const int16_t* brow = bins + static_cast<size_t>(i) * w;
    for (int j = 0; j < w; j++)
      if (brow[j] >= 0) spread(brow[j], j, -1);
  }
}

// The mean of a scale's top-k contrast values (reorders c).
double poolScale(float* c, int count, double topk) {
  const int top = std::clamp(static_cast<int>(topk * count), 1, count);
  selectLargest(c, count, top);
  double sum = 0;
  for (int i = 0; i < top; i++) sum += c[i];
  return sum / top;
}

// poolScale's result from the GPU's exact aggregates of one scale (finishStats' layout), when
// it is provably the same double: the top-k values are those above T and (k - above) copies of
// T; if their exact total is below 2^53 times the smallest power of two dividing them all,
// every partial sum in any order is a double, so libvmaf's order-dependent sum is that total.
bool gpuPooled(const uint64_t* a, int count, double topk, double* pooled) {
  const int top = std::clamp(static_cast<int>(topk * count), 1, count);
  const uint32_t t = static_cast<uint32_t>(a[0]);
  const uint64_t above = a[0] >> 32;
  const uint32_t smallestInv = static_cast<uint32_t>(a[3]);
  if ((a[3] >> 32) != 0 || above >= static_cast<uint64_t>(top)) return false;
  // Units of 2^-40: a float of biased exponent e is its significand times 2^(e - 110).
  unsigned __int128 total = (static_cast<unsigned __int128>(a[2]) << 32) + a[1];
  int lowest = smallestInv == 0 ? INT32_MAX : 1024 - static_cast<int>(smallestInv);  // biased exponent + trailing zeros
  if (t != 0) {
    const uint32_t e = t >> 23, m = (t & 0x7fffffu) | 0x800000u;
    if (e < 110 || e > 148) return false;
    total += static_cast<unsigned __int128>(top - above) * (static_cast<uint64_t>(m) << (e - 110));
    lowest = std::min(lowest, static_cast<int>(e) + __builtin_ctz(m));
  }
  if (total == 0) {
    *pooled = 0.0 / top;
    return true;
  }
  // Every value is a multiple of 2^(lowest - 150), i.e. of 2^(lowest - 110) units.
  const unsigned __int128 multiples = total >> (lowest - 110);
  if (multiples >= (static_cast<unsigned __int128>(1) << 53)) return false;
  *pooled = std::ldexp(static_cast<double>(static_cast<uint64_t>(multiples)), lowest - 150) / top;
  return true;
}

// The scales' pooled values weighted and divided by the window's area.
double combineScales(const double* pooled, int window) {
  double score = 0.0;
  for (int scale = 0; scale < kScales; scale++) score += pooled[scale] * kScaleWeight[scale];
  const int side = 2 * (window >> 1) + 1;
  return score / static_cast<uint16_t>(side * side);
}

// The sizes of the five scales of a w x h picture.
void scaleSizes(int w, int h, bool halveFirst, int* sw, int* sh) {
  for (int scale = 0; scale < kScales; scale++) {
    if (scale > 0 || halveFirst) w = (w + 1) >> 1, h = (h + 1) >> 1;
    sw[scale] = w;
    sh[scale] = h;
  }
}

std::string outOfRange(int bpc) {
  const unsigned top = (1u << bpc) - 1;
  return "cambi: the input holds a value greater than " + std::to_string(top) + ", the largest at " + std::to_string(bpc) + " bits";
}

// libvmaf's heatmaps (heatmaps_path): per scale one raw file of 16-bit native-endian
// samples, named after the encode size halved per scale, holding each frame's c values at
// the frame's index (frame * rows + row), scaled so that the largest possible c is 65535.
// Positional writes, so that frames computed on several threads land where they belong.
class Heatmaps {
 public:
  Heatmaps(const std::string& dir, int encWidth, int encHeight) {
    makeDirectories(dir);
    int w = encWidth, h = encHeight;
    for (int scale = 0; scale < kScales; scale++) {
      const std::string path = dir + "/cambi_heatmap_scale_" + std::to_string(scale) + "_" + std::to_string(w) + "x" +
                               std::to_string(h) + "_16b.gray";
      fds_[scale] = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
      if (fds_[scale] < 0) {
        const int err = errno;
        close();
        throw std::runtime_error("could not open heatmaps_path: " + path + " (" + std::strerror(err) + ")");
      }
      w = (w + 1) >> 1;
      h = (h + 1) >> 1;
    }
  }
  ~Heatmaps() { close(); }
  Heatmaps(const Heatmaps&) = delete;
  Heatmaps& operator=(const Heatmaps&) = delete;

  void write(int scale, const float* c, int w, int h, int window, int diffs, int64_t frame) const {
    int heaviest = kContrastWeight[0];
    for (int d = 0; d < diffs; d++) heaviest = std::max(heaviest, kContrastWeight[d]);
    const int largest = heaviest * window * window / 4;
    const double toSixteenBits = static_cast<double>((1 << 16) - 1) / largest;
    std::vector<uint16_t> row(static_cast<size_t>(w));
    for (int i = 0; i < h; i++) {
      for (int j = 0; j < w; j++) row[j] = static_cast<uint16_t>(toSixteenBits * c[static_cast<size_t>(i) * w + j]);
      const off_t at = static_cast<off_t>((frame * h + i) * w) * static_cast<off_t>(sizeof(uint16_t));
      const size_t bytes = row.size() * sizeof(uint16_t);
      const char* from = reinterpret_cast<const char*>(row.data());
      for (size_t done = 0; done < bytes;) {
        const ssize_t n = ::pwrite(fds_[scale], from + done, bytes - done, at + static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw std::runtime_error(std::string("could not write a heatmap: ") + std::strerror(errno));
        done += static_cast<size_t>(n);
      }
    }
  }

 private:
  // mkdir -p with libvmaf's mode (0770, less the umask).
  static void makeDirectories(const std::string& dir) {
    for (size_t at = 1; at <= dir.size(); at++) {
      if (at != dir.size() && dir[at] != '/') continue;
      const std::string prefix = dir.substr(0, at);
      if (::mkdir(prefix.c_str(), 0770) != 0 && errno != EEXIST) {
        throw std::runtime_error("could not create heatmaps_path " + prefix + " (" + std::strerror(errno) + ")");
      }
    }
  }
  void close() {
    for (int& fd : fds_) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  }
  std::array<int, kScales> fds_{-1, -1, -1, -1, -1};
};

// CAMBI of one picture at w x h with this window; its c values go to `heatmaps` (if any) as
// frame `frame`. Inlined whole into each instruction-set copy below.
template <bool kAvx512>
inline __attribute__((always_inline)) double cambiBody(const Settings& s, const PlaneView& in, int bpc, int w, int h,
                                                       int window, Scratch& k, const Heatmaps* heatmaps, int64_t frame) {
  if (bpc != 8 && bpc != 16) {
    // The largest sample of each row (a loop that vectorises), checked once per row.
    const unsigned top = (1u << bpc) - 1;
    for (int y = 0; y < in.height; y++) {
      unsigned largest = 0;
      if (bpc > 8) {
        const uint16_t* row = in.row<uint16_t>(y);
        for (int x = 0; x < in.width; x++) largest = std::max<unsigned>(largest, row[x]);
      } else {
        const uint8_t* row = in.row<uint8_t>(y);
        for (int x = 0; x < in.width; x++) largest = std::max<unsigned>(largest, row[x]);
      }
      if (largest > top) throw std::runtime_error(outOfRange(bpc));
    }
  }
  atLeast(k.image, static_cast<size_t>(w) * h);
  atLeast(k.mask, static_cast<size_t>(w) * h);
  toTenBits(in, bpc, k.image.data(), w, h);
  if (s.encBitDepth < 10) antiDither(k.image.data(), w, h);
  flatMask(k.image.data(), w, h, k.mask.data(), k);
  const int pad = window >> 1;
  double pooled[kScales];
  int sw = w, sh = h;
  for (int scale = 0; scale < kScales; scale++) {
    if (scale > 0 || s.halveFirst) {
      const int nw = (sw + 1) >> 1, nh = (sh + 1) >> 1;
      halve(k.image.data(), sw, sh, nw, nh);
      halve(k.mask.data(), sw, sh, nw, nh);
      sw = nw;
      sh = nh;
    }
    modeFilter(k.image.data(), sw, sh, k.ring);
    contrastValues<kAvx512>(s, k.image.data(), k.mask.data(), sw, sh, pad, k);
    if (heatmaps) heatmaps->write(scale, k.c.data(), sw, sh, window, s.diffs, frame);  // before selection reorders c
    pooled[scale] = poolScale(k.c.data(), sw * sh, s.topk);
  }
  return combineScales(pooled, window);
}

// The same code compiled for AVX2 and for AVX-512 (chosen at run time, capped by limitIsa):
// the histogram updates, mode filter, mask and conversions vectorise wider. The results are
// the same: integer arithmetic, and the float c values and double sums are the same
// operations in the same order (no FMA contraction: -ffp-contract=off, and the pragma).
#if VMAFS_CAMBI_X86
__attribute__((target("avx2"), flatten)) double cambiAvx2(const Settings& s, const PlaneView& in, int bpc, int w,
                                                         int h, int window, Scratch& k, const Heatmaps* heatmaps,
                                                         int64_t frame) {
  return cambiBody<false>(s, in, bpc, w, h, window, k, heatmaps, frame);
}

__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"), flatten)) double cambiAvx512(
    const Settings& s, const PlaneView& in, int bpc, int w, int h, int window, Scratch& k, const Heatmaps* heatmaps,
    int64_t frame) {
  return cambiBody<true>(s, in, bpc, w, h, window, k, heatmaps, frame);
}
#endif

double cambiOf(const Settings& s, const PlaneView& in, int bpc, int w, int h, int window, Scratch& k,
               const Heatmaps* heatmaps = nullptr, int64_t frame = 0) {
#if VMAFS_CAMBI_X86
  const IsaLevel isa = activeIsa();
  if (isa >= IsaLevel::kAvx512) return cambiAvx512(s, in, bpc, w, h, window, k, heatmaps, frame);
  if (isa >= IsaLevel::kAvx2) return cambiAvx2(s, in, bpc, w, h, window, k, heatmaps, frame);
#endif
  return cambiBody<false>(s, in, bpc, w, h, window, k, heatmaps, frame);
}

class Cambi final : public Extractor {
 public:
  Cambi(Settings s, int bitDepth, std::unique_ptr<Heatmaps> heatmaps)
      : s_(std::move(s)), bitDepth_(bitDepth), heatmaps_(std::move(heatmaps)) {}
  size_t outputCount() const override { return s_.fullRef ? 3 : 1; }
  void extract(const FrameWindow& f, double* out) const override {
    thread_local Scratch k;
    if (heatmaps_ && f.index < 0) throw std::invalid_argument("heatmaps_path needs the frame's index");
    // libvmaf writes the distorted picture's heatmaps only.
    const double dis = cambiOf(s_, f.dis->plane[0], bitDepth_, s_.encWidth, s_.encHeight, s_.window, k, heatmaps_.get(), f.index);
    out[0] = std::min(dis, s_.maxValue);
    if (!s_.fullRef) return;
    const double src = cambiOf(s_, f.ref->plane[0], bitDepth_, s_.srcWidth, s_.srcHeight, s_.srcWindow, k);
    out[1] = std::min(src, s_.maxValue);
    const double diff = dis - src;
    out[2] = std::min(diff < 0 ? 0.0 : diff, s_.maxValue);
  }

  // The GPU kernel (cambi-gpu.ts) pools each scale itself (cambi-pool.wgsl): accumulator 0
  // counts samples above the bit depth's range (in either picture), 1 is the frame's value
  // buffer (bit 63: the host pooled the scales, below), then per scale of the distorted and
  // (full_ref) of the reference four: the k-th largest c value T (float bits) | how many
  // exceed it << 32; the sums of the low and high 32-bit halves of those values in units of
  // 2^-40; 1024 - the smallest (biased exponent + trailing zeros) among them (0: none) | how
  // many lie outside the units' range << 32. Where the host pooled the scales from the values
  // (poolScale, the frames where gpuPooled() cannot prove a sum exact), each scale's second
  // accumulator holds its mean's bits.
  size_t statsCount() const override { return 2 + 4 * kScales * (s_.fullRef ? 2 : 1); }
  void finishStats(const uint64_t* stats, double* out) const override {
    if (stats[0] != 0) throw std::runtime_error(outOfRange(bitDepth_));
    const bool hostPooled = (stats[1] >> 63) != 0;
    double dis, src = 0;
    if (!pooledScore(stats + 2, hostPooled, s_.encWidth, s_.encHeight, s_.window, &dis) ||
        (s_.fullRef && !pooledScore(stats + 2 + 4 * kScales, hostPooled, s_.srcWidth, s_.srcHeight, s_.srcWindow, &src))) {
      // Not provably libvmaf's order-dependent sums: cambi-gpu.ts pools this frame from the
      // values and asks again.
      for (size_t i = 0; i < outputCount(); i++) out[i] = std::nan("");
      return;
    }
    out[0] = std::min(dis, s_.maxValue);
    if (!s_.fullRef) return;
    out[1] = std::min(src, s_.maxValue);
    const double diff = dis - src;
    out[2] = std::min(diff < 0 ? 0.0 : diff, s_.maxValue);
  }
  // Per picture (the distorted, then with full_ref the reference): its width, height, window,
  // mask threshold, then the frame column and row each of its samples is picked from (width,
  // then height entries). Before them: halveFirst, diffs, lowestLuma, bandBase, bandSize,
  // encBitDepth, the number of pictures, visible[diffs], the 4226 reciprocals.
  std::vector<double> gpuParams() const override {
    std::vector<double> p = {s_.halveFirst ? 1.0 : 0.0, static_cast<double>(s_.diffs), static_cast<double>(s_.lowestLuma),
                             static_cast<double>(s_.bandBase), static_cast<double>(s_.bandSize), static_cast<double>(s_.encBitDepth),
                             s_.fullRef ? 2.0 : 1.0};
    for (int v : s_.visible) p.push_back(v);
    for (float r : s_.reciprocal) p.push_back(r);
    const auto picture = [&](int w, int h, int window) {
      p.insert(p.end(), {static_cast<double>(w), static_cast<double>(h), static_cast<double>(window), static_cast<double>(maskThreshold(w, h))});
      for (int c : nearestPicks(s_.frameWidth, w)) p.push_back(c);
      for (int r : nearestPicks(s_.frameHeight, h)) p.push_back(r);
    };
    picture(s_.encWidth, s_.encHeight, s_.window);
    if (s_.fullRef) picture(s_.srcWidth, s_.srcHeight, s_.srcWindow);
    return p;
  }

 private:
  // One picture's score from its 4 * kScales accumulators (finishStats' layout); false where
  // a scale's GPU sum is not provably libvmaf's.
  bool pooledScore(const uint64_t* a, bool hostPooled, int w, int h, int window, double* score) const {
    int sw[kScales], sh[kScales];
    scaleSizes(w, h, s_.halveFirst, sw, sh);
    double pooled[kScales];
    for (int scale = 0; scale < kScales; scale++, a += 4) {
      if (hostPooled) std::memcpy(&pooled[scale], &a[1], sizeof(double));
      else if (!gpuPooled(a, sw[scale] * sh[scale], s_.topk, &pooled[scale])) return false;
    }
    *score = combineScales(pooled, window);
    return true;
  }

  Settings s_;
  int bitDepth_;
  std::unique_ptr<Heatmaps> heatmaps_;
};

std::unique_ptr<Extractor> make(const ExtractorOptions& o, const ExtractorGeometry& g) {
  Settings s{};
  const auto integer = [&](const char* name) { return static_cast<int>(o.number(name)); };
  s.encBitDepth = integer("enc_bitdepth") == 0 ? g.bitDepth : integer("enc_bitdepth");
  s.frameWidth = g.width;
  s.frameHeight = g.height;
  s.encWidth = integer("enc_width");
  s.encHeight = integer("enc_height");
  if (s.encWidth == 0 || s.encHeight == 0) s.encWidth = g.width, s.encHeight = g.height;
  s.srcWidth = integer("src_width");
  s.srcHeight = integer("src_height");
  if (s.srcWidth == 0 || s.srcHeight == 0) s.srcWidth = g.width, s.srcHeight = g.height;
  // A downscaled encode is measured at the size it arrives in, never upscaled.
  if (s.encHeight > g.height || s.encWidth > g.width) s.encWidth = g.width, s.encHeight = g.height;
  if ((s.encWidth < kMinSide && s.encHeight < kMinSide) || (s.srcWidth < kMinSide && s.srcHeight < kMinSide)) {
    throw std::runtime_error("frames smaller than " + std::to_string(kMinSide) + " pixels in both width and height");
  }
  if ((s.srcWidth > s.encWidth && s.srcHeight < s.encHeight) || (s.srcWidth < s.encWidth && s.srcHeight > s.encHeight)) {
    throw std::runtime_error("src and enc sizes of different aspect");
  }
  const int pixels = s.encWidth * s.encHeight;
  const int speedup = integer("cambi_high_res_speedup");
  s.halveFirst = (speedup == 1080 && pixels >= 1920 * 1080) || (speedup == 1440 && pixels >= 2560 * 1440) ||
                 (speedup == 2160 && pixels >= 3840 * 2160);
  s.fullRef = o.flag("full_ref");
  s.maxValue = o.number("cambi_max_val");
  s.topk = o.number("topk") != 0.6 ? o.number("topk") : o.number("cambi_topk");
  const std::string& eotfName = o.text("cambi_eotf") != "bt1886" ? o.text("cambi_eotf") : o.text("eotf");
  if (eotfName != "bt1886" && eotfName != "pq") throw std::runtime_error("unknown eotf " + eotfName);
  const Eotf eotf = eotfName == "pq" ? Eotf::Pq : Eotf::Bt1886;
  s.diffs = 1 << integer("max_log_contrast");
  const double tvi = o.number("tvi_threshold");
  for (int d = 0; d < s.diffs; d++) s.visible.push_back(visibilityLimit(d + 1, tvi, eotf) + s.diffs);
  s.lowestLuma = lowestVisibleLuma(o.number("cambi_vis_lum_threshold"), eotf);
  s.bandBase = std::max(s.lowestLuma - 3 * s.diffs + 1, 0);
  s.bandSize = s.visible[s.diffs - 1] + 1 - s.bandBase;
  s.stepsAt.assign(static_cast<size_t>(s.bandBase + s.bandSize), 0);
  for (int sample = 0; sample < s.bandBase + s.bandSize; sample++) {
    const int value = sample + s.diffs;
    for (int d = 0; d < s.diffs; d++)
      if (value <= s.visible[d] && value + d + 1 > s.lowestLuma) s.stepsAt[sample] |= 1u << d;
  }
  s.window = adjustedWindow(integer("window_size"), s.encWidth, s.encHeight, s.halveFirst);
  s.srcWindow = adjustedWindow(integer("window_size"), s.srcWidth, s.srcHeight, s.halveFirst);
  const int widest = std::max(s.window, s.srcWindow);
  if (widest * widest >= kReciprocals) throw std::runtime_error("window of " + std::to_string(widest) + " pixels is too large");
  s.reciprocal = reciprocalTable();
  const std::string& heatmapsPath = o.text("heatmaps_path");
  auto heatmaps = heatmapsPath.empty() ? nullptr : std::make_unique<Heatmaps>(heatmapsPath, s.encWidth, s.encHeight);
  return std::make_unique<Cambi>(std::move(s), g.bitDepth, std::move(heatmaps));
}

}  // namespace

VMAFS_REGISTER_EXTRACTOR("cambi", make);

}  // namespace vmafs

// See speed-core.h. Every float/double step below is where libvmaf 3.2.0's speed.c has it;
// the build has -ffp-contract=off, so nothing is fused unless written as std::fma.
#include "speed-core.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "cpu_features.h"
#include "float-filter.h"
#include "float-scale.h"

namespace vmafs {
namespace {

constexpr int kBlock = 5;
constexpr int kBlockArea = kBlock * kBlock;
constexpr int kDecimationShift = 4;  // four dyadic scales: every 16th sample
constexpr double kEigenEps = 1e-6;
constexpr int kMaxQrSweeps = 500;

// log2(2 pi e): the differential entropy of a unit Gaussian, in bits, as a double constant.
const double kLog2TwoPiE = std::log2(2 * M_PI * M_E);

bool kernelScaleKnown(float ks) {
  static const float kKnown[] = {1.0f,         1.0f / 2.0f,  3.0f / 2.0f,  2.0f,        2.0f / 3.0f,  24.0f / 10.0f,
                                 360.0f / 97.0f, 4.0f / 3.0f, 3.5f / 3.0f, 3.75f / 3.0f, 4.25f / 3.0f, 5.0f / 3.0f,
                                 3.0f,         1.0f / 2.25f, 1.4746f,     1.54f,       1.6f,         1.06667f,
                                 0.711111f,    0.740740f,    1.111111f};
  for (float k : kKnown) {
    if (std::fabs(ks - k) < 1e-3) return true;
  }
  return false;
}

// The VIF tools' Gaussian window length for a scale (odd, at least 3).
int windowLength(int scale, float ks) {
  const int n = (1 << (4 - scale)) + 1;
  int len = static_cast<int>(std::ceil(n * ks));
  if (len % 2 == 0) len += 1;
  return std::max(len, 3);
}

// Normalised float Gaussian taps; each tap is exp(...) / (1 / (sigma sqrt(2 pi))) as libvmaf
// writes its pdf.
std::vector<float> gaussianTaps(int length, float sigma) {
  std::vector<float> taps(static_cast<size_t>(length));
  const int half = (length - 1) / 2;
  float total = 0;
  for (int i = 0; i < length; i++) {
    const float x = static_cast<float>(i - half);
    const float num = static_cast<float>(std::exp(-0.5 * x / sigma * x / sigma));
    const float den = static_cast<float>(1 / (sigma * std::sqrt(2 * M_PI)));
    taps[i] = num / den;
    total += taps[i];
  }
  for (float& t : taps) t /= total;
  return taps;
}

// sqrt(a^2 + b^2) in float, the root taken in double.
float hypotF(float a, float b) { return static_cast<float>(std::sqrt(static_cast<double>(a * a + b * b))); }

float signOf(float x) { return x >= 0 ? 1.0f : -1.0f; }

// ---- symmetric eigenvalues (float): Householder to tridiagonal, then implicit QR ----------

// Reduces the symmetric n x n matrix `a` (row-major, overwritten) to tridiagonal form;
// diag/sub receive the diagonal and subdiagonal.
void tridiagonalise(std::vector<float>& a, int n, std::vector<float>& diag, std::vector<float>& sub) {
  std::vector<float> v(static_cast<size_t>(n)), w(static_cast<size_t>(n));
  auto at = [&](int r, int c) -> float& { return a[static_cast<size_t>(r) * n + c]; };
  for (int col = 0; col + 2 < n; col++) {
    const int top = col + 1;
    // The reflector that zeroes column `col` below row `top`.
    float tau = 0.0f;
    float tailSq = 0;
    for (int r = top + 1; r < n; r++) tailSq += at(r, col) * at(r, col);
    const float tailNorm = static_cast<float>(std::sqrt(static_cast<double>(tailSq)));
    if (tailNorm != 0.0f) {
      const float head = at(top, col);
      const float beta = -signOf(head) * hypotF(head, tailNorm);
      tau = (beta - head) / beta;
      const float scale = head - beta;
      if (scale != 0.0f) {
        for (int r = top; r < n; r++) at(r, col) /= scale;
        at(top, col) = beta;
      }
    }
    for (int r = top; r < n; r++) v[r] = at(r, col);
    if (tau == 0.0f) continue;
    at(top, col) = v[top];
    v[top] = 1.0f;
    // w = tau A v, then w -= (tau / 2)(w . v) v, then A -= w v' + v w' (rows/cols top..n-1).
    for (int r = top; r < n; r++) {
      float acc = 0.0f;
      for (int c = top; c < n; c++) acc += tau * at(r, c) * v[c];
      w[r] = acc;
    }
    float wv = 0;
    for (int r = top; r < n; r++) wv += w[r] * v[r];
    const float k = static_cast<float>(-0.5 * tau * wv);
    for (int r = top; r < n; r++) w[r] += k * v[r];
    for (int r = top; r < n; r++)
      for (int c = top; c < n; c++) at(r, c) -= w[r] * v[c] + v[r] * w[c];
  }
  for (int i = 0; i < n; i++) diag[i] = at(i, i);
  for (int i = 0; i + 1 < n; i++) sub[i] = at(i + 1, i);
}

// Zeroes subdiagonal entries negligible against their diagonal neighbours.
void deflate(float* diag, float* sub, int n) {
  for (int i = 0; i + 1 < n; i++) {
    if (std::fabs(sub[i]) < kEigenEps * (std::fabs(diag[i]) + std::fabs(diag[i + 1]))) sub[i] = 0.0f;
  }
}

// Wilkinson's shift from the trailing 2x2 block.
float wilkinsonShift(const float* diag, const float* sub, int n) {
  const float a = diag[n - 2], b = diag[n - 1], c = sub[n - 2];
  const float half = static_cast<float>((a - b) / 2.0);
  if (half > 0) return b - c * (c / (half + hypotF(half, c)));
  if (half == 0) return b - std::fabs(c);
  return b + c * (c / (-half + hypotF(half, c)));
}

// The rotation (c, s) with [c -s; s c]' (x, z) along an axis.
void givens(float x, float z, float* c, float* s) {
  if (z == 0) {
    *c = 1;
    *s = 0;
  } else if (std::fabs(z) > std::fabs(x)) {
    const float t = -x / z;
    const float r = static_cast<float>(1.0 / std::sqrt(static_cast<double>(1 + t * t)));
    *s = r;
    *c = r * t;
  } else {
    const float t = -z / x;
    const float r = static_cast<float>(1.0 / std::sqrt(static_cast<double>(1 + t * t)));
    *c = r;
    *s = r * t;
  }
}

// One implicitly shifted QR sweep over an unreduced tridiagonal block of n >= 2.
void qrSweep(float* diag, float* sub, int n) {
  float mu = wilkinsonShift(diag, sub, n);
  if (kEigenEps * std::fabs(mu) > std::fabs(diag[0]) + std::fabs(sub[0])) mu = 0;
  float x = diag[0] - mu, z = sub[0];
  float ap = diag[0], bp = sub[0], aq = diag[1];
  float bk = 0, zk = 0;
  // The rotated 2x2 (p, q) block of G' T G.
  auto rotate = [](float c, float s, float ap, float bp, float aq, float* ap1, float* bp1, float* aq1) {
    *ap1 = c * (c * ap - s * bp) + s * (s * aq - c * bp);
    *bp1 = c * (s * ap + c * bp) - s * (s * bp + c * aq);
    *aq1 = s * (s * ap + c * bp) + c * (s * bp + c * aq);
  };
  if (n == 2) {
    float c, s;
    givens(x, z, &c, &s);
    rotate(c, s, ap, bp, aq, &diag[0], &sub[0], &diag[1]);
    return;
  }
  float bq = sub[1];
  for (int k = 0; k + 1 < n; k++) {
    float c, s;
    givens(x, z, &c, &s);
    const float bulgeSub = c * bk - s * zk;
    float ap1, bp1, aq1;
    rotate(c, s, ap, bp, aq, &ap1, &bp1, &aq1);
    zk = -s * bq;
    bk = bp1;
    ap = aq1;
    bp = c * bq;
    if (k < n - 2) aq = diag[k + 2];
    if (k < n - 3) bq = sub[k + 2];
    diag[k] = ap1;
    if (k > 0) sub[k - 1] = bulgeSub;
    if (k < n - 2) sub[k + 1] = bp;
    x = bk;
    z = zk;
  }
  diag[n - 1] = ap;
  sub[n - 2] = bk;
}

// Eigenvalues of the symmetric n x n matrix m (unsorted).
std::vector<float> symmetricEigenvalues(const std::vector<float>& m, int n) {
  if (n == 1) return {m[0]};
  std::vector<float> a(m), diag(static_cast<size_t>(n)), sub(static_cast<size_t>(n));
  tridiagonalise(a, n, diag, sub);
  deflate(diag.data(), sub.data(), n);
  int end = n - 1;
  int sweeps = 0;
  while (end > 0 && sweeps < kMaxQrSweeps) {
    if (sub[end - 1] == 0.0f) {
      end--;
      continue;
    }
    int start = end - 1;
    while (start > 0 && sub[start - 1] != 0.0f) start--;
    qrSweep(&diag[start], &sub[start], end - start + 1);
    deflate(&diag[start], &sub[start], end - start + 1);
    sweeps++;
  }
  return diag;
}

// ---- K X = Y by Householder QR (float) ------------------------------------------------

// C = A B for row-major float matrices, each entry summed over k in order from 0.
void multiply(const float* a, const float* b, float* c, int rows, int inner, int cols) {
  for (int i = 0; i < rows; i++) {
    float* out = c + static_cast<size_t>(i) * cols;
    std::fill(out, out + cols, 0.0f);
    for (int k = 0; k < inner; k++) {
      const float aik = a[static_cast<size_t>(i) * inner + k];
      const float* brow = b + static_cast<size_t>(k) * cols;
      for (int j = 0; j < cols; j++) out[j] += aik * brow[j];
    }
  }
}

float euclidean(const float* v, int n) {
  float s = 0;
  for (int i = 0; i < n; i++) s += v[i] * v[i];
  return static_cast<float>(std::sqrt(static_cast<double>(s)));
}

// Solves K X = Y (K n x n, Y n x cols) into x; false where R has a diagonal entry below
// 1e-6 in magnitude (libvmaf then treats K as singular).
bool solveByQr(const std::vector<float>& k, int n, const std::vector<float>& y, int cols, std::vector<float>& x) {
  const size_t nn = static_cast<size_t>(n) * n;
  std::vector<float> reduced(k), qt(nn, 0.0f), reflector(nn), product(nn), v(static_cast<size_t>(n));
  for (int i = 0; i < n; i++) qt[static_cast<size_t>(i) * n + i] = 1.0f;
  // Q' = H_{n-1} ... H_1, where H_j = I - 2 v v' reflects column j of the partly reduced K
  // (its first j rows and columns replaced by the identity's) onto the axis.
  for (int j = 0; j + 1 < n; j++) {
    for (int r = 0; r < n; r++)
      for (int c = 0; c < n; c++)
        if (r < j || c < j) reduced[static_cast<size_t>(r) * n + c] = r == c ? 1.0f : 0.0f;
    for (int r = 0; r < n; r++) v[r] = reduced[static_cast<size_t>(r) * n + j];
    const float norm = euclidean(v.data(), n);
    v[j] += signOf(k[static_cast<size_t>(j) * n + j]) * norm;
    const float len = euclidean(v.data(), n);
    for (int r = 0; r < n; r++) v[r] = v[r] / len;
    for (int r = 0; r < n; r++)
      for (int c = 0; c < n; c++) reflector[static_cast<size_t>(r) * n + c] = -2.0f * v[r] * v[c];
    for (int r = 0; r < n; r++) reflector[static_cast<size_t>(r) * n + r] += 1;
    multiply(reflector.data(), reduced.data(), product.data(), n, n, n);
    reduced = product;
    multiply(reflector.data(), qt.data(), product.data(), n, n, n);
    qt = product;
  }
  std::vector<float> r(nn), qty(static_cast<size_t>(n) * cols);
  multiply(qt.data(), k.data(), r.data(), n, n, n);
  multiply(qt.data(), y.data(), qty.data(), n, n, cols);
  x.assign(static_cast<size_t>(n) * cols, 0.0f);
  for (int i = n - 1; i >= 0; i--) {
    const float pivot = r[static_cast<size_t>(i) * n + i];
    if (std::fabs(pivot) < kEigenEps) return false;
    for (int c = 0; c < cols; c++) {
      float t = qty[static_cast<size_t>(i) * cols + c];
      for (int m = i + 1; m < n; m++) t -= x[static_cast<size_t>(m) * cols + c] * r[static_cast<size_t>(i) * n + m];
      x[static_cast<size_t>(i) * cols + c] = t / pivot;
    }
  }
  return true;
}

// Sum over a window of (x - mx)(y - my) in double, in the order of libvmaf's AVX-512 kernel
// (the one its x86-64 build runs): per row, 16 samples at a time into two 8-lane fused
// multiply-add accumulators, then 8 at a time into the first, the rest into a plain scalar
// sum; at the end the lanes are added pairwise (lane i + lane i+8, then halves, quarters).
// Inlined into two copies below: std::fma is exact in both, but without FMA in the target it
// is a call into libm per term.
__attribute__((always_inline)) inline double centredCrossSumBody(const float* x, const float* y, int stride, int height, int width,
                                                                 double mx, double my) {
  double lo[8] = {0}, hi[8] = {0};
  double tail = 0.0;
  for (int i = 0; i < height; i++) {
    const float* rx = x + static_cast<size_t>(i) * stride;
    const float* ry = y + static_cast<size_t>(i) * stride;
    int j = 0;
    for (; j + 15 < width; j += 16) {
      for (int l = 0; l < 8; l++) {
        lo[l] = std::fma(static_cast<double>(rx[j + l]) - mx, static_cast<double>(ry[j + l]) - my, lo[l]);
        hi[l] = std::fma(static_cast<double>(rx[j + 8 + l]) - mx, static_cast<double>(ry[j + 8 + l]) - my, hi[l]);
      }
    }
    for (; j + 7 < width; j += 8) {
      for (int l = 0; l < 8; l++) lo[l] = std::fma(static_cast<double>(rx[j + l]) - mx, static_cast<double>(ry[j + l]) - my, lo[l]);
    }
    for (; j < width; j++) tail += (static_cast<double>(rx[j]) - mx) * (static_cast<double>(ry[j]) - my);
  }
  double lanes[8];
  for (int l = 0; l < 8; l++) lanes[l] = lo[l] + hi[l];
  double quad[4];
  for (int l = 0; l < 4; l++) quad[l] = lanes[l + 4] + lanes[l];
  const double pair0 = quad[2] + quad[0];
  const double pair1 = quad[3] + quad[1];
  return pair0 + pair1 + tail;
}

double centredCrossSumPortable(const float* x, const float* y, int stride, int height, int width, double mx, double my) {
  return centredCrossSumBody(x, y, stride, height, width, mx, my);
}

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
__attribute__((target("avx2,fma"))) double centredCrossSumFma(const float* x, const float* y, int stride, int height, int width,
                                                              double mx, double my) {
  return centredCrossSumBody(x, y, stride, height, width, mx, my);
}

bool hardwareFma() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return has && activeIsa() >= IsaLevel::kAvx2;
}
#endif

double centredCrossSum(const float* x, const float* y, int stride, int height, int width, double mx, double my) {
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
  if (hardwareFma()) return centredCrossSumFma(x, y, stride, height, width, mx, my);
#endif
  return centredCrossSumPortable(x, y, stride, height, width, mx, my);
}

// A packed float plane (the prescaled one).
class PackedSource final : public SpeedSource {
 public:
  PackedSource(const float* data, int width) : data_(data), width_(width) {}
  void gather(int y, const int* columns, int count, float* out) const override {
    const float* r = data_ + static_cast<size_t>(y) * width_;
    for (int i = 0; i < count; i++) out[i] = r[columns[i]];
  }
  void row(int y, int width, float* out) const override {
    std::memcpy(out, data_ + static_cast<size_t>(y) * width_, sizeof(float) * static_cast<size_t>(width));
  }

 private:
  const float* data_;
  int width_;
};

}  // namespace

SpeedGeometry SpeedGeometry::of(int width, int height, double prescale) {
  SpeedGeometry g;
  g.width = width;
  g.height = height;
  g.scaledWidth = static_cast<int>(width * prescale + 0.5);
  g.scaledHeight = static_cast<int>(height * prescale + 0.5);
  g.decimatedWidth = g.scaledWidth >> kDecimationShift;
  g.decimatedHeight = g.scaledHeight >> kDecimationShift;
  g.blocksAcross = g.decimatedWidth / kBlock;
  g.blocksDown = g.decimatedHeight / kBlock;
  g.windowWidth = g.blocksAcross * kBlock - kBlock + 1;
  g.windowHeight = g.blocksDown * kBlock - kBlock + 1;
  return g;
}

SpeedScorer::SpeedScorer(int width, int height, const SpeedParams& params)
    : geometry_(SpeedGeometry::of(width, height, params.prescale)), params_(params) {
  if (geometry_.empty()) throw std::invalid_argument("SpEED: image too small, operating width or height is 0");
  const float ks = static_cast<float>(params.kernelScale);
  if (!kernelScaleKnown(ks)) throw std::invalid_argument("invalid speed_kernelscale");
  ScaleMethod method;
  if (!scaleMethodByName(params.prescaleMethod, &method)) throw std::invalid_argument("invalid speed_prescale_method " + params.prescaleMethod);
  scaleMethod_ = static_cast<int>(method);
  if (std::fabs(params.prescale - 1.0) < 1.0e-3 && (geometry_.scaledWidth != width || geometry_.scaledHeight != height)) {
    throw std::invalid_argument("speed_prescale within 1e-3 of 1 must keep the size");
  }
  // The antialias window has the scale-1 length, its sigma widened by sqrt(16) = 4 / 2 ... as
  // libvmaf's sqrt(scale) * length / 5 with scale = 4.
  const int aaLength = windowLength(1, ks);
  antialias_ = gaussianTaps(aaLength, static_cast<float>(std::sqrt(4.0) * aaLength / 5.0f));
  const int meanLength = windowLength(4, ks);
  localMean_ = gaussianTaps(meanLength, meanLength / 5.0f);
  const int taps = static_cast<int>(antialias_.size());
  keptColumnTaps_.resize(static_cast<size_t>(geometry_.decimatedWidth) * taps);
  for (int j = 0; j < geometry_.decimatedWidth; j++)
    for (int k = 0; k < taps; k++)
      keptColumnTaps_[static_cast<size_t>(j) * taps + k] = mirrorIndex(j * 16 - taps / 2 + k, geometry_.scaledWidth);
}

// The antialias filter (vertical pass, then horizontal, as filterPlane) evaluated only at the
// samples the decimation keeps, (16 i, 16 j): the same float steps in the same order as
// filtering the whole plane, so the same values, for 1/256 of the work.
void SpeedScorer::antialiasDecimated(const SpeedSource& plane, float* out) const {
  const SpeedGeometry& g = geometry_;
  const int taps = static_cast<int>(antialias_.size());
  const int radius = taps / 2;
  const int dw = g.decimatedWidth, dh = g.decimatedHeight;
  const int count = dw * taps;
  std::vector<float> rows(static_cast<size_t>(count)), vertical(static_cast<size_t>(count));
  for (int i = 0; i < dh; i++) {
    std::fill(vertical.begin(), vertical.end(), 0.0f);
    for (int k = 0; k < taps; k++) {
      plane.gather(mirrorIndex(i * 16 - radius + k, g.scaledHeight), keptColumnTaps_.data(), count, rows.data());
      const float f = antialias_[k];
      for (int c = 0; c < count; c++) vertical[c] += f * rows[c];
    }
    for (int j = 0; j < dw; j++) {
      const float* v = &vertical[static_cast<size_t>(j) * taps];
      float accum = 0;
      for (int k = 0; k < taps; k++) accum += antialias_[k] * v[k];
      out[static_cast<size_t>(i) * dw + j] = accum;
    }
  }
}

std::vector<float> SpeedScorer::decimate(const SpeedSource& plane) const {
  const SpeedGeometry& g = geometry_;
  const int dw = g.decimatedWidth, dh = g.decimatedHeight;
  std::vector<float> small(static_cast<size_t>(dw) * dh);
  if (std::fabs(params_.prescale - 1.0) >= 1.0e-3) {
    // The scaler reads the whole plane.
    std::vector<float> whole(static_cast<size_t>(g.width) * g.height);
    for (int y = 0; y < g.height; y++) plane.row(y, g.width, &whole[static_cast<size_t>(y) * g.width]);
    std::vector<float> scaled(static_cast<size_t>(g.scaledWidth) * g.scaledHeight);
    scalePlane(static_cast<ScaleMethod>(scaleMethod_), whole.data(), g.width, g.height, scaled.data(), g.scaledWidth, g.scaledHeight);
    antialiasDecimated(PackedSource(scaled.data(), g.scaledWidth), small.data());
  } else {
    antialiasDecimated(plane, small.data());
  }
  std::vector<float> mean(small.size()), tmp;
  filterPlane(localMean_.data(), static_cast<int>(localMean_.size()), small.data(), mean.data(), dw, dh, tmp);
  for (size_t i = 0; i < small.size(); i++) small[i] -= mean[i];
  return small;
}

SpeedPlaneStats SpeedScorer::blockStats(const float* plane) const {
  const SpeedGeometry& g = geometry_;
  const int stride = g.decimatedWidth;
  const int blocks = g.blocksAcross * g.blocksDown;
  const int ww = g.windowWidth, wh = g.windowHeight;
  // Mean of the window at each of the 25 offsets (float sum, float division).
  float means[kBlockArea];
  const float count = static_cast<float>(static_cast<size_t>(ww) * static_cast<size_t>(wh));
  for (int o = 0; o < kBlockArea; o++) {
    const int r0 = o / kBlock, c0 = o % kBlock;
    float s = 0;
    for (int i = 0; i < wh; i++)
      for (int j = 0; j < ww; j++) s += plane[static_cast<size_t>(r0 + i) * stride + c0 + j];
    means[o] = s / count;
  }
  // The 25 x 25 covariance of the offsets' windows.
  std::vector<float> cov(static_cast<size_t>(kBlockArea) * kBlockArea);
  const double countD = static_cast<double>(static_cast<size_t>(ww) * static_cast<size_t>(wh));
  for (int a = 0; a < kBlockArea; a++) {
    for (int b = 0; b <= a; b++) {
      const float* pa = plane + static_cast<size_t>(a / kBlock) * stride + a % kBlock;
      const float* pb = plane + static_cast<size_t>(b / kBlock) * stride + b % kBlock;
      const float c = static_cast<float>(centredCrossSum(pa, pb, stride, wh, ww, means[a], means[b]) / countD);
      cov[static_cast<size_t>(a) * kBlockArea + b] = c;
      cov[static_cast<size_t>(b) * kBlockArea + a] = c;
    }
  }
  const std::vector<float> eigen = symmetricEigenvalues(cov, kBlockArea);
  // Y: row o holds, for every block, its sample at offset o.
  std::vector<float> y(static_cast<size_t>(kBlockArea) * blocks);
  for (int o = 0; o < kBlockArea; o++)
    for (int by = 0; by < g.blocksDown; by++)
      for (int bx = 0; bx < g.blocksAcross; bx++)
        y[static_cast<size_t>(o) * blocks + by * g.blocksAcross + bx] =
            plane[static_cast<size_t>(by * kBlock + o / kBlock) * stride + bx * kBlock + o % kBlock];
  SpeedPlaneStats out;
  bool regular = true;
  for (float e : eigen)
    if (e < kEigenEps) regular = false;
  std::vector<float> x;
  const bool solved = regular && solveByQr(cov, kBlockArea, y, blocks, x);
  if (!solved) {
    out.singular = true;
    x.assign(static_cast<size_t>(kBlockArea) * blocks, 0.0f);
  }
  // Each block's variance scale: the sum over offsets of x * y / 25, offsets in order.
  const float area = static_cast<float>(kBlockArea);
  out.variance.assign(static_cast<size_t>(blocks), 0.0f);
  for (int o = 0; o < kBlockArea; o++)
    for (int b = 0; b < blocks; b++) {
      const size_t i = static_cast<size_t>(o) * blocks + b;
      const float term = x[i] * y[i] / area;
      out.variance[b] = o == 0 ? term : out.variance[b] + term;
    }
  out.entropy.assign(static_cast<size_t>(blocks), 0.0f);
  const float sigmaNn = static_cast<float>(params_.sigmaNn);
  for (int k = 0; k < kBlockArea; k++) {
    const float lambda = eigen[k] < 0 ? 0 : eigen[k];
    for (int b = 0; b < blocks; b++) {
      const float arg = lambda * out.variance[b] + sigmaNn;
      out.entropy[b] = static_cast<float>(out.entropy[b] + (std::log2(static_cast<double>(arg)) + kLog2TwoPiE));
    }
  }
  return out;
}

float SpeedScorer::compare(const SpeedPlaneStats& ref, const SpeedPlaneStats& dis) const {
  const float sigmaNn = static_cast<float>(params_.sigmaNn);
  const float nnFloor = static_cast<float>(params_.nnFloor);
  const float floorEntropy = static_cast<float>(
      static_cast<double>(kBlockArea) * (std::log2(static_cast<double>((1 + nnFloor) * sigmaNn)) + kLog2TwoPiE));
  const size_t blocks = ref.entropy.size();
  float total = 0;
  for (size_t b = 0; b < blocks; b++) {
    const float er = ref.entropy[b], ed = dis.entropy[b];
    if (er < floorEntropy && ed < floorEntropy) continue;  // both below the noise: no visible difference
    const float vr = ref.variance[b], vd = dis.variance[b];
    auto bits = [](float v) { return std::log2(static_cast<double>(1 + v)); };
    double weightRef, weightDis;
    switch (params_.weightVarMode) {
      case 0: weightRef = bits(vr); weightDis = bits(vd); break;
      case 1: weightRef = bits(vr); weightDis = bits(vr); break;
      case 2: weightRef = bits(vd); weightDis = bits(vd); break;
      case 3: weightRef = weightDis = std::log2(1 + (vr + vd) / 2.0); break;
      case 4: weightRef = bits(vr); weightDis = std::log2(1 + (vr + vd) / 2.0); break;
      case 5: weightRef = bits(vr); weightDis = std::log2(1 + (0.75 * vr + 0.25 * vd)); break;
      case 6: weightRef = bits(vr); weightDis = std::log2(1 + (0.25 * vr + 0.75 * vd)); break;
      default: throw std::invalid_argument("speed_weight_var_mode out of range");
    }
    const float spatialRef = static_cast<float>(er * weightRef);
    const float spatialDis = static_cast<float>(ed * weightDis);
    total += std::fabs(spatialRef - spatialDis);
  }
  return total / static_cast<float>(blocks);
}

std::vector<double> SpeedScorer::gpuParams() const {
  const SpeedGeometry& g = geometry_;
  std::vector<double> p = {static_cast<double>(g.width),          static_cast<double>(g.height),
                           static_cast<double>(g.decimatedWidth), static_cast<double>(g.decimatedHeight),
                           static_cast<double>(antialias_.size()), static_cast<double>(localMean_.size())};
  p.insert(p.end(), antialias_.begin(), antialias_.end());
  p.insert(p.end(), localMean_.begin(), localMean_.end());
  const auto method = static_cast<ScaleMethod>(scaleMethod_);
  const bool same = g.scaledWidth == g.width && g.scaledHeight == g.height;  // scalePlane copies
  const int code = same ? 0 : method == ScaleMethod::kNearest ? 1 : method == ScaleMethod::kBilinear ? 2 : 3;
  p.insert(p.end(), {static_cast<double>(code), static_cast<double>(g.scaledWidth), static_cast<double>(g.scaledHeight)});
  if (code == 1 || code == 2) {
    auto axis = [&](int from, int to) {
      const float ratio = scale_detail::scaleRatio(from, to);
      for (int i = 0; i < to; i++) {
        if (code == 1) {
          const int at = scale_detail::nearestIndex(i, ratio);
          p.insert(p.end(), {static_cast<double>(at), static_cast<double>(at), 1.0, 0.0});
        } else {
          const scale_detail::BilinearAxis a = scale_detail::bilinearAxis(scale_detail::scaleCentre(i, ratio), from);
          const float rest = 1 - a.fraction;  // bilinearAt's (1 - dx), in float
          p.insert(p.end(), {static_cast<double>(a.first), static_cast<double>(a.second), rest, a.fraction});
        }
      }
    };
    axis(g.width, g.scaledWidth);
    axis(g.height, g.scaledHeight);
  }
  return p;
}

size_t SpeedScorer::decimatedSamples() const {
  return static_cast<size_t>(geometry_.decimatedWidth) * static_cast<size_t>(geometry_.decimatedHeight);
}

std::vector<float> SpeedScorer::unpackDecimated(const uint64_t* stats, int planes) const {
  std::vector<float> floats(static_cast<size_t>(planes) * decimatedSamples());
  for (size_t k = 0; k < floats.size(); k++) {
    const uint32_t bits = static_cast<uint32_t>(k % 2 == 0 ? stats[k / 2] : stats[k / 2] >> 32);
    std::memcpy(&floats[k], &bits, sizeof bits);
  }
  return floats;
}

float SpeedScorer::score(const SpeedSource& ref, const SpeedSource& dis, bool* singular) const {
  return scoreDecimated(decimate(ref).data(), decimate(dis).data(), singular);
}

float SpeedScorer::scoreDecimated(const float* ref, const float* dis, bool* singular) const {
  const SpeedPlaneStats r = blockStats(ref);
  const SpeedPlaneStats d = blockStats(dis);
  if (singular) *singular = r.singular || d.singular;
  // One plane singular alone (rare): 0 rather than an inflated score.
  if (r.singular != d.singular) return 0.0f;
  return compare(r, d);
}

}  // namespace vmafs

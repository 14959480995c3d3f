// Integer ADM, bit-exact with libvmaf 3.2.0's "integer_adm". See adm.h for the specification
// this file implements (every shift, rounding constant and integer width is listed there).
//
// Structure: each scale is one streaming pass over the rows of its detail bands. For band row
// y the DWT produces the LL/h/v/d rows of ref and dis; the LL row is kept (it is the next
// scale's input), the ref detail rows feed the denominator, and decouple + CSF turn both
// into the per-pixel quantities the masking step needs, held in a ring of three rows. Row
// y - 1 is then scored, its neighbours above and below now being available. Nothing but the
// LL planes is ever stored for a whole frame.
#include "adm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace vmafs {
namespace {

constexpr int kScales = 4;
constexpr int kBands = 3;     // detail bands, in the order h, v, d
constexpr int kVariants = 2;  // 0: enhancement gain limit 100 (default); 1: gain limit 1 (egl_1)
constexpr int kGainLimit[kVariants] = {100, 1};

// Daubechies-2 analysis filters in fixed point. Taps sum to 46342 (low) and 0 (high), which
// is what lets the scale-0 pass centre its samples first (see adm.h).
constexpr int32_t kLo[4] = {15826, 27411, 7345, -4240};
constexpr int32_t kHi[4] = {-4240, -7345, 27411, -15826};

// cos(1 degree)^2 rounded to binary32, the constant of the decouple angle test.
constexpr float kCosOneDegreeSq = 0x1.ffd814p-1f;

// Rounding offset of a right shift by s; libvmaf's expression for it is undefined at s == 0,
// which only the sizes below kAdmMinSize reach; 0 is used there.
inline int64_t roundOffset(int s) { return s > 0 ? int64_t{1} << (s - 1) : 0; }

// Border reflection shared by the DWT and the masking neighbourhood: index -1 maps to 1,
// n to n - 1 and n + 1 to n - 2. The clamp only matters below kAdmMinSize.
inline int mirror(int i, int n) {
  if (i < 0) i = -i;
  if (i >= n) i = 2 * n - 1 - i;
  return std::min(std::max(i, 0), n - 1);
}

inline int32_t abs32(int32_t x) { return x < 0 ? -x : x; }

// ---------------------------------------------------------------------------------------------
// Geometry

struct Rect {
  int top, bottom, left, right;  // half-open
  int width() const { return right - left; }
  int height() const { return bottom - top; }
};

// libvmaf derives its shifts as ceil(log2(n) - bias) in double precision.
int log2Shift(double n, double bias) {
  const double v = std::ceil(std::log2(n) - bias);
  return v > 0 ? static_cast<int>(v) : 0;
}

struct ScalePlan {
  int w = 0, h = 0;  // detail band size
  Rect score{};      // the scored rect: about 10% of the band left out on each side
  int cubeShift[kBands] = {};  // numerator: per-pixel shift after cubing
  int rowShift = 0;            // numerator: per-row shift
  int denCubeShift = 0;        // denominator, scales 1..3: per-pixel shift after cubing
  int denRowShift = 0;         // denominator: per-row shift
};

ScalePlan makePlan(int width, int height, int scale) {
  ScalePlan p;
  int w = width, h = height;
  for (int s = 0; s <= scale; ++s) {
    w = (w + 1) / 2;
    h = (h + 1) / 2;
  }
  p.w = w;
  p.h = h;
  const int left = static_cast<int>(w * 0.1 - 0.5);
  const int top = static_cast<int>(h * 0.1 - 0.5);
  p.score = {top, h - top, left, w - left};
  p.rowShift = log2Shift(h, 0);
  if (scale == 0) {
    p.cubeShift[0] = p.cubeShift[1] = log2Shift(w, 4);
    p.cubeShift[2] = log2Shift(w, 3);
    p.denRowShift = log2Shift(static_cast<double>(p.score.height() * p.score.width()), 20);
  } else {
    p.cubeShift[0] = p.cubeShift[1] = p.cubeShift[2] = log2Shift(w, 0);
    p.denCubeShift = log2Shift(p.score.width(), 0);
    p.denRowShift = log2Shift(p.score.height(), 0);
  }
  return p;
}

// ---------------------------------------------------------------------------------------------
// Contrast sensitivity (Watson 1997 noise-floor model at the default viewing conditions)

// The CSF weight of each band, [scale][band]: libvmaf's 1.0f / dwt_quant_step(params of Y,
// lambda = scale, theta = 1 for h and v, 2 for d) at viewing distance 3 x 1080 lines, which
// evaluates r = f32(3*1080*pi/180), temp = f32(log10(2^(lambda+1) * f0 * g[theta] / r)),
// Q = f32(2*a*pow(10, f32(k*temp*temp)) / A[lambda][theta]) with the Watson 1997 luma
// parameters (a 0.495, k 0.466, f0 0.401, g {1.501, 1, 0.534}). Stored as the binary32
// results so that the per-pixel weights below do not depend on the C library.
constexpr float kCsfWeight[kScales][kBands] = {
    {0x1.1cc774p-6f, 0x1.1cc774p-6f, 0x1.820d54p-8f},
    {0x1.06050cp-5f, 0x1.06050cp-5f, 0x1.d48d46p-7f},
    {0x1.634f1p-5f, 0x1.634f1p-5f, 0x1.8fb80cp-6f},
    {0x1.762816p-5f, 0x1.762816p-5f, 0x1.008392p-5f},
};

// ---------------------------------------------------------------------------------------------
// Reciprocal table of the decouple division: recip[v] = trunc(2^30 / v) for v in
// [-32768, 32768] \ {0}. Built once, immutable afterwards.

const int32_t* reciprocals() {
  static const std::vector<int32_t> table = [] {
    std::vector<int32_t> t(65537, 0);
    for (int i = 1; i <= 32768; ++i) {
      const int32_t r = static_cast<int32_t>(1073741824 / i);
      t[32768 + i] = r;
      t[32768 - i] = -r;
    }
    return t;
  }();
  return table.data() + 32768;
}

// Angle test of the decouple step: is the angle between (oh, ov) and (th, tv) below one
// degree? Evaluated exactly as libvmaf does: float-rounded integers, products in double.
inline bool withinOneDegree(int64_t oh, int64_t ov, int64_t th, int64_t tv) {
  const int64_t dot = oh * th + ov * tv;
  const int64_t oMag = oh * oh + ov * ov;
  const int64_t tMag = th * th + tv * tv;
  const double d = static_cast<double>(static_cast<float>(dot)) / 4096.0;
  const double o = static_cast<double>(static_cast<float>(oMag)) / 4096.0;
  const double t = static_cast<double>(static_cast<float>(tMag)) / 4096.0;
  return d >= 0.0 && d * d >= static_cast<double>(kCosOneDegreeSq) * o * t;
}

// Applies the enhancement gain limit to the restored coefficient when the angle test passed:
// the restored value may grow up to `limit` times, but not past the distorted one.
inline int64_t limitGain(int64_t rst, int32_t o, int32_t t, int32_t k, bool angle, int limit) {
  if (!angle || k == 0 || o == 0) return rst;
  return o > 0 ? std::min<int64_t>(rst * limit, t) : std::max<int64_t>(rst * limit, t);
}

// ---------------------------------------------------------------------------------------------
// Fixed-point arithmetic per scale. BaseScale is scale 0 (16-bit coefficients, libvmaf's
// int16 buffers: the narrow() casts reproduce them); DetailScale is scales 1..3 (int32).

struct BaseScale {
  static constexpr int32_t kCsf[kBands] = {36453, 36453, 49417};  // weights in Q21, Q21, Q23
  static constexpr int kCsfShift[kBands] = {15, 15, 17};
  static constexpr int32_t kCsfRound[kBands] = {16384, 16384, 65535};  // sic: 65535
  static constexpr int kThresholdShift[kBands] = {10, 10, 12};
  static constexpr int kSquareShift[kBands] = {29, 29, 30};

  const int32_t* recip = reciprocals();

  static int32_t narrow(int64_t v) { return static_cast<int16_t>(v); }

  // Q15 ratio t / o clamped to [0, 1].
  int32_t gain(int32_t o, int32_t t) const {
    if (o == 0) return 32768;
    const int64_t q = (static_cast<int64_t>(recip[o]) * t + 16384) >> 15;
    return static_cast<int32_t>(std::min<int64_t>(std::max<int64_t>(q, 0), 32768));
  }
  static int64_t restore(int32_t k, int32_t o) { return (k * o + 16384) >> 15; }
  static int32_t csf(int32_t a, int b) {
    return narrow((kCsf[b] * a + kCsfRound[b]) >> kCsfShift[b]);
  }
  static int32_t neighbourTerm(int32_t c) { return narrow((4369 * abs32(c) + 2048) >> 12); }
  static int32_t centreTerm(int32_t c) { return narrow((8738 * abs32(c) + 2048) >> 12); }

  // Masked, cubed contribution of a restored coefficient to the numerator.
  static int64_t maskedCube(int32_t r, int32_t thr, int b, int cubeShift) {
    int32_t x = abs32(r * kCsf[b]) -
                static_cast<int32_t>(static_cast<uint32_t>(thr) << kThresholdShift[b]);
    x = std::max(x, 0);
    const int32_t sq = static_cast<int32_t>(
        (static_cast<int64_t>(x) * x + roundOffset(kSquareShift[b])) >> kSquareShift[b]);
    return (static_cast<int64_t>(sq) * x + roundOffset(cubeShift)) >> cubeShift;
  }
  static uint64_t denCube(int32_t o, int /*cubeShift*/) {
    const uint64_t u = static_cast<uint16_t>(abs32(o));
    return u * u * u;
  }
};

struct DetailScale {
  int scale;         // 1..3
  uint32_t weight[kBands];  // the CSF weights in Q32: uint32(weight * 2^32)
  int denSquareShift;
  const int32_t* recip = reciprocals();

  explicit DetailScale(int s) : scale(s) {
    for (int b = 0; b < kBands; ++b) {
      weight[b] = static_cast<uint32_t>(kCsfWeight[s][b] * 4294967296.0);
    }
    static constexpr int kDenSquareShift[4] = {0, 31, 30, 31};
    denSquareShift = kDenSquareShift[s];
  }

  static int32_t narrow(int64_t v) { return static_cast<int32_t>(v); }

  // Q15 ratio t / o clamped to [0, 1]; o is first rounded to 15 significant bits.
  int32_t gain(int32_t o, int32_t t) const {
    if (o == 0) return 32768;
    const uint32_t u = o < 0 ? 0u - static_cast<uint32_t>(o) : static_cast<uint32_t>(o);
    int e = 0;
    uint32_t m = u;
    if (u >= 32768) {
      e = 17 - __builtin_clz(u);
      m = (u + (1u << (e - 1))) >> e;
    }
    const int64_t num = static_cast<int64_t>(recip[m]) * t * (o < 0 ? -1 : 1);
    const int64_t q = (num + (int64_t{1} << (14 + e))) >> (15 + e);
    return static_cast<int32_t>(std::min<int64_t>(std::max<int64_t>(q, 0), 32768));
  }
  static int64_t restore(int32_t k, int32_t o) {
    return (static_cast<int64_t>(k) * o + 16384) >> 15;
  }
  int32_t csf(int32_t a, int b) const {
    return static_cast<int32_t>((static_cast<int64_t>(weight[b]) * a + (1 << 27)) >> 28);
  }
  // libvmaf's rounding constant here is (int32_t)(1u << 31), i.e. -2^31.
  static int32_t neighbourTerm(int32_t c) {
    return static_cast<int32_t>((int64_t{143165577} * abs32(c) - 2147483648LL) >> 32);
  }
  static int32_t centreTerm(int32_t c) {
    return static_cast<int32_t>((int64_t{286331153} * abs32(c) - 2147483648LL) >> 32);
  }
  int64_t maskedCube(int32_t r, int32_t thr, int b, int cubeShift) const {
    const int32_t w = static_cast<int32_t>(
        (static_cast<int64_t>(r) * weight[b] + (1 << 27)) >> 28);
    int32_t x = std::max(abs32(w) - thr, 0);
    const int32_t sq =
        static_cast<int32_t>((static_cast<int64_t>(x) * x + (1 << 29)) >> 30);
    return (static_cast<int64_t>(sq) * x + roundOffset(cubeShift)) >> cubeShift;
  }
  uint64_t denCube(int32_t o, int cubeShift) const {
    const uint64_t u = o < 0 ? 0u - static_cast<uint32_t>(o) : static_cast<uint32_t>(o);
    const uint64_t sq = (u * u + (uint64_t{1} << denSquareShift)) >> denSquareShift;
    return (sq * u + static_cast<uint64_t>(roundOffset(cubeShift))) >> cubeShift;
  }
};

// ---------------------------------------------------------------------------------------------
// DWT, one band row at a time

// Vertical pass of scale 0 for band row y: the four mirrored source rows 2y-1 .. 2y+2,
// samples centred on 2^(bitDepth-1), then rounded down by bitDepth bits. lo/hi get `width`
// values starting at index 0.
template <typename Sample>
void verticalBase(const Sample* img, int width, int height, int bitDepth, int y, int32_t* lo,
                  int32_t* hi) {
  const Sample* rows[4];
  for (int k = 0; k < 4; ++k) rows[k] = img + static_cast<size_t>(mirror(2 * y - 1 + k, height)) * width;
  const int32_t centre = 1 << (bitDepth - 1);
  for (int x = 0; x < width; ++x) {
    const int32_t c0 = rows[0][x] - centre, c1 = rows[1][x] - centre;
    const int32_t c2 = rows[2][x] - centre, c3 = rows[3][x] - centre;
    const int32_t l = kLo[0] * c0 + kLo[1] * c1 + kLo[2] * c2 + kLo[3] * c3;
    const int32_t h = kHi[0] * c0 + kHi[1] * c1 + kHi[2] * c2 + kHi[3] * c3;
    lo[x] = static_cast<int16_t>((l + centre) >> bitDepth);
    hi[x] = static_cast<int16_t>((h + centre) >> bitDepth);
  }
}

// Vertical pass of scales 1..3 over the previous scale's LL band.
void verticalDetail(const int32_t* ll, int width, int height, int scale, int y, int32_t* lo,
                    int32_t* hi) {
  const int32_t* rows[4];
  for (int k = 0; k < 4; ++k) rows[k] = ll + static_cast<size_t>(mirror(2 * y - 1 + k, height)) * width;
  const int shift = scale == 1 ? 0 : 16;
  const int64_t round = roundOffset(shift);
  for (int x = 0; x < width; ++x) {
    const int64_t s0 = rows[0][x], s1 = rows[1][x], s2 = rows[2][x], s3 = rows[3][x];
    const int64_t l = kLo[0] * s0 + kLo[1] * s1 + kLo[2] * s2 + kLo[3] * s3;
    const int64_t h = kHi[0] * s0 + kHi[1] * s1 + kHi[2] * s2 + kHi[3] * s3;
    lo[x] = static_cast<int32_t>((l + round) >> shift);
    hi[x] = static_cast<int32_t>((h + round) >> shift);
  }
}

struct BandRows {
  int32_t* a;
  int32_t* h;
  int32_t* v;
  int32_t* d;
};

// Extends a vertical-pass row (values at [0, width)) by its mirrored neighbours at -1, width
// and width + 1; the row pointer must have room for them.
inline void padRow(int32_t* row, int width) {
  row[-1] = row[mirror(-1, width)];
  row[width] = row[mirror(width, width)];
  row[width + 1] = row[mirror(width + 1, width)];
}

// Horizontal pass: low/high filters over columns 2j-1 .. 2j+2 of the padded rows, giving
// LL (a) and v from the low row, h and d from the high row. Accumulators are int64 with
// (sum + round) >> shift; at scale 0 the sums fit int32 and the results int16.
template <typename Acc>
void horizontal(const int32_t* lo, const int32_t* hi, int outWidth, int shift, Acc round,
                bool narrow16, BandRows out) {
  for (int j = 0; j < outWidth; ++j) {
    const int32_t* l = lo + 2 * j - 1;
    const int32_t* h = hi + 2 * j - 1;
    const Acc la = Acc{kLo[0]} * l[0] + Acc{kLo[1]} * l[1] + Acc{kLo[2]} * l[2] + Acc{kLo[3]} * l[3];
    const Acc lv = Acc{kHi[0]} * l[0] + Acc{kHi[1]} * l[1] + Acc{kHi[2]} * l[2] + Acc{kHi[3]} * l[3];
    const Acc hh = Acc{kLo[0]} * h[0] + Acc{kLo[1]} * h[1] + Acc{kLo[2]} * h[2] + Acc{kLo[3]} * h[3];
    const Acc hd = Acc{kHi[0]} * h[0] + Acc{kHi[1]} * h[1] + Acc{kHi[2]} * h[2] + Acc{kHi[3]} * h[3];
    const int32_t a = static_cast<int32_t>((la + round) >> shift);
    const int32_t v = static_cast<int32_t>((lv + round) >> shift);
    const int32_t hb = static_cast<int32_t>((hh + round) >> shift);
    const int32_t d = static_cast<int32_t>((hd + round) >> shift);
    if (narrow16) {
      out.a[j] = static_cast<int16_t>(a);
      out.v[j] = static_cast<int16_t>(v);
      out.h[j] = static_cast<int16_t>(hb);
      out.d[j] = static_cast<int16_t>(d);
    } else {
      out.a[j] = a;
      out.v[j] = v;
      out.h[j] = hb;
      out.d[j] = d;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Per-call workspace: row buffers sized for the largest scale, and the LL planes.

struct MaskRow {  // one band row of the quantities the masking step needs, per variant
  std::vector<int32_t> sumNeighbour;  // F: sum over bands of the neighbour term
  std::vector<int32_t> sumCentre;     // C: sum over bands of the centre term
  std::vector<int32_t> restored[kBands];
};

struct Workspace {
  // vertical-pass rows of ref and dis, padded by 1 before and 2 after
  std::vector<int32_t> vert[2][2];  // [ref/dis][lo/hi]
  std::vector<int32_t> band[2][4];  // [ref/dis][a/h/v/d] one band row
  std::vector<int32_t> ll[2][2];    // [ref/dis][ping/pong] LL planes
  MaskRow ring[3][kVariants];       // rows y-2, y-1, y of the mask quantities
  std::vector<int32_t> colSum;      // vertical 3-sum of F, padded by 1 on each side
  std::vector<uint64_t> acc;        // stats, accumulated modulo 2^64

  Workspace(int width, int height) : acc(kAdmStatsLen, 0) {
    const size_t padded = static_cast<size_t>(width) + 3;
    const size_t bw = static_cast<size_t>((width + 1) / 2);
    const size_t bh = static_cast<size_t>((height + 1) / 2);
    for (auto& side : vert)
      for (auto& row : side) row.assign(padded, 0);
    for (auto& side : band)
      for (auto& row : side) row.assign(bw, 0);
    for (auto& side : ll) {
      side[0].assign(bw * bh, 0);
      side[1].assign(((bw + 1) / 2) * ((bh + 1) / 2), 0);
    }
    for (auto& slot : ring)
      for (auto& m : slot) {
        m.sumNeighbour.assign(bw, 0);
        m.sumCentre.assign(bw, 0);
        for (auto& r : m.restored) r.assign(bw, 0);
      }
    colSum.assign(bw + 2, 0);
  }
};

// Decouple + CSF of one band row over columns [begin, end): splits dis into the part
// restored from ref and the additive impairment, weights the impairment (CSF), and stores
// what the masking step reads, for both gain-limit variants.
template <class Fx>
void decoupleRow(const Fx& fx, const int32_t* const ref[kBands], const int32_t* const dis[kBands],
                 int begin, int end, MaskRow* out /* [kVariants] */) {
  for (int j = begin; j < end; ++j) {
    const bool angle = withinOneDegree(ref[0][j], ref[1][j], dis[0][j], dis[1][j]);
    int32_t sumF[kVariants] = {0, 0}, sumC[kVariants] = {0, 0};
    for (int b = 0; b < kBands; ++b) {
      const int32_t o = ref[b][j], t = dis[b][j];
      const int32_t k = fx.gain(o, t);
      const int64_t rst = fx.restore(k, o);
      for (int var = 0; var < kVariants; ++var) {
        const int32_t r = Fx::narrow(limitGain(rst, o, t, k, angle, kGainLimit[var]));
        const int32_t c = fx.csf(Fx::narrow(int64_t{t} - r), b);
        sumF[var] += Fx::neighbourTerm(c);
        sumC[var] += Fx::centreTerm(c);
        out[var].restored[b][j] = r;
      }
    }
    for (int var = 0; var < kVariants; ++var) {
      out[var].sumNeighbour[j] = sumF[var];
      out[var].sumCentre[j] = sumC[var];
    }
  }
}

// Contrast masking of band row i (a row of the scored rect): per band, the sum of the
// masked cubes over the row, shifted with rounding and added to the stats.
template <class Fx>
void maskRow(const Fx& fx, const ScalePlan& p, const MaskRow& up, const MaskRow& mid,
             const MaskRow& down, int colBegin, int colEnd, std::vector<int32_t>& colSumBuf,
             uint64_t* numStats /* [kBands] */) {
  int32_t* colSum = colSumBuf.data() + 1;
  for (int j = colBegin; j < colEnd; ++j) {
    colSum[j] = up.sumNeighbour[j] + mid.sumNeighbour[j] + down.sumNeighbour[j];
  }
  if (colBegin == 0) colSum[-1] = colSum[mirror(-1, p.w)];
  if (colEnd == p.w) colSum[p.w] = colSum[mirror(p.w, p.w)];

  int64_t rowSum[kBands] = {0, 0, 0};
  for (int j = p.score.left; j < p.score.right; ++j) {
    // 3x3 neighbourhood of F without its centre, plus the centre term C.
    const int32_t thr = colSum[j - 1] + colSum[j] + colSum[j + 1] - mid.sumNeighbour[j] +
                        mid.sumCentre[j];
    for (int b = 0; b < kBands; ++b) {
      rowSum[b] += fx.maskedCube(mid.restored[b][j], thr, b, p.cubeShift[b]);
    }
  }
  for (int b = 0; b < kBands; ++b) {
    numStats[b] += static_cast<uint64_t>((rowSum[b] + roundOffset(p.rowShift)) >> p.rowShift);
  }
}

// Denominator of one row of the scored rect: cubes of the ref detail coefficients.
template <class Fx>
void denRow(const Fx& fx, const ScalePlan& p, const int32_t* const ref[kBands],
            uint64_t* denStats /* [kBands] */) {
  for (int b = 0; b < kBands; ++b) {
    uint64_t rowSum = 0;
    for (int j = p.score.left; j < p.score.right; ++j) rowSum += fx.denCube(ref[b][j], p.denCubeShift);
    denStats[b] += (rowSum + static_cast<uint64_t>(roundOffset(p.denRowShift))) >> p.denRowShift;
  }
}

// One scale: DWT row by row, denominator, decouple/CSF into the ring, masking one row behind.
// `vertical(side, y, lo, hi)` fills the vertical-pass rows of ref (side 0) or dis (side 1).
template <class Fx, class Vertical>
void runScale(const Fx& fx, int scale, const ScalePlan& p, int inWidth, Vertical vertical,
              Workspace& ws, int32_t* const nextLl[2]) {
  const Rect& sc = p.score;
  const int maskRowBegin = std::max(sc.top - 1, 0), maskRowEnd = std::min(sc.bottom + 1, p.h);
  const int maskColBegin = std::max(sc.left - 1, 0), maskColEnd = std::min(sc.right + 1, p.w);
  // Without a next scale only the rows the scores read are needed.
  const int yBegin = nextLl ? 0 : maskRowBegin, yEnd = nextLl ? p.h : maskRowEnd;
  const int hShift = scale == 0 ? 16 : (scale == 2 ? 16 : 15);
  uint64_t* stats = ws.acc.data() + scale * kAdmStatsPerScale;

  for (int y = yBegin; y < yEnd; ++y) {
    const int32_t* ref[kBands];
    const int32_t* dis[kBands];
    for (int side = 0; side < 2; ++side) {
      int32_t* lo = ws.vert[side][0].data() + 1;
      int32_t* hi = ws.vert[side][1].data() + 1;
      vertical(side, y, lo, hi);
      padRow(lo, inWidth);
      padRow(hi, inWidth);
      BandRows out{ws.band[side][0].data(), ws.band[side][1].data(), ws.band[side][2].data(),
                    ws.band[side][3].data()};
      if (nextLl) out.a = nextLl[side] + static_cast<size_t>(y) * p.w;
      if (scale == 0) {
        horizontal<int32_t>(lo, hi, p.w, hShift, int32_t{1} << (hShift - 1), true, out);
      } else {
        horizontal<int64_t>(lo, hi, p.w, hShift, int64_t{1} << (hShift - 1), false, out);
      }
      const int32_t** dst = side == 0 ? ref : dis;
      dst[0] = out.h;
      dst[1] = out.v;
      dst[2] = out.d;
    }
    if (y >= sc.top && y < sc.bottom) denRow(fx, p, ref, stats + kAdmDenH);
    if (y >= maskRowBegin && y < maskRowEnd) {
      decoupleRow(fx, ref, dis, maskColBegin, maskColEnd, ws.ring[y % 3]);
    }
    // Row y - 1 is complete once row y (its lower neighbour) exists.
    const int i = y - 1;
    if (i >= sc.top && i < sc.bottom && i >= maskRowBegin) {
      const int up = mirror(i - 1, p.h) % 3, mid = i % 3, down = mirror(i + 1, p.h) % 3;
      for (int var = 0; var < kVariants; ++var) {
        maskRow(fx, p, ws.ring[up][var], ws.ring[mid][var], ws.ring[down][var], maskColBegin,
                maskColEnd, ws.colSum, stats + (var == 0 ? kAdmNumH : kAdmNumEglH));
      }
    }
  }
  // The last band row is its own lower neighbour.
  const int last = p.h - 1;
  if (last >= sc.top && last < sc.bottom && yEnd == p.h) {
    const int up = mirror(last - 1, p.h) % 3, mid = last % 3;
    for (int var = 0; var < kVariants; ++var) {
      maskRow(fx, p, ws.ring[up][var], ws.ring[mid][var], ws.ring[mid][var], maskColBegin,
              maskColEnd, ws.colSum, stats + (var == 0 ? kAdmNumH : kAdmNumEglH));
    }
  }
}

}  // namespace

void admStats(const LumaPlane& ref, const LumaPlane& dis, int64_t* stats) {
  std::fill(stats, stats + kAdmStatsLen, int64_t{0});
  const int width = ref.width, height = ref.height, bitDepth = ref.bitDepth;
  if (width < kAdmMinSize || height < kAdmMinSize) return;

  Workspace ws(width, height);
  int inWidth = width, inHeight = height;
  int cur = 0;  // which LL buffer holds the current scale's input
  for (int scale = 0; scale < kScales; ++scale) {
    const ScalePlan p = makePlan(width, height, scale);
    const int next = scale == 0 ? 0 : 1 - cur;
    int32_t* const nextLlBufs[2] = {ws.ll[0][next].data(), ws.ll[1][next].data()};
    int32_t* const* nextLl = scale + 1 < kScales ? nextLlBufs : nullptr;
    if (scale == 0) {
      const BaseScale fx;
      auto vertical = [&](int side, int y, int32_t* lo, int32_t* hi) {
        const LumaPlane& plane = side == 0 ? ref : dis;
        if (bitDepth == 8) {
          verticalBase(static_cast<const uint8_t*>(plane.data), width, height, 8, y, lo, hi);
        } else {
          verticalBase(static_cast<const uint16_t*>(plane.data), width, height, bitDepth, y, lo,
                       hi);
        }
      };
      runScale(fx, scale, p, inWidth, vertical, ws, nextLl);
    } else {
      const DetailScale fx(scale);
      const int32_t* inputs[2] = {ws.ll[0][cur].data(), ws.ll[1][cur].data()};
      auto vertical = [&](int side, int y, int32_t* lo, int32_t* hi) {
        verticalDetail(inputs[side], inWidth, inHeight, scale, y, lo, hi);
      };
      runScale(fx, scale, p, inWidth, vertical, ws, nextLl);
    }
    cur = next;
    inWidth = p.w;
    inHeight = p.h;
  }
  for (int i = 0; i < kAdmStatsLen; ++i) stats[i] = static_cast<int64_t>(ws.acc[i]);
}

// ---------------------------------------------------------------------------------------------
// Host arithmetic: libvmaf's post-loop float/double code, operation for operation.

void admFinish(const int64_t* stats, int width, int height, int /*bitDepth*/, double out[10]) {
  const float third = 1.0f / 3.0f;
  float num[kVariants][kScales], den[kScales];
  for (int s = 0; s < kScales; ++s) {
    const ScalePlan p = makePlan(width, height, s);
    const int64_t* st = stats + s * kAdmStatsPerScale;
    const float noise = powf(
        static_cast<float>(p.score.height() * p.score.width() * 0.03125), third);

    // Denominator: the ref cubes, weighted by the CSF weight cubed.
    // The exponent is a signed int at scale 0 and a uint32 (wrapping) at scales 1..3.
    const double denExp = s == 0
        ? static_cast<double>(18 - p.denRowShift)
        : static_cast<double>((s == 1 ? 32u : s == 2 ? 27u : 23u) -
                              static_cast<uint32_t>(p.denRowShift) -
                              static_cast<uint32_t>(p.denCubeShift));
    const double denScale = std::pow(2.0, denExp);
    float d = 0.0f;
    for (int b = 0; b < kBands; ++b) {
      const uint64_t acc = static_cast<uint64_t>(st[kAdmDenH + b]);
      const double csf = static_cast<double>(acc) / denScale *
                         std::pow(static_cast<double>(kCsfWeight[s][b]), 3);
      d += powf(static_cast<float>(csf), third) + noise;
    }
    den[s] = d;

    // Numerators. Scale 0 converts through double, scales 1..3 through float, as libvmaf.
    for (int var = 0; var < kVariants; ++var) {
      const int64_t* acc = st + (var == 0 ? kAdmNumH : kAdmNumEglH);
      float n = 0.0f;
      for (int b = 0; b < kBands; ++b) {
        float f;
        const uint32_t shifts = static_cast<uint32_t>(p.cubeShift[b]) +
                                static_cast<uint32_t>(p.rowShift);
        if (s == 0) {
          const uint32_t e = (b == 2 ? 57u : 52u) - shifts;
          f = static_cast<float>(static_cast<double>(acc[b]) / std::pow(2.0, static_cast<double>(e)));
        } else {
          const uint32_t e = (s == 1 ? 45u : s == 2 ? 39u : 36u) - shifts;
          const float scaleF = static_cast<float>(std::pow(2.0, static_cast<double>(e)));
          f = static_cast<float>(acc[b]) / scaleF;
        }
        n += powf(f, third) + noise;
      }
      num[var][s] = n;
    }
  }

  const double limit = 1e-10 * (width * height) / (1920.0 * 1080.0);
  for (int var = 0; var < kVariants; ++var) {
    double n = 0.0, d = 0.0;
    for (int s = 0; s < kScales; ++s) {
      n += num[var][s];
      d += den[s];
    }
    n = n < limit ? 0 : n;
    d = d < limit ? 0 : d;
    double* o = out + 5 * var;
    o[0] = d == 0.0 ? 1.0 : n / d;
    for (int s = 0; s < kScales; ++s) {
      o[1 + s] = static_cast<double>(num[var][s]) / static_cast<double>(den[s]);
    }
  }
}

}  // namespace vmafs

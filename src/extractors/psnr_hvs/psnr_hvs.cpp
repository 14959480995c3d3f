// psnr_hvs (libvmaf's third_party/xiph/psnr_hvs.c, Xiph's PSNR-HVS-M): for each plane,
// 8×8 blocks every 7 pixels (they overlap by one), each transformed with Daala's integer
// 8-point DCT; the AC error below a masking threshold (from the blocks' AC energy and
// how much of their variance survives splitting them into 4×4 quarters) is forgiven, and
// what remains is weighted by a contrast-sensitivity table. Float arithmetic as libvmaf
// does it (sums, means and the error in float; the square root in double), so the values
// match bit for bit. Chroma planes use the 4:2:0 tables at every subsampling, as libvmaf's.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "extractor.h"

namespace vmafs {
namespace {

using Block = int32_t[64];

// Products in the DCT's lifting steps wrap like the 32-bit ints libvmaf computes them in.
inline int32_t lift(int32_t v, int32_t k, int32_t round, int shift) {
  return static_cast<int32_t>(static_cast<uint32_t>(v) * static_cast<uint32_t>(k) + static_cast<uint32_t>(round)) >> shift;
}
// Halving that rounds toward zero (Daala's OD_DCT_RSHIFT by 1).
inline int32_t half(int32_t v) { return (v + (v < 0 ? 1 : 0)) >> 1; }

// Daala's forward 8-point type-II DCT (od_bin_fdct8) by lifting: in[k * stride] -> out[0..7].
void dct8(const int32_t* in, int stride, int32_t* out) {
  int32_t s0 = in[0], s1 = in[stride], s2 = in[2 * stride], s3 = in[3 * stride];
  int32_t s4 = in[4 * stride], s5 = in[5 * stride], s6 = in[6 * stride], s7 = in[7 * stride];
  // Butterflies: sums and differences of mirrored inputs.
  s7 = s0 - s7;
  const int32_t s7h = half(s7);
  s0 -= s7h;
  s1 += s6;
  const int32_t s1h = half(s1);
  s6 -= s1h;
  s5 = s2 - s5;
  s2 -= half(s5);
  s3 += s4;
  const int32_t s3h = half(s3);
  s4 = s3h - s4;
  // Even half: a 4-point DCT.
  s0 += s3h;
  s3 = s0 - s3;
  s2 = s1h - s2;
  s1 = s2 - s1;
  s0 -= lift(s1, 13573, 16384, 15);
  s1 += lift(s0, 11585, 8192, 14);
  s0 -= lift(s1, 13573, 16384, 15);
  s3 -= lift(s2, 21895, 16384, 15);
  s2 += lift(s3, 15137, 8192, 14);
  s3 -= lift(s2, 21895, 16384, 15);
  // Odd half: a 4-point DST.
  s5 += lift(s6, 19195, 16384, 15);
  s6 += lift(s5, 11585, 8192, 14);
  s5 -= lift(s6, 7489, 4096, 13);
  s4 = half(s6) - s4;
  s6 -= s4;
  s5 = s7h - s5;
  s7 -= s5;
  s4 += lift(s7, 3227, 16384, 15);
  s7 -= lift(s4, 6393, 16384, 15);
  s4 += lift(s7, 3227, 16384, 15);
  s6 += lift(s5, 2485, 4096, 13);
  s5 -= lift(s6, 18205, 16384, 15);
  s6 += lift(s5, 2485, 4096, 13);
  out[0] = s0;
  out[1] = s7;
  out[2] = s2;
  out[3] = s5;
  out[4] = s1;
  out[5] = s6;
  out[6] = s3;
  out[7] = s4;
}

// 2-D DCT of a row-major block, in place: each column first, then each row of those.
void dct8x8(Block block) {
  int32_t columns[64];  // columns[c * 8 + k]: coefficient k of column c
  for (int c = 0; c < 8; c++) dct8(block + c, 8, columns + c * 8);
  for (int k = 0; k < 8; k++) dct8(columns + k, 8, block + k * 8);
}

// Contrast sensitivity per DCT coefficient (Xiph's, normalized at the point of transparency).
const float kCsfLuma[8][8] = {
    {1.6193873005, 2.2901594831, 2.08509755623, 1.48366094411, 1.00227514334, 0.678296995242, 0.466224900598, 0.3265091542},
    {2.2901594831, 1.94321815382, 2.04793073064, 1.68731108984, 1.2305666963, 0.868920337363, 0.61280991668, 0.436405793551},
    {2.08509755623, 2.04793073064, 1.34329019223, 1.09205635862, 0.875748795257, 0.670882927016, 0.501731932449, 0.372504254596},
    {1.48366094411, 1.68731108984, 1.09205635862, 0.772819797575, 0.605636379554, 0.48309405692, 0.380429446972, 0.295774038565},
    {1.00227514334, 1.2305666963, 0.875748795257, 0.605636379554, 0.448996256676, 0.352889268808, 0.283006984131, 0.226951348204},
    {0.678296995242, 0.868920337363, 0.670882927016, 0.48309405692, 0.352889268808, 0.27032073436, 0.215017739696, 0.17408067321},
    {0.466224900598, 0.61280991668, 0.501731932449, 0.380429446972, 0.283006984131, 0.215017739696, 0.168869545842, 0.136153931001},
    {0.3265091542, 0.436405793551, 0.372504254596, 0.295774038565, 0.226951348204, 0.17408067321, 0.136153931001, 0.109083846276}};
const float kCsfCb[8][8] = {
    {1.91113096927, 2.46074210438, 1.18284184739, 1.14982565193, 1.05017074788, 0.898018824055, 0.74725392039, 0.615105596242},
    {2.46074210438, 1.58529308355, 1.21363250036, 1.38190029285, 1.33100189972, 1.17428548929, 0.996404342439, 0.830890433625},
    {1.18284184739, 1.21363250036, 0.978712413627, 1.02624506078, 1.03145147362, 0.960060382087, 0.849823426169, 0.731221236837},
    {1.14982565193, 1.38190029285, 1.02624506078, 0.861317501629, 0.801821139099, 0.751437590932, 0.685398513368, 0.608694761374},
    {1.05017074788, 1.33100189972, 1.03145147362, 0.801821139099, 0.676555426187, 0.605503172737, 0.55002013668, 0.495804539034},
    {0.898018824055, 1.17428548929, 0.960060382087, 0.751437590932, 0.605503172737, 0.514674450957, 0.454353482512, 0.407050308965},
    {0.74725392039, 0.996404342439, 0.849823426169, 0.685398513368, 0.55002013668, 0.454353482512, 0.389234902883, 0.342353999733},
    {0.615105596242, 0.830890433625, 0.731221236837, 0.608694761374, 0.495804539034, 0.407050308965, 0.342353999733, 0.295530605237}};
const float kCsfCr[8][8] = {
    {2.03871978502, 2.62502345193, 1.26180942886, 1.11019789803, 1.01397751469, 0.867069376285, 0.721500455585, 0.593906509971},
    {2.62502345193, 1.69112867013, 1.17180569821, 1.3342742857, 1.28513006198, 1.13381474809, 0.962064122248, 0.802254508198},
    {1.26180942886, 1.17180569821, 0.944981930573, 0.990876405848, 0.995903384143, 0.926972725286, 0.820534991409, 0.706020324706},
    {1.11019789803, 1.3342742857, 0.990876405848, 0.831632933426, 0.77418706195, 0.725539939514, 0.661776842059, 0.587716619023},
    {1.01397751469, 1.28513006198, 0.995903384143, 0.77418706195, 0.653238524286, 0.584635025748, 0.531064164893, 0.478717061273},
    {0.867069376285, 1.13381474809, 0.926972725286, 0.725539939514, 0.584635025748, 0.496936637883, 0.438694579826, 0.393021669543},
    {0.721500455585, 0.962064122248, 0.820534991409, 0.661776842059, 0.531064164893, 0.438694579826, 0.375820256136, 0.330555063063},
    {0.593906509971, 0.802254508198, 0.706020324706, 0.587716619023, 0.478717061273, 0.393021669543, 0.330555063063, 0.285345396658}};

// One plane's weighting: the CSF and the masking weights derived from it (the CSF scaled by
// PSNR-HVS-M's 0.38857 and squared, in double, kept as float).
struct Weights {
  float csf[64];
  float mask[64];
  explicit Weights(const float (&table)[8][8]) {
    for (int k = 0; k < 64; k++) {
      csf[k] = table[k / 8][k % 8];
      const double scaled = csf[k] * 0.3885746225901003;
      mask[k] = static_cast<float>(scaled * scaled);
    }
  }
};

const Weights& weightsFor(int plane) {
  static const Weights luma(kCsfLuma), cb(kCsfCb), cr(kCsfCr);
  return plane == 0 ? luma : plane == 1 ? cb : cr;
}

template <typename T>
void loadBlock(const PlaneView& plane, int x, int y, Block out) {
  for (int i = 0; i < 8; i++) {
    const T* row = plane.row<T>(y + i) + x;
    for (int j = 0; j < 8; j++) out[i * 8 + j] = row[j];
  }
}

// Which 4×4 quarter of the block sample k lies in (libvmaf's numbering).
inline int quarterOf(int k) { return ((k / 8) >> 2) + (((k % 8) >> 2) << 1); }

// The variance left after removing the block's 4×4 quarters' means, as a share of its
// whole variance (each with its n-1 normalization); 0 for a flat block.
float varianceRatio(const Block b) {
  float mean = 0;
  float quarterMean[4] = {0, 0, 0, 0};
  for (int k = 0; k < 64; k++) {
    mean += b[k];
    quarterMean[quarterOf(k)] += b[k];
  }
  mean /= 64.f;
  for (float& m : quarterMean) m /= 16.f;
  float variance = 0;
  float quarterVariance[4] = {0, 0, 0, 0};
  for (int k = 0; k < 64; k++) {
    const float d = b[k] - mean;
    variance += d * d;
    const float dq = b[k] - quarterMean[quarterOf(k)];
    quarterVariance[quarterOf(k)] += dq * dq;
  }
  variance *= 1 / 63.f * 64;
  for (float& v : quarterVariance) v *= 1 / 15.f * 16;
  if (variance > 0) variance = (quarterVariance[0] + quarterVariance[1] + quarterVariance[2] + quarterVariance[3]) / variance;
  return variance;
}

// Masking level of a transformed block: the mask-weighted AC energy times the variance ratio.
float maskingLevel(const Block coeffs, float ratio, const Weights& w) {
  float energy = 0;
  for (int k = 1; k < 64; k++) {
    const int32_t square = static_cast<int32_t>(static_cast<uint32_t>(coeffs[k]) * static_cast<uint32_t>(coeffs[k]));
    energy += square * w.mask[k];
  }
  return static_cast<float>(std::sqrt(static_cast<double>(energy * ratio)) / 32.f);
}

// Blocks start every 7 samples while a whole 8×8 block fits.
constexpr int kStep = 7;
inline int blocksAlong(int size) { return size > 7 ? (size - 7 + kStep - 1) / kStep : 0; }

// One block pair's 64 terms (each coefficient's masked, CSF-weighted error, squared), in
// coefficient order: what the plane's running total adds. The gpu kernel
// (psnr_hvs-gpu.ts, psnr_hvs.wgsl) computes the same floats.
template <typename T>
void blockTerms(const PlaneView& ref, const PlaneView& dis, int x, int y, const Weights& w, float terms[64]) {
  Block s, d;
  loadBlock<T>(ref, x, y, s);
  loadBlock<T>(dis, x, y, d);
  const float sRatio = varianceRatio(s);
  const float dRatio = varianceRatio(d);
  dct8x8(s);
  dct8x8(d);
  float mask = maskingLevel(s, sRatio, w);
  const float dMask = maskingLevel(d, dRatio, w);
  if (dMask > mask) mask = dMask;
  for (int k = 0; k < 64; k++) {
    float err = static_cast<float>(std::abs(s[k] - d[k]));
    if (k != 0) {
      const float threshold = mask / w.mask[k];
      err = err < threshold ? 0 : err - threshold;
    }
    const float weighted = err * w.csf[k];
    terms[k] = weighted * weighted;
  }
}

// A plane's error: its blocks' terms summed in float in block order (rows of blocks, then
// coefficients), as libvmaf's running total does (so the sum cannot be split into
// independent per-block parts), then the mean on a [0, 1] sample scale (NaN when the plane
// has no whole block, as libvmaf's 0 / 0).
class PlaneTotal {
 public:
  void add(const float* terms, int n) {
    for (int i = 0; i < n; i++) total_ += terms[i];
    count_ += n;
  }
  double error(int bitDepth) const {
    float total = total_;
    total /= count_;
    const int32_t peak = (1 << bitDepth) - 1;
    total /= peak * peak;
    return total;
  }

 private:
  float total_ = 0;
  int count_ = 0;
};

class PsnrHvs final : public Extractor {
 public:
  explicit PsnrHvs(const ExtractorGeometry& g) : bitDepth_(g.bitDepth) {
    if (g.chromaWidth == 0) throw std::invalid_argument("psnr_hvs reads the chroma planes: gray input has none");
    if (g.bitDepth > 12) throw std::invalid_argument("psnr_hvs takes at most 12 bits per sample");
    for (int p = 0; p < 3; p++) {
      blocksX_[p] = blocksAlong(p == 0 ? g.width : g.chromaWidth);
      blocksY_[p] = blocksAlong(p == 0 ? g.height : g.chromaHeight);
    }
  }

  size_t outputCount() const override { return 4; }

  void extract(const FrameWindow& f, double* out) const override {
    PlaneTotal totals[3];
    float terms[64];
    for (int p = 0; p < 3; p++) {
      const PlaneView& a = f.ref->plane[p];
      const PlaneView& b = f.dis->plane[p];
      for (int by = 0; by < blocksY_[p]; by++) {
        for (int bx = 0; bx < blocksX_[p]; bx++) {
          if (bitDepth_ == 8) {
            blockTerms<uint8_t>(a, b, bx * kStep, by * kStep, weightsFor(p), terms);
          } else {
            blockTerms<uint16_t>(a, b, bx * kStep, by * kStep, weightsFor(p), terms);
          }
          totals[p].add(terms, 64);
        }
      }
    }
    finish(totals, out);
  }

  // The gpu kernel gives every block's 64 terms, plane after plane, blocks in row order,
  // two floats per accumulator (low word first); they are summed here in extract()'s order.
  size_t statsCount() const override {
    size_t blocks = 0;
    for (int p = 0; p < 3; p++) blocks += static_cast<size_t>(blocksX_[p]) * blocksY_[p];
    return blocks * 32;
  }
  void finishStats(const uint64_t* stats, double* out) const override {
    PlaneTotal totals[3];
    float terms[64];
    const uint64_t* at = stats;
    for (int p = 0; p < 3; p++) {
      for (int b = 0; b < blocksX_[p] * blocksY_[p]; b++, at += 32) {
        std::memcpy(terms, at, sizeof terms);
        totals[p].add(terms, 64);
      }
    }
    finish(totals, out);
  }

  // The kernel's tables: csf[64] then mask[64] for Y, Cb, Cr (floats, exact as doubles).
  std::vector<double> gpuParams() const override {
    std::vector<double> params;
    for (int p = 0; p < 3; p++) {
      const Weights& w = weightsFor(p);
      params.insert(params.end(), w.csf, w.csf + 64);
      params.insert(params.end(), w.mask, w.mask + 64);
    }
    return params;
  }

 private:
  void finish(const PlaneTotal* totals, double* out) const {
    double error[3];
    for (int p = 0; p < 3; p++) {
      error[p] = totals[p].error(bitDepth_);
      out[p] = toDecibels(error[p]);
    }
    out[3] = toDecibels(error[0] * .8 + .1 * (error[1] + error[2]));
  }

  static double toDecibels(double error) { return 10 * (-1 * std::log10(1.0 * error)); }

  int bitDepth_;
  int blocksX_[3];
  int blocksY_[3];
};

std::unique_ptr<Extractor> makePsnrHvs(const ExtractorOptions&, const ExtractorGeometry& g) { return std::make_unique<PsnrHvs>(g); }

}  // namespace

VMAFS_REGISTER_EXTRACTOR("psnr_hvs", makePsnrHvs);

}  // namespace vmafs

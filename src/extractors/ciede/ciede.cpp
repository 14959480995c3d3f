// ciede (libvmaf's ciede.c): the mean CIEDE2000 difference of two YUV pictures, as
// 45 - 20 * log10(mean). Each pixel goes BT.709 limited-range YUV -> sRGB -> XYZ (D65)
// -> L*a*b* in double, with the Lab values rounded to float; ΔE00 is evaluated with float
// variables and double library calls. Where libvmaf keeps a value in a float we round to
// float at the same point (C++'s float overloads of sqrt/sin/... would differ from C's
// double ones, so every call here takes a double explicitly). Subsampled chroma is
// repeated to full size the way libvmaf's ciede repeats it (see ChromaReader).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "extractor.h"

namespace vmafs {
namespace {

constexpr double kPi = 3.14159265358979323846;  // M_PI

struct Lab {
  float l;
  float a;
  float b;
};

// YUV (limited range, BT.709) at one bit depth to L*a*b*.
class LabConverter {
 public:
  explicit LabConverter(int bitDepth) {
    const double scale = static_cast<double>(1 << (bitDepth - 8));
    lumaBlack_ = 16. * scale;
    lumaGain_ = 1. / (219. * scale);
    chromaZero_ = 128. * scale;
    chromaGain_ = 1. / (224. * scale);
  }

  Lab operator()(double y, double u, double v) const {
    const double yn = (y - lumaBlack_) * lumaGain_;
    const double un = (u - chromaZero_) * chromaGain_;
    const double vn = (v - chromaZero_) * chromaGain_;
    const double r = linear(yn + 1.28033 * vn);
    const double g = linear(yn - 0.21482 * un - 0.38059 * vn);
    const double b = linear(yn + 2.12798 * un);
    // sRGB primaries, D65 white.
    const double x = r * 0.4124564390896921 + g * 0.357576077643909 + b * 0.18043748326639894;
    const double yy = r * 0.21267285140562248 + g * 0.715152155287818 + b * 0.07217499330655958;
    const double z = r * 0.019333895582329317 + g * 0.119192025881303 + b * 0.9503040785363677;
    const double fx = labCurve(x * (1.0 / 0.95047));
    const double fy = labCurve(yy);
    const double fz = labCurve(z * (1.0 / 1.08883));
    return Lab{static_cast<float>(116.0 * fy - 16.0), static_cast<float>(500.0 * (fx - fy)),
               static_cast<float>(200.0 * (fy - fz))};
  }

 private:
  // sRGB transfer function, inverted (the toe threshold is libvmaf's 10/255).
  static double linear(double c) {
    if (c > 10. / 255.) return std::pow((c + 0.055) * (1.0 / 1.055), 2.4);
    return c * (1.0 / 12.92);
  }
  // CIE's f(t), its result kept in a float as libvmaf keeps it.
  static float labCurve(double t) {
    constexpr double kappa = 24389.0 / 27.0;
    constexpr double epsilon = 216.0 / 24389.0;
    if (t > epsilon) return static_cast<float>(std::pow(t, 1.0 / 3.0));
    return static_cast<float>((kappa * t + 16.0) * (1.0 / 116.0));
  }

  double lumaBlack_, lumaGain_, chromaZero_, chromaGain_;
};

// A pixel's (Y, Cb, Cr) samples in one word (samples are below 2^16).
inline uint64_t packedSamples(uint32_t y, uint32_t u, uint32_t v) {
  return (static_cast<uint64_t>(y) << 32) | (static_cast<uint64_t>(u) << 16) | v;
}

// The values of a pure function for the keys seen lately: direct-mapped, one slot per hash
// of the key, the last key to land there kept. Each value is the function's own, so
// looking it up here changes no bit of it. Neighbouring pixels share their chroma (4:2:0
// repeats a sample over 2x2) and often their luma, and a picture's colours and errors
// recur, so most of ciede's conversions and differences (pow, atan2, sin, cos and exp per
// pixel) are found here.
template <typename Key, typename Value>
class RecentValues {
 public:
  // 2^bits slots.
  explicit RecentValues(int bits) : shift_(64 - bits), keys_(size_t{1} << bits, Key::none()), values_(size_t{1} << bits) {}

  template <typename Compute>
  Value get(const Key& key, Compute compute) {
    const size_t slot = key.hash() >> shift_;
    if (keys_[slot] == key) return values_[slot];
    const Value value = compute();
    keys_[slot] = key;
    values_[slot] = value;
    return value;
  }

 private:
  int shift_;
  std::vector<Key> keys_;
  std::vector<Value> values_;
};

// Slots for a picture of `pixels`: 2^16 at most (a few MB, measured best at 1080p), fewer
// for small pictures, whose own pixels would not fill them.
inline int recentBits(size_t pixels) {
  int bits = 8;
  while (bits < 16 && (size_t{1} << bits) < pixels) bits++;
  return bits;
}

// One pixel's samples: the key of its Lab.
struct PixelKey {
  uint64_t samples;
  static PixelKey none() { return {~uint64_t{0}}; }
  uint64_t hash() const { return samples * 0x9E3779B97F4A7C15ull; }
  bool operator==(const PixelKey& o) const { return samples == o.samples; }
};

// The reference's and the distorted picture's samples at one pixel: the key of their ΔE00.
struct PairKey {
  uint64_t ref;
  uint64_t dis;
  static PairKey none() { return {~uint64_t{0}, ~uint64_t{0}}; }
  uint64_t hash() const { return (ref * 0x9E3779B97F4A7C15ull) ^ (dis * 0xC2B2AE3D27D4EB4Full); }
  bool operator==(const PairKey& o) const { return ref == o.ref && dis == o.dis; }
};

inline double sq(double x) { return x * x; }  // libvmaf's pow(x, 2), exact for float x

// Hue angle in [0, 2π) of (a', b'), 0 for the achromatic point.
inline float hueAngle(float b, float aPrime) {
  if (b == 0.0f && aPrime == 0.0f) return 0.0f;
  float h = static_cast<float>(std::atan2(static_cast<double>(b), static_cast<double>(aPrime)));
  if (h < 0.0f) h = static_cast<float>(h + 2. * kPi);
  return h;
}

// The chroma-dependent part of the a' stretch: 1 - sqrt(C^7 / (C^7 + 25^7)) in double.
inline double chromaStretch(float meanChroma) {
  const double c7 = std::pow(static_cast<double>(meanChroma), 7.0);
  return 1 - std::sqrt(c7 / (c7 + 6103515625.0));
}

// The rotation term R_T of CIEDE2000, from the mean C' and mean hue H'.
inline float rotation(float meanChromaPrime, float meanHue) {
  const float hueDegrees = static_cast<float>(meanHue * (180.0 / kPi));
  const float t = static_cast<float>((hueDegrees - 275.0) * (1.0 / 25.0));
  const float c7 = powf(meanChromaPrime, 7.0f);
  const float ratio = c7 / (c7 + powf(25.0f, 7.0f));
  const float angleDegrees = static_cast<float>(60.0 * std::exp(static_cast<double>(-powf(t, 2.0f))));
  const float angle = static_cast<float>(angleDegrees * (kPi / 180.0));
  return static_cast<float>(-2.0 * std::sqrt(static_cast<double>(ratio)) * std::sin(static_cast<double>(angle)));
}

// ΔE00 with weights kL = 0.65, kC = 1, kH = 4 (libvmaf's).
float deltaE2000(const Lab& p, const Lab& q) {
  const float dL = q.l - p.l;
  const float meanL = (p.l + q.l) / 2;
  const float c1 = static_cast<float>(std::sqrt(sq(p.a) + sq(p.b)));
  const float c2 = static_cast<float>(std::sqrt(sq(q.a) + sq(q.b)));
  const float meanC = (c1 + c2) / 2;
  const double stretch = chromaStretch(meanC);
  const float a1 = static_cast<float>(p.a + (p.a / 2) * stretch);
  const float a2 = static_cast<float>(q.a + (q.a / 2) * stretch);
  const float cp1 = static_cast<float>(std::sqrt(sq(a1) + sq(p.b)));
  const float cp2 = static_cast<float>(std::sqrt(sq(a2) + sq(q.b)));
  const float meanCp = (cp1 + cp2) / 2;
  const float dCp = cp2 - cp1;
  const double lOff = sq(static_cast<float>(meanL - 50));
  const float sL = static_cast<float>(1. + (0.015 * lOff) / std::sqrt(20 + lOff));
  const float sC = static_cast<float>(1. + 0.045 * meanCp);
  const float h1 = hueAngle(p.b, a1);
  const float h2 = hueAngle(q.b, a2);

  // Hue difference; zero when either (unstretched) chroma is zero, as libvmaf tests c1, c2.
  float dh = 0.0f;
  if (c1 != 0.0f && c2 != 0.0f) {
    const float diff = h2 - h1;
    if (std::fabs(static_cast<double>(h1 - h2)) <= kPi) dh = diff;
    else if (h2 <= h1) dh = static_cast<float>(diff + 2. * kPi);
    else dh = static_cast<float>(diff - 2. * kPi);
  }
  const float dHp = static_cast<float>(2.0 * std::sqrt(static_cast<double>(cp1 * cp2)) * std::sin(dh / 2.0));

  const float hueSum = h1 + h2;
  const float meanH = std::fabs(static_cast<double>(h1 - h2)) > kPi ? static_cast<float>((hueSum + 2.0 * kPi) / 2.0)
                                                                     : static_cast<float>(hueSum / 2.0);
  const double H = meanH;
  const float T = static_cast<float>(1.0 - 0.17 * std::cos(H - kPi / 6.0) + 0.24 * std::cos(2.0 * H) +
                                     0.32 * std::cos(3.0 * H + kPi / 30.0) - 0.20 * std::cos(4.0 * H - 7.0 * kPi / 20.0));
  const float sH = static_cast<float>(1.0 + 0.015 * meanCp * T);
  const float rT = rotation(meanCp, meanH);

  const float lightness = dL / (0.65f * sL);
  const float chroma = dCp / (1.0f * sC);
  const float hue = dHp / (4.0f * sH);
  return static_cast<float>(std::sqrt(sq(lightness) + sq(chroma) + sq(hue) + rT * chroma * hue));
}

// Which chroma samples pixel (i, j) reads, as libvmaf's ciede repeats subsampled chroma to
// full size: 4:4:4 as is; 4:2:0 each sample over 2×2 pixels. libvmaf's 4:2:2 path (its
// subsampling tests are swapped) repeats each chroma row over two luma rows and reads it
// unstretched: w samples from the start of row i/2 of a plane laid out at libvmaf's
// 32-sample-aligned stride with zero padding (reading past a row runs into the next). For
// 4:2:2 we lay the plane out that way to read the same samples.
template <typename T>
class ChromaRows {
 public:
  ChromaRows(const PlaneView& plane, char subsampling) : plane_(plane), subsampling_(subsampling) {
    if (subsampling != '2') return;
    stride_ = (plane.width + 31) & ~31;
    padded_.assign(static_cast<size_t>(stride_) * (plane.height + 2), 0);  // +2: the last rows read on
    for (int i = 0; i < plane.height; i++) {
      const T* r = plane.row<T>(i);
      std::copy(r, r + plane.width, padded_.begin() + static_cast<ptrdiff_t>(i) * stride_);
    }
  }
  // The row pixel row i reads; its column j is row[j >> columnShift()].
  const T* row(int i) const {
    switch (subsampling_) {
      case '0': return plane_.row<T>(i / 2);
      case '2': return padded_.data() + static_cast<size_t>(i / 2) * stride_;
      default: return plane_.row<T>(i);
    }
  }
  int columnShift() const { return subsampling_ == '0' ? 1 : 0; }

 private:
  const PlaneView& plane_;
  char subsampling_;
  int stride_ = 0;
  std::vector<T> padded_;
};

class Ciede final : public Extractor {
 public:
  explicit Ciede(const ExtractorGeometry& g) : lab_(g.bitDepth) {
    if (g.chromaWidth == 0) throw std::invalid_argument("ciede reads the chroma planes: gray input has none");
    subsampling_ = g.chromaWidth == g.width ? '4' : g.chromaHeight == g.height ? '2' : '0';
  }

  size_t outputCount() const override { return 1; }

  void extract(const FrameWindow& f, double* out) const override {
    const double sum = f.ref->bitDepth == 8 ? differenceSum<uint8_t>(*f.ref, *f.dis) : differenceSum<uint16_t>(*f.ref, *f.dis);
    const unsigned pixels = static_cast<unsigned>(f.ref->plane[0].width) * static_cast<unsigned>(f.ref->plane[0].height);
    out[0] = 45. - 20. * std::log10(sum / pixels);
  }

 private:
  // ΔE00 summed in double over the picture in raster order (libvmaf's order).
  template <typename T>
  double differenceSum(const Picture& ref, const Picture& dis) const {
    const int w = ref.plane[0].width;
    const int h = ref.plane[0].height;
    const ChromaRows<T> refU(ref.plane[1], subsampling_), refV(ref.plane[2], subsampling_);
    const ChromaRows<T> disU(dis.plane[1], subsampling_), disV(dis.plane[2], subsampling_);
    const int shift = refU.columnShift();
    // Per call: a frame's extract() may run beside another frame's.
    const int bits = recentBits(static_cast<size_t>(w) * static_cast<size_t>(h));
    RecentValues<PixelKey, Lab> refLabs(bits), disLabs(bits);
    RecentValues<PairKey, float> differences(bits);
    double sum = 0.;
    for (int i = 0; i < h; i++) {
      const T* ry = ref.plane[0].row<T>(i);
      const T* dy = dis.plane[0].row<T>(i);
      const T* ru = refU.row(i);
      const T* rv = refV.row(i);
      const T* du = disU.row(i);
      const T* dv = disV.row(i);
      for (int j = 0; j < w; j++) {
        const int c = j >> shift;
        const PixelKey r{packedSamples(ry[j], ru[c], rv[c])};
        const PixelKey d{packedSamples(dy[j], du[c], dv[c])};
        // Equal samples give equal Labs, whose ΔE00 is +0 (every difference is +0 and the
        // weights are positive): adding it would leave the sum as it is.
        if (r == d) continue;
        sum += differences.get({r.samples, d.samples}, [&] {
          const Lab p = refLabs.get(r, [&] { return lab_(ry[j], ru[c], rv[c]); });
          const Lab q = disLabs.get(d, [&] { return lab_(dy[j], du[c], dv[c]); });
          return deltaE2000(p, q);
        });
      }
    }
    return sum;
  }

  LabConverter lab_;
  char subsampling_;
};

std::unique_ptr<Extractor> makeCiede(const ExtractorOptions&, const ExtractorGeometry& g) { return std::make_unique<Ciede>(g); }

}  // namespace

VMAFS_REGISTER_EXTRACTOR("ciede", makeCiede);

}  // namespace vmafs

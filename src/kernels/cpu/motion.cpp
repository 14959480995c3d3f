// Motion: see motion.h for the exact arithmetic.
#include "motion.h"

#include <algorithm>
#include <vector>

namespace vmafs {
namespace {

constexpr int32_t kF0 = kMotionFilter[0];  // outer taps
constexpr int32_t kF1 = kMotionFilter[1];  // inner taps
constexpr int32_t kF2 = kMotionFilter[2];  // centre tap

// Mirror without repeating the edge sample: -1 -> 1, n -> n - 2.
inline int reflect(int i, int n) {
  if (i < 0) return -i;
  if (i >= n) return 2 * n - i - 2;
  return i;
}

// Step 1 for one row: Y[x] = (vertical filter of P - C + 2^(bd-1)) >> bd.
// Acc is int32 for 8-bit samples (|sum| < 2^24), int64 for 16-bit storage.
// Returns non-zero when some Y is non-zero.
template <typename Sample, typename Acc>
int32_t verticalRow(const Sample* prev, const Sample* cur, int width, int height, int y,
                    int bitDepth, int32_t* out) {
  size_t rows[5];
  for (int k = 0; k < 5; ++k) rows[k] = static_cast<size_t>(reflect(y - 2 + k, height)) * width;
  const Sample* p0 = prev + rows[0];
  const Sample* p1 = prev + rows[1];
  const Sample* p2 = prev + rows[2];
  const Sample* p3 = prev + rows[3];
  const Sample* p4 = prev + rows[4];
  const Sample* c0 = cur + rows[0];
  const Sample* c1 = cur + rows[1];
  const Sample* c2 = cur + rows[2];
  const Sample* c3 = cur + rows[3];
  const Sample* c4 = cur + rows[4];
  const Acc half = Acc{1} << (bitDepth - 1);
  int32_t nonzero = 0;
  for (int x = 0; x < width; ++x) {
    const Acc outer = (static_cast<Acc>(p0[x]) - c0[x]) + (static_cast<Acc>(p4[x]) - c4[x]);
    const Acc inner = (static_cast<Acc>(p1[x]) - c1[x]) + (static_cast<Acc>(p3[x]) - c3[x]);
    const Acc centre = static_cast<Acc>(p2[x]) - c2[x];
    const Acc d = Acc{kF0} * outer + Acc{kF1} * inner + Acc{kF2} * centre;
    out[x] = static_cast<int32_t>((d + half) >> bitDepth);
    nonzero |= out[x];
  }
  return nonzero;
}

// (acc + 2^15) >> 16, flooring.
inline uint32_t absRounded(int64_t acc) {
  const int32_t v = static_cast<int32_t>((acc + (int64_t{1} << 15)) >> 16);
  return static_cast<uint32_t>(v < 0 ? -v : v);
}

// Steps 2 and 3 for one row of Y.
uint32_t horizontalRowSad(const int32_t* yr, int width) {
  auto mirrored = [&](int x) {
    int64_t acc = 0;
    for (int k = 0; k < 5; ++k) {
      acc += static_cast<int64_t>(kMotionFilter[k]) * yr[reflect(x - 2 + k, width)];
    }
    return absRounded(acc);
  };
  // Columns whose taps all lie inside the row: [inLo, inHi).
  const int inLo = std::min(2, width);
  const int inHi = std::max(inLo, width - 2);
  uint32_t sad = 0;  // 32 bits on purpose: libvmaf sums each row in a uint32
  for (int x = 0; x < inLo; ++x) sad += mirrored(x);
  for (int x = inLo; x < inHi; ++x) {
    const int64_t acc = static_cast<int64_t>(kF0) * (yr[x - 2] + yr[x + 2]) +
                        static_cast<int64_t>(kF1) * (yr[x - 1] + yr[x + 1]) +
                        static_cast<int64_t>(kF2) * yr[x];
    sad += absRounded(acc);
  }
  for (int x = inHi; x < width; ++x) sad += mirrored(x);
  return sad;
}

template <typename Sample, typename Acc>
uint64_t sadOf(const Sample* prev, const Sample* cur, int width, int height, int bitDepth) {
  std::vector<int32_t> row(static_cast<size_t>(width));
  uint64_t sad = 0;
  for (int y = 0; y < height; ++y) {
    // An all-zero Y row filters to all-zero H: skip it (static regions, still frames).
    if (verticalRow<Sample, Acc>(prev, cur, width, height, y, bitDepth, row.data()) != 0) {
      sad += horizontalRowSad(row.data(), width);
    }
  }
  return sad;
}

}  // namespace

uint64_t motionSad(const LumaPlane& prev, const LumaPlane& cur) {
  const int w = cur.width;
  const int h = cur.height;
  if (w < kMotionMinSize || h < kMotionMinSize) return 0;  // callers refuse such frames
  if (cur.bitDepth == 8) {
    return sadOf<uint8_t, int32_t>(static_cast<const uint8_t*>(prev.data),
                                   static_cast<const uint8_t*>(cur.data), w, h, 8);
  }
  // int64 above 8 bits, as libvmaf: exact even for samples beyond the stated bit depth.
  return sadOf<uint16_t, int64_t>(static_cast<const uint16_t*>(prev.data),
                                  static_cast<const uint16_t*>(cur.data), w, h, cur.bitDepth);
}

double motionScore(uint64_t sad, int width, int height) {
  const uint32_t area = static_cast<uint32_t>(width) * static_cast<uint32_t>(height);
  return std::min(static_cast<double>(sad) / 256.0 / static_cast<double>(area), kMotionMaxVal);
}

}  // namespace vmafs

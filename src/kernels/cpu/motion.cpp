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

template <typename Sample>
void verticalSums(const Sample* src, int width, int height, uint32_t* out) {
  for (int y = 0; y < height; ++y) {
    const Sample* r0 = src + static_cast<size_t>(reflect(y - 2, height)) * width;
    const Sample* r1 = src + static_cast<size_t>(reflect(y - 1, height)) * width;
    const Sample* r2 = src + static_cast<size_t>(y) * width;
    const Sample* r3 = src + static_cast<size_t>(reflect(y + 1, height)) * width;
    const Sample* r4 = src + static_cast<size_t>(reflect(y + 2, height)) * width;
    uint32_t* dst = out + static_cast<size_t>(y) * width;
    // Every term is non-negative and the total is below 2^32: exact in uint32.
    for (int x = 0; x < width; ++x) {
      dst[x] = static_cast<uint32_t>(kF0) * (static_cast<uint32_t>(r0[x]) + r4[x]) +
               static_cast<uint32_t>(kF1) * (static_cast<uint32_t>(r1[x]) + r3[x]) +
               static_cast<uint32_t>(kF2) * static_cast<uint32_t>(r2[x]);
    }
  }
}

// (acc + 2^15) >> 16 with an arithmetic (flooring) shift.
inline int32_t roundShift16(int64_t acc) {
  return static_cast<int32_t>((acc + (int64_t{1} << 15)) >> 16);
}

inline uint32_t absU32(int32_t v) {
  return static_cast<uint32_t>(v < 0 ? -v : v);
}

}  // namespace

void motionBlur(const LumaPlane& ref, uint32_t* vsum) {
  if (ref.bitDepth == 8) {
    verticalSums(static_cast<const uint8_t*>(ref.data), ref.width, ref.height, vsum);
  } else {
    verticalSums(static_cast<const uint16_t*>(ref.data), ref.width, ref.height, vsum);
  }
}

uint64_t motionSad(const uint32_t* prev, const uint32_t* cur, int width, int height,
                   int bitDepth) {
  const int shift = bitDepth;
  const int64_t half = int64_t{1} << (bitDepth - 1);
  std::vector<int32_t> rowBuf(static_cast<size_t>(width));
  int32_t* yr = rowBuf.data();

  // Columns whose taps stay inside the row: [inLo, inHi).
  const int inLo = std::min(2, width);
  const int inHi = std::max(inLo, width - 2);

  uint64_t sad = 0;
  for (int y = 0; y < height; ++y) {
    const uint32_t* p = prev + static_cast<size_t>(y) * width;
    const uint32_t* c = cur + static_cast<size_t>(y) * width;

    int32_t nonzero = 0;
    for (int x = 0; x < width; ++x) {
      const int64_t d = static_cast<int64_t>(p[x]) - static_cast<int64_t>(c[x]);
      yr[x] = static_cast<int32_t>((d + half) >> shift);
      nonzero |= yr[x];
    }
    if (nonzero == 0) continue;  // every H is 0 then: the row adds nothing

    auto mirrored = [&](int x) {
      int64_t acc = 0;
      for (int k = 0; k < 5; ++k) {
        acc += static_cast<int64_t>(kMotionFilter[k]) * yr[reflect(x - 2 + k, width)];
      }
      return absU32(roundShift16(acc));
    };

    uint32_t rowSad = 0;  // uint32 on purpose: libvmaf accumulates each row in 32 bits
    for (int x = 0; x < inLo; ++x) rowSad += mirrored(x);
    for (int x = inLo; x < inHi; ++x) {
      const int64_t acc = static_cast<int64_t>(kF0) * (yr[x - 2] + yr[x + 2]) +
                          static_cast<int64_t>(kF1) * (yr[x - 1] + yr[x + 1]) +
                          static_cast<int64_t>(kF2) * yr[x];
      rowSad += absU32(roundShift16(acc));
    }
    for (int x = inHi; x < width; ++x) rowSad += mirrored(x);
    sad += rowSad;
  }
  return sad;
}

double motionScore(uint64_t sad, int width, int height) {
  const uint32_t area = static_cast<uint32_t>(width) * static_cast<uint32_t>(height);
  return std::min(static_cast<double>(sad) / 256.0 / static_cast<double>(area), kMotionMaxVal);
}

}  // namespace vmafs

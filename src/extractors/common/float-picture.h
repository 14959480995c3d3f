// A plane as the float extractors read it (libvmaf's picture_copy): each sample as a float,
// divided by 4, 16 or 256 above 8 bits (so every depth reads on the 8-bit scale), plus an
// integer offset, in float arithmetic.
#pragma once
#include <cstdint>
#include <vector>

#include "picture.h"

namespace vmafs {

// One row of a plane so (floatPlane's values for row y).
inline void floatRow(const PlaneView& plane, int bitDepth, int y, float* dst, int offset = 0) {
  const float off = static_cast<float>(offset);
  if (bitDepth == 8) {
    const uint8_t* row = plane.row<uint8_t>(y);
    for (int x = 0; x < plane.width; x++) dst[x] = static_cast<float>(row[x]) + off;
    return;
  }
  const float scale = bitDepth == 10 ? 4.0f : bitDepth == 12 ? 16.0f : 256.0f;
  const uint16_t* row = plane.row<uint16_t>(y);
  for (int x = 0; x < plane.width; x++) dst[x] = static_cast<float>(row[x]) / scale + off;
}

inline std::vector<float> floatPlane(const PlaneView& plane, int bitDepth, int offset = 0) {
  std::vector<float> out(static_cast<size_t>(plane.width) * plane.height);
  for (int y = 0; y < plane.height; y++) floatRow(plane, bitDepth, y, out.data() + static_cast<size_t>(y) * plane.width, offset);
  return out;
}

}  // namespace vmafs

// A plane as the float extractors read it (libvmaf's picture_copy): each sample as a float,
// divided by 4, 16 or 256 above 8 bits (so every depth reads on the 8-bit scale), plus an
// integer offset, in float arithmetic.
#pragma once
#include <cstdint>
#include <vector>

#include "picture.h"

namespace vmafs {

inline std::vector<float> floatPlane(const PlaneView& plane, int bitDepth, int offset = 0) {
  std::vector<float> out(static_cast<size_t>(plane.width) * plane.height);
  float* dst = out.data();
  const float off = static_cast<float>(offset);
  if (bitDepth == 8) {
    for (int y = 0; y < plane.height; y++) {
      const uint8_t* row = plane.row<uint8_t>(y);
      for (int x = 0; x < plane.width; x++) *dst++ = static_cast<float>(row[x]) + off;
    }
    return out;
  }
  const float scale = bitDepth == 10 ? 4.0f : bitDepth == 12 ? 16.0f : 256.0f;
  for (int y = 0; y < plane.height; y++) {
    const uint16_t* row = plane.row<uint16_t>(y);
    for (int x = 0; x < plane.width; x++) *dst++ = static_cast<float>(row[x]) / scale + off;
  }
  return out;
}

}  // namespace vmafs

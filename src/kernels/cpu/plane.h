// A read-only view of one luma plane as the cpu backend's kernels take it.
#pragma once
#include <cstdint>

namespace vmafs {

struct LumaPlane {
  const void* data;  // uint8_t samples when bitDepth == 8, uint16_t (native endian) otherwise
  int width;
  int height;
  int bitDepth;      // 8, 10, 12 or 16
  // Rows are packed: stride == width samples.
  int sample(int x, int y) const {
    return bitDepth == 8 ? static_cast<const uint8_t*>(data)[y * width + x]
                         : static_cast<const uint16_t*>(data)[y * width + x];
  }
};

}  // namespace vmafs

// A read-only view of a picture's planes as the registered extractors take them.
#pragma once
#include <cstddef>
#include <cstdint>

namespace vmafs {

struct PlaneView {
  const void* data = nullptr;  // uint8_t samples at 8 bits, uint16_t (native endian) above
  int width = 0;
  int height = 0;               // rows are packed: stride == width samples
  template <typename T>
  const T* row(int y) const { return static_cast<const T*>(data) + static_cast<size_t>(y) * width; }
};

// Planes in Y, Cb, Cr order; `planes` is 1 when only luma was decoded (or the input is gray).
struct Picture {
  PlaneView plane[3];
  int planes = 0;
  int bitDepth = 8;
};

}  // namespace vmafs

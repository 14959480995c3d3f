// The float plane SpEED reads (libvmaf's picture_copy with offset -128: samples on the 8-bit
// scale, minus 128), cut to the top-left width x height that libvmaf sizes it to.
#pragma once
#include <vector>

#include "float-picture.h"

namespace vmafs {

inline std::vector<float> speedPlane(const PlaneView& plane, int bitDepth, int width, int height) {
  std::vector<float> all = floatPlane(plane, bitDepth, -128);
  if (width == plane.width && height == plane.height) return all;
  std::vector<float> out(static_cast<size_t>(width) * height);
  for (int y = 0; y < height; y++)
    for (int x = 0; x < width; x++) out[static_cast<size_t>(y) * width + x] = all[static_cast<size_t>(y) * plane.width + x];
  return out;
}

}  // namespace vmafs

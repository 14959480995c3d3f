// The planes SpEED reads (libvmaf's picture_copy with offset -128: samples on the 8-bit scale,
// minus 128; speed_temporal's difference of two such planes), as SpeedSources that convert a
// sample only when the scorer reads it: with no prescale, the decimation reads about one
// sample in 28, so converting whole planes would cost more than the filtering.
#pragma once
#include <cstdint>

#include "picture.h"
#include "speed-core.h"

namespace vmafs {

// One sample of a picture plane as floatPlane(plane, bitDepth, -128) has it (same float steps).
class PictureSample {
 public:
  PictureSample(const PlaneView& plane, int bitDepth)
      : plane_(plane), wide_(bitDepth > 8), scale_(bitDepth == 10 ? 4.0f : bitDepth == 12 ? 16.0f : 256.0f) {}
  float operator()(int x, int y) const {
    constexpr float kOffset = -128.0f;
    if (!wide_) return static_cast<float>(plane_.row<uint8_t>(y)[x]) + kOffset;
    return static_cast<float>(plane_.row<uint16_t>(y)[x]) / scale_ + kOffset;
  }

 private:
  PlaneView plane_;
  bool wide_;
  float scale_;
};

// A plane's samples (its top-left corner where SpEED is sized smaller than the plane).
class PictureSpeedSource final : public SpeedSource {
 public:
  PictureSpeedSource(const PlaneView& plane, int bitDepth) : sample_(plane, bitDepth) {}
  void gather(int y, const int* columns, int count, float* out) const override {
    for (int i = 0; i < count; i++) out[i] = sample_(columns[i], y);
  }
  void row(int y, int width, float* out) const override {
    for (int x = 0; x < width; x++) out[x] = sample_(x, y);
  }

 private:
  PictureSample sample_;
};

// a - b, sample by sample, in float (speed_temporal's frame differences).
class DifferenceSpeedSource final : public SpeedSource {
 public:
  DifferenceSpeedSource(const PlaneView& a, const PlaneView& b, int bitDepth) : a_(a, bitDepth), b_(b, bitDepth) {}
  void gather(int y, const int* columns, int count, float* out) const override {
    for (int i = 0; i < count; i++) out[i] = a_(columns[i], y) - b_(columns[i], y);
  }
  void row(int y, int width, float* out) const override {
    for (int x = 0; x < width; x++) out[x] = a_(x, y) - b_(x, y);
  }

 private:
  PictureSample a_, b_;
};

}  // namespace vmafs

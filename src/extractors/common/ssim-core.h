// The SSIM computation libvmaf's float_ssim and float_ms_ssim share (its iqa/ code): the
// luma as floats, decimation with a 2-D kernel and mirrored borders, and the mean SSIM
// (with its luminance, contrast and structure parts) of an 11x11 Gaussian window applied
// only where it fits inside the picture. Every float and double step is libvmaf's, in its
// order, so the values match it bit for bit.
#pragma once
#include <cstdint>
#include <vector>

#include "picture.h"

namespace vmafs::ssim {

// The Gaussian window's side: pictures (at every scale used) must be at least this large.
constexpr int kWindow = 11;

// A picture of floats, rows packed.
struct FloatImage {
  std::vector<float> data;
  int width = 0;
  int height = 0;
};

// libvmaf's float luma (picture_copy): 8-bit samples as they are, higher depths divided
// by 2^(bpc - 8) (exact), so every depth is on the 0..255 scale SSIM's constants assume.
FloatImage lumaAsFloat(const PlaneView& plane, int bitDepth);

// The size decimation by `factor` gives: w / factor, plus 1 when w is odd (libvmaf's rule,
// which is not a ceil for factors above 2).
int decimatedSize(int size, int factor);

// Samples `src` at every factor-th pixel through a size x size kernel (row-major, tap 0 at
// offset -size/2), borders mirrored; sums in double as libvmaf does.
FloatImage decimate(const FloatImage& src, int factor, const float* kernel, int size);

struct SsimMeans {
  float ssim;
  float luminance;
  float contrast;
  float structure;
};

// The mean SSIM of two pictures of the same size (at least 11x11) with libvmaf's default
// constants (K1 = 0.01, K2 = 0.03, L = 255).
SsimMeans meanSsim(const FloatImage& ref, const FloatImage& dis);

// The gpu kernel (ssim-maps.wgsl) pools on the device: per scale it gives libvmaf's four
// double running sums (of the SSIM, luminance, contrast and structure terms, in that order)
// as their bit patterns, each the exact result of the sequential sum.
constexpr int kPoolSums = 4;

// The means meanSsim returns, from those four sums of a w x h picture pair's pooling.
SsimMeans meansFromSums(const uint64_t* sumBits, int width, int height);

// libvmaf's dB conversion of an SSIM value: -10 log10(1 - x), capped at maxDb.
double toDecibels(double score, double maxDb);

// The cap clip_db applies: ceil(10 log10(peak^2 / (0.5 / (w h)))); infinity without clip_db.
double maxDecibels(bool clip, int bitDepth, int width, int height);

}  // namespace vmafs::ssim

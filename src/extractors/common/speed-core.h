// SpEED-QA's spatial score of one pair of float planes, as libvmaf 3.2.0's speed.c computes it
// for speed_chroma and speed_temporal (bit for bit: float where it uses float, double where
// it uses double, the same operation order):
//  1. optional prescale (vif_scale_frame_s), an antialiasing Gaussian (the scale-1 VIF window,
//     sigma widened by sqrt(16)), decimation by 16, minus the local mean (the scale-4 window);
//  2. per plane, over 5x5 blocks: the 25x25 covariance of the block's samples (sums in
//     double, accumulated as libvmaf's x86-64 AVX-512 kernel does), its eigenvalues (float
//     Householder tridiagonalisation and implicit QR), each block's variance scale from
//     solving K X = Y (float Householder QR), and the block's entropy;
//  3. the mean over the blocks of |ref entropy * log2(1 + var) - dis entropy * log2(1 + var)|.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace vmafs {

// A plane SpEED scores, read on demand: row y's samples at the given columns (gather), or its
// first `width` samples (row), as floats.
class SpeedSource {
 public:
  virtual ~SpeedSource() = default;
  virtual void gather(int y, const int* columns, int count, float* out) const = 0;
  virtual void row(int y, int width, float* out) const = 0;
};

struct SpeedParams {
  double kernelScale = 1.0;
  double prescale = 1.0;
  std::string prescaleMethod = "nearest";
  double sigmaNn = 0.29;
  double nnFloor = 0.0;
  int weightVarMode = 0;
};

// The sizes one plane goes through (libvmaf's SpeedDimensions).
struct SpeedGeometry {
  int width = 0, height = 0;              // the plane as given
  int scaledWidth = 0, scaledHeight = 0;  // after the prescale
  int decimatedWidth = 0, decimatedHeight = 0;
  int blocksAcross = 0, blocksDown = 0;   // whole 5x5 blocks of the decimated plane
  int windowWidth = 0, windowHeight = 0;  // positions of a block-sized window in the blocked area
  static SpeedGeometry of(int width, int height, double prescale);
  bool empty() const { return blocksAcross == 0 || blocksDown == 0; }
};

// Results of one plane: what the score compares.
struct SpeedPlaneStats {
  std::vector<float> entropy;   // per block
  std::vector<float> variance;  // per block
  bool singular = false;        // libvmaf's est_params error: the covariance could not be inverted
};

class SpeedScorer {
 public:
  // Throws std::invalid_argument for options libvmaf's init refuses (kernel scale, prescale
  // method) and for planes too small for one block.
  SpeedScorer(int width, int height, const SpeedParams& params);

  // The score of a pair of planes (width x height each). `singular` (optional) says whether
  // either plane's covariance was singular (libvmaf's speed_extract_score's error return).
  // Safe to call from several threads at once.
  float score(const SpeedSource& ref, const SpeedSource& dis, bool* singular) const;

  // The two halves of score(), so that the first may run elsewhere (the gpu backend's
  // speed_chroma kernel computes the decimated planes, the host finishes from them):
  // the plane antialiased, decimated by 16 and minus its local mean (decimatedWidth x
  // decimatedHeight, packed) ...
  std::vector<float> decimate(const SpeedSource& plane) const;
  // ... and the score of two such planes (per-block covariance, eigenvalues, entropies).
  float scoreDecimated(const float* ref, const float* dis, bool* singular) const;

  const SpeedGeometry& geometry() const { return geometry_; }
  // The antialias and local-mean filters (normalised float Gaussians) decimate() applies.
  const std::vector<float>& antialiasTaps() const { return antialias_; }
  const std::vector<float>& localMeanTaps() const { return localMean_; }
  // The prescale's method (float-scale.h's ScaleMethod), used where the scaled size differs.
  int scaleMethod() const { return scaleMethod_; }

  // What the gpu kernel that computes decimate() takes from here (common/speed-decimate-gpu.ts
  // reads this layout; speed_chroma's and speed_temporal's gpuParams): the SpEED plane's width
  // and height, the decimated size, the two filters' lengths, the antialias filter and the
  // local-mean filter (floats, exact as doubles); then the prescale: how the plane is
  // resampled (0 not at all: the scaled size is the plane's; 1 nearest; 2 bilinear; 3 bicubic
  // or lanczos4, which the kernel does not do), the scaled width and height, and for 1 and 2
  // per scaled column, then per scaled row, the two source samples it reads, 1 minus the
  // bilinear fraction and the fraction (nearest: one sample twice, 1, 0), as float-scale.h
  // computes them.
  std::vector<double> gpuParams() const;
  // Samples of the decimated planes the gpu kernel writes (decimatedWidth x decimatedHeight
  // floats a plane, as float bits two to a 64-bit accumulator, low word first).
  size_t decimatedSamples() const;
  // `planes` such planes from the accumulators, packed one after the other.
  std::vector<float> unpackDecimated(const uint64_t* stats, int planes) const;

 private:
  void antialiasDecimated(const SpeedSource& plane, float* out) const;
  SpeedPlaneStats blockStats(const float* plane) const;
  float compare(const SpeedPlaneStats& ref, const SpeedPlaneStats& dis) const;

  SpeedGeometry geometry_;
  SpeedParams params_;
  int scaleMethod_ = 0;
  std::vector<float> antialias_;
  std::vector<float> localMean_;
  // For each kept column (every 16th of the scaled plane), the columns the antialias filter's
  // taps read, mirrored at the edges: decimatedWidth x taps.
  std::vector<int> keptColumnTaps_;
};

}  // namespace vmafs

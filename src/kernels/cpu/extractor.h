// The C++ side of the feature-extractor registry (the TypeScript side is src/extractors/).
// An extractor is registered once, by name, with a factory that builds an instance for one
// run's options and geometry; the cpu backend calls extract() for each frame on its worker
// threads, several frames at once, so extract() must only read the instance (scratch
// memory is its own per call).
//
// In its extractor's .cpp, one line registers it:
//   VMAFS_REGISTER_EXTRACTOR("psnr", makePsnr);
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "picture.h"

namespace vmafs {

// An extractor's options as the run plan resolved them (every option present, defaults
// filled in, already checked against the option table).
class ExtractorOptions {
 public:
  using Value = std::variant<bool, double, std::string>;
  void set(const std::string& name, Value v) { values_[name] = std::move(v); }
  bool flag(const std::string& name) const { return std::get<bool>(at(name)); }
  double number(const std::string& name) const { return std::get<double>(at(name)); }
  const std::string& text(const std::string& name) const { return std::get<std::string>(at(name)); }

 private:
  const Value& at(const std::string& name) const {
    auto it = values_.find(name);
    if (it == values_.end()) throw std::invalid_argument("option " + name + " was not given");
    return it->second;
  }
  std::map<std::string, Value> values_;
};

struct ExtractorGeometry {
  int width;
  int height;
  int bitDepth;
  // Chroma plane size (0 x 0 for gray input), as the frames carry them: ceil division.
  int chromaWidth;
  int chromaHeight;
};

// One frame's inputs: the reference and distorted pictures and, where the extractor
// declares neighbours, earlier pictures (previous[0] is the frame just before), and the
// frame's index in the run (libvmaf's picture index; -1 where the caller gave none), for
// what an extractor writes per frame (cambi's heatmaps).
struct FrameWindow {
  const Picture* ref;
  const Picture* dis;
  std::vector<const Picture*> previousRef;
  std::vector<const Picture*> previousDis;
  int64_t index = -1;
};

class Extractor {
 public:
  virtual ~Extractor() = default;
  // How many values extract() writes: the TypeScript definition's outputs(), in order.
  virtual size_t outputCount() const = 0;
  virtual void extract(const FrameWindow& frame, double* out) const = 0;
  // Metrics over the whole run (libvmaf's aggregate_metrics, written at flush), from what
  // extract() accumulated; asked once, after the last frame. Accumulators that extract()
  // updates must be order-independent (integer atomics): frames run in parallel.
  virtual std::vector<std::pair<std::string, double>> aggregate() const { return {}; }
  // Extractors with a GPU kernel (src/extractors/<name>/<name>-gpu.ts): how many 64-bit
  // integer accumulators the kernel gives per frame (0: none), and the frame's values from
  // them. finishStats() must be the very arithmetic extract() does after its own
  // accumulation (extract() calls it too), so that both backends give the same bits; it
  // feeds aggregate() as extract() does.
  virtual size_t statsCount() const { return 0; }
  virtual void finishStats(const uint64_t* /*stats*/, double* /*out*/) const {
    throw std::logic_error("this extractor has no GPU accumulators");
  }
  // Constants the GPU kernel needs that only the C++ computes exactly (glibc's pow, say),
  // as doubles (integers and floats are exact in them); empty when the kernel needs none.
  virtual std::vector<double> gpuParams() const { return {}; }
};

using ExtractorFactory = std::unique_ptr<Extractor> (*)(const ExtractorOptions&, const ExtractorGeometry&);

bool registerExtractor(const char* name, ExtractorFactory factory);
// Throws std::invalid_argument for an unknown name.
std::unique_ptr<Extractor> createExtractor(const std::string& name, const ExtractorOptions& options,
                                           const ExtractorGeometry& geometry);
std::vector<std::string> registeredExtractors();

}  // namespace vmafs

#define VMAFS_REGISTER_EXTRACTOR_CAT2(a, b) a##b
#define VMAFS_REGISTER_EXTRACTOR_CAT(a, b) VMAFS_REGISTER_EXTRACTOR_CAT2(a, b)
#define VMAFS_REGISTER_EXTRACTOR(name, factory)                                      \
  static const bool VMAFS_REGISTER_EXTRACTOR_CAT(vmafsRegistered_, __LINE__) = \
      ::vmafs::registerExtractor(name, factory)

#include "extractor.h"

namespace vmafs {
namespace {

// A function-local map: registrations run during static initialisation, in any order of
// translation units.
std::map<std::string, ExtractorFactory>& registry() {
  static std::map<std::string, ExtractorFactory> factories;
  return factories;
}

}  // namespace

bool registerExtractor(const char* name, ExtractorFactory factory) {
  return registry().emplace(name, factory).second;
}

std::unique_ptr<Extractor> createExtractor(const std::string& name, const ExtractorOptions& options,
                                           const ExtractorGeometry& geometry) {
  auto it = registry().find(name);
  if (it == registry().end()) throw std::invalid_argument("no native extractor named " + name);
  return it->second(options, geometry);
}

std::vector<std::string> registeredExtractors() {
  std::vector<std::string> names;
  for (const auto& entry : registry()) names.push_back(entry.first);
  return names;
}

}  // namespace vmafs

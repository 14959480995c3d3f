// Node-API surface of the extractor registry (see extractor.h):
//
//   createExtractor(name, options, geometry) -> handle
//     options: { [option]: boolean | number | string } (every option, defaults filled in);
//     geometry: { width, height, bitDepth, chromaWidth, chromaHeight }.
//     Throws TypeError for an unknown name or bad arguments, Error for what the extractor refuses.
//   runExtractor(handle, ref, dis, previousRef, previousDis[, index]) -> Promise<Float64Array>
//     ref, dis: arrays of planes (Y only, or Y Cb Cr): Uint8Array at 8 bits, Uint16Array
//     above, packed rows. previousRef/previousDis: arrays of such pictures, nearest first.
//     index: the frame's index in the run (a non-negative integer), for extractors that
//     write per-frame files (cambi's heatmaps_path refuses to run without it).
//     Runs on the addon's worker pool (thread-pool.h); every array is referenced until the promise settles, and the
//     caller must not write to them meanwhile.
//   aggregateExtractor(handle) -> Array<[name, value]>   the run's aggregate metrics
//   extractorStatsCount(handle) -> number   the 64-bit accumulators its GPU kernel gives (0: none)
//   finishExtractor(handle, stats: BigUint64Array) -> Float64Array
//     one frame's values from the accumulators a GPU kernel computed (synchronous: a few
//     double operations), through the same C++ arithmetic extract() ends with.
//   finishExtractorAsync(handle, stats) -> Promise<Float64Array>   the same on the worker pool
//   nativeExtractors() -> string[]
#include <napi.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "extractor.h"
#include "thread-pool.h"
#include "typed-data.h"

namespace vmafs {
namespace {

[[noreturn]] void typeError(Napi::Env env, const std::string& message) {
  throw Napi::TypeError::New(env, message);
}

struct Handle {
  std::unique_ptr<Extractor> extractor;
  ExtractorGeometry geometry;
  std::string name;
};

int geometryField(Napi::Object g, const char* key) {
  Napi::Value v = g.Get(key);
  if (!v.IsNumber()) typeError(g.Env(), std::string("createExtractor: geometry.") + key + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= 0 && d <= 1 << 20) || static_cast<int>(d) != d) {
    typeError(g.Env(), std::string("createExtractor: geometry.") + key + " must be a whole number");
  }
  return static_cast<int>(d);
}

Napi::Value CreateExtractor(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsString() || !info[1].IsObject() || !info[2].IsObject()) {
    typeError(env, "createExtractor(name, options, geometry): wrong arguments");
  }
  const std::string name = info[0].As<Napi::String>().Utf8Value();
  ExtractorOptions options;
  Napi::Object given = info[1].As<Napi::Object>();
  Napi::Array keys = given.GetPropertyNames();
  for (uint32_t i = 0; i < keys.Length(); i++) {
    const std::string key = keys.Get(i).As<Napi::String>().Utf8Value();
    Napi::Value v = given.Get(key);
    if (v.IsBoolean()) options.set(key, v.As<Napi::Boolean>().Value());
    else if (v.IsNumber()) options.set(key, v.As<Napi::Number>().DoubleValue());
    else if (v.IsString()) options.set(key, v.As<Napi::String>().Utf8Value());
    else typeError(env, "createExtractor: option " + key + " must be a boolean, number or string");
  }
  Napi::Object g = info[2].As<Napi::Object>();
  ExtractorGeometry geometry{geometryField(g, "width"), geometryField(g, "height"), geometryField(g, "bitDepth"),
                             geometryField(g, "chromaWidth"), geometryField(g, "chromaHeight")};
  auto handle = std::make_shared<Handle>();
  handle->geometry = geometry;
  handle->name = name;
  try {
    handle->extractor = createExtractor(name, options, geometry);
  } catch (const std::invalid_argument& e) {
    typeError(env, std::string("createExtractor: ") + e.what());
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, name + ": " + e.what());
  }
  // The JS handle owns one reference; each job in flight another.
  return Napi::External<std::shared_ptr<Handle>>::New(env, new std::shared_ptr<Handle>(std::move(handle)),
                                                      [](Napi::Env, std::shared_ptr<Handle>* h) { delete h; });
}

// A picture argument: its planes' pointers, checked against the geometry, and the arrays
// to hold while a job reads them.
Picture pictureArg(Napi::Env env, Napi::Value value, const Handle& h, const std::string& what,
                   std::vector<Napi::ObjectReference>& holds) {
  if (!value.IsArray()) typeError(env, "runExtractor: " + what + " must be an array of planes");
  Napi::Array arr = value.As<Napi::Array>();
  if (arr.Length() != 1 && arr.Length() != 3) typeError(env, "runExtractor: " + what + " must have 1 or 3 planes");
  Picture pic;
  pic.planes = static_cast<int>(arr.Length());
  pic.bitDepth = h.geometry.bitDepth;
  const napi_typedarray_type want = h.geometry.bitDepth == 8 ? napi_uint8_array : napi_uint16_array;
  for (uint32_t p = 0; p < arr.Length(); p++) {
    Napi::Value v = arr.Get(p);
    const int w = p == 0 ? h.geometry.width : h.geometry.chromaWidth;
    const int hh = p == 0 ? h.geometry.height : h.geometry.chromaHeight;
    if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != want ||
        v.As<Napi::TypedArray>().ElementLength() != static_cast<size_t>(w) * hh) {
      typeError(env, "runExtractor: " + what + " plane " + std::to_string(p) + " must be a " +
                         (want == napi_uint8_array ? "Uint8Array" : "Uint16Array") + " of " +
                         std::to_string(w) + "x" + std::to_string(hh) + " samples");
    }
    Napi::TypedArray t = v.As<Napi::TypedArray>();
    uint8_t* base = vmafs::typedBytes(t);
    if (base == nullptr && w * hh > 0) typeError(env, "runExtractor: " + what + "'s buffer is detached");
    pic.plane[p] = PlaneView{base, w, hh};
    holds.push_back(Napi::Persistent(static_cast<Napi::Object>(t)));
  }
  return pic;
}

// One job's inputs: the pictures (pointers into typed arrays the job holds) and the
// instance, shared with the JS handle so that neither outlives the other.
struct ExtractJob {
  std::shared_ptr<Handle> handle;
  Picture ref, dis;
  std::vector<Picture> previousRef, previousDis;
  int64_t index = -1;
};

Napi::Value RunExtractor(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  if (info.Length() < 5 || !info[0].IsExternal()) typeError(env, "runExtractor(handle, ref, dis, previousRef, previousDis): wrong arguments");
  auto job = std::make_shared<ExtractJob>();
  job->handle = *info[0].As<Napi::External<std::shared_ptr<Handle>>>().Data();
  const Handle& h = *job->handle;
  std::vector<Napi::ObjectReference> holds;
  job->ref = pictureArg(env, info[1], h, "ref", holds);
  job->dis = pictureArg(env, info[2], h, "dis", holds);
  for (int k = 3; k <= 4; k++) {
    if (!info[k].IsArray()) typeError(env, "runExtractor: previous pictures must be an array");
    Napi::Array list = info[k].As<Napi::Array>();
    auto& into = k == 3 ? job->previousRef : job->previousDis;
    for (uint32_t i = 0; i < list.Length(); i++) {
      into.push_back(pictureArg(env, list.Get(i), h, k == 3 ? "previousRef" : "previousDis", holds));
    }
  }
  if (info.Length() > 5 && !info[5].IsUndefined()) {
    const double index = info[5].IsNumber() ? info[5].As<Napi::Number>().DoubleValue() : -1.0;
    if (!(index >= 0 && index <= 9007199254740991.0 && std::floor(index) == index)) {
      typeError(env, "runExtractor: index must be a non-negative integer");
    }
    job->index = static_cast<int64_t>(index);
  }
  return runOnPool(
      env, "runExtractor", std::move(holds),
      [job]() {
        FrameWindow window{&job->ref, &job->dis, {}, {}, job->index};
        for (const Picture& p : job->previousRef) window.previousRef.push_back(&p);
        for (const Picture& p : job->previousDis) window.previousDis.push_back(&p);
        std::vector<double> out(job->handle->extractor->outputCount(), 0.0);
        try {
          job->handle->extractor->extract(window, out.data());
        } catch (const std::exception& e) {
          throw std::runtime_error(job->handle->name + ": " + e.what());
        }
        return out;
      },
      [](Napi::Env env, std::vector<double>& out) -> Napi::Value {
        Napi::Float64Array result = Napi::Float64Array::New(env, out.size());
        for (size_t i = 0; i < out.size(); i++) result[i] = out[i];
        return result;
      });
}

// aggregateExtractor(handle) -> [[name, value], ...]: the run's aggregate metrics, once every job is done.
Napi::Value AggregateExtractor(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsExternal()) typeError(env, "aggregateExtractor(handle): wrong arguments");
  const auto metrics = (*info[0].As<Napi::External<std::shared_ptr<Handle>>>().Data())->extractor->aggregate();
  Napi::Array out = Napi::Array::New(env, metrics.size());
  for (size_t i = 0; i < metrics.size(); i++) {
    Napi::Array pair = Napi::Array::New(env, 2);
    pair.Set(0u, metrics[i].first);
    pair.Set(1u, metrics[i].second);
    out.Set(static_cast<uint32_t>(i), pair);
  }
  return out;
}

Handle& handleArg(const Napi::CallbackInfo& info, const char* what) {
  if (info.Length() < 1 || !info[0].IsExternal()) typeError(info.Env(), std::string(what) + ": wrong arguments");
  return **info[0].As<Napi::External<std::shared_ptr<Handle>>>().Data();
}

Napi::Value ExtractorStatsCount(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(handleArg(info, "extractorStatsCount(handle)").extractor->statsCount()));
}

Napi::Value FinishExtractor(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  Handle& h = handleArg(info, "finishExtractor(handle, stats)");
  const size_t count = h.extractor->statsCount();
  if (count == 0) typeError(env, "finishExtractor: " + h.name + " has no GPU accumulators");
  if (info.Length() < 2 || !info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_biguint64_array ||
      info[1].As<Napi::TypedArray>().ElementLength() != count) {
    typeError(env, "finishExtractor: stats must be a BigUint64Array of " + std::to_string(count) + " values for " + h.name);
  }
  Napi::TypedArray t = info[1].As<Napi::TypedArray>();
  const uint64_t* stats = reinterpret_cast<const uint64_t*>(vmafs::typedBytes(t));
  std::vector<double> out(h.extractor->outputCount(), 0.0);
  try {
    h.extractor->finishStats(stats, out.data());
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, h.name + ": " + e.what());
  }
  Napi::Float64Array result = Napi::Float64Array::New(env, out.size());
  for (size_t i = 0; i < out.size(); i++) result[i] = out[i];
  return result;
}

// finishExtractorAsync(handle, stats) -> Promise<Float64Array>: finishExtractor on the pool,
// for the extractors whose finishing is real work (cambi's top-k pooling, the SSIM maps'
// ordered sums): frames then finish beside each other, off the JS thread. finishStats is
// const and thread-safe, as extract() is (the cpu backend runs frames of one instance at once).
Napi::Value FinishExtractorAsync(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsExternal()) typeError(env, "finishExtractorAsync(handle, stats): wrong arguments");
  std::shared_ptr<Handle> handle = *info[0].As<Napi::External<std::shared_ptr<Handle>>>().Data();
  const size_t count = handle->extractor->statsCount();
  if (count == 0) typeError(env, "finishExtractorAsync: " + handle->name + " has no GPU accumulators");
  if (info.Length() < 2 || !info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_biguint64_array ||
      info[1].As<Napi::TypedArray>().ElementLength() != count) {
    typeError(env, "finishExtractorAsync: stats must be a BigUint64Array of " + std::to_string(count) + " values for " + handle->name);
  }
  Napi::TypedArray t = info[1].As<Napi::TypedArray>();
  const uint64_t* stats = reinterpret_cast<const uint64_t*>(vmafs::typedBytes(t));
  return runOnPool(
      env, "finishExtractorAsync", {static_cast<Napi::Object>(t)},
      [handle, stats]() {
        std::vector<double> out(handle->extractor->outputCount(), 0.0);
        try {
          handle->extractor->finishStats(stats, out.data());
        } catch (const std::exception& e) {
          throw std::runtime_error(handle->name + ": " + e.what());
        }
        return out;
      },
      [](Napi::Env env, std::vector<double>& out) -> Napi::Value {
        Napi::Float64Array result = Napi::Float64Array::New(env, out.size());
        for (size_t i = 0; i < out.size(); i++) result[i] = out[i];
        return result;
      });
}

// extractorGpuParams(handle) -> Float64Array: the constants its GPU kernel takes from the C++.
Napi::Value ExtractorGpuParams(const Napi::CallbackInfo& info) {
  const auto params = handleArg(info, "extractorGpuParams(handle)").extractor->gpuParams();
  Napi::Float64Array result = Napi::Float64Array::New(info.Env(), params.size());
  for (size_t i = 0; i < params.size(); i++) result[i] = params[i];
  return result;
}

Napi::Value NativeExtractors(const Napi::CallbackInfo& info) {
  const auto names = registeredExtractors();
  Napi::Array out = Napi::Array::New(info.Env(), names.size());
  for (size_t i = 0; i < names.size(); i++) out.Set(static_cast<uint32_t>(i), names[i]);
  return out;
}

}  // namespace

void registerExtractorBindings(Napi::Env env, Napi::Object exports) {
  exports.Set("createExtractor", Napi::Function::New(env, CreateExtractor, "createExtractor"));
  exports.Set("runExtractor", Napi::Function::New(env, RunExtractor, "runExtractor"));
  exports.Set("aggregateExtractor", Napi::Function::New(env, AggregateExtractor, "aggregateExtractor"));
  exports.Set("extractorStatsCount", Napi::Function::New(env, ExtractorStatsCount, "extractorStatsCount"));
  exports.Set("finishExtractor", Napi::Function::New(env, FinishExtractor, "finishExtractor"));
  exports.Set("finishExtractorAsync", Napi::Function::New(env, FinishExtractorAsync, "finishExtractorAsync"));
  exports.Set("extractorGpuParams", Napi::Function::New(env, ExtractorGpuParams, "extractorGpuParams"));
  exports.Set("nativeExtractors", Napi::Function::New(env, NativeExtractors, "nativeExtractors"));
}

}  // namespace vmafs

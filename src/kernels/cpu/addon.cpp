// The cpu backend's Node-API surface (module vmaf_native). See src/kernels/native.ts for
// the typed wrapper.
//
//   computeFrameStats(ref, dis, width, height, bitDepth, prevRef?, parts?)
//       -> Promise<{ stats: BigInt64Array, sad: bigint | null }>
//     Runs on the addon's worker pool (thread-pool.h): the stats `parts` asks for (a mask:
//     kPartVif 1, kPartAdm 2; default both; 4 beside 2: ADM without its egl_1 variant), VIF's kVifStatsLen entries first, then ADM's
//     kAdmStatsLen, a part left out taking no room (a run whose models read no VIF, as VMAF
//     v1's, skips its cost), and, when `prevRef` (the previous frame's reference luma) is
//     given, the motion SAD between it and `ref` (see motion.h); null without. Lumas are Uint8Array at 8 bits, Uint16Array at 10/12/16, width * height
//     samples. All inputs are referenced until the promise settles, so the GC keeps them;
//     the caller must neither write to them nor detach/transfer their buffers meanwhile.
//   computeMotionSad(prevRef, ref, width, height, bitDepth) -> Promise<bigint>
//     The motion SAD alone, on the pool: for frames --subsample leaves unscored, which
//     libvmaf still reads for motion.
//   motionSad(prevRef, ref, width, height, bitDepth) -> bigint               (synchronous)
//   finishFeatures(stats, width, height, bitDepth, parts?) -> Float64Array    (synchronous)
//     [vif s0..3, vif egl s0..3, adm2, aim, adm3, adm s0..3, the same 7 at egl 1] (22), less
//     the parts `parts` leaves out (its stats are computeFrameStats' at the same parts)
//   statsLayout() -> { vif: kVifStatsLen, adm: kAdmStatsLen }
//   computeAdmStats(ref, dis, width, height, bitDepth, options)
//       -> Promise<BigInt64Array(kAdmStatsLen)>
//     ADM alone, one instance at `options` (AdmOptions' fields by name, camelCase, each
//     optional: csfMode, csfScale, csfDiagScale, normViewDist, refDisplayHeight,
//     noiseWeight, dlmWeight, minVal, enhnGainLimit, skipAim, skipScale0), on the threadpool.
//   finishAdm(stats, width, height, options) -> Float64Array(7)              (synchronous)
//     [adm2, aim, adm3, scale0..3] of computeAdmStats' stats at the same options.
//   admKernelParams(options) -> { baseWeight[3], detailWeight[9], factor[12], gainLimit,
//     aim, scale0 }: what the pixel loops use at `options` (the gpu backend's parameters).
// Options out of range (or unsupported) throw a RangeError naming the option.
//   reservePoolThreads(n)   grows the pool to at least n threads (it never shrinks)
//   poolStats() -> { threads, running, peakRunning, completed }; resetPoolPeak()
//   probePoolConcurrency(n, timeoutMs) -> Array<Promise<number>>   (a test hook)
//     n pool jobs that each wait until all n run at once, or timeoutMs passes; each
//     resolves with the number of probe jobs it saw running together.
//   limitIsa(level?) -> { detected, active }                             (a test hook)
//     caps the kernels' instruction set at 'scalar', 'baseline', 'avx2' or 'avx512' (no
//     argument: no cap); jobs started afterwards use it. Every level gives the same results.
//   copyBytes(dst, src) -> Promise<void>        (on libuv's threadpool; see below)
//   captureStderr(fn) -> { value, text }: fn() with fd 2 captured (stderr_capture.cpp)
//
// Argument errors throw TypeError synchronously (the promise-returning functions too: they
// throw rather than returning a rejected promise).
#include <napi.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <stdexcept>
#include <optional>
#include <string>

#include "adm.h"
#include "cpu_features.h"
#include "stderr_capture.h"
#include "vulkan_prewarm.h"
#include "motion.h"
#include "plane.h"
#include "thread-pool.h"
#include "typed-data.h"
#include "vif.h"

namespace vmafs {
void registerExtractorBindings(Napi::Env env, Napi::Object exports);  // extractor-binding.cpp
}

namespace {

using vmafs::LumaPlane;

constexpr size_t kStatsLen = static_cast<size_t>(vmafs::kVifStatsLen) + vmafs::kAdmStatsLen;
constexpr size_t kVifFeatureCount = 8;
constexpr size_t kAdmFeatureCount = 2 * vmafs::kAdmFeaturesPerVariant;

// The parts of the core's stats a call computes (src/kernels/core-parts.ts mirrors them).
constexpr uint32_t kPartVif = 1;
constexpr uint32_t kPartAdm = 2;
constexpr uint32_t kPartsAll = kPartVif | kPartAdm;
// Only beside kPartAdm: ADM without its gain-limit-1 variant (for runs that emit no _egl_1
// key; it skips half of ADM's masking work). computeFrameStats leaves that variant's stats 0,
// so finishFeatures' egl_1 ADM values are meaningless then (the caller drops them); stats
// and values keep their layout and lengths. finishFeatures takes the bit and ignores it.
constexpr uint32_t kPartAdmNoEgl1 = 4;

size_t statsLength(uint32_t parts) {
  return ((parts & kPartVif) ? vmafs::kVifStatsLen : 0) + ((parts & kPartAdm) ? vmafs::kAdmStatsLen : 0);
}
// 2^30 samples: far beyond any video, and keeps every byte count within 32 bits.
constexpr double kMaxSamples = 1073741824.0;

struct Geometry {
  int width;
  int height;
  int bitDepth;
  size_t samples() const { return static_cast<size_t>(width) * static_cast<size_t>(height); }
};

[[noreturn]] void throwType(Napi::Env env, const std::string& message) {
  throw Napi::TypeError::New(env, message);
}

int intArg(const Napi::CallbackInfo& info, size_t i, const char* fn, const char* name) {
  const Napi::Env env = info.Env();
  if (i >= info.Length() || !info[i].IsNumber()) {
    throwType(env, std::string(fn) + ": " + name + " must be a number");
  }
  const double v = info[i].As<Napi::Number>().DoubleValue();
  if (!std::isfinite(v) || std::floor(v) != v || v < 1 || v > 2147483647.0) {
    throwType(env, std::string(fn) + ": " + name + " must be a positive integer, got " +
                       info[i].ToString().Utf8Value());
  }
  return static_cast<int>(v);
}

// Reads width, height, bitDepth at info[first], info[first + 1], info[first + 2].
Geometry geometryArgs(const Napi::CallbackInfo& info, size_t first, const char* fn) {
  const Napi::Env env = info.Env();
  Geometry g{intArg(info, first, fn, "width"), intArg(info, first + 1, fn, "height"),
             intArg(info, first + 2, fn, "bitDepth")};
  if (g.bitDepth != 8 && g.bitDepth != 10 && g.bitDepth != 12 && g.bitDepth != 16) {
    throwType(env, std::string(fn) + ": bitDepth must be 8, 10, 12 or 16, got " +
                       std::to_string(g.bitDepth));
  }
  if (g.width < vmafs::kMotionMinSize || g.height < vmafs::kMotionMinSize) {
    throwType(env, std::string(fn) + ": a " + std::to_string(g.width) + "x" +
                       std::to_string(g.height) + " frame is too small (at least " +
                       std::to_string(vmafs::kMotionMinSize) + " samples a side)");
  }
  if (static_cast<double>(g.width) * g.height > kMaxSamples) {
    throwType(env, std::string(fn) + ": a " + std::to_string(g.width) + "x" +
                       std::to_string(g.height) + " frame is too large");
  }
  return g;
}

const char* typedArrayName(napi_typedarray_type t) {
  switch (t) {
    case napi_int8_array: return "Int8Array";
    case napi_uint8_array: return "Uint8Array";
    case napi_uint8_clamped_array: return "Uint8ClampedArray";
    case napi_int16_array: return "Int16Array";
    case napi_uint16_array: return "Uint16Array";
    case napi_int32_array: return "Int32Array";
    case napi_uint32_array: return "Uint32Array";
    case napi_float32_array: return "Float32Array";
    case napi_float64_array: return "Float64Array";
    case napi_bigint64_array: return "BigInt64Array";
    case napi_biguint64_array: return "BigUint64Array";
    default: return "TypedArray";
  }
}

// Checks that info[i] is a typed array of `type` with exactly `length` elements and a
// live (not detached) buffer; returns it.
Napi::TypedArray typedArg(const Napi::CallbackInfo& info, size_t i, const char* fn,
                          const char* name, napi_typedarray_type type, size_t length,
                          const std::string& lengthNote) {
  const Napi::Env env = info.Env();
  const std::string want = std::string(typedArrayName(type)) + " of " +
                           std::to_string(length) + " elements" + lengthNote;
  if (i >= info.Length() || !info[i].IsTypedArray()) {
    throwType(env, std::string(fn) + ": " + name + " must be a " + want);
  }
  Napi::TypedArray arr = info[i].As<Napi::TypedArray>();
  if (arr.TypedArrayType() != type || arr.ElementLength() != length) {
    throwType(env, std::string(fn) + ": " + name + " must be a " + want + ", got a " +
                       typedArrayName(arr.TypedArrayType()) + " of " +
                       std::to_string(arr.ElementLength()) + " elements");
  }
  if (length > 0 && vmafs::typedBytes(arr) == nullptr) {
    throwType(env, std::string(fn) + ": " + name + "'s buffer is detached");
  }
  return arr;
}

template <typename T>
T* dataOf(const Napi::TypedArray& arr) {
  return static_cast<T*>(static_cast<void*>(vmafs::typedBytes(arr)));
}

Napi::TypedArray lumaArg(const Napi::CallbackInfo& info, size_t i, const char* fn,
                         const char* name, const Geometry& g) {
  const bool eight = g.bitDepth == 8;
  const std::string note = " (width * height = " + std::to_string(g.width) + " * " +
                           std::to_string(g.height) + ", " +
                           (eight ? "8-bit" : std::to_string(g.bitDepth) + "-bit") +
                           " samples)";
  return typedArg(info, i, fn, name, eight ? napi_uint8_array : napi_uint16_array,
                  g.samples(), note);
}

// Reads the optional parts mask at info[i] (absent or undefined: every part).
uint32_t partsArg(const Napi::CallbackInfo& info, size_t i, const char* fn) {
  if (i >= info.Length() || info[i].IsUndefined()) return kPartsAll;
  const double v = info[i].IsNumber() ? info[i].As<Napi::Number>().DoubleValue() : -1;
  const uint32_t any = kPartsAll | kPartAdmNoEgl1;
  if (!(v >= 0 && v <= any) || std::floor(v) != v ||
      ((static_cast<uint32_t>(v) & kPartAdmNoEgl1) && !(static_cast<uint32_t>(v) & kPartAdm))) {
    throwType(info.Env(), std::string(fn) + ": parts must be a mask of 1 (VIF) and 2 (ADM), with 2 also 4 (ADM without egl_1), got " +
                              info[i].ToString().Utf8Value());
  }
  return static_cast<uint32_t>(v);
}

// One pool job's output: the asked-for stats (packed, statsLength(parts) entries) when the
// job had a distorted frame, the motion SAD when it had the previous reference.
struct FrameStatsOutput {
  std::array<int64_t, kStatsLen> stats;
  std::optional<uint64_t> sad;
};

Napi::Value ComputeFrameStats(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  const char* fn = "computeFrameStats";
  const Geometry g = geometryArgs(info, 2, fn);
  Napi::TypedArray ref = lumaArg(info, 0, fn, "ref", g);
  Napi::TypedArray dis = lumaArg(info, 1, fn, "dis", g);
  Napi::TypedArray prev;
  if (info.Length() > 5 && !info[5].IsUndefined() && !info[5].IsNull()) {
    prev = lumaArg(info, 5, fn, "prevRef", g);
  }
  const LumaPlane r{dataOf<const void>(ref), g.width, g.height, g.bitDepth};
  const LumaPlane d{dataOf<const void>(dis), g.width, g.height, g.bitDepth};
  const std::optional<LumaPlane> p =
      prev.IsEmpty() ? std::nullopt
                     : std::optional<LumaPlane>(LumaPlane{dataOf<const void>(prev), g.width, g.height, g.bitDepth});
  const uint32_t parts = partsArg(info, 6, fn);
  return vmafs::runOnPool(
      env, fn, {ref, dis, prev},
      [r, d, p, parts] {
        FrameStatsOutput out{};
        int64_t* next = out.stats.data();
        if (parts & kPartVif) {
          vmafs::vifStats(r, d, next);
          next += vmafs::kVifStatsLen;
        }
        if (parts & kPartAdm) vmafs::admStats(r, d, next, (parts & kPartAdmNoEgl1) == 0);
        if (p) out.sad = vmafs::motionSad(*p, r);
        return out;
      },
      [parts](Napi::Env e, FrameStatsOutput& out) -> Napi::Value {
        const size_t length = statsLength(parts);
        Napi::TypedArrayOf<int64_t> stats = Napi::TypedArrayOf<int64_t>::New(e, length, napi_bigint64_array);
        if (length > 0) std::memcpy(stats.Data(), out.stats.data(), length * sizeof(int64_t));
        Napi::Object result = Napi::Object::New(e);
        result.Set("stats", stats);
        result.Set("sad", out.sad ? Napi::Value(Napi::BigInt::New(e, *out.sad)) : e.Null());
        return result;
      });
}

Napi::Value ComputeMotionSad(const Napi::CallbackInfo& info) {
  const char* fn = "computeMotionSad";
  const Geometry g = geometryArgs(info, 2, fn);
  Napi::TypedArray prev = lumaArg(info, 0, fn, "prevRef", g);
  Napi::TypedArray ref = lumaArg(info, 1, fn, "ref", g);
  const LumaPlane p{dataOf<const void>(prev), g.width, g.height, g.bitDepth};
  const LumaPlane r{dataOf<const void>(ref), g.width, g.height, g.bitDepth};
  return vmafs::runOnPool(
      info.Env(), fn, {prev, ref}, [p, r] { return vmafs::motionSad(p, r); },
      [](Napi::Env e, uint64_t& sad) -> Napi::Value { return Napi::BigInt::New(e, sad); });
}

Napi::Value MotionSad(const Napi::CallbackInfo& info) {
  const char* fn = "motionSad";
  const Geometry g = geometryArgs(info, 2, fn);
  Napi::TypedArray prev = lumaArg(info, 0, fn, "prevRef", g);
  Napi::TypedArray cur = lumaArg(info, 1, fn, "ref", g);
  const LumaPlane p{dataOf<const void>(prev), g.width, g.height, g.bitDepth};
  const LumaPlane c{dataOf<const void>(cur), g.width, g.height, g.bitDepth};
  return Napi::BigInt::New(info.Env(), vmafs::motionSad(p, c));
}

Napi::Value FinishFeatures(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  const char* fn = "finishFeatures";
  const Geometry g = geometryArgs(info, 1, fn);
  const uint32_t parts = partsArg(info, 4, fn);
  Napi::TypedArray stats = typedArg(info, 0, fn, "stats", napi_bigint64_array, statsLength(parts),
                                    " (statsLayout()'s entries of the parts computed)");
  const bool vif = (parts & kPartVif) != 0;
  const bool adm = (parts & kPartAdm) != 0;
  Napi::Float64Array out = Napi::Float64Array::New(env, (vif ? kVifFeatureCount : 0) + (adm ? kAdmFeatureCount : 0));
  double* o = out.Data();
  const int64_t* s = dataOf<const int64_t>(stats);
  if (vif) {
    vmafs::vifFinish(s, o);
    s += vmafs::kVifStatsLen;
    o += kVifFeatureCount;
  }
  if (adm) vmafs::admFinish(s, g.width, g.height, g.bitDepth, o);
  return out;
}

// AdmOptions from a JS object: absent (or undefined) fields keep their defaults; present
// ones must have the right type. Ranges are checked by vmafs::admCheckOptions.
vmafs::AdmOptions admOptionsArg(const Napi::CallbackInfo& info, size_t i, const char* fn) {
  const Napi::Env env = info.Env();
  vmafs::AdmOptions o;
  if (i >= info.Length() || info[i].IsUndefined() || info[i].IsNull()) return o;
  if (!info[i].IsObject()) throwType(env, std::string(fn) + ": options must be an object");
  Napi::Object obj = info[i].As<Napi::Object>();
  auto number = [&](const char* key, double* out) {
    Napi::Value v = obj.Get(key);
    if (v.IsUndefined()) return;
    if (!v.IsNumber() || !std::isfinite(v.As<Napi::Number>().DoubleValue())) {
      throwType(env, std::string(fn) + ": options." + key + " must be a finite number");
    }
    *out = v.As<Napi::Number>().DoubleValue();
  };
  auto integer = [&](const char* key, int* out) {
    double d = *out;
    number(key, &d);
    if (std::floor(d) != d || std::fabs(d) > 1e9) {
      throwType(env, std::string(fn) + ": options." + key + " must be an integer");
    }
    *out = static_cast<int>(d);
  };
  auto boolean = [&](const char* key, bool* out) {
    Napi::Value v = obj.Get(key);
    if (v.IsUndefined()) return;
    if (!v.IsBoolean()) throwType(env, std::string(fn) + ": options." + key + " must be a boolean");
    *out = v.As<Napi::Boolean>().Value();
  };
  integer("csfMode", &o.csfMode);
  number("csfScale", &o.csfScale);
  number("csfDiagScale", &o.csfDiagScale);
  number("normViewDist", &o.normViewDist);
  integer("refDisplayHeight", &o.refDisplayHeight);
  number("noiseWeight", &o.noiseWeight);
  number("dlmWeight", &o.dlmWeight);
  number("minVal", &o.minVal);
  number("enhnGainLimit", &o.enhnGainLimit);
  boolean("skipAim", &o.skipAim);
  boolean("skipScale0", &o.skipScale0);
  try {
    vmafs::admCheckOptions(o);
  } catch (const std::invalid_argument& e) {
    throw Napi::RangeError::New(env, std::string(fn) + ": " + e.what());
  }
  return o;
}

// One threadpool job: ADM stats of (ref, dis) at some options.
class AdmWorker final : public Napi::AsyncWorker {
 public:
  AdmWorker(Napi::Env env, Napi::TypedArray ref, Napi::TypedArray dis, const Geometry& g,
            const vmafs::AdmOptions& options)
      : Napi::AsyncWorker(env, "vmafStream.computeAdmStats"),
        deferred_(Napi::Promise::Deferred::New(env)),
        ref_{dataOf<const void>(ref), g.width, g.height, g.bitDepth},
        dis_{dataOf<const void>(dis), g.width, g.height, g.bitDepth},
        options_(options),
        refHold_(Napi::Persistent(static_cast<Napi::Object>(ref))),
        disHold_(Napi::Persistent(static_cast<Napi::Object>(dis))) {
    Napi::ArrayBuffer statsBuffer = Napi::ArrayBuffer::New(env, vmafs::kAdmStatsLen * sizeof(int64_t));
    stats_ = static_cast<int64_t*>(statsBuffer.Data());
    statsHold_ = Napi::Persistent(static_cast<Napi::Object>(statsBuffer));
  }

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override {
    try {
      vmafs::admStatsWithOptions(ref_, dis_, options_, stats_);
    } catch (const std::exception& e) {
      SetError(std::string("computeAdmStats: ") + e.what());
    }
  }

  void OnOK() override {
    const Napi::Env env = Env();
    Napi::HandleScope scope(env);
    Napi::Value stats = Napi::TypedArrayOf<int64_t>::New(
        env, vmafs::kAdmStatsLen, statsHold_.Value().As<Napi::ArrayBuffer>(), 0,
        napi_bigint64_array);
    Release();
    deferred_.Resolve(stats);
  }

  void OnError(const Napi::Error& error) override {
    Release();
    deferred_.Reject(error.Value());
  }

 private:
  void Release() {
    refHold_.Reset();
    disHold_.Reset();
    statsHold_.Reset();
  }

  Napi::Promise::Deferred deferred_;
  LumaPlane ref_;
  LumaPlane dis_;
  vmafs::AdmOptions options_;
  Napi::ObjectReference refHold_;
  Napi::ObjectReference disHold_;
  Napi::ObjectReference statsHold_;
  int64_t* stats_ = nullptr;
};

Napi::Value ComputeAdmStats(const Napi::CallbackInfo& info) {
  const char* fn = "computeAdmStats";
  const Geometry g = geometryArgs(info, 2, fn);
  Napi::TypedArray ref = lumaArg(info, 0, fn, "ref", g);
  Napi::TypedArray dis = lumaArg(info, 1, fn, "dis", g);
  const vmafs::AdmOptions options = admOptionsArg(info, 5, fn);
  AdmWorker* worker = new AdmWorker(info.Env(), ref, dis, g, options);
  Napi::Promise promise = worker->Promise();
  worker->Queue();  // the worker deletes itself once settled
  return promise;
}

Napi::Value FinishAdm(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  const char* fn = "finishAdm";
  const int width = intArg(info, 1, fn, "width");
  const int height = intArg(info, 2, fn, "height");
  Napi::TypedArray stats = typedArg(info, 0, fn, "stats", napi_bigint64_array,
                                    vmafs::kAdmStatsLen, " (statsLayout().adm)");
  const vmafs::AdmOptions options = admOptionsArg(info, 3, fn);
  Napi::Float64Array out = Napi::Float64Array::New(env, vmafs::kAdmFeaturesPerVariant);
  vmafs::admFinishWithOptions(dataOf<const int64_t>(stats), width, height, options, out.Data());
  return out;
}

Napi::Value AdmKernelParams(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  const vmafs::AdmKernelParams kp = vmafs::admKernelParams(admOptionsArg(info, 0, "admKernelParams"));
  Napi::Object o = Napi::Object::New(env);
  Napi::Array base = Napi::Array::New(env, 3), detail = Napi::Array::New(env, 9),
              factor = Napi::Array::New(env, 12);
  for (uint32_t b = 0; b < 3; ++b) {
    base.Set(b, Napi::Number::New(env, kp.baseWeight[b]));
    for (uint32_t s = 0; s < 3; ++s) detail.Set(3 * s + b, Napi::Number::New(env, kp.detailWeight[s][b]));
    for (uint32_t s = 0; s < 4; ++s) factor.Set(3 * s + b, Napi::Number::New(env, kp.factor[s][b]));
  }
  o.Set("baseWeight", base);
  o.Set("detailWeight", detail);
  o.Set("factor", factor);
  o.Set("gainLimit", Napi::Number::New(env, kp.gainLimit[0]));
  o.Set("aim", Napi::Boolean::New(env, kp.aim));
  o.Set("scale0", Napi::Boolean::New(env, kp.scale0));
  return o;
}

Napi::Value StatsLayout(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  Napi::Object layout = Napi::Object::New(env);
  layout.Set("vif", Napi::Number::New(env, vmafs::kVifStatsLen));
  layout.Set("adm", Napi::Number::New(env, vmafs::kAdmStatsLen));
  return layout;
}

Napi::Value ReservePoolThreads(const Napi::CallbackInfo& info) {
  const int n = intArg(info, 0, "reservePoolThreads", "threads");
  vmafs::reservePoolThreads(info.Env(), static_cast<size_t>(n));
  return info.Env().Undefined();
}

Napi::Value PoolStats(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  const vmafs::PoolStats s = vmafs::poolStats(env);
  Napi::Object out = Napi::Object::New(env);
  out.Set("threads", Napi::Number::New(env, static_cast<double>(s.threads)));
  out.Set("running", Napi::Number::New(env, static_cast<double>(s.running)));
  out.Set("peakRunning", Napi::Number::New(env, static_cast<double>(s.peakRunning)));
  out.Set("completed", Napi::Number::New(env, static_cast<double>(s.completed)));
  return out;
}

Napi::Value ResetPoolPeak(const Napi::CallbackInfo& info) {
  vmafs::resetPoolPeak(info.Env());
  return info.Env().Undefined();
}

// A rendezvous of n pool jobs: proves the pool runs n jobs at once without timing
// anything (the timeout only keeps a too-small pool from hanging the process).
Napi::Value ProbePoolConcurrency(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  const char* fn = "probePoolConcurrency";
  const int n = intArg(info, 0, fn, "jobs");
  const int timeoutMs = intArg(info, 1, fn, "timeoutMs");
  struct Rendezvous {
    std::mutex mutex;
    std::condition_variable all;
    int arrived = 0;
    int present = 0;
    int peak = 0;
  };
  auto meet = std::make_shared<Rendezvous>();
  Napi::Array promises = Napi::Array::New(env, static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    promises.Set(static_cast<uint32_t>(i),
                 vmafs::runOnPool(
                     env, fn, {},
                     [meet, n, timeoutMs] {
                       std::unique_lock<std::mutex> lock(meet->mutex);
                       ++meet->arrived;
                       meet->peak = std::max(meet->peak, ++meet->present);
                       meet->all.notify_all();
                       meet->all.wait_for(lock, std::chrono::milliseconds(timeoutMs),
                                          [&] { return meet->arrived >= n; });
                       const int seen = meet->peak;
                       --meet->present;
                       return seen;
                     },
                     [](Napi::Env e, int& seen) -> Napi::Value { return Napi::Number::New(e, seen); }));
  }
  return promises;
}

const char* isaName(vmafs::IsaLevel level) {
  switch (level) {
    case vmafs::IsaLevel::kScalar: return "scalar";
    case vmafs::IsaLevel::kBaseline: return "baseline";
    case vmafs::IsaLevel::kAvx2: return "avx2";
    case vmafs::IsaLevel::kAvx512: return "avx512";
    default: return "avx512vnni";
  }
}

Napi::Value LimitIsa(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  int cap = static_cast<int>(vmafs::IsaLevel::kAvx512Vnni);
  if (info.Length() > 0 && !info[0].IsUndefined()) {
    const std::string want = info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "";
    cap = -1;
    for (int l = 0; l <= static_cast<int>(vmafs::IsaLevel::kAvx512Vnni); ++l) {
      if (want == isaName(static_cast<vmafs::IsaLevel>(l))) cap = l;
    }
    if (cap < 0) throwType(env, "limitIsa: level must be 'scalar', 'baseline', 'avx2', 'avx512' or 'avx512vnni'");
  }
  vmafs::isaCap().store(cap);
  Napi::Object out = Napi::Object::New(env);
  out.Set("detected", isaName(vmafs::detectedIsa()));
  out.Set("active", isaName(vmafs::activeIsa()));
  return out;
}

// copyBytes stays on libuv's threadpool, not the worker pool: it serves the gpu backend,
// which does not size the worker pool, and a 2 MB memcpy must not queue behind frame jobs
// of tens of milliseconds when both backends run in one process. libuv's 4 threads are
// plenty for memory-bound copies.
// copyBytes(dst, src, ...): memcpy of each src into its dst on the threadpool (the gpu backend's
// staging writes: 2 MB per plane at 1080p, off the main thread). Both arrays are held until
// the promise settles; the caller must keep dst's memory valid (e.g. a mapped GPU range
// stays mapped) and not write to either until then.
class CopyWorker final : public Napi::AsyncWorker {
 public:
  // Each (dst, src) pair of one call, copied one after the other on one pool thread: a
  // group's pictures in one hop (one promise, one completion on the main thread).
  struct Pair {
    uint8_t* dst;
    const uint8_t* src;
    size_t bytes;
  };

  explicit CopyWorker(Napi::Env env)
      : Napi::AsyncWorker(env, "vmafStream.copyBytes"), deferred_(Napi::Promise::Deferred::New(env)) {}

  void Add(Napi::TypedArray dst, Napi::TypedArray src, size_t bytes) {
    pairs_.push_back({dataOf<uint8_t>(dst), dataOf<const uint8_t>(src), bytes});
    holds_.push_back(Napi::Persistent(static_cast<Napi::Object>(dst)));
    holds_.push_back(Napi::Persistent(static_cast<Napi::Object>(src)));
  }

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override {
    for (const Pair& p : pairs_) {
      if (p.bytes > 0) std::memcpy(p.dst, p.src, p.bytes);
    }
  }

  void OnOK() override {
    Release();
    deferred_.Resolve(Env().Undefined());
  }

  void OnError(const Napi::Error& error) override {
    Release();
    deferred_.Reject(error.Value());
  }

 private:
  void Release() {
    for (Napi::ObjectReference& h : holds_) h.Reset();
  }

  Napi::Promise::Deferred deferred_;
  std::vector<Pair> pairs_;
  std::vector<Napi::ObjectReference> holds_;
};

// copyBytes(dst, src[, dst2, src2, ...]): every pair checked before any is queued.
Napi::Value CopyBytes(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  const char* fn = "copyBytes";
  if (info.Length() < 2 || info.Length() % 2 != 0) throwType(env, std::string(fn) + ": takes (dst, src) pairs");
  for (size_t i = 0; i < info.Length(); i += 2) {
    if (!info[i].IsTypedArray() || info[i].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
      throwType(env, std::string(fn) + ": dst must be a Uint8Array");
    }
    if (!info[i + 1].IsTypedArray() ||
        (info[i + 1].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array &&
         info[i + 1].As<Napi::TypedArray>().TypedArrayType() != napi_uint16_array)) {
      throwType(env, std::string(fn) + ": src must be a Uint8Array or a Uint16Array");
    }
    Napi::TypedArray dst = info[i].As<Napi::TypedArray>();
    Napi::TypedArray src = info[i + 1].As<Napi::TypedArray>();
    const size_t dstBytes = dst.ByteLength();
    const size_t srcBytes = src.ByteLength();
    if (srcBytes > dstBytes) {
      throwType(env, std::string(fn) + ": src has " + std::to_string(srcBytes) +
                         " bytes, dst only " + std::to_string(dstBytes));
    }
    if (dstBytes > 0 && vmafs::typedBytes(dst) == nullptr) throwType(env, std::string(fn) + ": dst's buffer is detached");
    if (srcBytes > 0 && vmafs::typedBytes(src) == nullptr) throwType(env, std::string(fn) + ": src's buffer is detached");
  }
  CopyWorker* worker = new CopyWorker(env);
  for (size_t i = 0; i < info.Length(); i += 2) {
    Napi::TypedArray dst = info[i].As<Napi::TypedArray>();
    Napi::TypedArray src = info[i + 1].As<Napi::TypedArray>();
    worker->Add(dst, src, std::min(src.ByteLength(), dst.ByteLength()));
  }
  Napi::Promise promise = worker->Promise();
  worker->Queue();  // the worker deletes itself once settled
  return promise;
}

// ---- The SVM's RBF sum (pipeline/model/svm.ts), natively ------------------------------
// The same arithmetic as svm.ts's loop and exp.ts's expGlibc, operation for operation:
// fma() is correctly rounded by definition (as exp.ts's exact emulation is), the build has
// no contraction (-ffp-contract=off) nor reassociation, so every rounding is the same and
// so is every bit of the result. The 2^(i/128) table comes from exp.ts (setExpTable).

namespace {

double gExpTail[128];
uint64_t gExpSbits[128];
bool gExpTableSet = false;

inline double bitsToDouble(uint64_t b) {
  double d;
  std::memcpy(&d, &b, sizeof d);
  return d;
}

inline uint64_t doubleToBits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

// exp.ts's expGlibc (see its comments): the constants as exact hex floats.
double expGlibcNative(double x) {
  constexpr double kInvLn2N = 0x1.71547652b82fep0 * 128;
  constexpr double kNegLn2HiN = -0x1.62e42fefa0000p-8;
  constexpr double kNegLn2LoN = -0x1.cf79abc9e3b3ap-47;
  constexpr double kShift = 0x1.8p52;
  constexpr double kC2 = 0x1.ffffffffffdbdp-2;
  constexpr double kC3 = 0x1.555555555543cp-3;
  constexpr double kC4 = 0x1.55555cf172b91p-5;
  constexpr double kC5 = 0x1.1111167a4d017p-7;
  uint32_t abstop = static_cast<uint32_t>(doubleToBits(x) >> 52) & 0x7ff;
  if (abstop - 0x3c9u >= 0x408u - 0x3c9u) {
    if (abstop < 0x3c9) return 1.0 + x;
    if (abstop >= 0x409) {
      if (x == -INFINITY) return 0;
      if (abstop >= 0x7ff) return 1.0 + x;
      return x < 0 ? 0 : INFINITY;
    }
    abstop = 0;
  }
  const double kdShifted = std::fma(kInvLn2N, x, kShift);
  const uint64_t ki = doubleToBits(kdShifted);
  const double kd = kdShifted - kShift;
  const double r = std::fma(kd, kNegLn2LoN, std::fma(kd, kNegLn2HiN, x));
  const uint32_t idx = static_cast<uint32_t>(ki) & 127u;
  const uint64_t top = ki << 45;
  const double tail = gExpTail[idx];
  uint64_t sbits = gExpSbits[idx] + top;
  const double r2 = r * r;
  const double a = std::fma(r, kC3, kC2);
  const double b = std::fma(r, kC5, kC4);
  const double c = std::fma(a, r2, r + tail);
  const double tmp = std::fma(r2 * r2, b, c);
  if (abstop == 0) {
    if ((ki & 0x80000000u) == 0) {
      sbits -= 1009ull << 52;
      const double scale = bitsToDouble(sbits);
      return 0x1p1009 * std::fma(scale, tmp, scale);
    }
    sbits += 1022ull << 52;
    const double scale = bitsToDouble(sbits);
    const double p = scale * tmp;
    double y = scale + p;
    if (y < 1.0) {
      const double hi = 1.0 + y;
      double lo = (scale - y) + p;
      lo = ((1.0 - hi) + y) + lo;
      y = (hi + lo) - 1.0;
      if (y == 0) y = 0;
    }
    return 0x1p-1022 * y;
  }
  const double scale = bitsToDouble(sbits);
  return std::fma(scale, tmp, scale);
}

}  // namespace

// setExpTable(words: Uint32Array(4 * 128)): exp.ts's table, per entry tail hi, tail lo,
// scale bits hi, scale bits lo (expTableWords()).
Napi::Value SetExpTable(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array ||
      info[0].As<Napi::TypedArray>().ElementLength() != 4 * 128) {
    throwType(env, "setExpTable: words must be a Uint32Array of 512");
  }
  const Napi::Uint32Array w = info[0].As<Napi::Uint32Array>();
  for (size_t i = 0; i < 128; i++) {
    gExpTail[i] = bitsToDouble((static_cast<uint64_t>(w[4 * i]) << 32) | w[4 * i + 1]);
    gExpSbits[i] = (static_cast<uint64_t>(w[4 * i + 2]) << 32) | w[4 * i + 3];
  }
  gExpTableSet = true;
  return env.Undefined();
}

// rbfSum(model: Float64Array [negGamma, dim, count, coefs[count], vectors[count * dim]],
// x: Float64Array(dim)): sum over support vectors of coef * exp(negGamma * |x - sv|^2),
// in svm.ts's order.
Napi::Value RbfSum(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  if (!gExpTableSet) throwType(env, "rbfSum: setExpTable first");
  if (info.Length() < 2 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array ||
      !info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array) {
    throwType(env, "rbfSum: model and x must be Float64Arrays");
  }
  const Napi::Float64Array m = info[0].As<Napi::Float64Array>();
  const Napi::Float64Array xa = info[1].As<Napi::Float64Array>();
  const size_t length = m.ElementLength();
  if (length < 3) throwType(env, "rbfSum: bad model");
  const double* model = m.Data();
  const double negGamma = model[0];
  const size_t dim = static_cast<size_t>(model[1]);
  const size_t count = static_cast<size_t>(model[2]);
  if (length != 3 + count + count * dim || xa.ElementLength() != dim) throwType(env, "rbfSum: bad model or x length");
  const double* coefs = model + 3;
  const double* sv = coefs + count;
  const double* x = xa.Data();
  double sum = 0;
  for (size_t i = 0; i < count; i++, sv += dim) {
    double dist = 0;
    for (size_t j = 0; j < dim; j++) {
      const double d = x[j] - sv[j];
      dist += d * d;
    }
    sum += coefs[i] * expGlibcNative(negGamma * dist);
  }
  return Napi::Number::New(env, sum);
}

// setCpuMask(mask): libvmaf's cpumask (bits of the SIMD paths not to use), process-wide, as
// a cap on the kernels' level: bit 3 (AVX2) leaves the baseline paths, bit 4 (AVX-512) AVX2.
Napi::Value SetCpuMask(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsNumber()) throwType(info.Env(), "setCpuMask: mask must be a number");
  const uint32_t mask = info[0].As<Napi::Number>().Uint32Value();
  const vmafs::IsaLevel cap = (mask & (1u << 3)) ? vmafs::IsaLevel::kBaseline
                              : (mask & (1u << 4)) ? vmafs::IsaLevel::kAvx2
                                                   : vmafs::IsaLevel::kAvx512Vnni;
  vmafs::isaCap().store(static_cast<int>(cap));
  return info.Env().Undefined();
}

// exitNow(code): ends the process at once (_exit), joining no thread. process.exit() first
// waits for every worker thread to tear down its environment, and the gpu thread's teardown
// destroys Dawn's device object by object (about 0.2 s on the H100); the kernel reclaims it all
// at once when the process ends. For the CLI, after its logs are closed and stdout drained.
Napi::Value ExitNow(const Napi::CallbackInfo& info) {
  const int code = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().Int32Value() : 0;
  // A capture of fd 2 under way on the gpu thread holds this thread's last lines: let it end.
  waitForStderrCaptures(2000);
  std::_Exit(code);
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("setCpuMask", Napi::Function::New(env, SetCpuMask, "setCpuMask"));
  exports.Set("computeFrameStats", Napi::Function::New(env, ComputeFrameStats, "computeFrameStats"));
  exports.Set("computeMotionSad", Napi::Function::New(env, ComputeMotionSad, "computeMotionSad"));
  exports.Set("motionSad", Napi::Function::New(env, MotionSad, "motionSad"));
  exports.Set("finishFeatures", Napi::Function::New(env, FinishFeatures, "finishFeatures"));
  exports.Set("copyBytes", Napi::Function::New(env, CopyBytes, "copyBytes"));
  exports.Set("exitNow", Napi::Function::New(env, ExitNow, "exitNow"));
  // copyBytes takes several (dst, src) pairs per call (an addon without this flag: one).
  exports.Set("copyBytesPairs", Napi::Boolean::New(env, true));
  exports.Set("setExpTable", Napi::Function::New(env, SetExpTable, "setExpTable"));
  exports.Set("rbfSum", Napi::Function::New(env, RbfSum, "rbfSum"));
  exports.Set("computeAdmStats", Napi::Function::New(env, ComputeAdmStats, "computeAdmStats"));
  exports.Set("finishAdm", Napi::Function::New(env, FinishAdm, "finishAdm"));
  exports.Set("admKernelParams", Napi::Function::New(env, AdmKernelParams, "admKernelParams"));
  exports.Set("statsLayout", Napi::Function::New(env, StatsLayout, "statsLayout"));
  vmafs::registerExtractorBindings(env, exports);
  exports.Set("reservePoolThreads", Napi::Function::New(env, ReservePoolThreads, "reservePoolThreads"));
  exports.Set("poolStats", Napi::Function::New(env, PoolStats, "poolStats"));
  exports.Set("resetPoolPeak", Napi::Function::New(env, ResetPoolPeak, "resetPoolPeak"));
  exports.Set("limitIsa", Napi::Function::New(env, LimitIsa, "limitIsa"));
  exports.Set("probePoolConcurrency", Napi::Function::New(env, ProbePoolConcurrency, "probePoolConcurrency"));
  exports.Set("captureStderr", Napi::Function::New(env, CaptureStderr, "captureStderr"));
  exports.Set("prewarmVulkan", Napi::Function::New(env, PrewarmVulkan, "prewarmVulkan"));
  exports.Set("awaitVulkanPrewarm", Napi::Function::New(env, AwaitVulkanPrewarm, "awaitVulkanPrewarm"));
  return exports;
}

}  // namespace

NODE_API_MODULE(vmaf_native, Init)

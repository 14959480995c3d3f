// The cpu backend's Node-API surface (module vmaf_native). See src/kernels/native.ts for
// the typed wrapper.
//
//   computeFrameStats(ref, dis, width, height, bitDepth, prevRef?)
//       -> Promise<{ stats: BigInt64Array, sad: bigint | null }>
//     Runs on the libuv threadpool: VIF stats, then ADM stats (one BigInt64Array, VIF's
//     kVifStatsLen entries first), and, when `prevRef` (the previous frame's reference
//     luma) is given, the motion SAD between it and `ref` (see motion.h); null without.
//     Lumas are Uint8Array at 8 bits, Uint16Array at 10/12/16, width * height samples.
//     All inputs are referenced until the promise settles, so the GC keeps them; the
//     caller must neither write to them nor detach/transfer their buffers meanwhile.
//   computeMotionSad(prevRef, ref, width, height, bitDepth) -> Promise<bigint>
//     The motion SAD alone, on the threadpool: for frames --subsample leaves unscored,
//     which libvmaf still reads for motion.
//   motionSad(prevRef, ref, width, height, bitDepth) -> bigint               (synchronous)
//   finishFeatures(stats, width, height, bitDepth) -> Float64Array(18)       (synchronous)
//     [vif s0..3, vif egl s0..3, adm2, adm s0..3, adm2 egl, adm egl s0..3]
//   statsLayout() -> { vif: kVifStatsLen, adm: kAdmStatsLen }
//   captureStderr(fn) -> { value, text }: fn() with fd 2 captured (stderr_capture.cpp)
//
// Argument errors throw TypeError synchronously (computeFrameStats too: it throws
// rather than returning a rejected promise).
#include <napi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "adm.h"
#include "stderr_capture.h"
#include "motion.h"
#include "plane.h"
#include "vif.h"

namespace {

using vmafs::LumaPlane;

constexpr size_t kStatsLen = static_cast<size_t>(vmafs::kVifStatsLen) + vmafs::kAdmStatsLen;
constexpr size_t kFeatureCount = 18;
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
  // Asking for the buffer also moves a small on-heap typed array off the V8 heap, so the
  // pointer below stays valid while we hold a reference.
  if (length > 0 && arr.ArrayBuffer().Data() == nullptr) {
    throwType(env, std::string(fn) + ": " + name + "'s buffer is detached");
  }
  return arr;
}

template <typename T>
T* dataOf(const Napi::TypedArray& arr) {
  return static_cast<T*>(
      static_cast<void*>(static_cast<uint8_t*>(arr.ArrayBuffer().Data()) + arr.ByteOffset()));
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

// One threadpool job: VIF + ADM stats of (ref, dis) when `dis` is given, the motion SAD
// of (prev, ref) when `prev` is given.
class FrameWorker final : public Napi::AsyncWorker {
 public:
  FrameWorker(Napi::Env env, Napi::TypedArray ref, Napi::TypedArray dis, Napi::TypedArray prev,
              const Geometry& g)
      : Napi::AsyncWorker(env, "vmafStream.computeFrameStats"),
        deferred_(Napi::Promise::Deferred::New(env)),
        ref_{dataOf<const void>(ref), g.width, g.height, g.bitDepth},
        hasDis_(!dis.IsEmpty()),
        hasPrev_(!prev.IsEmpty()),
        refHold_(Napi::Persistent(static_cast<Napi::Object>(ref))) {
    if (hasDis_) {
      dis_ = LumaPlane{dataOf<const void>(dis), g.width, g.height, g.bitDepth};
      disHold_ = Napi::Persistent(static_cast<Napi::Object>(dis));
      Napi::ArrayBuffer statsBuffer = Napi::ArrayBuffer::New(env, kStatsLen * sizeof(int64_t));
      stats_ = static_cast<int64_t*>(statsBuffer.Data());
      statsHold_ = Napi::Persistent(static_cast<Napi::Object>(statsBuffer));
    }
    if (hasPrev_) {
      prev_ = LumaPlane{dataOf<const void>(prev), g.width, g.height, g.bitDepth};
      prevHold_ = Napi::Persistent(static_cast<Napi::Object>(prev));
    }
  }

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  // Worker thread: no Node-API calls here.
  void Execute() override {
    try {
      if (hasDis_) {
        vmafs::vifStats(ref_, dis_, stats_);
        vmafs::admStats(ref_, dis_, stats_ + vmafs::kVifStatsLen);
      }
      if (hasPrev_) sad_ = vmafs::motionSad(prev_, ref_);
    } catch (const std::exception& e) {
      SetError(std::string("computeFrameStats: ") + e.what());
    } catch (...) {
      SetError("computeFrameStats: unknown failure in a kernel");
    }
  }

  void OnOK() override {
    const Napi::Env env = Env();
    Napi::HandleScope scope(env);
    Napi::Value sad = hasPrev_ ? Napi::Value(Napi::BigInt::New(env, sad_)) : env.Null();
    if (!hasDis_) {  // computeMotionSad
      Release();
      deferred_.Resolve(sad);
      return;
    }
    Napi::Object result = Napi::Object::New(env);
    result.Set("stats", Napi::TypedArrayOf<int64_t>::New(
                            env, kStatsLen, statsHold_.Value().As<Napi::ArrayBuffer>(), 0,
                            napi_bigint64_array));
    result.Set("sad", sad);
    Release();
    deferred_.Resolve(result);
  }

  void OnError(const Napi::Error& error) override {
    Release();
    deferred_.Reject(error.Value());
  }

 private:
  void Release() {
    refHold_.Reset();
    disHold_.Reset();
    prevHold_.Reset();
    statsHold_.Reset();
  }

  Napi::Promise::Deferred deferred_;
  LumaPlane ref_;
  LumaPlane dis_{nullptr, 0, 0, 0};
  LumaPlane prev_{nullptr, 0, 0, 0};
  bool hasDis_;
  bool hasPrev_;
  // Strong references: the inputs and the output stay alive (and their backing stores in
  // place) until the promise settles.
  Napi::ObjectReference refHold_;
  Napi::ObjectReference disHold_;
  Napi::ObjectReference prevHold_;
  Napi::ObjectReference statsHold_;
  int64_t* stats_ = nullptr;
  uint64_t sad_ = 0;
};

Napi::Value queueJob(FrameWorker* worker) {
  Napi::Promise promise = worker->Promise();
  worker->Queue();  // the worker deletes itself once settled
  return promise;
}

Napi::Value ComputeFrameStats(const Napi::CallbackInfo& info) {
  const char* fn = "computeFrameStats";
  const Geometry g = geometryArgs(info, 2, fn);
  Napi::TypedArray ref = lumaArg(info, 0, fn, "ref", g);
  Napi::TypedArray dis = lumaArg(info, 1, fn, "dis", g);
  Napi::TypedArray prev;
  if (info.Length() > 5 && !info[5].IsUndefined() && !info[5].IsNull()) {
    prev = lumaArg(info, 5, fn, "prevRef", g);
  }
  return queueJob(new FrameWorker(info.Env(), ref, dis, prev, g));
}

Napi::Value ComputeMotionSad(const Napi::CallbackInfo& info) {
  const char* fn = "computeMotionSad";
  const Geometry g = geometryArgs(info, 2, fn);
  Napi::TypedArray prev = lumaArg(info, 0, fn, "prevRef", g);
  Napi::TypedArray ref = lumaArg(info, 1, fn, "ref", g);
  return queueJob(new FrameWorker(info.Env(), ref, Napi::TypedArray(), prev, g));
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
  Napi::TypedArray stats = typedArg(info, 0, fn, "stats", napi_bigint64_array, kStatsLen,
                                    " (statsLayout().vif + statsLayout().adm)");
  Napi::Float64Array out = Napi::Float64Array::New(env, kFeatureCount);
  double* o = out.Data();
  const int64_t* s = dataOf<const int64_t>(stats);
  vmafs::vifFinish(s, o);
  vmafs::admFinish(s + vmafs::kVifStatsLen, g.width, g.height, g.bitDepth, o + 8);
  return out;
}

Napi::Value StatsLayout(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  Napi::Object layout = Napi::Object::New(env);
  layout.Set("vif", Napi::Number::New(env, vmafs::kVifStatsLen));
  layout.Set("adm", Napi::Number::New(env, vmafs::kAdmStatsLen));
  return layout;
}

// copyBytes(dst, src): memcpy of src's bytes into dst on the threadpool (the gpu backend's
// staging writes: 2 MB per plane at 1080p, off the main thread). Both arrays are held until
// the promise settles; the caller must keep dst's memory valid (e.g. a mapped GPU range
// stays mapped) and not write to either until then.
class CopyWorker final : public Napi::AsyncWorker {
 public:
  CopyWorker(Napi::Env env, Napi::TypedArray dst, Napi::TypedArray src, size_t bytes)
      : Napi::AsyncWorker(env, "vmafStream.copyBytes"),
        deferred_(Napi::Promise::Deferred::New(env)),
        dst_(dataOf<uint8_t>(dst)),
        src_(dataOf<const uint8_t>(src)),
        bytes_(bytes),
        dstHold_(Napi::Persistent(static_cast<Napi::Object>(dst))),
        srcHold_(Napi::Persistent(static_cast<Napi::Object>(src))) {}

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override {
    if (bytes_ > 0) std::memcpy(dst_, src_, bytes_);
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
    dstHold_.Reset();
    srcHold_.Reset();
  }

  Napi::Promise::Deferred deferred_;
  uint8_t* dst_;
  const uint8_t* src_;
  size_t bytes_;
  Napi::ObjectReference dstHold_;
  Napi::ObjectReference srcHold_;
};

Napi::Value CopyBytes(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  const char* fn = "copyBytes";
  if (info.Length() < 2 || !info[0].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    throwType(env, std::string(fn) + ": dst must be a Uint8Array");
  }
  if (!info[1].IsTypedArray() ||
      (info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array &&
       info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint16_array)) {
    throwType(env, std::string(fn) + ": src must be a Uint8Array or a Uint16Array");
  }
  Napi::TypedArray dst = info[0].As<Napi::TypedArray>();
  Napi::TypedArray src = info[1].As<Napi::TypedArray>();
  const size_t dstBytes = dst.ByteLength();
  const size_t srcBytes = src.ByteLength();
  if (srcBytes > dstBytes) {
    throwType(env, std::string(fn) + ": src has " + std::to_string(srcBytes) +
                       " bytes, dst only " + std::to_string(dstBytes));
  }
  // Asking for the buffers also moves small on-heap typed arrays off the V8 heap, so the
  // pointers stay valid while the worker holds references.
  if (dstBytes > 0 && dst.ArrayBuffer().Data() == nullptr) throwType(env, std::string(fn) + ": dst's buffer is detached");
  if (srcBytes > 0 && src.ArrayBuffer().Data() == nullptr) throwType(env, std::string(fn) + ": src's buffer is detached");
  CopyWorker* worker = new CopyWorker(env, dst, src, std::min(srcBytes, dstBytes));
  Napi::Promise promise = worker->Promise();
  worker->Queue();  // the worker deletes itself once settled
  return promise;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("computeFrameStats", Napi::Function::New(env, ComputeFrameStats, "computeFrameStats"));
  exports.Set("computeMotionSad", Napi::Function::New(env, ComputeMotionSad, "computeMotionSad"));
  exports.Set("motionSad", Napi::Function::New(env, MotionSad, "motionSad"));
  exports.Set("finishFeatures", Napi::Function::New(env, FinishFeatures, "finishFeatures"));
  exports.Set("copyBytes", Napi::Function::New(env, CopyBytes, "copyBytes"));
  exports.Set("statsLayout", Napi::Function::New(env, StatsLayout, "statsLayout"));
  exports.Set("captureStderr", Napi::Function::New(env, CaptureStderr, "captureStderr"));
  return exports;
}

}  // namespace

NODE_API_MODULE(vmaf_native, Init)

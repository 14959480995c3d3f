// The bytes behind a typed array, whether its buffer is an ArrayBuffer or a
// SharedArrayBuffer (frames handed to the gpu backend's thread live in shared memory).
// node-addon-api's TypedArray::ArrayBuffer().Data() refuses a SharedArrayBuffer;
// napi_get_typedarray_info's data pointer serves both. Asking for it also moves a small
// on-heap typed array off the V8 heap, so the pointer stays valid while a reference is held.
#pragma once

#include <napi.h>

#include <cstdint>

namespace vmafs {

// The first byte of the array's view (not of its buffer); nullptr when the buffer is detached.
inline uint8_t* typedBytes(const Napi::TypedArray& arr) {
  void* data = nullptr;
  const napi_status status = napi_get_typedarray_info(arr.Env(), arr, nullptr, nullptr, &data, nullptr, nullptr);
  NAPI_THROW_IF_FAILED(arr.Env(), status, nullptr);
  return static_cast<uint8_t*>(data);
}

}  // namespace vmafs

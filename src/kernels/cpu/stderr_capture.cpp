// captureStderr(fn) -> { value, text }
//
// Calls fn() synchronously with file descriptor 2 pointed at a temporary file, then puts
// the descriptor back and returns fn's value with what was written meanwhile. Native
// libraries that print to stderr on their own (Dawn logs its limit clamping with fprintf
// while an adapter is requested) are kept out of a command line's messages this way;
// nothing of Node's own runs while fn runs, as fn is synchronous. Where the redirection
// cannot be set up (no temporary file, or Windows), fn runs as is and text is "".
// A JavaScript exception from fn propagates after the descriptor is restored.
#include "stderr_capture.h"

#include <cstdio>
#include <mutex>
#include <string>

#ifndef _WIN32
#include <unistd.h>
#endif

namespace {

// Enough for any diagnostic burst; the rest is dropped.
constexpr size_t kMaxCapturedBytes = 64 * 1024;

Napi::Object Result(Napi::Env env, Napi::Value value, const std::string& text) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("value", value);
  out.Set("text", Napi::String::New(env, text));
  return out;
}

}  // namespace

// fd 2 is the process's, not a thread's: two threads capturing at once (the gpu thread opening
// Dawn while the main thread does) would save each other's sink as "the" stderr and leave fd 2
// pointing at a dead sink. One capture at a time, process-wide; nested ones on one thread stack.
std::recursive_mutex& captureLock() {
  static std::recursive_mutex lock;
  return lock;
}

Napi::Value CaptureStderr(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsFunction()) {
    throw Napi::TypeError::New(env, "captureStderr: expected a function");
  }
  Napi::Function fn = info[0].As<Napi::Function>();
#ifdef _WIN32
  return Result(env, fn.Call({}), "");
#else
  std::lock_guard<std::recursive_mutex> hold(captureLock());
  std::fflush(stderr);
  FILE* sink = std::tmpfile();
  int saved = sink != nullptr ? dup(STDERR_FILENO) : -1;
  if (saved < 0 || dup2(fileno(sink), STDERR_FILENO) < 0) {
    if (saved >= 0) close(saved);
    if (sink != nullptr) std::fclose(sink);
    return Result(env, fn.Call({}), "");
  }
  auto restore = [&]() {
    std::fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
  };
  Napi::Value value;
  try {
    value = fn.Call({});
  } catch (...) {
    restore();
    std::fclose(sink);
    throw;
  }
  restore();
  std::string text;
  if (std::fseek(sink, 0, SEEK_SET) == 0) {
    char buf[4096];
    size_t n;
    while (text.size() < kMaxCapturedBytes && (n = std::fread(buf, 1, sizeof buf, sink)) > 0) text.append(buf, n);
    if (text.size() > kMaxCapturedBytes) text.resize(kMaxCapturedBytes);
  }
  std::fclose(sink);
  return Result(env, value, text);
#endif
}

// captureStderr(fn) -> { value, text }
//
// Calls fn() synchronously with file descriptor 2 pointed at a temporary file, then puts
// the descriptor back and returns fn's value with what was written meanwhile. Native
// libraries that print to stderr on their own (Dawn logs its limit clamping with fprintf
// while an adapter is requested) are kept out of a command line's messages this way;
// nothing of Node's own runs while fn runs, as fn is synchronous. Where the redirection
// cannot be set up (no temporary file, or Windows), fn runs as is and text is "".
// A JavaScript exception from fn propagates after the descriptor is restored.
//
// captureStderr(fn, keepPrefix): lines that do not start with keepPrefix are written back to
// fd 2 before the capture ends: they are another thread's (the main thread writes on while the
// gpu thread opens Dawn), and they go out before any later capture or exitNow() can begin.
#include "stderr_capture.h"

#include <chrono>
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
std::recursive_timed_mutex& captureLock() {
  static std::recursive_timed_mutex lock;
  return lock;
}

bool waitForStderrCaptures(int ms) {
  if (!captureLock().try_lock_for(std::chrono::milliseconds(ms))) return false;
  captureLock().unlock();
  return true;
}

namespace {

// Writes back the lines of text that do not start with prefix (see the header comment).
void writeForeignLines(const std::string& text, const std::string& prefix) {
#ifndef _WIN32
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    const size_t next = end == std::string::npos ? text.size() : end + 1;
    if (text.compare(at, prefix.size(), prefix) != 0) {
      const char* p = text.data() + at;
      size_t left = next - at;
      while (left > 0) {
        const ssize_t n = write(STDERR_FILENO, p, left);
        if (n <= 0) break;
        p += n;
        left -= static_cast<size_t>(n);
      }
    }
    at = next;
  }
#endif
}

}  // namespace

Napi::Value CaptureStderr(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsFunction()) {
    throw Napi::TypeError::New(env, "captureStderr: expected a function");
  }
  Napi::Function fn = info[0].As<Napi::Function>();
#ifdef _WIN32
  return Result(env, fn.Call({}), "");
#else
  std::lock_guard<std::recursive_timed_mutex> hold(captureLock());
  const bool sortLines = info.Length() > 1 && info[1].IsString();
  const std::string keepPrefix = sortLines ? info[1].As<Napi::String>().Utf8Value() : std::string();
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
  if (sortLines) writeForeignLines(text, keepPrefix);
  return Result(env, value, text);
#endif
}

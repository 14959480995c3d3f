// The addon's own worker pool: "run this C++ job on a pool thread and resolve a promise
// with its result on the JS thread". Every native job that computes features goes through
// runOnPool(); none uses libuv's threadpool, whose size is fixed (4 by default) the first
// time anything in the process touches it, so it cannot honour a thread count asked for
// later (issue 9: --threads 16 used four cores).
//
// One pool per Node environment (the main thread, each worker_thread), created on first use
// and grown, never shrunk, to the largest size asked for (reservePoolThreads): backends
// limit their own jobs in flight, so a pool as large as the largest backend serves all.
// Results come back through one napi_threadsafe_function, which holds the event loop open
// only while jobs are outstanding (a pending job keeps `await` alive; an idle pool keeps
// nothing alive). When the environment goes away (process exit, worker termination) the
// pool stops taking jobs, lets the running ones finish, joins its threads and drops the
// jobs not yet started without settling them.
#pragma once
#include <napi.h>

#include <cstddef>
#include <exception>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace vmafs {

// One job, type-erased for the queue. run() on a pool thread (no Node-API there); settle()
// on the JS thread with a live environment. A job is deleted after settle(), or unsettled
// when the environment is torn down first.
class PoolJob {
 public:
  virtual ~PoolJob() = default;
  virtual void run() noexcept = 0;
  virtual void settle(Napi::Env env) noexcept = 0;
};

struct PoolStats {
  size_t threads;      // pool threads started
  size_t running;      // jobs running now
  size_t peakRunning;  // most jobs running at once since the pool started (or the last reset)
  size_t completed;    // jobs run to the end
};

// Grows `env`'s pool to at least `threads` threads (at most kMaxPoolThreads).
void reservePoolThreads(Napi::Env env, size_t threads);
PoolStats poolStats(Napi::Env env);
void resetPoolPeak(Napi::Env env);
// Queues `job` on `env`'s pool (which starts with hardware_concurrency() threads when nothing
// reserved it). Call on the JS thread.
void submitToPool(Napi::Env env, std::unique_ptr<PoolJob> job);

constexpr size_t kMaxPoolThreads = 1024;

namespace detail {

template <typename Work, typename ToJs>
class PromiseJob final : public PoolJob {
  using Result = std::invoke_result_t<Work&>;

 public:
  PromiseJob(Napi::Env env, const char* name, std::vector<Napi::ObjectReference> holds, Work work,
             ToJs toJs)
      : deferred_(Napi::Promise::Deferred::New(env)),
        name_(name),
        holds_(std::move(holds)),
        work_(std::move(work)),
        toJs_(std::move(toJs)) {}

  Napi::Promise promise() const { return deferred_.Promise(); }

  void run() noexcept override {
    try {
      result_.emplace(work_());
    } catch (const std::exception& e) {
      error_ = std::string(name_) + ": " + e.what();
    } catch (...) {
      error_ = std::string(name_) + ": unknown failure in a native job";
    }
  }

  void settle(Napi::Env env) noexcept override {
    Napi::HandleScope scope(env);
    holds_.clear();  // the inputs are free for the GC and the caller again
    try {
      if (result_) {
        deferred_.Resolve(toJs_(env, *result_));
      } else {
        deferred_.Reject(Napi::Error::New(env, error_).Value());
      }
    } catch (const Napi::Error& e) {
      deferred_.Reject(e.Value());
    } catch (const std::exception& e) {
      deferred_.Reject(Napi::Error::New(env, std::string(name_) + ": " + e.what()).Value());
    }
  }

 private:
  Napi::Promise::Deferred deferred_;
  const char* name_;
  std::vector<Napi::ObjectReference> holds_;
  Work work_;
  ToJs toJs_;
  std::optional<Result> result_;
  std::string error_;
};

}  // namespace detail

// Runs work() on the pool and returns a promise resolved with toJs(env, result) on the JS
// thread, or rejected with an Error "NAME: what()" when work throws.
//   keepAlive (or holds, references already taken): JS objects (typed arrays whose memory work() reads or writes) referenced until
//     the promise settles, so the GC keeps them and their memory stays in place; the caller
//     must neither write them nor detach their buffers meanwhile.
//   work:  () -> Result, on a pool thread: plain C++, no Node-API calls. Result is a value
//     type moved back to the JS thread.
//   toJs:  (Napi::Env, Result&) -> Napi::Value, on the JS thread.
template <typename Work, typename ToJs>
Napi::Promise runOnPool(Napi::Env env, const char* name, std::vector<Napi::ObjectReference> holds,
                        Work work, ToJs toJs) {
  auto job = std::make_unique<detail::PromiseJob<Work, ToJs>>(env, name, std::move(holds),
                                                              std::move(work), std::move(toJs));
  Napi::Promise promise = job->promise();
  submitToPool(env, std::move(job));
  return promise;
}

// The same, holding the given objects (empty handles are skipped).
template <typename Work, typename ToJs>
Napi::Promise runOnPool(Napi::Env env, const char* name, std::initializer_list<Napi::Object> keepAlive,
                        Work work, ToJs toJs) {
  std::vector<Napi::ObjectReference> holds;
  holds.reserve(keepAlive.size());
  for (const Napi::Object& o : keepAlive) {
    if (!o.IsEmpty()) holds.push_back(Napi::Persistent(o));
  }
  return runOnPool(env, name, std::move(holds), std::move(work), std::move(toJs));
}

}  // namespace vmafs

// See thread-pool.h.
#include "thread-pool.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace vmafs {
namespace {

class WorkerPool {
 public:
  explicit WorkerPool(napi_env env) : env_(env) {
    napi_value name;
    napi_status s = napi_create_string_utf8(env, "vmafStream.pool", NAPI_AUTO_LENGTH, &name);
    if (s == napi_ok) {
      s = napi_create_threadsafe_function(env, nullptr, nullptr, name, 0, 1, nullptr, nullptr,
                                          this, &WorkerPool::deliver, &done_);
    }
    if (s != napi_ok) throw Napi::Error::New(Napi::Env(env), "the native worker pool could not start");
    // Idle: nothing outstanding keeps the loop alive.
    napi_unref_threadsafe_function(env, done_);
  }

  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // The environment is going away: no new jobs, running ones finish, the threads are joined,
  // queued jobs are dropped unsettled. Jobs already handed to `done_` are freed by deliver()
  // when Node closes it (it runs with a null env then).
  ~WorkerPool() {
    std::deque<std::unique_ptr<PoolJob>> dropped;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      dropped.swap(queue_);
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  void reserve(size_t n) {
    n = std::min(n, kMaxPoolThreads);
    std::lock_guard<std::mutex> lock(mutex_);
    while (threads_.size() < n) threads_.emplace_back([this] { work(); });
  }

  void submit(Napi::Env env, std::unique_ptr<PoolJob> job) {
    if (threads_.empty()) reserve(std::max(1u, std::thread::hardware_concurrency()));
    if (outstanding_++ == 0) napi_ref_threadsafe_function(env, done_);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(job));
    }
    wake_.notify_one();
  }

  PoolStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return PoolStats{threads_.size(), running_, peakRunning_, completed_};
  }

  void resetPeak() {
    std::lock_guard<std::mutex> lock(mutex_);
    peakRunning_ = running_;
  }

 private:
  void work() {
    for (;;) {
      std::unique_ptr<PoolJob> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        job = std::move(queue_.front());
        queue_.pop_front();
        peakRunning_ = std::max(peakRunning_, ++running_);
      }
      job->run();
      {
        std::lock_guard<std::mutex> lock(mutex_);
        --running_;
        ++completed_;
      }
      PoolJob* raw = job.release();
      if (napi_call_threadsafe_function(done_, raw, napi_tsfn_nonblocking) != napi_ok) {
        delete raw;  // closing: the environment is going away, nobody awaits the result
      }
    }
  }

  // On the JS thread (env null: Node is closing the function and frees what is queued).
  static void deliver(napi_env env, napi_value, void* context, void* data) {
    std::unique_ptr<PoolJob> job(static_cast<PoolJob*>(data));
    if (env == nullptr) return;
    auto* pool = static_cast<WorkerPool*>(context);
    job->settle(Napi::Env(env));
    job.reset();
    if (--pool->outstanding_ == 0) napi_unref_threadsafe_function(env, pool->done_);
  }

  napi_env env_;
  napi_threadsafe_function done_ = nullptr;
  std::vector<std::thread> threads_;  // grown on the JS thread only
  size_t outstanding_ = 0;            // JS thread only: submitted, not yet settled

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<PoolJob>> queue_;
  bool stopping_ = false;
  size_t running_ = 0;
  size_t peakRunning_ = 0;
  size_t completed_ = 0;
};

// The pool of `env`, created on first use. Its cleanup hook is added after its
// threadsafe function exists, so it runs first at teardown (hooks run in reverse order):
// the threads are joined while the function is still open.
WorkerPool& poolOf(Napi::Env env) {
  void* data = nullptr;
  if (napi_get_instance_data(env, &data) == napi_ok && data != nullptr) {
    return *static_cast<WorkerPool*>(data);
  }
  auto* pool = new WorkerPool(env);
  napi_set_instance_data(env, pool, nullptr, nullptr);
  napi_add_env_cleanup_hook(
      env,
      [](void* arg) {
        auto* p = static_cast<WorkerPool*>(arg);
        delete p;
      },
      pool);
  return *pool;
}

}  // namespace

void reservePoolThreads(Napi::Env env, size_t threads) { poolOf(env).reserve(threads); }

PoolStats poolStats(Napi::Env env) { return poolOf(env).stats(); }

void resetPoolPeak(Napi::Env env) { poolOf(env).resetPeak(); }

void submitToPool(Napi::Env env, std::unique_ptr<PoolJob> job) { poolOf(env).submit(env, std::move(job)); }

}  // namespace vmafs

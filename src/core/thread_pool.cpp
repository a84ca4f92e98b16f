#include "core/thread_pool.hpp"

#include <sched.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "asrdec/core/cpu_threads.hpp"
#include "asrdec/core/error.hpp"

namespace asrdec::detail {
namespace {

constexpr int kMaxThreads = 1024;

// One parallel_for call: its rows, handed out one at a time, and the workers that joined it.
struct Job {
  const std::function<void(std::int64_t, int)>* body = nullptr;
  std::int64_t rows = 0;
  int max_helpers = 0;  // pool workers that may join (the caller is worker 0)
  // Guarded by the pool's mutex:
  std::int64_t next = 0;
  int helpers = 0;  // joined so far; the k-th is worker k
  int active = 0;   // joined and not yet left
  std::int64_t failed_row = -1;
  std::exception_ptr failure;
  std::condition_variable left;  // a helper left
};

// The process-wide workers. Jobs wait in a queue while they may take more helpers; a free worker joins the first.
class ProcessPool {
 public:
  explicit ProcessPool(int threads) : size_(threads) {
    try {
      for (int w = 1; w < threads; ++w) workers_.emplace_back([this] { serve(); });
    } catch (...) {
      stop_workers();  // a thread that could not start: the started ones are joined, not left joinable
      throw;
    }
  }
  ~ProcessPool() { stop_workers(); }
  ProcessPool(const ProcessPool&) = delete;
  ProcessPool& operator=(const ProcessPool&) = delete;

  int size() const noexcept { return size_; }

  void run(Job& job) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(&job);
    }
    const int wanted = static_cast<int>(std::min<std::int64_t>(job.max_helpers, job.rows - 1));
    for (int i = 0; i < wanted; ++i) wake_.notify_one();
    drain(job, 0);
    std::unique_lock<std::mutex> lock(mutex_);
    forget(job);  // no worker joins from now on
    job.left.wait(lock, [&] { return job.active == 0; });
  }

 private:
  void stop_workers() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  void serve() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      Job& job = *queue_.front();
      const int worker = ++job.helpers;
      ++job.active;
      if (job.helpers >= job.max_helpers) queue_.pop_front();
      lock.unlock();
      drain(job, worker);
      lock.lock();
      --job.active;
      forget(job);  // its rows are all handed out
      job.left.notify_all();
    }
  }

  // Rows to `worker` until none are left; the lowest failing row's exception is kept.
  void drain(Job& job, int worker) {
    for (;;) {
      std::int64_t row;
      {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (job.next >= job.rows) return;
        row = job.next++;
      }
      try {
        (*job.body)(row, worker);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (job.failed_row < 0 || row < job.failed_row) {
          job.failed_row = row;
          job.failure = std::current_exception();
        }
      }
    }
  }

  // Takes `job` out of the queue (the mutex held).
  void forget(Job& job) {
    const auto at = std::find(queue_.begin(), queue_.end(), &job);
    if (at != queue_.end()) queue_.erase(at);
  }

  const int size_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job*> queue_;
  bool stop_ = false;
};

std::mutex g_sizing;
int g_requested = -1;  // set_cpu_threads(), resolved; -1: not set

int configured_threads() {
  if (g_requested > 0) return g_requested;
  if (const char* env = std::getenv("ASRDEC_CPU_THREADS")) {
    char* end = nullptr;
    const long value = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && value >= 0 && value <= kMaxThreads) {
      return resolve_threads(static_cast<std::int32_t>(value));
    }
  }
  return resolve_threads(0);
}

ProcessPool*& pool_slot() {
  static ProcessPool* pool = nullptr;
  return pool;
}

ProcessPool& process_pool() {
  const std::lock_guard<std::mutex> lock(g_sizing);
  ProcessPool*& pool = pool_slot();
  if (pool == nullptr) {
    // Destroyed at exit, after its workers have been stopped and joined.
    static ProcessPool instance(std::min(configured_threads(), kMaxThreads));
    pool = &instance;
  }
  return *pool;
}

}  // namespace

int resolve_threads(std::int32_t requested) noexcept {
  if (requested > 0) return requested;
  // The CPUs this process may run on (a container's or taskset's limit), else what the hardware reports.
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

ThreadPool::ThreadPool(int threads) : size_(std::max(1, std::min(threads, process_pool().size()))) {}

void ThreadPool::parallel_for(std::int64_t rows, const std::function<void(std::int64_t, int)>& body) const {
  if (rows <= 0) return;
  if (size_ == 1 || rows == 1) {
    for (std::int64_t row = 0; row < rows; ++row) body(row, 0);
    return;
  }
  Job job;
  job.body = &body;
  job.rows = rows;
  job.max_helpers = size_ - 1;
  process_pool().run(job);
  if (job.failure) std::rethrow_exception(job.failure);
}

}  // namespace asrdec::detail

namespace asrdec {

void set_cpu_threads(std::int32_t threads) {
  ASRDEC_CHECK_ARG(threads >= 0 && threads <= detail::kMaxThreads, "set_cpu_threads: threads = ", threads,
                   " is outside [0, ", detail::kMaxThreads, "] (0: every core)");
  const int resolved = detail::resolve_threads(threads);
  const std::lock_guard<std::mutex> lock(detail::g_sizing);
  const detail::ProcessPool* pool = detail::pool_slot();
  ASRDEC_CHECK_ARG(pool == nullptr || pool->size() == resolved, "set_cpu_threads(", threads,
                   "): the CPU thread pool already runs with ", pool == nullptr ? 0 : pool->size(),
                   " threads; size it before the first CPU decoder is made");
  detail::g_requested = resolved;
}

std::int32_t cpu_threads() { return detail::process_pool().size(); }

}  // namespace asrdec

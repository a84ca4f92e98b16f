#include "core/thread_pool.hpp"

#include <sched.h>

#include <algorithm>

namespace asrdec::detail {

int resolve_threads(std::int32_t requested) noexcept {
  if (requested > 0) return requested;
  // The CPUs this process may run on (a container's or taskset's limit), else what the hardware reports.
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

ThreadPool::ThreadPool(int threads) {
  for (int w = 1; w < threads; ++w) workers_.emplace_back([this, w] { work(w); });
}

ThreadPool::~ThreadPool() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::parallel_for(std::int64_t rows, const std::function<void(std::int64_t, int)>& body) {
  if (rows <= 0) return;
  if (workers_.empty() || rows == 1) {
    for (std::int64_t row = 0; row < rows; ++row) body(row, 0);
    return;
  }
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    body_ = &body;
    rows_ = rows;
    next_ = 0;
    busy_ = static_cast<int>(workers_.size());
    failed_row_ = -1;
    failure_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  drain(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return busy_ == 0; });
  body_ = nullptr;
  if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
}

void ThreadPool::work(int worker) {
  std::uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    drain(worker);
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      --busy_;
    }
    done_.notify_one();
  }
}

void ThreadPool::drain(int worker) {
  for (;;) {
    std::int64_t row;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (next_ >= rows_) return;
      row = next_++;
    }
    try {
      (*body_)(row, worker);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (failed_row_ < 0 || row < failed_row_) {
        failed_row_ = row;
        failure_ = std::current_exception();
      }
    }
  }
}

}  // namespace asrdec::detail

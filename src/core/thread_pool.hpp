#pragma once
// Internal: the threads a CPU executor spreads a batch over. The caller's thread takes part, so a pool of one runs
// everything inline with no thread at all. Rows are handed out one at a time (utterances differ in length), each
// to whichever thread is free; `worker` tells the body which thread it runs on, so that it can use that thread's
// scratch memory. Results never depend on the number of threads: every row is computed by the same code from the
// same inputs, into its own outputs.

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace asrdec::detail {

/** The threads of a `threads` setting: 0 means every core the process may use (at least 1). */
int resolve_threads(std::int32_t requested) noexcept;

class ThreadPool {
 public:
  /** `threads` ≥ 1 (including the caller's). */
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const noexcept { return static_cast<int>(workers_.size()) + 1; }

  /** body(row, worker) for every row in [0, rows), worker in [0, size()); returns when all have run. When bodies
   *  throw, the exception of the lowest row is rethrown — the one a plain loop would have thrown — after every
   *  row has been handed out (rows after it may have run). Not reentrant: one call at a time per pool. */
  void parallel_for(std::int64_t rows, const std::function<void(std::int64_t, int)>& body);

 private:
  void work(int worker);
  void drain(int worker);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(std::int64_t, int)>* body_ = nullptr;
  std::int64_t rows_ = 0, next_ = 0;
  std::uint64_t generation_ = 0;
  int busy_ = 0;
  bool stop_ = false;
  std::int64_t failed_row_ = -1;
  std::exception_ptr failure_;
};

}  // namespace asrdec::detail

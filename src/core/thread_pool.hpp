#pragma once
// Internal: the threads a CPU executor spreads a call's rows over — the calling thread and the workers of the
// process-wide pool (asrdec/core/cpu_threads.hpp) that are free, at most `size()` threads in all. Rows are handed
// out one at a time (utterances differ in length), each to whichever thread asks first; `worker` (in [0, size()))
// tells the body which of the call's threads it runs on, so that it can use that thread's scratch memory. The caller
// is worker 0 and takes rows until none are left, so a call finishes even when every pool worker is busy with other
// decoders' calls. Results never depend on the threads: every row is computed by the same code from the same inputs,
// into its own outputs.

#include <cstdint>
#include <functional>

namespace asrdec::detail {

/** The threads of a `threads` setting: 0 means every core the process may use (at least 1). */
int resolve_threads(std::int32_t requested) noexcept;

class ThreadPool {
 public:
  /** A decoder's share of the process pool: at most `threads` (≥ 1, the caller's included) threads per call, and no
   *  more than the process pool has. Starts the process pool if it has not started. */
  explicit ThreadPool(int threads);

  /** The most threads one call uses (worker indices are below it). */
  int size() const noexcept { return size_; }

  /** body(row, worker) for every row in [0, rows), worker in [0, size()); returns when all have run. When bodies
   *  throw, the exception of the lowest row is rethrown — the one a plain loop would have thrown — after every
   *  row has been handed out (rows after it may have run). One call at a time per ThreadPool; calls through
   *  different ThreadPools may run at once, from any threads. */
  void parallel_for(std::int64_t rows, const std::function<void(std::int64_t, int)>& body) const;

 private:
  int size_;
};

}  // namespace asrdec::detail

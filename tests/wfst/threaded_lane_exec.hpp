#pragma once
// A thread block emulated by OS threads for the lane step (src/wfst/lane_step): every thread runs the whole lane code,
// as a CUDA thread does, so what the sequential emulation cannot show shows here — a thread that reads a lane scalar
// after another has changed it, and then takes a different branch around a barrier. Each barrier checks that all
// threads wait at the same one (on a GPU the block's barriers would pair up wrong, silently); threads yield at random
// inside phases so that their interleavings vary. Atomics are the compiler's builtins. A barrier is named by the
// file and line of its call (default arguments of the caller's position: the compiler may duplicate a call).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

namespace asrdec::wfst_testing {

// What the threads of one emulated block share: the barrier and the scan's total.
class ThreadedBlock {
 public:
  explicit ThreadedBlock(int threads) : threads_(threads) {}

  int threads() const { return threads_; }
  // False once threads waited at different barriers, or one waited in vain (a thread left the code early).
  bool consistent() const { return consistent_; }

  void arrive(const char* file, int line) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (arrived_ == 0) {
      file_ = file;
      line_ = line;
    } else if (line != line_ || std::strcmp(file, file_) != 0) {
      if (consistent_)
        std::fprintf(stderr, "threads wait at different barriers: %s:%d and %s:%d\n", file_, line_, file, line);
      consistent_ = false;
    }
    const std::int64_t generation = generation_;
    if (++arrived_ == threads_) {
      arrived_ = 0;
      ++generation_;
      released_.notify_all();
      return;
    }
    if (!released_.wait_for(lock, std::chrono::seconds(20), [&] { return generation_ != generation; })) {
      consistent_ = false;  // the others never came: release everyone rather than hang the test
      arrived_ = 0;
      ++generation_;
      released_.notify_all();
    }
  }

  std::int64_t total[2] = {0, 0};  // an exclusive scan's total, for every thread, by the scan's parity

 private:
  int threads_;
  std::mutex mutex_;
  std::condition_variable released_;
  int arrived_ = 0;
  std::int64_t generation_ = 0;
  const char* file_ = "";
  int line_ = 0;
  bool consistent_ = true;
};

// The executor one thread of the block uses (thread `id` of block.threads()).
class ThreadedLaneExec {
 public:
  ThreadedLaneExec(ThreadedBlock& block, int id, std::uint64_t seed) : block_(block), id_(id), rng_(seed) {}

  template <class F>
  void for_each(std::int64_t n, F&& f) {
    for (std::int64_t i = id_; i < n; i += block_.threads()) {
      if (rng_() % 8 == 0) std::this_thread::yield();
      f(i);
    }
  }
  template <class Load, class Apply>
  void for_each_batch(std::int64_t n, Load&& load, Apply&& apply) {
    for_each(n, [&](std::int64_t i) { apply(i, load(i)); });
  }
  void barrier(const char* file = __builtin_FILE(), int line = __builtin_LINE()) { block_.arrive(file, line); }
  template <class F>
  void single(F&& f) {
    if (id_ == 0) f();
  }
  template <class T>
  T load(const T* p) {
    return __atomic_load_n(p, __ATOMIC_SEQ_CST);
  }
  std::int32_t atomic_cas(std::int32_t* p, std::int32_t expected, std::int32_t desired) {
    __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return expected;
  }
  template <class T>
  T atomic_add(T* p, T v) {
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
  }
  std::int32_t atomic_exch(std::int32_t* p, std::int32_t v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
  std::int32_t atomic_or(std::int32_t* p, std::int32_t v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }
  template <class T>
  T atomic_min(T* p, T v) {
    T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (v < old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    return old;
  }
  template <class T>
  T atomic_max(T* p, T v) {
    T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (v > old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    return old;
  }
  // As a block scan: every thread calls it, one computes, all return the total after the barrier that ends it.
  template <class T, class ValueOf>
  T exclusive_scan_of(T* sums, std::int64_t n, ValueOf&& value_of, const char* file = __builtin_FILE(),
                      int line = __builtin_LINE()) {
    if (id_ == 0) {
      T sum = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        const T value = static_cast<T>(value_of(i));
        sums[i] = sum;
        sum += value;
      }
      block_.total[parity_] = static_cast<std::int64_t>(sum);
    }
    barrier(file, line);
    const auto total = static_cast<T>(block_.total[parity_]);
    parity_ ^= 1;  // as the CUDA block's: the next scan's total goes to the other cell
    return total;
  }

 private:
  ThreadedBlock& block_;
  int id_;
  int parity_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace asrdec::wfst_testing

#include "core/thread_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "asrdec/asrdec.hpp"
#include "support/test_support.hpp"

namespace asrdec::detail {
namespace {

TEST(ThreadPool, EveryRowRunsOnceOnAValidWorker) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  for (const int requested : {1, 2, 3, 8}) {
    ThreadPool pool(requested);
    const int threads = std::min(requested, static_cast<int>(cpu_threads()));  // a share of the process pool
    ASSERT_EQ(pool.size(), threads);
    for (int call = 0; call < 50; ++call) {  // one pool, many calls: the workers are reused
      const auto rows = static_cast<std::int64_t>(rng() % 40);
      std::vector<std::atomic<int>> runs(static_cast<std::size_t>(rows));
      std::atomic<bool> bad_worker{false};
      pool.parallel_for(rows, [&](std::int64_t row, int worker) {
        runs[static_cast<std::size_t>(row)].fetch_add(1);
        if (worker < 0 || worker >= threads) bad_worker = true;
      });
      for (std::int64_t row = 0; row < rows; ++row) {
        ASSERT_EQ(runs[static_cast<std::size_t>(row)].load(), 1) << threads << " threads, row " << row;
      }
      ASSERT_FALSE(bad_worker.load());
    }
  }
}

TEST(ThreadPool, OneThreadRunsInlineInRowOrder) {
  ThreadPool pool(1);
  std::vector<std::int64_t> order;
  pool.parallel_for(5, [&](std::int64_t row, int worker) {
    EXPECT_EQ(worker, 0);
    order.push_back(row);
  });
  EXPECT_EQ(order, (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
}

// The exception a plain loop would throw first: the lowest failing row's, whichever thread got there first.
TEST(ThreadPool, RethrowsTheLowestFailingRow) {
  for (const int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    for (int repeat = 0; repeat < 100; ++repeat) {
      try {
        pool.parallel_for(64, [&](std::int64_t row, int) {
          if (row % 7 == 5) throw std::runtime_error("row " + std::to_string(row));
        });
        ADD_FAILURE() << "nothing thrown";
      } catch (const std::runtime_error& error) {
        ASSERT_STREQ(error.what(), "row 5") << threads << " threads";
      }
    }
    std::atomic<int> after{0};  // the pool stays usable after a failed call
    pool.parallel_for(10, [&](std::int64_t, int) { after.fetch_add(1); });
    EXPECT_EQ(after.load(), 10);
  }
}

TEST(ThreadPool, ZeroMeansEveryUsableCore) {
  EXPECT_GE(resolve_threads(0), 1);
  EXPECT_EQ(resolve_threads(3), 3);
}

// Many callers at once, each through its own share of the one process pool: every row of every call runs once, on a
// worker index of its call.
TEST(ThreadPool, ConcurrentCallersShareTheProcessPool) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 8; ++c) {
    callers.emplace_back([&, c] {
      std::mt19937_64 rng(seed + static_cast<std::uint64_t>(c));
      const ThreadPool pool(1 + c % 4);
      for (int call = 0; call < 200; ++call) {
        const auto rows = static_cast<std::int64_t>(rng() % 30);
        std::vector<std::atomic<int>> runs(static_cast<std::size_t>(rows));
        pool.parallel_for(rows, [&](std::int64_t row, int worker) {
          runs[static_cast<std::size_t>(row)].fetch_add(1);
          if (worker < 0 || worker >= pool.size()) wrong.fetch_add(1);
        });
        for (const auto& r : runs) {
          if (r.load() != 1) wrong.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

// A call never waits for a worker: with every pool worker held by another call, the caller runs its rows itself.
TEST(ThreadPool, ACallFinishesWhileEveryWorkerIsBusy) {
  const int threads = static_cast<int>(cpu_threads());
  if (threads < 2) GTEST_SKIP() << "the process pool has no worker to hold";
  std::mutex mutex;
  std::condition_variable changed;
  int holding = 0;
  bool release = false;
  std::thread holder([&] {
    const ThreadPool pool(threads);
    pool.parallel_for(threads, [&](std::int64_t, int worker) {
      std::unique_lock<std::mutex> lock(mutex);
      if (worker == 0) {  // the holder's own thread waits until the workers hold the other rows, then leaves
        changed.wait(lock, [&] { return holding == threads - 1; });
        return;
      }
      ++holding;
      changed.notify_all();
      changed.wait(lock, [&] { return release; });
    });
  });
  {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return holding == threads - 1; });
  }
  std::atomic<int> ran{0};
  const ThreadPool pool(threads);
  pool.parallel_for(50, [&](std::int64_t, int) { ran.fetch_add(1); });
  EXPECT_EQ(ran.load(), 50);
  {
    const std::lock_guard<std::mutex> lock(mutex);
    release = true;
  }
  changed.notify_all();
  holder.join();
}

// Decoders do not start threads of their own: making and running many leaves the process's thread count unchanged.
TEST(ThreadPool, DecodersAddNoThreads) {
  const auto threads_now = [] {
    std::int64_t count = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) count += entry.is_directory();
    return count;
  };
  (void)cpu_threads();  // the pool runs
  const std::int64_t before = threads_now();
  std::vector<float> values(4 * 6 * 5, -1.0f);
  for (std::size_t i = 0; i < values.size(); i += 5) values[i] = -0.1f;
  const std::vector<std::int32_t> lengths = {6, 5, 4, 6};
  std::vector<std::unique_ptr<CtcGreedyDecoder>> decoders;
  for (int d = 0; d < 16; ++d) {
    decoders.push_back(std::make_unique<CtcGreedyDecoder>(Device::cpu()));  // threads = 0: every core
    (void)decoders.back()->decode(TensorView(values.data(), DType::f32, {4, 6, 5}),
                                  TensorView(lengths.data(), DType::i32, {4}));
  }
  EXPECT_EQ(threads_now(), before);
}

TEST(ThreadPool, ThePoolIsSizedOnce) {
  const std::int32_t size = cpu_threads();
  EXPECT_NO_THROW(set_cpu_threads(size));  // the size it has
  ASRDEC_EXPECT_THROW_MSG(set_cpu_threads(size + 1), InvalidArgument,
                          "the CPU thread pool already runs with " + std::to_string(size) + " threads");
  ASRDEC_EXPECT_THROW_MSG(set_cpu_threads(-1), InvalidArgument, "set_cpu_threads: threads = -1 is outside [0, 1024]");
  ASRDEC_EXPECT_THROW_MSG(set_cpu_threads(5000), InvalidArgument, "is outside [0, 1024]");
}

}  // namespace
}  // namespace asrdec::detail

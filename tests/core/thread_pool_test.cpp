#include "core/thread_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace asrdec::detail {
namespace {

TEST(ThreadPool, EveryRowRunsOnceOnAValidWorker) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  for (const int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
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

}  // namespace
}  // namespace asrdec::detail

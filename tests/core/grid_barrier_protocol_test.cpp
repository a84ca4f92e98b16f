// The grid barrier of the persistent CUDA kernels (core/grid_barrier_protocol.hpp), run on threads: each thread is a
// block of one thread, the protocol's memory operations are C++ atomics, and the wrapper below does what
// grid_barrier_arrive_block and grid_barrier_release_block (core/cuda/grid_barrier.cuh) do around the protocol in a
// block's thread 0.
#include "core/grid_barrier_protocol.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "support/test_support.hpp"

namespace asrdec::detail {
namespace {

struct HostGridBarrierOps {
  template <class T>
  static T load(const T* word) {
    return __atomic_load_n(word, __ATOMIC_ACQUIRE);
  }
  static void store(unsigned int* word, unsigned int value) { __atomic_store_n(word, value, __ATOMIC_RELEASE); }
  static unsigned int fetch_add(unsigned int* word, unsigned int value) {
    return __atomic_fetch_add(word, value, __ATOMIC_ACQ_REL);
  }
  static void fence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
  static void compare_exchange(int* word, int expected, int desired) {
    __atomic_compare_exchange_n(word, &expected, desired, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  }
  static std::uint64_t now_ns() {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
  }
  static void pause() { std::this_thread::yield(); }
};
using Ops = HostGridBarrierOps;

// The barrier's words, as a kernel's launch finds them: zero.
struct Words {
  unsigned int arrived = 0;
  unsigned int generation = 0;
  int status = kGridBarrierOk;
  GridBarrier barrier() { return GridBarrier{&arrived, &generation, &status}; }
};

constexpr std::uint64_t kLongTimeoutNs = 10'000'000'000ull;  // never reached by a barrier that works

// One block's barrier: the last to arrive runs `serial` (if any, and only while no error is recorded) and then
// releases the others. Returns whether the kernel goes on.
bool barrier_then(const GridBarrier& barrier, unsigned int blocks, std::uint64_t timeout_ns,
                  const std::function<void()>& serial) {
  unsigned int seen = 0;
  const bool last = grid_barrier_arrive<Ops>(barrier, blocks, seen);
  if (!last) {
    grid_barrier_await<Ops>(barrier, seen, timeout_ns);
  } else if (!serial) {
    grid_barrier_release<Ops>(barrier);
  }
  const bool go_on = grid_barrier_passed<Ops>(barrier);
  if (last && serial) {
    if (go_on) serial();
    grid_barrier_release<Ops>(barrier);
  }
  return go_on;
}

// What block `block` writes in round `round` (the serial section sums them).
std::uint64_t block_value(std::uint64_t seed, int round, int block) {
  std::uint64_t x = seed ^ (static_cast<std::uint64_t>(round) << 20) ^ static_cast<std::uint64_t>(block);
  x ^= x >> 31;
  x *= 0x9e3779b97f4a7c15ull;
  return x >> 16;
}

constexpr int kRounds = 400;

// Runs `round(block, r)` for rounds r = 0 … kRounds-1 on each of `blocks` threads, each arriving after a random
// delay (a different order each round), until its round returns false.
template <class Round>
void run_rounds(std::mt19937_64& rng, int blocks, const Round& round) {
  std::vector<std::thread> threads;
  for (int block = 0; block < blocks; ++block) {
    threads.emplace_back([&round, block, delays = rng()] {
      std::mt19937 jitter(static_cast<std::uint32_t>(delays));
      for (int r = 0; r < kRounds; ++r) {
        for (int spin = static_cast<int>(jitter() % 4); spin > 0; --spin) std::this_thread::yield();
        if (!round(block, r)) return;
      }
    });
  }
  for (auto& t : threads) t.join();
}

// The words after kRounds barriers, as the next launch needs them: nobody counted in, the generation moved once a
// barrier, no error.
void expect_ready_for_the_next_launch(const Words& words) {
  EXPECT_EQ(words.arrived, 0u);
  EXPECT_EQ(words.generation, static_cast<unsigned int>(kRounds));
  EXPECT_EQ(words.status, kGridBarrierOk);
}

TEST(GridBarrierProtocol, TheLastBlockSeesEveryBlocksWritesAndEveryBlockSeesItsSerialSection) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const int blocks = std::uniform_int_distribution<int>(2, 8)(rng);
  Words words;
  const GridBarrier barrier = words.barrier();
  std::vector<std::uint64_t> written(static_cast<std::size_t>(blocks), 0);  // plain memory: ordered by the barrier
  std::uint64_t sum = 0;                                                    // the serial section's result
  std::vector<int> serial_runs(static_cast<std::size_t>(blocks), 0);
  std::vector<int> wrong(static_cast<std::size_t>(blocks), 0);
  std::vector<int> stopped(static_cast<std::size_t>(blocks), 0);
  run_rounds(rng, blocks, [&](int block, int round) {
    written[static_cast<std::size_t>(block)] = block_value(seed, round, block);
    const bool go_on = barrier_then(barrier, static_cast<unsigned int>(blocks), kLongTimeoutNs, [&] {
      std::uint64_t total = 0;
      for (std::uint64_t v : written) total += v;
      sum = total;
      ++serial_runs[static_cast<std::size_t>(block)];
    });
    if (!go_on) {
      ++stopped[static_cast<std::size_t>(block)];
      return false;
    }
    std::uint64_t expected = 0;
    for (int b = 0; b < blocks; ++b) expected += block_value(seed, round, b);
    if (sum != expected) ++wrong[static_cast<std::size_t>(block)];
    return true;
  });
  int runs = 0;
  for (int block = 0; block < blocks; ++block) {
    EXPECT_EQ(wrong[static_cast<std::size_t>(block)], 0) << "block " << block << " of " << blocks;
    EXPECT_EQ(stopped[static_cast<std::size_t>(block)], 0) << "block " << block << " of " << blocks;
    runs += serial_runs[static_cast<std::size_t>(block)];
  }
  EXPECT_EQ(runs, kRounds) << "one serial section a round";
  expect_ready_for_the_next_launch(words);
}

TEST(GridBarrierProtocol, APlainBarrierKeepsEveryBlockInStep) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const int blocks = std::uniform_int_distribution<int>(2, 8)(rng);
  Words words;
  const GridBarrier barrier = words.barrier();
  std::vector<std::atomic<int>> round_of(static_cast<std::size_t>(blocks));
  for (auto& r : round_of) r = -1;
  std::atomic<int> out_of_step{0};
  run_rounds(rng, blocks, [&](int block, int round) {
    round_of[static_cast<std::size_t>(block)] = round;
    if (!barrier_then(barrier, static_cast<unsigned int>(blocks), kLongTimeoutNs, nullptr)) return false;
    // Past the barrier every block has entered this round, and none can be past the next barrier.
    for (const auto& other : round_of) {
      const int r = other.load();
      if (r != round && r != round + 1) ++out_of_step;
    }
    return true;
  });
  EXPECT_EQ(out_of_step.load(), 0) << blocks << " blocks";
  expect_ready_for_the_next_launch(words);
}

// Runs `blocks - 1` blocks to one barrier (the last block never comes) and returns how many went on.
int waiters_that_go_on(Words& words, int blocks, std::uint64_t timeout_ns, const std::function<void()>& meanwhile) {
  const GridBarrier barrier = words.barrier();
  std::atomic<int> went_on{0};
  std::vector<std::thread> threads;
  for (int block = 0; block + 1 < blocks; ++block) {
    threads.emplace_back([&] {
      if (barrier_then(barrier, static_cast<unsigned int>(blocks), timeout_ns, nullptr)) ++went_on;
    });
  }
  meanwhile();
  for (auto& t : threads) t.join();
  return went_on.load();
}

TEST(GridBarrierProtocol, ABlockThatNeverComesTimesTheOthersOut) {
  Words words;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(waiters_that_go_on(words, 4, 20'000'000ull, [] {}), 0);
  EXPECT_EQ(words.status, kGridBarrierTimedOut);
  EXPECT_EQ(words.generation, 0u) << "nobody released the barrier";
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << "the waits ended by the timeout";
}

TEST(GridBarrierProtocol, AnErrorRecordedElsewhereStopsTheWaitingBlocksAndIsKept) {
  Words words;
  const auto start = std::chrono::steady_clock::now();
  const int went_on = waiters_that_go_on(words, 4, kLongTimeoutNs, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    __atomic_store_n(&words.status, kGridBarrierLoopCap, __ATOMIC_RELEASE);  // another block hit its loop cap
  });
  EXPECT_EQ(went_on, 0);
  EXPECT_EQ(words.status, kGridBarrierLoopCap) << "the first error is the one reported, not a timeout";
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << "the waits ended at the error";
}

TEST(GridBarrierProtocol, TheLastBlockSkipsItsSerialSectionAfterAnErrorAndStillReleases) {
  Words words;
  words.status = kGridBarrierTimedOut;
  bool ran = false;
  EXPECT_FALSE(barrier_then(words.barrier(), 1, kLongTimeoutNs, [&] { ran = true; }));
  EXPECT_FALSE(ran);
  EXPECT_EQ(words.generation, 1u) << "released, so no block waits for the timeout";
  EXPECT_EQ(words.arrived, 0u);
}

}  // namespace
}  // namespace asrdec::detail

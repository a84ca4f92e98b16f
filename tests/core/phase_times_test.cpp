// The persistent kernels' phase times as a call logs them (core/phase_times.hpp): totals in nanoseconds over the
// call's steps, printed a step by phase and summed; and the switch that turns the timing on.
#include "core/phase_times.hpp"

#include <gtest/gtest.h>

#include "support/test_support.hpp"

namespace asrdec::detail {
namespace {

TEST(PhaseTimes, TotalsBecomeMicrosecondsAStep) {
  EXPECT_EQ(format_phase_times("kernel", {"joint", "select"}, {30'000, 10'500}, 10),
            "kernel: 10 steps; a step: joint 3.00 us, select 1.05 us, all 4.05 us");
  // A call of no steps says so, without dividing by zero.
  EXPECT_EQ(format_phase_times("kernel", {"joint"}, {0}, 0), "kernel: 0 steps");
  // Fewer totals than names (or the reverse): the pairs there are.
  EXPECT_EQ(format_phase_times("k", {"a", "b"}, {2'000}, 1), "k: 1 steps; a step: a 2.00 us, all 2.00 us");
}

TEST(PhaseTimes, OffUnlessTheEnvironmentSaysOne) {
  {
    const testing::ScopedEnvironmentVariable unset("ASRDEC_PHASE_TIMES", nullptr);
    EXPECT_FALSE(phase_times_enabled());
  }
  const testing::ScopedEnvironmentVariable on("ASRDEC_PHASE_TIMES", "1");
  EXPECT_TRUE(phase_times_enabled());
}

}  // namespace
}  // namespace asrdec::detail

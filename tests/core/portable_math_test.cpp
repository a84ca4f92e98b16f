// portable_exp and portable_log (asrdec/detail/portable_math.hpp): within two ulps of the correctly rounded value on
// random arguments over the whole float range (printed seed), the special values right, and monotone where the true
// function is, so that comparisons of their results keep their sense.

#include "asrdec/detail/portable_math.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "support/test_support.hpp"

namespace asrdec {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Distance in units in the last place between two finite floats of one sign (or zero).
std::int64_t ulps(float a, float b) {
  std::int32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return std::llabs(static_cast<std::int64_t>(x) - y);
}

float random_float(std::mt19937_64& rng, float lo, float hi) {
  return std::uniform_real_distribution<float>(lo, hi)(rng);
}

// `function` against the correctly rounded `reference` (float of a double result) on n arguments from `draw`: within
// two ulps everywhere, and correctly rounded for most.
template <class Function, class Reference, class Draw>
void expect_within_two_ulps(const char* name, Function function, Reference reference, Draw draw, int n) {
  std::int64_t worst = 0, exact = 0;
  for (int i = 0; i < n; ++i) {
    const float x = draw(i);
    const auto want = static_cast<float>(reference(static_cast<double>(x)));
    const float got = function(x);
    const std::int64_t error = ulps(got, want);
    ASSERT_LE(error, 2) << name << "(" << x << "): " << got << " vs " << want;
    worst = std::max(worst, error);
    exact += error == 0 ? 1 : 0;
  }
  EXPECT_GT(exact, n * 8 / 10) << name << ": most results should be the correctly rounded ones";
  std::printf("%s: worst %lld ulps, %lld of %d correctly rounded\n", name, static_cast<long long>(worst),
              static_cast<long long>(exact), n);
}

TEST(PortableMath, ExpIsWithinTwoUlpsEverywhere) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  // Most merges see arguments in [-30, 0]; the rest of the range for the edges (subnormal results included).
  expect_within_two_ulps(
      "exp", detail::portable_exp, [](double x) { return std::exp(x); },
      [&](int i) { return i % 4 == 0 ? random_float(rng, -103.9f, 88.7f) : random_float(rng, -30.0f, 0.0f); }, 400000);
  EXPECT_EQ(detail::portable_exp(0.0f), 1.0f);
  EXPECT_EQ(detail::portable_exp(-kInf), 0.0f);
  EXPECT_EQ(detail::portable_exp(kInf), kInf);
  EXPECT_EQ(detail::portable_exp(89.0f), kInf);
  EXPECT_EQ(detail::portable_exp(-104.0f), 0.0f);
  EXPECT_TRUE(std::isnan(detail::portable_exp(std::nanf(""))));
}

TEST(PortableMath, LogIsWithinTwoUlpsEverywhere) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  // Sums of a merge lie in [1, beam]; the rest of the range through random bit patterns (subnormals included).
  const auto draw = [&](int i) {
    if (i % 2 == 0) return random_float(rng, 1.0f, 64.0f);
    const auto bits = static_cast<std::uint32_t>(1 + rng() % 0x7f7fffffu);  // every positive finite float
    float x;
    std::memcpy(&x, &bits, 4);
    return x;
  };
  expect_within_two_ulps(
      "log", detail::portable_log, [](double x) { return std::log(x); }, draw, 400000);
  EXPECT_EQ(detail::portable_log(1.0f), 0.0f);
  EXPECT_EQ(detail::portable_log(0.0f), -kInf);
  EXPECT_EQ(detail::portable_log(-0.0f), -kInf);
  EXPECT_EQ(detail::portable_log(kInf), kInf);
  EXPECT_TRUE(std::isnan(detail::portable_log(-1.0f)));
  EXPECT_TRUE(std::isnan(detail::portable_log(std::nanf(""))));
  EXPECT_NEAR(detail::portable_log(std::numeric_limits<float>::denorm_min()), -103.27893f, 1e-4f);
}

// A log-add of two scores lies between the larger and the larger + ln 2, as the merge of equal hypotheses needs.
TEST(PortableMath, LogAddStaysBetweenTheLargerAndTwiceIt) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 100000; ++i) {
    const float best = random_float(rng, -50.0f, 0.0f);
    const float other = best - (i % 10 == 0 ? 0.0f : random_float(rng, 0.0f, 30.0f));
    const float merged = best + detail::portable_log(1.0f + detail::portable_exp(other - best));
    ASSERT_GE(merged, best) << best << " " << other;
    ASSERT_LE(merged, best + 0.6931472f + 1e-5f) << best << " " << other;
  }
}

}  // namespace
}  // namespace asrdec

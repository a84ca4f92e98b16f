#include <cmath>
#include <cstring>

#include "asrdec/detail/float16.hpp"
#include "support/test_support.hpp"

namespace asrdec {
namespace {

// An independent fp16 decoder written from the IEEE definition, to check the library's bit tricks.
double reference_half(std::uint16_t h) {
  const int sign = (h >> 15) & 1;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  double value;
  if (exponent == 0) {
    value = std::ldexp(mantissa, -24);
  } else if (exponent == 31) {
    value = mantissa == 0 ? INFINITY : NAN;
  } else {
    value = std::ldexp(1024 + mantissa, exponent - 25);
  }
  return sign ? -value : value;
}

TEST(DType, NamesSizesAndParsing) {
  EXPECT_EQ(dtype_size(DType::f32), 4u);
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::i64), 8u);
  EXPECT_STREQ(dtype_name(DType::f16), "float16");
  EXPECT_EQ(parse_dtype("fp16"), DType::f16);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bf16);
  EXPECT_EQ(parse_dtype("int64"), DType::i64);
  ASRDEC_EXPECT_THROW_MSG(parse_dtype("float64"), InvalidArgument, "unknown dtype 'float64'");
  EXPECT_TRUE(is_floating(DType::bf16));
  EXPECT_FALSE(is_floating(DType::i32));
}

TEST(Float16, EveryHalfDecodesExactly) {
  for (std::uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto h = static_cast<std::uint16_t>(bits);
    const float got = detail::half_bits_to_float(h);
    const double want = reference_half(h);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << std::hex << bits;
    } else {
      ASSERT_EQ(static_cast<double>(got), want) << "bits 0x" << std::hex << bits;
      ASSERT_EQ(std::signbit(got), std::signbit(want)) << "bits 0x" << std::hex << bits;
    }
  }
}

TEST(Float16, EncodingRoundTripsEveryHalf) {
  for (std::uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto h = static_cast<std::uint16_t>(bits);
    const float value = detail::half_bits_to_float(h);
    if (!std::isnan(value)) {
      ASSERT_EQ(detail::float_to_half_bits(value), h) << "bits 0x" << std::hex << bits;
    } else {
      EXPECT_TRUE(std::isnan(detail::half_bits_to_float(detail::float_to_half_bits(value))));
    }
  }
}

TEST(Float16, EncodingRoundsToNearestEven) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> magnitude(-30.0f, 17.0f);
  for (int i = 0; i < 20000; ++i) {
    const float value =
        std::ldexp(1.0f, static_cast<int>(magnitude(rng))) * std::uniform_real_distribution<float>(-2, 2)(rng);
    const std::uint16_t h = detail::float_to_half_bits(value);
    const double got = reference_half(h);
    // Compare with both neighbours: the chosen half must be a nearest one, and on a tie the even one.
    const double down = reference_half(static_cast<std::uint16_t>(h - 1));
    const double up = reference_half(static_cast<std::uint16_t>(h + 1));
    const double error = std::fabs(got - value);
    if (std::isinf(got)) {
      EXPECT_GE(std::fabs(value), 65520.0f);
      continue;
    }
    if (!std::isnan(down) && !std::isinf(down) && (h & 0x7fff) != 0) {
      ASSERT_LE(error, std::fabs(down - value)) << value;
    }
    if (!std::isnan(up) && !std::isinf(up)) {
      ASSERT_LE(error, std::fabs(up - value)) << value;
      if (error == std::fabs(up - value) && error > 0) {
        EXPECT_EQ(h & 1, 0) << value;
      }
    }
  }
}

TEST(Float16, BFloat16RoundTripAndRounding) {
  for (std::uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto b = static_cast<std::uint16_t>(bits);
    const float value = detail::bf16_bits_to_float(b);
    std::uint32_t as_bits;
    std::memcpy(&as_bits, &value, 4);
    ASSERT_EQ(as_bits, bits << 16);
    if (!std::isnan(value)) {
      ASSERT_EQ(detail::float_to_bf16_bits(value), b);
    }
  }
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0).
  EXPECT_EQ(detail::float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)), detail::float_to_bf16_bits(1.0f));
  EXPECT_EQ(detail::to_float(bfloat16_t{detail::float_to_bf16_bits(-2.5f)}), -2.5f);
}

}  // namespace
}  // namespace asrdec

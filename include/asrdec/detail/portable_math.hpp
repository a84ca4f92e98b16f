#pragma once
// exp and log of floats built from correctly rounded additions, subtractions, multiplications and divisions alone, so
// that the host and the device compute them to the same bits. The math libraries' expf and logf do not: glibc's and
// CUDA's differ in the last bit for some arguments, and where such a value is compared with a threshold (a beam's
// pruning floor) the CPU and CUDA executors would keep different hypotheses. Used wherever a decision of the shared
// step functions depends on an exp or a log (merging equal hypotheses by log-add). Accurate to about one ulp.
// Every operation rounds once (asrdec/detail/rounded.hpp).

#include <cstdint>

#include "asrdec/detail/float16.hpp"
#include "asrdec/detail/hd.hpp"
#include "asrdec/detail/rounded.hpp"

namespace asrdec::detail {

/** 2^k as a float, for -126 <= k <= 127 (exact). */
ASRDEC_HD_INLINE float power_of_two(std::int32_t k) { return bits_to_float(static_cast<std::uint32_t>(k + 127) << 23); }

/** e^x: NaN for NaN, +inf above ln(FLT_MAX), 0 far below ln of the smallest subnormal. */
ASRDEC_HD_INLINE float portable_exp(float x) {
  if (x != x) return x;
  if (x > 88.7228394f) return __builtin_huge_valf();
  if (x < -103.972084f) return 0.0f;
  // x = k·ln2 + r with |r| <= ln2/2; ln2 in two parts, the first short enough that k·ln2_hi is exact.
  const float t = rounded_mul(x, 1.44269502f);
  // k = t rounded half away from zero
  const auto k = static_cast<std::int32_t>(t < 0.0f ? rounded_sub(t, 0.5f) : rounded_add(t, 0.5f));
  const auto kf = static_cast<float>(k);
  const float r = rounded_sub(rounded_sub(x, rounded_mul(kf, 0.693145752f)), rounded_mul(kf, 1.42860677e-06f));
  // e^r by its Taylor polynomial of degree 7 (the remainder is below 1e-8 relative for |r| <= 0.347), Horner's rule.
  float p = 1.98412698e-04f;
  p = rounded_add(rounded_mul(p, r), 1.38888889e-03f);
  p = rounded_add(rounded_mul(p, r), 8.33333377e-03f);
  p = rounded_add(rounded_mul(p, r), 4.16666679e-02f);
  p = rounded_add(rounded_mul(p, r), 1.66666672e-01f);
  p = rounded_add(rounded_mul(p, r), 0.5f);
  p = rounded_add(rounded_mul(p, r), 1.0f);
  p = rounded_add(rounded_mul(p, r), 1.0f);
  // · 2^k in two exact steps (k in [-150, 128]; each half stays a normal power of two); only the last can round, to a
  // subnormal.
  const std::int32_t k1 = k / 2;
  return rounded_mul(rounded_mul(p, power_of_two(k1)), power_of_two(k - k1));
}

/** ln x: NaN for NaN and x < 0, -inf for ±0, +inf for +inf. */
ASRDEC_HD_INLINE float portable_log(float x) {
  if (x != x || x < 0.0f) return __builtin_nanf("");
  if (x == 0.0f) return -__builtin_huge_valf();
  if (x == __builtin_huge_valf()) return x;
  std::int32_t e = 0;
  if (x < 1.17549435e-38f) {  // subnormal: scale into the normal range (exact)
    x = rounded_mul(x, 8388608.0f);
    e = -23;
  }
  // x = m·2^e with m in [sqrt(1/2), sqrt(2)): f = m - 1 is exact, and small.
  const std::uint32_t bits = float_to_bits(x);
  e += static_cast<std::int32_t>(bits >> 23) - 127;
  std::uint32_t mantissa = (bits & 0x007fffffu) | 0x3f800000u;
  if (mantissa > 0x3fb504f3u) {  // m > sqrt(2): halve it
    mantissa -= 0x00800000u;
    e += 1;
  }
  const float f = rounded_sub(bits_to_float(mantissa), 1.0f);
  // ln(1 + f) = f - f²/2 + s·(f²/2 + R(s²)) with s = f / (2 + f), R the series 2/3 z + 2/5 z² + 2/7 z³ + 2/9 z⁴
  // (the next term is below 1e-9 relative for |s| <= 0.172); ln2 in two parts, as for exp.
  const float half_f2 = rounded_mul(rounded_mul(0.5f, f), f);
  const float s = rounded_div(f, rounded_add(2.0f, f));
  const float z = rounded_mul(s, s);
  float series = 2.22222224e-01f;
  series = rounded_add(rounded_mul(series, z), 2.85714298e-01f);
  series = rounded_add(rounded_mul(series, z), 4.00000006e-01f);
  series = rounded_add(rounded_mul(series, z), 6.66666687e-01f);
  series = rounded_mul(series, z);
  const auto ef = static_cast<float>(e);
  const float tail = rounded_add(rounded_mul(s, rounded_add(half_f2, series)), rounded_mul(ef, 9.05800061e-06f));
  return rounded_sub(rounded_mul(ef, 6.93138123e-01f), rounded_sub(rounded_sub(half_f2, tail), f));
}

}  // namespace asrdec::detail

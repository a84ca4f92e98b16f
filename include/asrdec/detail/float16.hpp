#pragma once
// Conversions between float and the 16-bit formats, shared by both executors. On the device they use the
// hardware conversions; on the host, exact bit manipulation (fp16/bf16 -> float is exact, float -> fp16/bf16
// rounds to nearest even, as the hardware does).

#include <cstdint>
#include <cstring>

#include "asrdec/core/dtype.hpp"
#include "asrdec/detail/hd.hpp"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

namespace asrdec::detail {

ASRDEC_HD_INLINE float bits_to_float(std::uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
#endif
}

ASRDEC_HD_INLINE std::uint32_t float_to_bits(float value) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(value);
#else
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
#endif
}

ASRDEC_HD_INLINE float half_bits_to_float(std::uint16_t h) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(h));
#else
  // Move exponent and mantissa into float position and rebias; subnormal halves become normal floats by
  // subtracting the implicit-one magic value, Inf/NaN get the all-ones float exponent.
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t magnitude = static_cast<std::uint32_t>(h & 0x7fffu) << 13;
  const std::uint32_t exponent = magnitude & 0x0f800000u;
  magnitude += (127u - 15u) << 23;
  if (exponent == 0x0f800000u) {
    magnitude += (128u - 16u) << 23;  // Inf or NaN
  } else if (exponent == 0) {
    magnitude += 1u << 23;  // subnormal: renormalise through a float subtraction (exact)
    return bits_to_float(float_to_bits(bits_to_float(magnitude) - bits_to_float(113u << 23)) | sign);
  }
  return bits_to_float(magnitude | sign);
#endif
}

ASRDEC_HD_INLINE float bf16_bits_to_float(std::uint16_t b) {
  return bits_to_float(static_cast<std::uint32_t>(b) << 16);
}

/** float -> fp16 bits, round to nearest even; overflow gives Inf, NaN stays NaN. Host and device. */
ASRDEC_HD_INLINE std::uint16_t float_to_half_bits(float value) {
  std::uint32_t x = float_to_bits(value);
  const std::uint32_t sign = x & 0x80000000u;
  x ^= sign;
  std::uint32_t out;
  if (x >= 0x47800000u) {  // |value| >= 65536, Inf or NaN
    out = x > 0x7f800000u ? 0x7e00u : 0x7c00u;
  } else if (x < 0x38800000u) {  // result is subnormal or zero: let a float addition do the rounding
    out = float_to_bits(bits_to_float(x) + 0.5f) - 0x3f000000u;
  } else {
    const std::uint32_t mantissa_odd = (x >> 13) & 1u;
    x += ((15u - 127u) << 23) + 0xfffu;
    x += mantissa_odd;
    out = x >> 13;
  }
  return static_cast<std::uint16_t>(out | (sign >> 16));
}

/** float -> bf16 bits, round to nearest even; NaN stays NaN. */
ASRDEC_HD_INLINE std::uint16_t float_to_bf16_bits(float value) {
  std::uint32_t x = float_to_bits(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<std::uint16_t>((x >> 16) | 0x0040u);
  }
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(x >> 16);
}

ASRDEC_HD_INLINE float to_float(float value) { return value; }
ASRDEC_HD_INLINE float to_float(half_t value) { return half_bits_to_float(value.bits); }
ASRDEC_HD_INLINE float to_float(bfloat16_t value) { return bf16_bits_to_float(value.bits); }

template <class T>
ASRDEC_HD_INLINE T from_float(float value);
template <>
ASRDEC_HD_INLINE float from_float<float>(float value) {
  return value;
}
template <>
ASRDEC_HD_INLINE half_t from_float<half_t>(float value) {
  return half_t{float_to_half_bits(value)};
}
template <>
ASRDEC_HD_INLINE bfloat16_t from_float<bfloat16_t>(float value) {
  return bfloat16_t{float_to_bf16_bits(value)};
}

}  // namespace asrdec::detail

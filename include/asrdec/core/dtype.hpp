#pragma once
/**
 * @file
 * Element types of tensors and files. fp16 and bf16 values are carried as raw 16-bit patterns
 * (asrdec::half_t, asrdec::bfloat16_t) so that public headers need no CUDA headers; conversion to float
 * happens inside the kernels and CPU loops (include/asrdec/detail/float16.hpp).
 */

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "asrdec/core/export.hpp"

namespace asrdec {

enum class DType : std::uint8_t { f32, f16, bf16, i32, i64 };

/** IEEE-754 binary16 bit pattern. */
struct ASRDEC_API half_t {
  std::uint16_t bits;
};
/** bfloat16 bit pattern (the upper half of a float32). */
struct ASRDEC_API bfloat16_t {
  std::uint16_t bits;
};

/** Bytes per element. */
constexpr std::size_t dtype_size(DType dtype) noexcept {
  switch (dtype) {
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::i64:
      return 8;
  }
  return 0;
}

/** "float32", "float16", "bfloat16", "int32" or "int64". */
ASRDEC_API const char* dtype_name(DType dtype) noexcept;

/** Parses the names dtype_name() returns plus the short forms fp32, fp16, bf16, f32, f16. Throws
 *  InvalidArgument listing the accepted names. */
ASRDEC_API DType parse_dtype(std::string_view name);

constexpr bool is_floating(DType dtype) noexcept {
  return dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16;
}

template <class T>
struct dtype_of;
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::f32;
};
template <>
struct dtype_of<half_t> {
  static constexpr DType value = DType::f16;
};
template <>
struct dtype_of<bfloat16_t> {
  static constexpr DType value = DType::bf16;
};
template <>
struct dtype_of<std::int32_t> {
  static constexpr DType value = DType::i32;
};
template <>
struct dtype_of<std::int64_t> {
  static constexpr DType value = DType::i64;
};
template <class T>
inline constexpr DType dtype_of_v = dtype_of<T>::value;

}  // namespace asrdec

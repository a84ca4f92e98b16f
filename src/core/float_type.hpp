#pragma once
// Internal: from a floating DType to its C++ element type, for code templated on it (CUDA kernels mostly): calls
// f(T{}) with T = float, half_t or bfloat16_t. One switch here instead of one at every templated launch.

#include "asrdec/core/dtype.hpp"
#include "asrdec/detail/float16.hpp"

namespace asrdec::detail {

/** The floating dtypes, for loops over every instantiation (loading kernels ahead of a capture). */
constexpr DType kFloatDTypes[] = {DType::f32, DType::f16, DType::bf16};

/** f(T{}) for the element type T of `dtype` (f16, bf16; anything else is float32). */
template <class F>
void with_float_type(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f16:
      f(half_t{});
      break;
    case DType::bf16:
      f(bfloat16_t{});
      break;
    default:
      f(float{});
  }
}

}  // namespace asrdec::detail

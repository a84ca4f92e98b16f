#pragma once
// Float arithmetic that rounds once per operation, alike on the host and the device: on the device the explicit
// round-to-nearest intrinsics, which the compiler never contracts into fused multiply-adds whatever its flags; on the
// host the plain operators, in translation units compiled with -ffp-contract=off. The shared step functions use them
// where the CPU and CUDA executors must compute the same bits (WFST costs, weighted fusion scores, portable exp and
// log).

#include "asrdec/detail/hd.hpp"

namespace asrdec::detail {

ASRDEC_HD_INLINE float rounded_add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

ASRDEC_HD_INLINE float rounded_sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

ASRDEC_HD_INLINE float rounded_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

ASRDEC_HD_INLINE float rounded_div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

}  // namespace asrdec::detail

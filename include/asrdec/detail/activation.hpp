#pragma once
// Elementwise functions of the joint and the LSTM cell, shared by both executors. The CUDA build uses the
// device's expf/tanhf, the host build the C library's; they may differ in the last bit, which is why CUDA
// results are compared with CPU results to a tolerance and not bit for bit.

#include <cmath>
#include <cstdint>

#include "asrdec/detail/hd.hpp"

namespace asrdec {

/** The joint network's nonlinearity, applied to enc_proj[t] + dec_proj. */
enum class JointActivation : std::int32_t { relu, tanh, sigmoid };

namespace detail {

ASRDEC_HD_INLINE float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

ASRDEC_HD_INLINE float activate(JointActivation activation, float x) {
  switch (activation) {
    case JointActivation::relu:
      return x > 0.0f ? x : 0.0f;
    case JointActivation::tanh:
      return tanhf(x);
    case JointActivation::sigmoid:
      return sigmoid(x);
  }
  return x;
}

}  // namespace detail
}  // namespace asrdec

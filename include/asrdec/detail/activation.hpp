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

/** An LSTM cell's new state. */
struct LstmCellState {
  float c;
  float h;
};

/** The LSTM cell update from the four gate pre-activations (input, forget, cell, output) and the old c; every
 *  executor's LSTM step calls it, so the arithmetic and its order are the same everywhere. */
ASRDEC_HD_INLINE LstmCellState lstm_cell(float input_gate, float forget_gate, float cell_gate, float output_gate,
                                         float c) {
  const float input = sigmoid(input_gate);
  const float forget = sigmoid(forget_gate);
  const float cell = tanhf(cell_gate);
  const float output = sigmoid(output_gate);
  const float next_c = forget * c + input * cell;
  return LstmCellState{next_c, output * tanhf(next_c)};
}

}  // namespace detail
}  // namespace asrdec

#pragma once
// Internal: the built-in LSTM prediction network. The weights are prepared once on the host (rounded to the
// weight dtype, layer 0's input projection tabulated per label) and then kept in host memory (CPU) or uploaded
// (CUDA, see predictor_cuda.cpp).

#include <vector>

#include "asrdec/config.hpp"
#include "asrdec/transducer/transducer_model.hpp"

namespace asrdec::detail {

struct LstmHostWeights {
  std::int64_t layers = 0;
  std::int64_t hidden = 0;      // P
  std::int64_t joint = 0;       // J
  std::int64_t vocab_rows = 0;  // V + 1
  DType dtype = DType::f32;
  /** [V+1, 4P]: W_ih0 · emb[label] + b_ih0 + b_hh0, in fp32 (the blank row holds the biases alone). */
  std::vector<float> input_table;
  /** Per layer l >= 1: W_ih [4P, P]; index 0 unused. */
  std::vector<std::vector<float>> weight_ih;
  /** Per layer: W_hh [4P, P]. */
  std::vector<std::vector<float>> weight_hh;
  /** Per layer l >= 1: b_ih + b_hh [4P]; index 0 unused (inside input_table). */
  std::vector<std::vector<float>> bias;
  std::vector<float> projection_weight;  // [J, P]
  std::vector<float> projection_bias;    // [J]

  std::int64_t state_size() const { return 2 * layers * hidden; }  // per layer: h then c
};

LstmHostWeights prepare_lstm(const LstmPredictorWeights& weights, std::int32_t blank_id, DType dtype);

/** The LSTM cell on one row of pre-activations (gate blocks i, f, g, o), updating h and c in place. */
void lstm_cell_row(const float* gates, float* h, float* c, std::int64_t hidden);

#if ASRDEC_WITH_CUDA
std::shared_ptr<TransducerPredictor> make_lstm_predictor_cuda(LstmHostWeights weights, Device device);
#endif

}  // namespace asrdec::detail

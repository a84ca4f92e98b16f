#pragma once
// Internal: the built-in stateless prediction network (NeMo's StatelessNet), prepared on the host.

#include <vector>

#include "asrdec/config.hpp"
#include "asrdec/transducer/transducer_model.hpp"

namespace asrdec::detail {

struct StatelessHostWeights {
  std::int64_t context = 0;     // C labels, position 0 = most recent
  std::int64_t vocab_rows = 0;  // V + 1
  std::int64_t joint = 0;       // J
  std::int64_t width = 0;       // sum of the embedding widths
  std::int32_t blank = 0;
  bool layer_norm = false;
  DType dtype = DType::f32;
  std::vector<std::vector<float>> embeddings;  // per position [V+1, E_i], blank rows zero
  std::vector<std::int64_t> offsets;           // start of each position's slice in the concatenation
  std::vector<float> projection_weight;        // [J, width]
  std::vector<float> projection_bias;          // [J]

  /** State: the previous C-1 labels as floats, oldest first (all blank at the start). */
  std::int64_t state_size() const { return context - 1 > 0 ? context - 1 : 1; }
};

StatelessHostWeights prepare_stateless(const StatelessPredictorWeights& weights, std::int32_t blank_id, DType dtype);

/** The embedding concatenation (and layer norm) for one step: `previous` holds C-1 labels, oldest first. */
void stateless_features(const StatelessHostWeights& w, std::int32_t label, const float* previous, float* features);

constexpr float kLayerNormEpsilon = 1e-5f;

#if ASRDEC_WITH_CUDA
std::shared_ptr<TransducerPredictor> make_stateless_predictor_cuda(StatelessHostWeights weights, Device device);
#endif

}  // namespace asrdec::detail

#pragma once
// Internal: kernels of the built-in predictors. For many rows, elementwise kernels around cuBLAS matrix products;
// for a few rows (the shapes joint_gemv_fits accepts, transducer/model/joint_gemv_shape.hpp), fused kernels that do
// the matrix products themselves: an LSTM step in one kernel per layer plus one for the projection, where the other
// path takes five per layer. Every kernel writes a row only where mask[b] != 0 (the masked-update rule of
// PredictorSession::step) unless it writes scratch that no one reads for unmasked rows.

#include <cuda_runtime.h>

#include <cstdint>

#include "asrdec/core/dtype.hpp"

namespace asrdec {
class PredictorSession;
}

namespace asrdec::detail {

/** x[b, k] = h[b * stride + k] rounded to `dtype` (the operand of the next GEMM), for b < batch, k < width. */
void launch_round_rows(const float* source, std::int64_t source_stride, void* target, DType dtype, std::int64_t batch,
                       std::int64_t width, cudaStream_t stream);

struct LstmCellParams {
  const std::int32_t* labels;
  const std::int32_t* mask;
  const float* input_table;  ///< [V+1, 4P] layer 0 (null for layers >= 1)
  std::int32_t vocab_rows;
  const float* input_gemm;  ///< [B, 4P] W_ih · x (layers >= 1)
  const float* bias;        ///< [4P] b_ih + b_hh (layers >= 1)
  const float* recurrent;   ///< [B, 4P] W_hh · round(h)
  float* state;             ///< [B, state_stride]; this layer's h at h_offset, c right after it
  std::int64_t state_stride;
  std::int64_t h_offset;
  void* next_input;  ///< [B, P] round(h') in the weight dtype, for the layer above / the projection
  DType dtype;
  std::int64_t batch;
  std::int64_t hidden;
};
void launch_lstm_cell(const LstmCellParams& params, cudaStream_t stream);

/** output[b, j] = product[b, j] + bias[j] for masked rows. */
void launch_masked_bias(const float* product, const float* bias, const std::int32_t* mask, float* output,
                        std::int64_t batch, std::int64_t width, cudaStream_t stream);

struct StatelessParams {
  const std::int32_t* labels;
  const std::int32_t* mask;
  float* state;  ///< [B, state_size] previous labels, oldest first
  std::int64_t state_size;
  const float* tables;                ///< all embedding tables, concatenated: position i at table_offsets[i]
  const std::int64_t* table_offsets;  ///< device array [context]
  const std::int64_t* slice_offsets;  ///< device array [context + 1]: start of each slice in the features
  std::int32_t context;
  std::int32_t vocab_rows;
  std::int32_t layer_norm;
  void* features;  ///< [B, width] in the weight dtype
  DType dtype;
  std::int64_t batch;
  std::int64_t width;
};
/** Allows the features kernel the dynamic shared memory `width` floats need (beyond the 48 KiB default). Call
 *  once per session, outside any capture. */
void prepare_stateless_features(std::int64_t width);
/** Features of one step (embeddings of the new and previous labels, layer norm, rounding) for masked rows. */
void launch_stateless_features(const StatelessParams& params, cudaStream_t stream);
/** Shifts the new label into the state of masked rows. */
void launch_stateless_shift(const StatelessParams& params, cudaStream_t stream);

/** One LSTM layer of a step for a few rows, in one kernel: the gates' matrix products (W_ih · x for layers >= 1,
 *  W_hh · round(h)) summed in the order lstm_cell_kernel sums cuBLAS's, and the cell update of masked rows. c is
 *  updated in place; h' goes to `h_next`, not to the state, because other blocks still read the old h: the
 *  projection kernel commits it. round(h') (round(h) for unmasked rows) goes to `next_input`, which must not be
 *  `below`. */
struct LstmFusedLayer {
  const std::int32_t* labels;
  const std::int32_t* mask;
  const float* input_table;  ///< [V+1, 4P] layer 0 (null for layers >= 1)
  const void* weight_ih;     ///< [4P, P] layers >= 1
  const float* bias;         ///< [4P] b_ih + b_hh, layers >= 1
  const void* below;         ///< [B, P] round(h') of the layer below, layers >= 1 (null for layer 0)
  const void* weight_hh;     ///< [4P, P]
  float* state;              ///< [B, state_stride]; this layer's h at h_offset (read), c right after it (updated)
  std::int64_t state_stride;
  std::int64_t h_offset;
  float* h_next;     ///< [B, P] h' of masked rows, h of the others
  void* next_input;  ///< [B, P] in the weight dtype
  DType dtype;
  std::int64_t batch;
  std::int64_t hidden;  ///< P
};
void launch_lstm_fused_layer(const LstmFusedLayer& params, cudaStream_t stream);
/** Floats of shared memory lstm_fused_layer needs: every row's round(h), and for layers >= 1 the layer below's. */
constexpr std::int64_t lstm_fused_layer_shared_floats(std::int64_t batch, std::int64_t hidden, bool has_below) {
  return batch * hidden * (has_below ? 2 : 1);
}

/** The projection of a few rows in one kernel: output[b, j] = W[j] · input[b] + bias[j] for masked rows, and, for an
 *  LSTM, each layer's h' from `h_next` ([layers, B, hidden]) into the state of masked rows. */
struct FusedProjection {
  const std::int32_t* mask;
  const void* input;   ///< [B, width] in the weight dtype
  const void* weight;  ///< [joint, width]
  const float* bias;   ///< [joint]
  float* output;       ///< [B, joint]
  DType dtype;
  std::int64_t batch;
  std::int64_t width;
  std::int64_t joint;
  const float* h_next;  ///< LSTM: [layers, B, hidden]; null for a stateless predictor
  float* state;
  std::int64_t state_stride;
  std::int64_t layers;
  std::int64_t hidden;
};
void launch_fused_projection(const FusedProjection& params, cudaStream_t stream);

/** A whole LSTM predictor step of a few rows by the fused kernels' bodies (lstm_fused.cuh), for a kernel that runs it
 *  itself (greedy decoding's persistent kernel): its layers in order, then the projection, each one a grid-wide step
 *  that the next must wait for. */
struct LstmFusedStep {
  const LstmFusedLayer* layers;  ///< [layer_count] in device memory (their fields are read by every block)
  std::int32_t layer_count;
  FusedProjection projection;
  std::int64_t shared_floats;  ///< the most shared memory any of its steps needs, in floats
};

/** The fused step of an LSTM CUDA session for `batch` rows over these arrays (the arguments of
 *  PredictorSession::step), or false if `session` is not one or the shape does not fit the fused kernels
 *  (joint_gemv_fits). Builds the step's device-side parameters in the session (outside any capture). */
bool lstm_fused_step_of(PredictorSession& session, const std::int32_t* labels, const std::int32_t* mask, float* state,
                        float* output, std::int64_t batch, LstmFusedStep* step);

/** Loads the kernels on the current device (outside any capture); returns the shared memory the fused kernels may
 *  use there, for joint_gemv_fits (the LSTM layer kernel needs batch · P floats, twice that for layers >= 1). */
std::int64_t preload_predictor_kernels();

}  // namespace asrdec::detail

#pragma once
// Internal: the CUDA kernels of the built-in Transformer decoder step (transformer_step_cuda.cpp). A reference
// implementation, not a fast one: one thread block per row does the whole step with plain dot products, in the
// CPU session's order of operations, so the two agree to float rounding (exp and log differ in the last bits).

#include <cuda_runtime_api.h>

#include <cstdint>

namespace asrdec::detail {

/** Device pointers of one layer's parameters (weights [out, in] row-major, biases [out]). */
struct TransformerLayerRef {
  const float *self_norm_w, *self_norm_b, *cross_norm_w, *cross_norm_b, *ffn_norm_w, *ffn_norm_b;
  const float *q_w, *q_b, *k_w, *k_b, *v_w, *v_b, *o_w, *o_b;
  const float *cq_w, *cq_b, *ck_w, *ck_b, *cv_w, *cv_b, *co_w, *co_b;
  const float *in_w, *in_b, *out_w, *out_b;
};

struct TransformerModelRef {
  const float* tokens;     ///< [V, D]
  const float* positions;  ///< [P, D]
  const float *final_norm_w, *final_norm_b;
  const float *cls_w, *cls_b;         ///< [V, D], [V]
  const TransformerLayerRef* layers;  ///< [L], device memory
  std::int32_t vocab, dim, encoder_dim, ffn, heads, max_positions, num_layers;
};

/** One session's device state. Caches: [rows, L, 2, P, D] per buffer; cross keys/values: [B, L, 2, T, D]. */
struct TransformerSessionRef {
  float* cache[2];
  std::int32_t* utterance[2];  ///< [rows] the utterance each row decodes
  float* cross;
  const std::int32_t* frames;  ///< [B] valid frames per utterance
  std::int32_t max_frames;     ///< T
  float* scratch;              ///< [rows, scratch_floats]
  std::int64_t scratch_floats;
};

/** Cross-attention keys and values of every valid frame: encoder [B, T, E] with element strides. */
void launch_transformer_cross(const TransformerModelRef& m, const TransformerSessionRef& s, const float* encoder,
                              std::int64_t stride_b, std::int64_t stride_t, std::int64_t stride_e, std::int32_t batch,
                              cudaStream_t stream);

/** Rows r < rows with active[r]: cache `to` takes row parents[r]'s positions < positions[r] from cache `from`
 *  (and its utterance). With `identity` (the prompt steps of start()), rows keep their own cache in `to`. */
void launch_transformer_gather(const TransformerModelRef& m, const TransformerSessionRef& s, int from, int to,
                               const std::int32_t* parents, const std::int32_t* positions, const std::int32_t* active,
                               std::int32_t rows, cudaStream_t stream);

/** Rows r < rows with active[r]: feed tokens[r] at positions[r] through cache `buffer`; rows with emit[r] (all when
 *  emit is null) write the log-probabilities of the next token to scores[r * V ...]. */
void launch_transformer_rows(const TransformerModelRef& m, const TransformerSessionRef& s, int buffer,
                             const std::int32_t* tokens, const std::int32_t* positions, const std::int32_t* active,
                             const std::int32_t* emit, std::int32_t rows, float* scores, cudaStream_t stream);

/** Largest model width the row kernel holds in shared memory. */
constexpr std::int32_t kTransformerCudaMaxDim = 2048;

}  // namespace asrdec::detail

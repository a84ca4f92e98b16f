#pragma once
// Internal (CUDA): one block's part of a full-vocabulary n-gram query (NGPU-LM): a (state, vocabulary slice), run by
// the shared steps of ngram_slice_query (ngram_step.hpp; a CPU test runs the same steps with simulated threads). The
// backoff sums are accumulated in the same order as the CPU loop (longest context first), which keeps every score
// bit-identical to the CPU executor. A device function, so that the query kernel (ngram_kernels.cu) and a decoder's
// persistent kernel (greedy decoding's, beam search's) run the same code.

#include <cuda_runtime.h>

#include <cstdint>

#include "lm/fusion_step.hpp"
#include "lm/ngram_kernels.hpp"
#include "lm/ngram_step.hpp"

namespace asrdec::detail {

__device__ __forceinline__ std::int32_t ngram_clamp_state(const NgramLmRef& lm, std::int32_t state) {
  return state < 0 ? 0 : (state >= lm.states ? lm.states - 1 : state);
}

/** The full-vocabulary query of row b's state, for the tokens of [lo, lo + slice): scores[b, v] and
 *  next_states[b, v], by ngram_slice_query (ngram_step.hpp) with the block's threads. Every thread of the block calls
 *  it (it holds barriers). */
__device__ inline void ngram_advance_slice(const NgramLmRef& lm, const std::int32_t* states, std::int64_t b,
                                           float* scores, std::int32_t* next_states, std::int32_t lo,
                                           std::int32_t slice) {
  __shared__ NgramSliceQuery query;
  const std::int64_t V = lm.vocab_size;
  ngram_slice_query(
      lm, ngram_clamp_state(lm, states[b]), lo, slice, scores + b * V, next_states + b * V, query,
      static_cast<int>(blockDim.x), [](const auto& f) { f(static_cast<int>(threadIdx.x)); }, [] { __syncthreads(); });
}

/** One fused model's full-vocabulary queries of the rows `mask` names (every row when null), as launch_ngram_advance
 *  makes them, for a persistent kernel: (row, vocabulary slice) items spread over the grid's blocks. Every thread of
 *  every block calls it; nothing when the model is absent (`source.scores` null). */
__device__ inline void ngram_advance_on_grid(const NgramLmRef& model, const FusionSource& source, std::int32_t slice,
                                             std::int64_t rows, const std::int32_t* mask) {
  if (source.scores == nullptr) return;  // no such model: the same in every block
  const std::int64_t slices = (model.vocab_size + slice - 1) / slice;
  for (std::int64_t item = blockIdx.x; item < slices * rows; item += gridDim.x) {
    const std::int64_t b = item / slices;
    if (mask != nullptr && mask[b] == 0) continue;  // the same in every thread of the block
    ngram_advance_slice(model, source.state, b, const_cast<float*>(source.scores),
                        const_cast<std::int32_t*>(source.next), static_cast<std::int32_t>(item - b * slices) * slice,
                        slice);
  }
}

}  // namespace asrdec::detail

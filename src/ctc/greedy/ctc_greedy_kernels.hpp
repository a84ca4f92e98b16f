#pragma once
// Internal: CUDA kernels of CTC greedy decoding. Both kernels read the per-call arguments from device memory
// (CtcGreedyArgs), so that one captured graph serves every call: only the small argument block is copied
// before each replay.

#include <cuda_runtime.h>

#include <cstdint>

#include "asrdec/core/dtype.hpp"
#include "asrdec/lm/ngram_lm.hpp"

namespace asrdec::detail {

struct CtcGreedyArgs {
  const void* logprobs;
  std::int64_t stride_b;
  std::int64_t stride_t;
  std::int64_t stride_v;
  const void* lengths;
  std::int64_t lengths_stride;
  std::int32_t lengths_are_int64;
  std::int32_t batch;
  std::int32_t frames;
  std::int32_t columns;
  std::int32_t blank;
  std::int32_t check_values;
};

/** Buffers that stay fixed for the lifetime of a captured graph. */
struct CtcGreedyWorkspace {
  const CtcGreedyArgs* args;            ///< device copy of the call's arguments
  std::int32_t* frame_token;            ///< [max_batch, row_stride] argmax per frame
  float* frame_logprob;                 ///< [max_batch, row_stride] max log-prob per frame
  std::int32_t* tokens;                 ///< [max_batch, row_stride]
  std::int32_t* timestamps;             ///< [max_batch, row_stride]
  float* token_logprobs;                ///< [max_batch, row_stride]
  std::int32_t* token_counts;           ///< [max_batch]
  float* scores;                        ///< [max_batch]
  unsigned long long* first_bad_value;  ///< packed (b, t, v, kind); all ones when none
  unsigned int* first_bad_length;       ///< smallest b with a length outside [0, T]; all ones when none
  std::int64_t row_stride;
  // Fusion (use_lm or use_boost != 0): the collapse walks each utterance's frames in order, re-choosing emitted
  // tokens by log p + α·LM + β·boost.
  float* lm_scores;     ///< [max_batch] weighted LM score per utterance
  float* boost_scores;  ///< [max_batch] weighted boosting score per utterance
  NgramLmRef lm;
  NgramLmRef boost;
  const std::int32_t* boost_roots;  ///< [boost_lists] the root of each phrase list
  std::int64_t boost_lists;
  float lm_weight;
  float boost_weight;
  std::int32_t use_lm;
  std::int32_t use_boost;
};

/** Enqueues the whole decode: status reset, per-frame argmax, then per-utterance collapse. Grid sizes are
 *  fixed by the caller (grid-stride loops cover any batch), which keeps a captured graph valid for any call
 *  within the buffers' limits. */
void launch_ctc_greedy(DType dtype, const CtcGreedyWorkspace& workspace, int argmax_blocks, int collapse_blocks,
                       cudaStream_t stream);

void preload_ctc_greedy_kernels();

}  // namespace asrdec::detail

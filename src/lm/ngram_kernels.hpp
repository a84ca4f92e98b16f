#pragma once
// Internal: CUDA kernels of the n-gram LM queries. Launch shapes depend only on the batch size and the
// vocabulary, so the launches can be captured into a CUDA graph by a fused decoder.

#include <cuda_runtime.h>

#include <cstdint>

#include "asrdec/lm/boosting_tree.hpp"
#include "asrdec/lm/ngram_lm.hpp"
#include "lm/fusion_step.hpp"

namespace asrdec::detail {

/** scores[b, v], next_states[b, v] for every state in `states` [batch] (only rows with mask[b] != 0 when a mask
 *  is given: a fused decoder re-queries just the utterances that emitted). `multiprocessors` sizes the grid: with
 *  few states the vocabulary is split across blocks so that the whole GPU works on one query. */
void launch_ngram_advance(const NgramLmRef& lm, const std::int32_t* states, std::int64_t batch, float* scores,
                          std::int32_t* next_states, int multiprocessors, cudaStream_t stream,
                          const std::int32_t* mask = nullptr);

/** The full-vocabulary queries of a decoder's fused models — the LM and the boosting tree, either may be null — for
 *  `rows` rows from the states `fusion` names, into its scores and next states (only rows with mask[r] != 0 when a
 *  mask is given). Every fused decoder (greedy, beam and CTC beam) queries through this. */
void launch_fused_queries(const NgramLm* lm, const BoostingTree* boost, const FusionRef& fusion, std::int64_t rows,
                          int multiprocessors, cudaStream_t stream, const std::int32_t* mask = nullptr);

/** out[b] = ln p(</s> | states[b]). */
void launch_ngram_final_scores(const NgramLmRef& lm, const std::int32_t* states, std::int64_t batch, float* out,
                               cudaStream_t stream);

}  // namespace asrdec::detail

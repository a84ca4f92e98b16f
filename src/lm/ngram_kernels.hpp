#pragma once
// Internal: CUDA kernels of the n-gram LM queries. Launch shapes depend only on the batch size and the
// vocabulary, so the launches can be captured into a CUDA graph by a fused decoder.

#include <cuda_runtime.h>

#include <cstdint>

#include "asrdec/lm/boosting_tree.hpp"
#include "asrdec/lm/ngram_lm.hpp"
#include "core/environment_switch.hpp"
#include "lm/fusion_step.hpp"

namespace asrdec::detail {

/** scores[b, v], next_states[b, v] for every state in `states` [batch] (only rows with mask[b] != 0 when a mask
 *  is given: a fused decoder re-queries just the utterances that emitted). `multiprocessors` sizes the grid: with
 *  few states the vocabulary is split across blocks so that the whole GPU works on one query. */
void launch_ngram_advance(const NgramLmRef& lm, const std::int32_t* states, std::int64_t batch, float* scores,
                          std::int32_t* next_states, int multiprocessors, cudaStream_t stream,
                          const std::int32_t* mask = nullptr);

/** The smallest vocabulary slice a block of a query takes: below this the chain walk costs more than the scatter. */
constexpr std::int32_t kNgramMinSlice = 256;

/** The vocabulary slice of one block of a query of `batch` states: enough blocks to fill the GPU twice over (a small
 *  batch splits the vocabulary, a large one does not), no slice under kNgramMinSlice. */
constexpr std::int32_t ngram_advance_slice_size(std::int32_t vocab_size, std::int64_t batch, int multiprocessors) {
  const std::int64_t rows = batch > 0 ? batch : 1;
  const std::int64_t wanted_slices = (2 * static_cast<std::int64_t>(multiprocessors) + rows - 1) / rows;
  const std::int64_t max_slices = (static_cast<std::int64_t>(vocab_size) + kNgramMinSlice - 1) / kNgramMinSlice;
  std::int64_t slices = wanted_slices < max_slices ? wanted_slices : max_slices;
  slices = slices > 1 ? slices : 1;
  const auto slice = static_cast<std::int32_t>((vocab_size + slices - 1) / slices);
  return slice > 1 ? slice : 1;
}

/** The full-vocabulary queries of a decoder's fused models — the LM and the boosting tree, either may be null — for
 *  `rows` rows from the states `fusion` names, into its scores and next states (only rows with mask[r] != 0 when a
 *  mask is given). Every fused decoder (greedy, beam and CTC beam) queries through this. */
void launch_fused_queries(const NgramLm* lm, const BoostingTree* boost, const FusionRef& fusion, std::int64_t rows,
                          int multiprocessors, cudaStream_t stream, const std::int32_t* mask = nullptr);

/** Whether a decoder's program runs its fused queries beside the model work that neither reads nor writes what they do
 *  (the predictor step after a label, the joint of a beam step), on a side stream (core/cuda/stream_fork.hpp): their
 *  latency then hides behind that work instead of adding to every step. On unless ASRDEC_QUERIES_BESIDE=0, which puts
 *  them back in line (the same results either way), for measuring the difference. Read when a decoder builds its
 *  program. */
inline bool fused_queries_beside_enabled() { return environment_switch("ASRDEC_QUERIES_BESIDE", true); }

/** out[b] = ln p(</s> | states[b]). */
void launch_ngram_final_scores(const NgramLmRef& lm, const std::int32_t* states, std::int64_t batch, float* out,
                               cudaStream_t stream);

}  // namespace asrdec::detail

#pragma once
// Internal (CUDA): one block's part of a full-vocabulary n-gram query (NGPU-LM): a (state, vocabulary slice). The
// block walks the state's backoff chain from START (which lists every token) up to the state itself and, level by
// level, scatters the arcs whose labels fall in its slice, so a longer context overwrites a shorter one. The backoff
// sums are accumulated in the same order as the CPU loop and the shared step functions (longest context first), which
// keeps every score bit-identical to the CPU executor. A device function, so that the query kernel
// (ngram_kernels.cu) and a decoder's persistent kernel (greedy decoding's) run the same code.

#include <cuda_runtime.h>

#include <cstdint>

#include "lm/ngram_kernels.hpp"
#include "lm/ngram_step.hpp"

namespace asrdec::detail {

// Contexts deeper than this are walked with the per-token search instead (no realistic LM comes close).
constexpr int kNgramMaxChain = 32;

__device__ __forceinline__ std::int32_t ngram_clamp_state(const NgramLmRef& lm, std::int32_t state) {
  return state < 0 ? 0 : (state >= lm.states ? lm.states - 1 : state);
}

/** The full-vocabulary query of row b's state, for the tokens of [lo, lo + slice): scores[b, v] and
 *  next_states[b, v]. Every thread of the block calls it (it holds barriers).
 *
 *  Latency is what counts (a decoder waits for the query between two steps): one thread walks the backoff chain (the
 *  only dependent walk); then every level's three binary searches (the slice's first and last arc, the <unk> arc) run
 *  at once, a thread each, where one thread searched them level after level; then the levels are scattered. */
__device__ inline void ngram_advance_slice(const NgramLmRef& lm, const std::int32_t* states, std::int64_t b,
                                           float* scores, std::int32_t* next_states, std::int32_t lo,
                                           std::int32_t slice) {
  __shared__ std::int32_t chain[kNgramMaxChain];
  __shared__ float chain_backoff[kNgramMaxChain];
  __shared__ std::int32_t range_first[kNgramMaxChain];
  __shared__ std::int32_t range_last[kNgramMaxChain];
  __shared__ std::int32_t unk_arc[kNgramMaxChain];
  __shared__ int chain_length;

  const std::int32_t V = lm.vocab_size;
  const std::int32_t hi = min(V, lo + slice);
  const std::int32_t state = ngram_clamp_state(lm, states[b]);
  float* row_scores = scores + b * V;
  std::int32_t* row_next = next_states + b * V;

  if (threadIdx.x == 0) chain_length = backoff_chain(lm, state, chain, chain_backoff, kNgramMaxChain);
  __syncthreads();
  const int length = chain_length;

  if (length < 0) {
    for (std::int32_t v = lo + static_cast<std::int32_t>(threadIdx.x); v < hi; v += blockDim.x) {
      const NgramStep step = score_token(lm, state, v);
      row_scores[v] = step.score;
      row_next[v] = step.next;
    }
  } else {
    for (int t = static_cast<int>(threadIdx.x); t < 3 * length; t += static_cast<int>(blockDim.x)) {
      const int level = t / 3;
      const std::int32_t begin = lm.arc_begin[chain[level]];
      const std::int32_t end = lm.arc_begin[chain[level] + 1];
      switch (t - 3 * level) {
        case 0:
          range_first[level] = lower_bound_arc(lm, begin, end, lo);
          break;
        case 1:
          range_last[level] = lower_bound_arc(lm, begin, end, hi);
          break;
        default:
          unk_arc[level] = find_arc(lm, begin, end, V);
      }
    }
    __syncthreads();
    // Shortest context (START) first; each longer context overwrites the labels it lists.
    for (int level = length - 1; level >= 0; --level) {
      const float backoff = chain_backoff[level];
      for (std::int32_t a = range_first[level] + static_cast<std::int32_t>(threadIdx.x); a < range_last[level];
           a += blockDim.x) {
        const std::int32_t label = lm.arc_label[a];
        row_scores[label] = lm.arc_weight[a] + backoff;
        row_next[label] = lm.arc_target[a];
      }
      __syncthreads();
    }
    // Tokens the model does not list score as <unk> in this context.
    NgramStep unk{0.0f, 0};
    bool have_unk = false;
    for (std::int32_t v = lo + static_cast<std::int32_t>(threadIdx.x); v < hi; v += blockDim.x) {
      if (lm.missing[v]) {
        if (!have_unk) {
          unk = score_from_levels(lm, chain_backoff, unk_arc, chain, length);
          unk.score += lm.missing_offset;
          have_unk = true;
        }
        row_scores[v] = unk.score;
        row_next[v] = unk.next;
      }
    }
  }
  __syncthreads();  // the shared chain is rewritten for the next state
}

}  // namespace asrdec::detail

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

// First arc of [begin, end) whose label is >= label.
__device__ __forceinline__ std::int32_t ngram_lower_bound_label(const NgramLmRef& lm, std::int32_t begin,
                                                                std::int32_t end, std::int32_t label) {
  while (begin < end) {
    const std::int32_t middle = begin + (end - begin) / 2;
    if (lm.arc_label[middle] < label) {
      begin = middle + 1;
    } else {
      end = middle;
    }
  }
  return begin;
}

/** The full-vocabulary query of row b's state, for the tokens of [lo, lo + slice): scores[b, v] and
 *  next_states[b, v]. Every thread of the block calls it (it holds barriers). */
__device__ inline void ngram_advance_slice(const NgramLmRef& lm, const std::int32_t* states, std::int64_t b,
                                           float* scores, std::int32_t* next_states, std::int32_t lo,
                                           std::int32_t slice) {
  __shared__ std::int32_t chain[kNgramMaxChain];
  __shared__ float chain_backoff[kNgramMaxChain];
  __shared__ int chain_length;
  __shared__ float unk_score;
  __shared__ std::int32_t unk_next;

  const std::int32_t V = lm.vocab_size;
  const std::int32_t hi = min(V, lo + slice);
  const std::int32_t state = ngram_clamp_state(lm, states[b]);
  float* row_scores = scores + b * V;
  std::int32_t* row_next = next_states + b * V;

  if (threadIdx.x == 0) {
    // The backoff chain, longest context first, with the backoff sum that applies at each level.
    int length = 0;
    float backoff = 0.0f;
    std::int32_t s = state;
    for (;;) {
      if (length == kNgramMaxChain) {
        length = -1;
        break;
      }
      chain[length] = s;
      chain_backoff[length] = backoff;
      ++length;
      if (lm.backoff_to[s] < 0) break;  // a root lists every label
      backoff += lm.backoff_weight[s];
      s = lm.backoff_to[s];
    }
    chain_length = length;
    const NgramStep unk = score_label(lm, state, V);
    unk_score = unk.score + lm.missing_offset;
    unk_next = unk.next;
  }
  __syncthreads();
  const int length = chain_length;

  if (length < 0) {
    for (std::int32_t v = lo + static_cast<std::int32_t>(threadIdx.x); v < hi; v += blockDim.x) {
      const NgramStep step = score_token(lm, state, v);
      row_scores[v] = step.score;
      row_next[v] = step.next;
    }
  } else {
    // Shortest context (START) first; each longer context overwrites the labels it lists.
    for (int level = length - 1; level >= 0; --level) {
      const std::int32_t s = chain[level];
      const float backoff = chain_backoff[level];
      const std::int32_t first = ngram_lower_bound_label(lm, lm.arc_begin[s], lm.arc_begin[s + 1], lo);
      const std::int32_t last = ngram_lower_bound_label(lm, first, lm.arc_begin[s + 1], hi);
      for (std::int32_t a = first + static_cast<std::int32_t>(threadIdx.x); a < last; a += blockDim.x) {
        const std::int32_t label = lm.arc_label[a];
        row_scores[label] = lm.arc_weight[a] + backoff;
        row_next[label] = lm.arc_target[a];
      }
      __syncthreads();
    }
    // Tokens the model does not list score as <unk> in this context.
    for (std::int32_t v = lo + static_cast<std::int32_t>(threadIdx.x); v < hi; v += blockDim.x) {
      if (lm.missing[v]) {
        row_scores[v] = unk_score;
        row_next[v] = unk_next;
      }
    }
  }
  __syncthreads();  // the shared chain is rewritten for the next state
}

}  // namespace asrdec::detail

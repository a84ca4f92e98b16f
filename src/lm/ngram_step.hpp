#pragma once
// The n-gram query rules, shared by the CPU loop and the CUDA kernel: arcs of a state are sorted by label; a
// token not found in a context is looked up in the context's backoff state with the backoff weight added,
// down to a root (a state without a backoff link: START of an LM, the root of each phrase list of a boosting
// tree), which holds every label. Adding in this order (backoffs from the longest context down, then the
// arc weight) makes every path bit-identical between executors.

#include <cstdint>

#include "asrdec/detail/hd.hpp"
#include "asrdec/lm/ngram_lm.hpp"

namespace asrdec::detail {

/** Index of the arc with `label` among arcs [begin, end), or -1. */
ASRDEC_HD_INLINE std::int32_t find_arc(const NgramLmRef& lm, std::int32_t begin, std::int32_t end, std::int32_t label) {
  while (begin < end) {
    const std::int32_t middle = begin + (end - begin) / 2;
    const std::int32_t found = lm.arc_label[middle];
    if (found == label) return middle;
    if (found < label) {
      begin = middle + 1;
    } else {
      end = middle;
    }
  }
  return -1;
}

struct NgramStep {
  float score;
  std::int32_t next;
};

/** Score of one label (a token, or V for <unk>) from `state`, and the state it leads to. */
ASRDEC_HD_INLINE NgramStep score_label(const NgramLmRef& lm, std::int32_t state, std::int32_t label) {
  float backoff = 0.0f;
  for (;;) {
    const std::int32_t arc = find_arc(lm, lm.arc_begin[state], lm.arc_begin[state + 1], label);
    if (arc >= 0) {
      return NgramStep{lm.arc_weight[arc] + backoff, lm.arc_target[arc]};
    }
    const std::int32_t to = lm.backoff_to[state];
    if (to < 0) {
      return NgramStep{-__builtin_huge_valf(), state};  // unreachable: a root holds every label
    }
    backoff += lm.backoff_weight[state];
    state = to;
  }
}

/** First arc of [begin, end) whose label is >= label (arcs sorted by label). */
ASRDEC_HD_INLINE std::int32_t lower_bound_arc(const NgramLmRef& lm, std::int32_t begin, std::int32_t end,
                                              std::int32_t label) {
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

/** The backoff chain of `state`, longest context first (the state, its backoff state, ..., a root), into chain[],
 *  and the backoff sum that applies at each level into backoff_sum[] (summed in score_label's order, so a score
 *  built from it has score_label's bits). Returns its length, or -1 if it is longer than `capacity`. */
ASRDEC_HD_INLINE int backoff_chain(const NgramLmRef& lm, std::int32_t state, std::int32_t* chain, float* backoff_sum,
                                   int capacity) {
  int length = 0;
  float backoff = 0.0f;
  for (std::int32_t s = state;;) {
    if (length == capacity) return -1;
    chain[length] = s;
    backoff_sum[length] = backoff;
    ++length;
    if (lm.backoff_to[s] < 0) return length;  // a root lists every label
    backoff += lm.backoff_weight[s];
    s = lm.backoff_to[s];
  }
}

/** score_label(lm, chain[0], label) from the state's backoff chain and the arc of the label at each level (-1 where
 *  the level does not list it; find_arc): the longest context that lists it. The levels' searches are independent,
 *  so a parallel caller runs them at once instead of one after another. */
ASRDEC_HD_INLINE NgramStep score_from_levels(const NgramLmRef& lm, const float* backoff_sum,
                                             const std::int32_t* arc_at_level, const std::int32_t* chain, int length) {
  for (int level = 0; level < length; ++level) {
    const std::int32_t arc = arc_at_level[level];
    if (arc >= 0) return NgramStep{lm.arc_weight[arc] + backoff_sum[level], lm.arc_target[arc]};
  }
  return NgramStep{-__builtin_huge_valf(), chain[length - 1]};  // unreachable: a root holds every label
}

/** Score of a token: a token the model does not list scores as <unk> in this context. */
ASRDEC_HD_INLINE NgramStep score_token(const NgramLmRef& lm, std::int32_t state, std::int32_t token) {
  if (lm.missing[token]) {
    NgramStep step = score_label(lm, state, lm.vocab_size);
    step.score += lm.missing_offset;
    return step;
  }
  return score_label(lm, state, token);
}

}  // namespace asrdec::detail

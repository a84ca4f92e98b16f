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

/** Contexts deeper than this are queried token by token instead (no realistic LM comes close). */
constexpr int kNgramMaxChain = 32;

/** What the threads of one slice query share (the CUDA query kernel's shared memory). */
struct NgramSliceQuery {
  std::int32_t chain[kNgramMaxChain];    ///< the backoff chain, longest context first
  float backoff[kNgramMaxChain];         ///< the backoff sum at each level
  std::int32_t first[kNgramMaxChain];    ///< each level's first arc in the slice
  std::int32_t last[kNgramMaxChain];     ///< and its end
  std::int32_t unk_arc[kNgramMaxChain];  ///< each level's <unk> arc, or -1
  int length;                            ///< of the chain; -1 when longer than kNgramMaxChain
};

/** The full-vocabulary query of `state` for the tokens of [lo, lo + slice) (clipped to V) into a row's `scores` and
 *  `next`, as `threads` threads run it: each_thread(f) calls f(t) for every thread t (a CUDA block: its own; a CPU
 *  test: all of them, in any order), barrier() separates the steps (a block: __syncthreads). Written for latency (a
 *  decoder waits for the query between two steps): one thread walks the backoff chain, the only walk whose loads
 *  depend on each other; then every level's three binary searches (the slice's bounds, the <unk> arc) run at once, a
 *  thread each; then the levels' arcs are scattered from the shortest context up, so the longest wins; then the
 *  tokens the model does not list take <unk>. Every value has the bits of score_token (and of the CPU's row). */
template <class EachThread, class Barrier>
ASRDEC_HD_INLINE void ngram_slice_query(const NgramLmRef& lm, std::int32_t state, std::int32_t lo, std::int32_t slice,
                                        float* scores, std::int32_t* next, NgramSliceQuery& q, int threads,
                                        const EachThread& each_thread, const Barrier& barrier) {
  const std::int32_t V = lm.vocab_size;
  const std::int32_t hi = lo + slice < V ? lo + slice : V;
  each_thread([&](int t) {
    if (t == 0) q.length = backoff_chain(lm, state, q.chain, q.backoff, kNgramMaxChain);
  });
  barrier();
  const int length = q.length;
  if (length < 0) {
    each_thread([&](int t) {
      for (std::int32_t v = lo + t; v < hi; v += threads) {
        const NgramStep step = score_token(lm, state, v);
        scores[v] = step.score;
        next[v] = step.next;
      }
    });
  } else {
    each_thread([&](int t) {
      for (int i = t; i < 3 * length; i += threads) {
        const int level = i / 3;
        const std::int32_t begin = lm.arc_begin[q.chain[level]];
        const std::int32_t end = lm.arc_begin[q.chain[level] + 1];
        switch (i - 3 * level) {
          case 0:
            q.first[level] = lower_bound_arc(lm, begin, end, lo);
            break;
          case 1:
            q.last[level] = lower_bound_arc(lm, begin, end, hi);
            break;
          default:
            q.unk_arc[level] = find_arc(lm, begin, end, V);
        }
      }
    });
    barrier();
    for (int level = length - 1; level >= 0; --level) {
      each_thread([&](int t) {
        for (std::int32_t a = q.first[level] + t; a < q.last[level]; a += threads) {
          const std::int32_t label = lm.arc_label[a];
          scores[label] = lm.arc_weight[a] + q.backoff[level];
          next[label] = lm.arc_target[a];
        }
      });
      barrier();
    }
    each_thread([&](int t) {
      NgramStep unk{0.0f, 0};
      bool have_unk = false;
      for (std::int32_t v = lo + t; v < hi; v += threads) {
        if (!lm.missing[v]) continue;
        if (!have_unk) {
          unk = score_from_levels(lm, q.backoff, q.unk_arc, q.chain, length);
          unk.score += lm.missing_offset;
          have_unk = true;
        }
        scores[v] = unk.score;
        next[v] = unk.next;
      }
    });
  }
  barrier();  // the shared state may be rewritten by the next query
}

}  // namespace asrdec::detail

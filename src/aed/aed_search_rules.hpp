#pragma once
// The per-element rules of AED search, written once for every executor: the GNMT length penalty, a hypothesis'
// length in NeMo's count, the order of beam candidates, and what fusion adds to a generated token (end of sentence
// scored by the fused models' final weights).

#include <cmath>
#include <cstdint>

#include "asrdec/detail/hd.hpp"

namespace asrdec::detail {

/** lp(n) = ((5 + n) / 6) ^ alpha (Wu et al. 2016); exactly 1 for alpha = 0. */
ASRDEC_HD_INLINE float aed_length_penalty(std::int64_t length, float alpha) {
  if (alpha == 0.0f) return 1.0f;
  return powf((5.0f + static_cast<float>(length)) / 6.0f, alpha);
}

/** NeMo's length of a hypothesis: 1 + the prompt + the generated tokens other than eos. */
ASRDEC_HD_INLINE std::int64_t aed_hypothesis_length(std::int64_t prompt, std::int64_t tokens) {
  return 1 + prompt + tokens;
}

/** A beam candidate: a finished hypothesis carried over (token < 0) or a live one extended by `token`. */
struct AedCandidate {
  float key;            ///< score / lp(length of the parent)
  float score;          ///< the raw fused sum
  std::int32_t parent;  ///< the parent's row in the previous call (its slot within the utterance orders ties)
  std::int32_t token;   ///< -1: carried over
};

/** Beam order: the higher key first; on equal keys the lower parent row, then the lower token. */
ASRDEC_HD_INLINE bool aed_candidate_before(const AedCandidate& a, const AedCandidate& b) {
  if (a.key != b.key) return a.key > b.key;
  if (a.parent != b.parent) return a.parent < b.parent;
  return a.token < b.token;
}

}  // namespace asrdec::detail

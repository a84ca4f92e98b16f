#pragma once
// Internal: token confidences where a decoder gives the probability measure only (beam search, CTC greedy decoding,
// attention decoding): each token's probability on its frame, exp(token score); docs/results.md, "Token
// confidences".

#include <algorithm>
#include <cmath>

#include "asrdec/hyps/hypothesis.hpp"

namespace asrdec::detail {

/** Sets h.token_confidences to exp of each of h.token_scores. */
inline void confidences_from_scores(Hypothesis& h) {
  h.token_confidences.resize(h.token_scores.size());
  std::transform(h.token_scores.begin(), h.token_scores.end(), h.token_confidences.begin(),
                 [](float score) { return std::exp(score); });
}

}  // namespace asrdec::detail

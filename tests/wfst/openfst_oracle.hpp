#pragma once
// The WFST decoding oracle: OpenFst's ShortestPath of (frame acceptor ∘ graph), written independently of the
// decoder (no shared code beyond OpenFst itself).

#include <fst/fstlib.h>

#include <cstdint>
#include <vector>

namespace asrdec::testing {

struct OracleBest {
  bool has_path = false;       ///< some path consumes all frames
  bool reached_final = false;  ///< ... and ends in a final state (use_final_probs only)
  float cost = 0.0f;
  std::vector<std::int32_t> words;
  bool tied = false;  ///< one of the 8 best paths has other words and the same cost (within tolerance)
};

/** The best path through `graph` for frames logp[T][C] (row-major), acoustic cost −scale·logp, input label i
 *  scoring column i − 1. With use_final_probs, paths must end in final states (with their weights) when any does;
 *  otherwise (or when none does) every state is final with weight 0. */
OracleBest openfst_best_path(const fst::StdVectorFst& graph, const std::vector<float>& logp, std::int32_t frames,
                             std::int32_t columns, float scale, bool use_final_probs);

/** The cost of the best path that outputs exactly `words` (ending in a final state with its weight when `finals`,
 *  anywhere otherwise), or +inf when there is none. */
float openfst_best_cost_with_words(const fst::StdVectorFst& graph, const std::vector<float>& logp, std::int32_t frames,
                                   std::int32_t columns, float scale, bool finals,
                                   const std::vector<std::int32_t>& words);

}  // namespace asrdec::testing

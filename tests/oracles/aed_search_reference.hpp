#pragma once
// Test oracle, built into the test-only library asrdec_oracles (never into libasrdec): AED greedy and beam search
// written for clarity, one utterance at a time, every extension of every live hypothesis considered (no per-row
// pruning), the decoder asked for each whole prefix, and the LM and boosting tree queried one token at a time.

#include <cstdint>
#include <functional>
#include <vector>

#include "asrdec/aed/aed_decoder.hpp"

namespace asrdec {

/** The decoder's log-probabilities of the next token after `prompt` + `generated` for utterance `utterance`. */
using AedPrefixScorer = std::function<std::vector<float>(
    std::int64_t utterance, const std::vector<std::int32_t>& prompt, const std::vector<std::int32_t>& generated)>;

/** Each utterance's final hypotheses, best first (greedy: K = 1). `max_positions` is the step's. */
std::vector<std::vector<Hypothesis>> aed_search_reference(const AedPrefixScorer& scorer,
                                                          const std::vector<std::int64_t>& encoder_lengths,
                                                          const std::vector<std::vector<std::int32_t>>& prompts,
                                                          std::int64_t max_positions, const AedDecoderConfig& config);

}  // namespace asrdec

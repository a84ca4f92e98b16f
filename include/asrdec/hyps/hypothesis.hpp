#pragma once
/**
 * @file
 * The host-side result every decoder returns for one utterance. Fields a decoder does not produce stay empty
 * (e.g. durations outside TDT); each decoder's header says what its scores mean.
 */

#include <cstdint>
#include <vector>

#include "asrdec/core/export.hpp"

namespace asrdec {

struct ASRDEC_API Hypothesis {
  std::vector<std::int32_t> tokens;      ///< token ids, blank never included
  std::vector<std::int32_t> timestamps;  ///< frame at which each token was emitted
  std::vector<std::int32_t> durations;   ///< TDT: predicted duration of each token; empty otherwise
  std::vector<float> token_scores;       ///< per-token score (see the decoder's documentation)
  std::vector<float> token_confidences;  ///< per-token confidence in [0, 1] when the decoder computes it
  float score = 0.0f;                    ///< total score used for ranking
  float am_score = 0.0f;                 ///< acoustic part of score
  float lm_score = 0.0f;                 ///< language-model part of score (weighted)
  float boost_score = 0.0f;              ///< phrase/word boosting part of score (weighted)
  bool is_final = true;                  ///< false for a partial streaming result
};

}  // namespace asrdec

#pragma once
// Helpers shared by the transducer beam-search tests.

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "asrdec/hyps/hypothesis.hpp"
#include "transducer/random_transducer.hpp"

namespace asrdec::testing {

/** The N-best lists of every utterance agree: same hypotheses in the same order, scores (LM and boosting parts
 *  included) within 1e-4. */
inline void expect_same_beams(const std::vector<std::vector<Hypothesis>>& got,
                              const std::vector<std::vector<Hypothesis>>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t b = 0; b < want.size(); ++b) {
    expect_same_hypotheses(got[b], want[b], 1e-4, what + ", utterance " + std::to_string(b));
    for (std::size_t i = 0; i < std::min(got[b].size(), want[b].size()); ++i) {
      EXPECT_NEAR(got[b][i].lm_score, want[b][i].lm_score, 1e-4 * (1.0 + std::fabs(want[b][i].lm_score))) << what;
      EXPECT_NEAR(got[b][i].boost_score, want[b][i].boost_score, 1e-4 * (1.0 + std::fabs(want[b][i].boost_score)))
          << what;
    }
  }
}

/** A random model whose scores do not tie (the oracle comparison needs that). */
inline RandomTransducerSpec beam_spec(std::mt19937_64& rng) {
  RandomTransducerSpec spec = random_spec(rng);
  spec.quantised = false;
  return spec;
}

}  // namespace asrdec::testing

#pragma once
// Helpers shared by the transducer beam-search tests.

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "asrdec/asrdec.hpp"
#include "lm/random_fusion.hpp"
#include "transducer/random_transducer.hpp"

namespace asrdec::testing {

/** The N-best lists of every utterance agree: same hypotheses in the same order, scores (LM and boosting parts
 *  included) within `agreement` (default: 1e-4, no swaps). */
inline void expect_same_beams(const std::vector<std::vector<Hypothesis>>& got,
                              const std::vector<std::vector<Hypothesis>>& want, const std::string& what,
                              const Agreement& agreement = {}) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t b = 0; b < want.size(); ++b) {
    expect_same_hypotheses(got[b], want[b], agreement, what + ", utterance " + std::to_string(b), true);
    for (std::size_t i = 0; i < std::min(got[b].size(), want[b].size()); ++i) {
      if (got[b][i].tokens != want[b][i].tokens || got[b][i].timestamps != want[b][i].timestamps) break;  // a tie
      const double relative = std::max(1e-4, agreement.relative);
      EXPECT_NEAR(got[b][i].lm_score, want[b][i].lm_score, relative * (1.0 + std::fabs(want[b][i].lm_score))) << what;
      EXPECT_NEAR(got[b][i].boost_score, want[b][i].boost_score, relative * (1.0 + std::fabs(want[b][i].boost_score)))
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

/** Keeps the LM and boosting tree of a fusion test case alive. */
struct FusionKeep {
  std::shared_ptr<const NgramLm> lm;
  std::shared_ptr<const BoostingTree> boost;
};

/** Fusion for case i of a fusion test: a random LM, a boosting tree over phrases of `plain`'s best hypotheses, or
 *  both, with random weights, on `device` (`keep` holds the CPU copies); the cases cycle through the four pruning ×
 *  blank-scoring modes. */
inline void add_random_fusion(std::mt19937_64& rng, const RandomTransducerSpec& spec, int i,
                              const std::vector<std::vector<Hypothesis>>& plain, TransducerBeamConfig& config,
                              FusionKeep& keep, Device device = Device::cpu()) {
  const int which = static_cast<int>(rng() % 3);  // LM, boosting, both
  if (which != 1) {
    config.lm = random_lm(rng, spec.vocab, device, keep.lm);
    config.lm_weight = random_weight(rng);
  }
  if (which != 0) {
    std::vector<Hypothesis> best;
    for (const auto& beam : plain) best.push_back(beam.front());
    config.boost = random_boost(rng, spec.vocab, best, device, keep.boost);
    config.boost_weight = random_weight(rng);
  }
  config.pruning = i % 2 == 0 ? FusionPruning::late : FusionPruning::early;
  config.blank_scoring = (i / 2) % 2 == 0 ? BlankLmScoring::lm_weighted_full : BlankLmScoring::none;
}

}  // namespace asrdec::testing

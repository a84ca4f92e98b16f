#pragma once
// Helpers shared by the transducer beam-search tests.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "asrdec/asrdec.hpp"
#include "lm/random_fusion.hpp"
#include "oracles/transducer_beam_reference.hpp"
#include "transducer/random_transducer.hpp"

namespace asrdec::testing {

/** The oracle's N-best lists for the case's input on its model with every weight perturbed at rounding level (a fresh
 *  draw for each trial). */
using PerturbedOracle = std::function<std::vector<std::vector<Hypothesis>>(int trial)>;

/** perturbed_oracle for a random model: the oracle on random.build_perturbed(relative, trial's noise). */
inline PerturbedOracle perturbed_oracle(const RandomTransducer& random, const TensorView& enc,
                                        const TensorView& lengths, const TransducerBeamConfig& config,
                                        const Agreement& agreement) {
  // A hundredth of what the executors may differ by: far below any real difference of scores.
  const double relative = agreement.relative / 100.0;
  return [&random, enc, lengths, config, relative](int trial) {
    std::mt19937_64 noise(static_cast<std::uint64_t>(trial) + 1);
    return transducer_beam_reference(random.build_perturbed(relative, noise), enc, lengths, config);
  };
}

/** The N-best lists of every utterance agree: same hypotheses in the same order, scores (LM and boosting parts
 *  included) within `agreement` (default: 1e-4, no swaps).
 *
 *  Where the executors may round differently (`agreement.near_ties_may_swap`) a near tie at any cut of the search,
 *  not only between the final hypotheses, can send the two searches different ways (seen: float32 hypotheses whose
 *  order flips when the weights move by 1e-7). With `perturbed`, an utterance whose paths differ from the oracle's is
 *  compared with the oracle on models perturbed at a hundredth of the tolerance instead: a path that one of 16 such
 *  draws finds as well is a near tie, said so and accepted; a wrong result matches none. */
inline void expect_same_beams(const std::vector<std::vector<Hypothesis>>& got,
                              const std::vector<std::vector<Hypothesis>>& want, const std::string& what,
                              const Agreement& agreement = {}, const PerturbedOracle& perturbed = {}) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const auto same_paths = [](const std::vector<Hypothesis>& a, const std::vector<Hypothesis>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i].tokens != b[i].tokens || a[i].timestamps != b[i].timestamps || a[i].durations != b[i].durations) {
        return false;
      }
    }
    return true;
  };
  std::vector<std::vector<std::vector<Hypothesis>>> trials;  // drawn when first needed
  for (std::size_t b = 0; b < want.size(); ++b) {
    const std::vector<Hypothesis>* reference = &want[b];
    if (agreement.near_ties_may_swap && perturbed && !same_paths(got[b], want[b])) {
      for (int t = 0; t < 16; ++t) {
        if (static_cast<std::size_t>(t) == trials.size()) trials.push_back(perturbed(t));
        if (same_paths(got[b], trials[static_cast<std::size_t>(t)][b])) {
          reference = &trials[static_cast<std::size_t>(t)][b];
          std::printf(
              "%s, utterance %zu: a near tie inside the search: the oracle on a model perturbed at rounding "
              "level (draw %d) finds the same paths\n",
              what.c_str(), b, t);
          break;
        }
      }
    }
    const std::vector<Hypothesis>& expected = *reference;
    expect_same_hypotheses(got[b], expected, agreement, what + ", utterance " + std::to_string(b), true);
    for (std::size_t i = 0; i < std::min(got[b].size(), expected.size()); ++i) {
      if (got[b][i].tokens != expected[i].tokens || got[b][i].timestamps != expected[i].timestamps) break;  // a tie
      const double relative = std::max(1e-4, agreement.relative);
      EXPECT_NEAR(got[b][i].lm_score, expected[i].lm_score, relative * (1.0 + std::fabs(expected[i].lm_score))) << what;
      EXPECT_NEAR(got[b][i].boost_score, expected[i].boost_score, relative * (1.0 + std::fabs(expected[i].boost_score)))
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

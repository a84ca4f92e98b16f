// CTC beam search: the batched decoder against the per-utterance oracle (whole transcripts, merging by comparing
// them, one-token LM and boosting queries) on random batches (dtypes, strides, lengths 0 and 1, ties, -inf), with
// and without fusion; beam 1 is greedy; bad input.

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "asrdec/asrdec.hpp"
#include "ctc/ctc_batch_generator.hpp"
#include "lm/random_fusion.hpp"
#include "oracles/ctc_beam_reference.hpp"
#include "support/test_support.hpp"
#include "transducer/random_transducer.hpp"

namespace asrdec {
namespace {

void expect_same_beams(const std::vector<std::vector<Hypothesis>>& got,
                       const std::vector<std::vector<Hypothesis>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t b = 0; b < want.size(); ++b) {
    testing::expect_same_hypotheses(got[b], want[b], 1e-4, "utterance " + std::to_string(b));
  }
}

float random_beta(std::mt19937_64& rng) {
  const float betas[] = {0.0f, 0.5f, 1.0f, 2.5f};
  return betas[rng() % 4];
}

float random_threshold(std::mt19937_64& rng) {
  const float thresholds[] = {20.0f, 2.0f, std::numeric_limits<float>::infinity()};
  return thresholds[rng() % 3];
}

TEST(CtcBeam, EqualsTheOracle) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t utterances = 0, several = 0;
  for (int i = 0; i < 200 || utterances < 520; ++i) {
    const DType dtype = static_cast<DType>(rng() % 3);
    const testing::CtcBatch batch = testing::random_ctc_batch(rng, dtype, {6, 30, 12});
    CtcBeamConfig config;
    config.blank_id = batch.blank_config;
    config.beam = std::uniform_int_distribution<std::int32_t>(1, 8)(rng);
    config.beam_beta = random_beta(rng);
    config.beam_threshold = random_threshold(rng);
    SCOPED_TRACE("case " + std::to_string(i) + ": " + batch.layout + ", " + config.to_string());
    const auto want = ctc_beam_reference(batch.logprobs(), batch.lengths(), config);
    CtcBeamDecoder decoder(Device::cpu(), config, BatchLimits{2, 4});
    expect_same_beams(decoder.decode_nbest(batch.logprobs(), batch.lengths()), want);
    if (::testing::Test::HasFailure()) return;
    for (const auto& beam : want) several += beam.size() > 1 ? 1 : 0;
    utterances += batch.batch;
  }
  EXPECT_GE(utterances, 500);
  EXPECT_GT(several, utterances / 4);
  std::printf("%lld utterances, %lld with several hypotheses\n", static_cast<long long>(utterances),
              static_cast<long long>(several));
}

TEST(CtcBeam, FusionEqualsTheOracle) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t utterances = 0, changed = 0, ends = 0;
  for (int i = 0; i < 200 || utterances < 520; ++i) {
    testing::CtcBatch batch;
    do {
      batch = testing::random_ctc_batch(rng, DType::f32, {6, 30, 12});
    } while (batch.blank != batch.columns - 1 || batch.columns < 2);
    CtcBeamConfig config;
    config.beam = std::uniform_int_distribution<std::int32_t>(1, 6)(rng);
    config.beam_beta = random_beta(rng);
    config.beam_threshold = random_threshold(rng);
    const auto plain = ctc_beam_reference(batch.logprobs(), batch.lengths(), config);
    const int which = static_cast<int>(rng() % 3);  // LM, boosting, both
    std::shared_ptr<const NgramLm> lm_keep;
    std::shared_ptr<const BoostingTree> boost_keep;
    if (which != 1) {
      config.lm = testing::random_lm(rng, batch.columns - 1, Device::cpu(), lm_keep);
      config.lm_weight = testing::random_weight(rng);
    }
    if (which != 0) {
      std::vector<Hypothesis> best;
      for (const auto& beam : plain) best.push_back(beam.empty() ? Hypothesis{} : beam.front());
      config.boost = testing::random_boost(rng, batch.columns - 1, best, Device::cpu(), boost_keep);
      config.boost_weight = testing::random_weight(rng);
    }
    SCOPED_TRACE("case " + std::to_string(i) + ": " + batch.layout + ", " + config.to_string());
    const auto want = ctc_beam_reference(batch.logprobs(), batch.lengths(), config);
    CtcBeamDecoder decoder(Device::cpu(), config, BatchLimits{2, 4});
    expect_same_beams(decoder.decode_nbest(batch.logprobs(), batch.lengths()), want);
    if (::testing::Test::HasFailure()) return;
    for (std::size_t b = 0; b < want.size(); ++b) {
      if (want[b].empty() || plain[b].empty()) continue;
      changed += want[b].front().tokens != plain[b].front().tokens ? 1 : 0;
      ends += config.lm != nullptr && config.lm_weight != 0.0f ? 1 : 0;
    }
    utterances += batch.batch;
  }
  EXPECT_GE(utterances, 500);
  EXPECT_GT(changed, utterances / 20) << "fusion changed too few transcripts to test anything";
  std::printf("%lld utterances, %lld changed by fusion, %lld with an end-of-sentence LM score\n",
              static_cast<long long>(utterances), static_cast<long long>(changed), static_cast<long long>(ends));
}

TEST(CtcBeam, BeamOneIsGreedy) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 200; ++i) {
    const testing::CtcBatch batch = testing::random_ctc_batch(rng, static_cast<DType>(rng() % 3), {6, 30, 12});
    CtcBeamConfig config;
    config.blank_id = batch.blank_config;
    config.beam = 1;
    SCOPED_TRACE("case " + std::to_string(i) + ": " + batch.layout);
    CtcBeamDecoder decoder(Device::cpu(), config);
    const auto got = decoder.decode(batch.logprobs(), batch.lengths());
    ASSERT_EQ(got.size(), static_cast<std::size_t>(batch.batch));
    for (int b = 0; b < batch.batch; ++b) {
      const auto greedy = batch.reference(b);
      // A frame of only -inf kills every hypothesis (no beam is left); greedy still takes its first column.
      bool dead_frame = false;
      for (int t = 0; t < batch.length(b); ++t) {
        bool all_inf = true;
        for (int v = 0; v < batch.columns; ++v) all_inf = all_inf && batch.value(b, t, v) == -INFINITY;
        dead_frame = dead_frame || all_inf;
      }
      if (dead_frame) continue;
      EXPECT_EQ(got[b].tokens, greedy.tokens) << "utterance " << b;
      EXPECT_EQ(got[b].timestamps, greedy.timestamps) << "utterance " << b;
    }
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(CtcBeam, BadInputIsRejected) {
  std::vector<float> values(2 * 3 * 4, -1.0f);
  std::vector<std::int32_t> lengths = {3, 2};
  const TensorView logprobs(values.data(), DType::f32, {2, 3, 4});
  const TensorView lens(lengths.data(), DType::i32, {2});
  CtcBeamConfig config;
  config.beam = 0;
  ASRDEC_EXPECT_THROW_MSG(CtcBeamDecoder(Device::cpu(), config), InvalidArgument, "beam must be in [1, 64], got 0");
  config.beam = 3;
  config.beam_threshold = 0.0f;
  ASRDEC_EXPECT_THROW_MSG(CtcBeamDecoder(Device::cpu(), config), InvalidArgument, "beam_threshold must be positive");
  config.beam_threshold = 20.0f;
  config.beam_beta = std::nanf("");
  ASRDEC_EXPECT_THROW_MSG(CtcBeamDecoder(Device::cpu(), config), InvalidArgument, "beam_beta must be finite");
  config.beam_beta = 0.0f;
  CtcBeamDecoder decoder(Device::cpu(), config);
  values[1 * 12 + 1 * 4 + 2] = std::nanf("");
  ASRDEC_EXPECT_THROW_MSG(decoder.decode(logprobs, lens), InvalidArgument, "logprobs[1, 1, 2] is NaN");
  values[1 * 12 + 1 * 4 + 2] = -1.0f;
  lengths[1] = 4;
  ASRDEC_EXPECT_THROW_MSG(decoder.decode(logprobs, lens), InvalidArgument, "lengths[1] = 4 is outside [0, 3]");
  lengths[1] = 2;
  std::mt19937_64 rng(5);
  std::shared_ptr<const NgramLm> keep;
  config.lm = testing::random_lm(rng, 5, Device::cpu(), keep);
  CtcBeamDecoder mismatched(Device::cpu(), config);
  ASRDEC_EXPECT_THROW_MSG(mismatched.decode(logprobs, lens), InvalidArgument, "logprobs has 4 columns");
  config.lm = testing::random_lm(rng, 3, Device::cpu(), keep);
  config.blank_id = 0;
  CtcBeamDecoder blank_first(Device::cpu(), config);
  ASRDEC_EXPECT_THROW_MSG(blank_first.decode(logprobs, lens), InvalidArgument, "need blank in the last column");
}

}  // namespace
}  // namespace asrdec

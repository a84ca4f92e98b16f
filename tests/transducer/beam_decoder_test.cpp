// Transducer beam search (ALSD++): the batched decoder against the per-utterance oracle (whole transcripts,
// merging by comparison, one-token LM queries) on random RNN-T/TDT models, with and without fusion in every
// pruning × blank-scoring mode; beam 1 against greedy decoding; bad input.

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "asrdec/asrdec.hpp"
#include "oracles/transducer_beam_reference.hpp"
#include "oracles/transducer_greedy_reference.hpp"
#include "support/test_support.hpp"
#include "transducer/beam_test_support.hpp"

namespace asrdec {
namespace {

using testing::beam_spec;
using testing::expect_same_beams;

TEST(TransducerBeam, AlsdEqualsTheOracle) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t utterances = 0, multiple = 0, merged_differs = 0;
  for (int i = 0; i < 150 || utterances < 520; ++i) {
    const testing::RandomTransducerSpec spec = beam_spec(rng);
    const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
    const TransducerModel model = random.build(Device::cpu());
    const testing::RandomEncoded e = testing::random_encoded(rng, spec, 8, 16);
    TransducerBeamConfig config;
    config.beam = std::uniform_int_distribution<std::int32_t>(1, 8)(rng);
    config.max_symbols_per_frame = std::uniform_int_distribution<std::int32_t>(1, 4)(rng);
    config.length_normalized = rng() % 2 == 0;
    SCOPED_TRACE("case " + std::to_string(i) + ": " + random.spec.describe() + ", " + config.to_string());
    const auto want = transducer_beam_reference(model, e.enc(), e.lens(), config);
    TransducerBeamDecoder decoder(model, config, BatchLimits{3, 5});
    expect_same_beams(decoder.decode_nbest(e.enc(), e.lens()), want, "alsd++");
    if (::testing::Test::HasFailure()) return;
    const auto greedy = transducer_greedy_reference(model, e.enc(), e.lens(), config.max_symbols_per_frame);
    for (std::size_t b = 0; b < want.size(); ++b) {
      multiple += want[b].size() > 1 ? 1 : 0;
      merged_differs += want[b].front().tokens != greedy[b].tokens ? 1 : 0;
    }
    utterances += e.batch;
  }
  EXPECT_GE(utterances, 500);
  EXPECT_GT(multiple, utterances / 3) << "too few utterances kept more than one hypothesis";
  EXPECT_GT(merged_differs, utterances / 20) << "beam search never differed from greedy decoding";
  std::printf("%lld utterances, %lld with several hypotheses, %lld whose best differs from greedy\n",
              static_cast<long long>(utterances), static_cast<long long>(multiple),
              static_cast<long long>(merged_differs));
}

TEST(TransducerBeam, FusionEqualsTheOracleInEveryMode) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t utterances = 0, changed = 0;
  for (int i = 0; i < 160 || utterances < 520; ++i) {
    testing::RandomTransducerSpec spec = beam_spec(rng);
    spec.blank = -1;  // fusion needs blank = V
    const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
    const TransducerModel model = random.build(Device::cpu());
    const testing::RandomEncoded e = testing::random_encoded(rng, spec, 6, 14);
    TransducerBeamConfig config;
    config.beam = std::uniform_int_distribution<std::int32_t>(1, 6)(rng);
    config.max_symbols_per_frame = std::uniform_int_distribution<std::int32_t>(1, 3)(rng);
    config.length_normalized = rng() % 2 == 0;
    const auto plain = transducer_beam_reference(model, e.enc(), e.lens(), config);
    testing::FusionKeep keep;
    testing::add_random_fusion(rng, spec, i, plain, config, keep);
    SCOPED_TRACE("case " + std::to_string(i) + ": " + random.spec.describe() + ", " + config.to_string());
    const auto want = transducer_beam_reference(model, e.enc(), e.lens(), config);
    TransducerBeamDecoder decoder(model, config, BatchLimits{2, 4});
    expect_same_beams(decoder.decode_nbest(e.enc(), e.lens()), want, "fused alsd++");
    if (::testing::Test::HasFailure()) return;
    for (std::size_t b = 0; b < want.size(); ++b) changed += want[b].front().tokens != plain[b].front().tokens ? 1 : 0;
    utterances += e.batch;
  }
  EXPECT_GE(utterances, 500);
  EXPECT_GT(changed, utterances / 20) << "fusion changed too few transcripts to test anything";
  std::printf("%lld utterances, %lld changed by fusion\n", static_cast<long long>(utterances),
              static_cast<long long>(changed));
}

TEST(TransducerBeam, BeamOneIsGreedy) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t utterances = 0;
  for (int i = 0; i < 120; ++i) {
    const testing::RandomTransducerSpec spec = beam_spec(rng);
    const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
    const TransducerModel model = random.build(Device::cpu());
    const testing::RandomEncoded e = testing::random_encoded(rng, spec, 8, 24);
    TransducerBeamConfig config;
    config.beam = 1;
    config.max_symbols_per_frame = std::uniform_int_distribution<std::int32_t>(1, 4)(rng);
    SCOPED_TRACE("case " + std::to_string(i) + ": " + random.spec.describe());
    const auto greedy = transducer_greedy_reference(model, e.enc(), e.lens(), config.max_symbols_per_frame);
    TransducerBeamDecoder decoder(model, config);
    const auto beam = decoder.decode(e.enc(), e.lens());
    ASSERT_EQ(beam.size(), greedy.size());
    for (std::size_t b = 0; b < beam.size(); ++b) {
      EXPECT_EQ(beam[b].tokens, greedy[b].tokens) << "utterance " << b;
      if (spec.tdt) {
        EXPECT_EQ(beam[b].durations, greedy[b].durations) << "utterance " << b;
      } else {
        EXPECT_EQ(beam[b].timestamps, greedy[b].timestamps) << "utterance " << b;
      }
    }
    if (::testing::Test::HasFailure()) return;
    utterances += e.batch;
  }
  std::printf("%lld utterances\n", static_cast<long long>(utterances));
}

TEST(TransducerBeam, BadInputIsRejected) {
  std::mt19937_64 rng(7);
  testing::RandomTransducerSpec spec = beam_spec(rng);
  spec.tdt = false;
  spec.blank = -1;
  const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
  const TransducerModel model = random.build(Device::cpu());
  TransducerBeamConfig config;
  config.beam = 0;
  ASRDEC_EXPECT_THROW_MSG(TransducerBeamDecoder(model, config), InvalidArgument, "beam must be in [1, 64], got 0");
  config.beam = 65;
  ASRDEC_EXPECT_THROW_MSG(TransducerBeamDecoder(model, config), InvalidArgument, "got 65");
  config.beam = 4;
  config.max_symbols_per_frame = 0;
  ASRDEC_EXPECT_THROW_MSG(TransducerBeamDecoder(model, config), InvalidArgument, "max_symbols_per_frame");
  config.max_symbols_per_frame = 3;
  config.lm_weight = std::nanf("");
  ASRDEC_EXPECT_THROW_MSG(TransducerBeamDecoder(model, config), InvalidArgument, "lm_weight must be finite");
  config.lm_weight = 0.5f;
  std::shared_ptr<const NgramLm> keep;
  config.lm = testing::random_lm(rng, spec.vocab + 1, Device::cpu(), keep);
  ASRDEC_EXPECT_THROW_MSG(TransducerBeamDecoder(model, config), InvalidArgument, "vocabulary");
  config.lm = nullptr;
  EXPECT_THROW(parse_beam_algorithm("beam"), InvalidArgument);
  EXPECT_THROW(parse_fusion_pruning("middle"), InvalidArgument);
  EXPECT_THROW(parse_blank_lm_scoring("half"), InvalidArgument);
  EXPECT_EQ(parse_blank_lm_scoring("full"), BlankLmScoring::lm_weighted_full);

  TransducerBeamDecoder decoder(model, config);
  testing::RandomEncoded e;
  e.batch = 2;
  e.frames = 4;
  e.hidden = spec.joint;
  e.values.assign(static_cast<std::size_t>(e.batch * e.frames * e.hidden), 0.25f);
  e.lengths = {4, 3};
  e.values[3] = std::nanf("");
  ASRDEC_EXPECT_THROW_MSG(decoder.decode(e.enc(), e.lens()), InvalidArgument, "is NaN");
  e.values[3] = 0.0f;
  e.lengths[0] = 5;
  ASRDEC_EXPECT_THROW_MSG(decoder.decode(e.enc(), e.lens()), InvalidArgument, "lengths");
  // An empty batch and zero frames are valid.
  e.lengths = {0, 0};
  const auto empty = decoder.decode(e.enc(), e.lens());
  ASSERT_EQ(empty.size(), 2u);
  EXPECT_TRUE(empty[0].tokens.empty());
  EXPECT_EQ(empty[0].score, 0.0f);
  const TensorView no_utterances(e.values.data(), DType::f32, {0, 4, spec.joint});
  const TensorView no_lengths(e.lengths.data(), DType::i32, {0});
  EXPECT_TRUE(decoder.decode(no_utterances, no_lengths).empty());
}

}  // namespace
}  // namespace asrdec

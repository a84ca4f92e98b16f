// WIND beam search: the batched decoder against the per-utterance oracle (the paper's Algorithm 3 with whole
// transcripts, merging and prefixes found by comparison, one-token LM queries) on random RNN-T models, with and
// without fusion in every pruning × blank-scoring mode; beam 1 with window 1 against greedy decoding; bad
// configurations.

#include <gtest/gtest.h>

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

TransducerBeamConfig random_wind_config(std::mt19937_64& rng, std::int32_t max_beam) {
  TransducerBeamConfig config;
  config.algorithm = TransducerBeamAlgorithm::wind;
  config.beam = std::uniform_int_distribution<std::int32_t>(1, max_beam)(rng);
  config.wind_window = std::uniform_int_distribution<std::int32_t>(1, 6)(rng);
  config.max_symbols_per_frame = std::uniform_int_distribution<std::int32_t>(1, 4)(rng);
  config.length_normalized = rng() % 2 == 0;
  return config;
}

TEST(TransducerBeam, WindEqualsTheOracle) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t utterances = 0, multiple = 0, differs = 0;
  for (int i = 0; i < 150 || utterances < 520; ++i) {
    testing::RandomTransducerSpec spec = beam_spec(rng);
    spec.tdt = false;
    const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
    const TransducerModel model = random.build(Device::cpu());
    const testing::RandomEncoded e = testing::random_encoded(rng, spec, 8, 16);
    const TransducerBeamConfig config = random_wind_config(rng, 8);
    SCOPED_TRACE("case " + std::to_string(i) + ": " + random.spec.describe() + ", " + config.to_string());
    const auto want = transducer_beam_reference(model, e.enc(), e.lens(), config);
    TransducerBeamDecoder decoder(model, config, BatchLimits{3, 5});
    expect_same_beams(decoder.decode_nbest(e.enc(), e.lens()), want, "wind-beam");
    if (::testing::Test::HasFailure()) return;
    const auto greedy = transducer_greedy_reference(model, e.enc(), e.lens(), config.max_symbols_per_frame);
    for (std::size_t b = 0; b < want.size(); ++b) {
      multiple += want[b].size() > 1 ? 1 : 0;
      differs += want[b].front().tokens != greedy[b].tokens ? 1 : 0;
    }
    utterances += e.batch;
  }
  EXPECT_GE(utterances, 500);
  EXPECT_GT(multiple, utterances / 3) << "too few utterances kept more than one hypothesis";
  EXPECT_GT(differs, utterances / 20) << "beam search never differed from greedy decoding";
  std::printf("%lld utterances, %lld with several hypotheses, %lld whose best differs from greedy\n",
              static_cast<long long>(utterances), static_cast<long long>(multiple), static_cast<long long>(differs));
}

TEST(TransducerBeam, WindFusionEqualsTheOracleInEveryMode) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t utterances = 0, changed = 0;
  for (int i = 0; i < 190 || utterances < 520; ++i) {
    testing::RandomTransducerSpec spec = beam_spec(rng);
    spec.tdt = false;
    spec.blank = -1;  // fusion needs blank = V
    const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
    const TransducerModel model = random.build(Device::cpu());
    const testing::RandomEncoded e = testing::random_encoded(rng, spec, 6, 14);
    TransducerBeamConfig config = random_wind_config(rng, 6);
    const auto plain = transducer_beam_reference(model, e.enc(), e.lens(), config);
    testing::FusionKeep keep;
    testing::add_random_fusion(rng, spec, i, plain, config, keep);
    SCOPED_TRACE("case " + std::to_string(i) + ": " + random.spec.describe() + ", " + config.to_string());
    const auto want = transducer_beam_reference(model, e.enc(), e.lens(), config);
    TransducerBeamDecoder decoder(model, config, BatchLimits{2, 4});
    expect_same_beams(decoder.decode_nbest(e.enc(), e.lens()), want, "fused wind-beam");
    if (::testing::Test::HasFailure()) return;
    for (std::size_t b = 0; b < want.size(); ++b) changed += want[b].front().tokens != plain[b].front().tokens ? 1 : 0;
    utterances += e.batch;
  }
  EXPECT_GE(utterances, 500);
  EXPECT_GT(changed, utterances / 20) << "fusion changed too few transcripts to test anything";
  std::printf("%lld utterances, %lld changed by fusion\n", static_cast<long long>(utterances),
              static_cast<long long>(changed));
}

// With a window of one frame the first-output proposals are the labels of one frame, and beam 1 is greedy decoding.
// (With wider windows beam 1 picks the most probable first output of the window, which greedy decoding need not.)
TEST(TransducerBeam, WindBeamOneWindowOneIsGreedy) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t utterances = 0;
  for (int i = 0; i < 120; ++i) {
    testing::RandomTransducerSpec spec = beam_spec(rng);
    spec.tdt = false;
    const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
    const TransducerModel model = random.build(Device::cpu());
    const testing::RandomEncoded e = testing::random_encoded(rng, spec, 8, 24);
    TransducerBeamConfig config = random_wind_config(rng, 1);
    config.wind_window = 1;
    SCOPED_TRACE("case " + std::to_string(i) + ": " + random.spec.describe() + ", " + config.to_string());
    const auto greedy = transducer_greedy_reference(model, e.enc(), e.lens(), config.max_symbols_per_frame);
    TransducerBeamDecoder decoder(model, config);
    const auto beam = decoder.decode(e.enc(), e.lens());
    ASSERT_EQ(beam.size(), greedy.size());
    for (std::size_t b = 0; b < beam.size(); ++b) {
      EXPECT_EQ(beam[b].tokens, greedy[b].tokens) << "utterance " << b;
      EXPECT_EQ(beam[b].timestamps, greedy[b].timestamps) << "utterance " << b;
    }
    if (::testing::Test::HasFailure()) return;
    utterances += e.batch;
  }
  std::printf("%lld utterances\n", static_cast<long long>(utterances));
}

TEST(TransducerBeam, WindBadConfigIsRejected) {
  std::mt19937_64 rng(13);
  testing::RandomTransducerSpec spec = beam_spec(rng);
  spec.tdt = true;
  const TransducerModel tdt = testing::make_random_transducer(spec, rng).build(Device::cpu());
  TransducerBeamConfig config;
  config.algorithm = TransducerBeamAlgorithm::wind;
  ASRDEC_EXPECT_THROW_MSG(TransducerBeamDecoder(tdt, config), InvalidArgument,
                          "wind-beam beam search is for RNN-T models");
  spec.tdt = false;
  const TransducerModel rnnt = testing::make_random_transducer(spec, rng).build(Device::cpu());
  config.wind_window = 0;
  ASRDEC_EXPECT_THROW_MSG(TransducerBeamDecoder(rnnt, config), InvalidArgument,
                          "wind_window must be in [1, 64], got 0");
  config.wind_window = 65;
  ASRDEC_EXPECT_THROW_MSG(TransducerBeamDecoder(rnnt, config), InvalidArgument, "got 65");
  EXPECT_EQ(parse_beam_algorithm("wind-beam"), TransducerBeamAlgorithm::wind);
}

}  // namespace
}  // namespace asrdec

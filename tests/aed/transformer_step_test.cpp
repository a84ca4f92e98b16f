// The built-in Transformer decoder step on the shipped AED sample: greedy decoding reproduces what the sample
// generator's own NumPy network (no cache, float64) recorded; beam search with and without the sample LM equals the
// oracle, which asks the network for every prefix from scratch (so the session's cache reordering is checked against
// recomputation); bad files and inputs get typed errors.

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "asrdec/asrdec.hpp"
#include "lm/random_fusion.hpp"
#include "oracles/aed_search_reference.hpp"
#include "support/test_support.hpp"

namespace asrdec {
namespace {

struct Sample {
  std::shared_ptr<TransformerDecoderStep> step =
      TransformerDecoderStep::load(testing::source_path("examples/data/aed/model.safetensors"));
  NpyArray encoder = read_npy(testing::source_path("examples/data/aed/encoder.npy"));
  NpyArray lengths = read_npy(testing::source_path("examples/data/aed/lengths.npy"));

  std::int64_t batch() const { return encoder.shape()[0]; }
  std::vector<std::int64_t> length_values() const {
    std::vector<std::int64_t> out;
    for (std::int64_t b = 0; b < batch(); ++b) out.push_back(lengths.data_as<std::int32_t>()[b]);
    return out;
  }
  /** The network's answer for one prefix, from a fresh session fed prompt + prefix as its prompt. */
  std::vector<float> logprobs(std::int64_t u, const std::vector<std::int32_t>& prompt,
                              const std::vector<std::int32_t>& generated) const {
    const std::int64_t T = encoder.shape()[1], E = encoder.shape()[2];
    const TensorView one(encoder.data_as<float>() + u * T * E, DType::f32, {1, T, E});
    const std::int64_t length = lengths.data_as<std::int32_t>()[u];
    std::vector<std::int32_t> all = prompt;
    all.insert(all.end(), generated.begin(), generated.end());
    std::vector<float> scores(static_cast<std::size_t>(step->vocab_size()));
    step->start_session(1)->start(one, &length, {all}, scores.data(), nullptr);
    return scores;
  }
};

TEST(AedSample, GreedyReproducesTheGeneratorsNetwork) {
  const Sample s;
  EXPECT_EQ(s.step->vocab_size(), 259);
  ASSERT_TRUE(s.step->eos_id().has_value());
  EXPECT_EQ(s.step->default_prompt(), (std::vector<std::int32_t>{256, 258}));
  AedDecoderConfig config;
  config.eos_id = *s.step->eos_id();
  AedDecoder decoder(s.step, config);
  const auto hyps = decoder.decode(s.encoder.view(), s.lengths.view(), {s.step->default_prompt()});
  std::ifstream in(testing::source_path("examples/data/aed/expected_greedy.jsonl"));
  std::string line;
  std::size_t u = 0;
  while (std::getline(in, line)) {
    SCOPED_TRACE("utterance " + std::to_string(u));
    ASSERT_LT(u, hyps.size());
    const auto j = nlohmann::json::parse(line);
    EXPECT_EQ(hyps[u].tokens, j.at("tokens").get<std::vector<std::int32_t>>());
    EXPECT_EQ(hyps[u].timestamps, j.at("timestamps").get<std::vector<std::int32_t>>());
    const double score = j.at("score").get<double>();
    EXPECT_NEAR(hyps[u].score, score, 1e-3 * std::max(1.0, std::fabs(score)));
    ++u;
  }
  EXPECT_EQ(u, hyps.size());
}

TEST(AedSample, BeamSearchWithTheSampleLmEqualsTheOracle) {
  const Sample s;
  NgramLmOptions options;
  options.vocab_size = s.step->vocab_size();  // the specials are missing from the LM: they score as <unk>
  auto lm = std::make_shared<const NgramLm>(
      NgramLm::load(testing::source_path("examples/data/lm/tokens_4gram.arpa.gz"), options));
  int changed = 0;
  // Phrase boosting from pieces of the greedy transcripts with one token changed (so it pulls the search away).
  std::mt19937_64 rng(2026);
  AedDecoderConfig greedy_config;
  greedy_config.eos_id = *s.step->eos_id();
  const auto greedy =
      AedDecoder(s.step, greedy_config).decode(s.encoder.view(), s.lengths.view(), {s.step->default_prompt()});
  std::shared_ptr<const BoostingTree> boost_keep;
  const auto boost =
      testing::random_boost(rng, s.step->vocab_size(), {greedy.begin(), greedy.begin() + 8}, Device::cpu(), boost_keep);
  for (const int fusion : {0, 1, 2, 3}) {  // none, LM, boosting, both
    const float weight = fusion & 1 ? 0.5f : 0.0f;
    AedDecoderConfig config;
    config.search = AedSearch::beam;
    config.beam_size = 3;
    config.length_penalty = 0.6f;
    config.eos_id = *s.step->eos_id();
    if (weight > 0) {
      config.lm = lm;
      config.lm_weight = weight;
    }
    if (fusion & 2) {
      config.boost = boost;
      config.boost_weight = 0.8f;
    }
    SCOPED_TRACE(config.to_string());
    // Eight utterances keep the oracle's from-scratch recomputation quick.
    const std::int64_t batch = 8, T = s.encoder.shape()[1], E = s.encoder.shape()[2];
    const TensorView encoder(s.encoder.data_as<float>(), DType::f32, {batch, T, E});
    const TensorView lengths(s.lengths.data_as<std::int32_t>(), DType::i32, {batch});
    AedDecoder decoder(s.step, config);
    const auto got = decoder.decode_nbest(encoder, lengths, {s.step->default_prompt()});
    std::vector<std::int64_t> length_values = s.length_values();
    length_values.resize(static_cast<std::size_t>(batch));
    const auto want = aed_search_reference([&](std::int64_t u, const std::vector<std::int32_t>& p,
                                               const std::vector<std::int32_t>& g) { return s.logprobs(u, p, g); },
                                           length_values, {s.step->default_prompt()}, s.step->max_positions(), config);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t b = 0; b < got.size(); ++b) {
      SCOPED_TRACE("utterance " + std::to_string(b));
      ASSERT_EQ(got[b].size(), want[b].size());
      for (std::size_t k = 0; k < got[b].size(); ++k) {
        EXPECT_EQ(got[b][k].tokens, want[b][k].tokens) << "hypothesis " << k;
        EXPECT_NEAR(got[b][k].score, want[b][k].score, 1e-3 * (1 + std::fabs(want[b][k].score)));
        EXPECT_NEAR(got[b][k].lm_score, want[b][k].lm_score, 1e-3 * (1 + std::fabs(want[b][k].lm_score)));
        EXPECT_NEAR(got[b][k].boost_score, want[b][k].boost_score, 1e-3 * (1 + std::fabs(want[b][k].boost_score)));
      }
      if (fusion != 0) {
        AedDecoderConfig plain = config;
        plain.lm = nullptr;
        plain.boost = nullptr;
        changed += AedDecoder(s.step, plain).decode(encoder, lengths, {s.step->default_prompt()})[b].tokens !=
                   got[b][0].tokens;
      }
    }
  }
  EXPECT_GT(changed, 0) << "fusion changed no transcript";
}

TEST(TransformerDecoderStep, BadFilesAndInputsGetTypedErrors) {
  EXPECT_THROW(TransformerDecoderStep::load(testing::source_path("examples/data/aed/missing.safetensors")), FileError);
  EXPECT_THROW(TransformerDecoderStep::load(testing::source_path("examples/data/rnnt/model.safetensors")),
               InvalidArgument);  // a transducer: no embedding.tokens
  const Sample s;
  AedDecoderConfig config;
  config.eos_id = *s.step->eos_id();
  AedDecoder decoder(s.step, config);
  // Wrong encoder width, wrong dtype, NaN in a valid frame.
  std::vector<float> narrow(2 * 3 * 5, 0.0f);
  std::vector<std::int32_t> lengths{3, 3};
  const TensorView lens(lengths.data(), DType::i32, {2});
  EXPECT_THROW(decoder.decode(TensorView(narrow.data(), DType::f32, {2, 3, 5}), lens, {{256}}), InvalidArgument);
  const std::int64_t E = s.step->encoder_dim();
  std::vector<std::int32_t> as_ints(static_cast<std::size_t>(2 * 3 * E), 0);
  EXPECT_THROW(decoder.decode(TensorView(as_ints.data(), DType::i32, {2, 3, E}), lens, {{256}}), InvalidArgument);
  std::vector<float> nan(static_cast<std::size_t>(2 * 3 * E), 0.0f);
  nan[static_cast<std::size_t>(E + 4)] = std::nanf("");
  try {
    decoder.decode(TensorView(nan.data(), DType::f32, {2, 3, E}), lens, {{256}});
    ADD_FAILURE() << "NaN accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("encoder[0, 1, 4]"), std::string::npos) << e.what();
  }
}

// The reference step's CUDA kernels against its CPU session on the sample: greedy and beam search with the sample
// LM give the same hypotheses, scores to float rounding.
TEST(TransformerDecoderStepCUDA, EqualsTheCpuStepOnTheSample) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const Device cuda = Device::cuda(0);
  const Sample s;
  auto on_cuda = TransformerDecoderStep::load(testing::source_path("examples/data/aed/model.safetensors"), cuda);
  EXPECT_EQ(on_cuda->device(), cuda);
  const DeviceBuffer<std::byte> encoder = testing::to_device(s.encoder.data(), s.encoder.bytes(), cuda);
  const TensorView on_device(encoder.data(), DType::f32,
                             {s.encoder.shape()[0], s.encoder.shape()[1], s.encoder.shape()[2]}, cuda);
  NgramLmOptions options;
  options.vocab_size = s.step->vocab_size();
  auto lm = std::make_shared<const NgramLm>(
      NgramLm::load(testing::source_path("examples/data/lm/tokens_4gram.arpa.gz"), options));
  for (const AedSearch search : {AedSearch::greedy, AedSearch::beam}) {
    AedDecoderConfig config;
    config.search = search;
    config.beam_size = 4;
    config.length_penalty = 1.0f;
    config.eos_id = *s.step->eos_id();
    config.lm = lm;
    config.lm_weight = 0.5f;
    SCOPED_TRACE(config.to_string());
    const Stream stream(cuda);
    const auto want =
        AedDecoder(s.step, config).decode_nbest(s.encoder.view(), s.lengths.view(), {s.step->default_prompt()});
    const auto got = AedDecoder(on_cuda, config)
                         .decode_nbest(on_device, s.lengths.view(), {s.step->default_prompt()}, stream.handle());
    ASSERT_EQ(got.size(), want.size());
    int near_ties = 0;
    for (std::size_t b = 0; b < got.size(); ++b) {
      if (got[b][0].tokens != want[b][0].tokens) {
        // Only a near tie may swap (exp and log round differently on the device).
        EXPECT_NEAR(got[b][0].ranking_score, want[b][0].ranking_score, 1e-3) << "utterance " << b;
        ++near_ties;
        continue;
      }
      EXPECT_NEAR(got[b][0].score, want[b][0].score, 1e-3 * (1 + std::fabs(want[b][0].score))) << "utterance " << b;
    }
    EXPECT_LE(near_ties, 1);
  }
}

}  // namespace
}  // namespace asrdec

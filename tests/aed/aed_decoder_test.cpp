// AED search (greedy and beam, with and without n-gram LM and boosting fusion) against the independent oracle on
// random decoders, the LM's end-of-sentence term against a direct ARPA scorer, length limits and bad input.

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "aed/random_aed_step.hpp"
#include "asrdec/asrdec.hpp"
#include "lm/arpa_oracle.hpp"
#include "lm/random_arpa.hpp"
#include "lm/random_fusion.hpp"
#include "oracles/aed_search_reference.hpp"
#include "support/test_support.hpp"

namespace asrdec {
namespace {

struct Batch {
  std::vector<float> encoder;  // [B, T, 1]: the random step ignores it
  std::vector<std::int64_t> lengths;
  std::vector<std::vector<std::int32_t>> prompts;
  std::int64_t frames = 0;
  TensorView encoder_view() const {
    return TensorView(encoder.data(), DType::f32, {static_cast<std::int64_t>(lengths.size()), frames, 1});
  }
  TensorView lengths_view() const {
    return TensorView(lengths.data(), DType::i64, {static_cast<std::int64_t>(lengths.size())});
  }
};

Batch random_batch(std::mt19937_64& rng, std::int64_t vocab, std::int32_t eos) {
  Batch b;
  const std::int64_t batch = std::uniform_int_distribution<std::int64_t>(1, 6)(rng);
  b.frames = std::uniform_int_distribution<std::int64_t>(1, 12)(rng);
  b.encoder.assign(static_cast<std::size_t>(batch * b.frames), 0.0f);
  std::uniform_int_distribution<std::int32_t> token(0, static_cast<std::int32_t>(vocab - 1));
  const bool shared = std::uniform_int_distribution<int>(0, 2)(rng) == 0;
  for (std::int64_t i = 0; i < (shared ? 1 : batch); ++i) {
    std::vector<std::int32_t> prompt(std::uniform_int_distribution<std::size_t>(1, 3)(rng));
    for (auto& t : prompt) {
      do t = token(rng);
      while (t == eos);
    }
    b.prompts.push_back(prompt);
  }
  for (std::int64_t i = 0; i < batch; ++i)
    b.lengths.push_back(std::uniform_int_distribution<std::int64_t>(0, b.frames)(rng));
  return b;
}

void expect_same(const std::vector<std::vector<Hypothesis>>& got, const std::vector<std::vector<Hypothesis>>& want,
                 bool nbest) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t b = 0; b < got.size(); ++b) {
    SCOPED_TRACE("utterance " + std::to_string(b));
    ASSERT_EQ(got[b].size(), want[b].size());
    const std::size_t n = nbest ? got[b].size() : 1;
    for (std::size_t k = 0; k < n; ++k) {
      SCOPED_TRACE("hypothesis " + std::to_string(k));
      EXPECT_EQ(got[b][k].tokens, want[b][k].tokens);
      EXPECT_EQ(got[b][k].score, want[b][k].score);
      EXPECT_EQ(got[b][k].ranking_score, want[b][k].ranking_score);
      EXPECT_NEAR(got[b][k].am_score, want[b][k].am_score, 1e-4 * (1 + std::fabs(want[b][k].am_score)));
      EXPECT_NEAR(got[b][k].lm_score, want[b][k].lm_score, 1e-4 * (1 + std::fabs(want[b][k].lm_score)));
      EXPECT_NEAR(got[b][k].boost_score, want[b][k].boost_score, 1e-4 * (1 + std::fabs(want[b][k].boost_score)));
      EXPECT_EQ(got[b][k].token_scores, want[b][k].token_scores);
      ASSERT_EQ(got[b][k].token_confidences.size(), got[b][k].token_scores.size());
      for (std::size_t i = 0; i < got[b][k].token_scores.size(); ++i) {
        EXPECT_FLOAT_EQ(got[b][k].token_confidences[i], std::exp(got[b][k].token_scores[i]));
      }
      EXPECT_NEAR(got[b][k].score, got[b][k].am_score + got[b][k].lm_score + got[b][k].boost_score,
                  1e-3 * (1 + std::fabs(got[b][k].score)));
    }
  }
}

class AedSearchTest : public ::testing::TestWithParam<AedSearch> {};

TEST_P(AedSearchTest, EqualsTheOracleOnRandomDecodersWithAndWithoutFusion) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  int cases_with_lm = 0, cases_with_boost = 0, lm_changed = 0;
  for (int i = 0; i < 60; ++i) {
    const std::int64_t vocab = std::uniform_int_distribution<std::int64_t>(3, 14)(rng);
    const std::int32_t eos = std::uniform_int_distribution<std::int32_t>(0, static_cast<std::int32_t>(vocab - 1))(rng);
    const std::int64_t positions = std::uniform_int_distribution<std::int64_t>(5, 16)(rng);
    auto step = std::make_shared<testing::RandomAedStep>(rng(), vocab, eos, positions);
    const Batch batch = random_batch(rng, vocab, eos);
    AedDecoderConfig config;
    config.search = GetParam();
    config.eos_id = eos;
    config.beam_size = std::uniform_int_distribution<std::int32_t>(1, 5)(rng);
    config.length_penalty = std::uniform_int_distribution<int>(0, 2)(rng) == 0 ? 0.0f : 1.0f;
    config.max_new_tokens = std::uniform_int_distribution<int>(0, 1)(rng) ? 0 : 4;
    config.max_length_delta = std::uniform_int_distribution<int>(0, 2)(rng) == 0 ? 3 : -1;
    std::shared_ptr<const NgramLm> lm_keep;
    std::shared_ptr<const BoostingTree> boost_keep;
    const int fusion = std::uniform_int_distribution<int>(0, 3)(rng);
    if (fusion & 1) {
      config.lm = testing::random_lm(rng, vocab, Device::cpu(), lm_keep);
      config.lm_weight = std::uniform_real_distribution<float>(0.2f, 1.5f)(rng);
      ++cases_with_lm;
    }
    if (fusion & 2) {
      std::vector<Hypothesis> plain(batch.lengths.size());
      for (auto& h : plain) {
        for (int t = 0; t < 6; ++t)
          h.tokens.push_back(std::uniform_int_distribution<std::int32_t>(0, static_cast<std::int32_t>(vocab - 1))(rng));
      }
      config.boost = testing::random_boost(rng, vocab, plain, Device::cpu(), boost_keep);
      config.boost_weight = std::uniform_real_distribution<float>(0.2f, 1.5f)(rng);
      ++cases_with_boost;
    }
    SCOPED_TRACE("case " + std::to_string(i) + ": V=" + std::to_string(vocab) + " " + config.to_string());
    AedDecoder decoder(step, config);
    const auto got = decoder.decode_nbest(batch.encoder_view(), batch.lengths_view(), batch.prompts);
    const auto want = aed_search_reference([&](std::int64_t u, const std::vector<std::int32_t>& p,
                                               const std::vector<std::int32_t>& g) { return step->logprobs(u, p, g); },
                                           batch.lengths, batch.prompts, positions, config);
    expect_same(got, want, true);
    const auto best = decoder.decode(batch.encoder_view(), batch.lengths_view(), batch.prompts);
    for (std::size_t b = 0; b < best.size(); ++b) EXPECT_EQ(best[b].tokens, got[b][0].tokens);
    if (config.lm) {
      AedDecoderConfig plain_config = config;
      plain_config.lm = nullptr;
      AedDecoder plain(step, plain_config);
      const auto without = plain.decode(batch.encoder_view(), batch.lengths_view(), batch.prompts);
      for (std::size_t b = 0; b < best.size(); ++b) lm_changed += without[b].tokens != best[b].tokens;
    }
  }
  // The cases exercise what they claim to.
  EXPECT_GT(cases_with_lm, 10);
  EXPECT_GT(cases_with_boost, 10);
  EXPECT_GT(lm_changed, 0);
}

INSTANTIATE_TEST_SUITE_P(Aed, AedSearchTest, ::testing::Values(AedSearch::greedy, AedSearch::beam),
                         [](const auto& info) { return info.param == AedSearch::greedy ? "greedy" : "beam"; });

TEST(AedDecoder, LmFusionScoresEndOfSentenceWithTheFinalWeight) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  int finished = 0;
  for (int i = 0; i < 20; ++i) {
    const std::int64_t vocab = 8;
    const std::int32_t eos = 7;
    const std::string path = testing::temp_path("aed_lm_" + std::to_string(i) + ".arpa");
    testing::write_random_token_arpa(path, static_cast<int>(vocab), 3, rng);
    auto lm = std::make_shared<const NgramLm>(NgramLm::load(path, testing::token_lm_options(vocab)));
    const testing::ArpaOracle oracle(path);
    AedDecoderConfig config;
    config.search = AedSearch::beam;
    config.beam_size = 3;
    config.eos_id = eos;
    config.lm = lm;
    config.lm_weight = 0.7f;
    auto step = std::make_shared<testing::RandomAedStep>(rng(), vocab, eos, 12);
    AedDecoder decoder(step, config);
    std::vector<float> encoder(2 * 4, 0.0f);
    std::vector<std::int64_t> lengths{4, 2};
    const auto nbest = decoder.decode_nbest(TensorView(encoder.data(), DType::f32, {2, 4, 1}),
                                            TensorView(lengths.data(), DType::i64, {2}), {{eos == 0 ? 1 : 0}});
    for (const auto& list : nbest) {
      for (const Hypothesis& h : list) {
        // A hypothesis shorter than its limit ended with eos: its LM part is α times the ARPA sentence score with
        // <s> and </s>.
        if (static_cast<std::int64_t>(h.tokens.size()) >= 12 - 1) continue;
        ++finished;
        std::vector<std::string> history{"<s>"};
        double total = 0.0;
        for (std::int32_t t : h.tokens) {
          total += testing::ArpaOracle::ln(oracle.score_log10(history, testing::token_symbol(t)));
          history.push_back(oracle.canonical(testing::token_symbol(t)));
        }
        total += testing::ArpaOracle::ln(oracle.score_log10(history, "</s>"));
        EXPECT_NEAR(h.lm_score, 0.7 * total, 1e-4 * (1 + std::fabs(total)));
      }
    }
  }
  EXPECT_GT(finished, 20);
}

TEST(AedDecoder, LengthLimitsAndFinishedRowsAreNotStepped) {
  auto step = std::make_shared<testing::RandomAedStep>(5, 6, 5, 10, 0.1f);  // flat scores: eos is rarely first
  std::vector<float> encoder(3 * 8, 0.0f);
  std::vector<std::int32_t> lengths{8, 2, 0};
  AedDecoderConfig config;
  config.eos_id = 5;
  config.max_length_delta = 1;  // utterance limits 8 + 1 - 1, 2 + 1 - 1, 0 + 1 - 1 tokens
  AedDecoder decoder(step, config);
  const auto hyps = decoder.decode(TensorView(encoder.data(), DType::f32, {3, 8, 1}),
                                   TensorView(lengths.data(), DType::i32, {3}), {{0}});
  EXPECT_LE(hyps[0].tokens.size(), 8u);
  EXPECT_LE(hyps[1].tokens.size(), 2u);
  EXPECT_TRUE(hyps[2].tokens.empty());
  // Every active row stepped belongs to a hypothesis that went on: at most the generated tokens, less the last.
  std::size_t generated = 0;
  for (const auto& h : hyps) generated += h.tokens.size();
  EXPECT_LE(step->active_rows_stepped, static_cast<std::int64_t>(generated));
}

// A step on a CUDA device: the CPU search drives it through device copies and gets exactly the CPU step's results.
TEST(AedDecoderCUDA, ACudaStepGivesTheCpuStepsResults) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const Device cuda = Device::cuda(0);
  for (int i = 0; i < 20; ++i) {
    const std::int64_t vocab = 9;
    const std::int32_t eos = 4;
    auto cpu_step = std::make_shared<testing::RandomAedStep>(rng(), vocab, eos, 14);
    auto cuda_step = std::make_shared<testing::DeviceAedStep>(cpu_step, cuda);
    const Batch batch = random_batch(rng, vocab, eos);
    AedDecoderConfig config;
    config.search = i % 2 == 0 ? AedSearch::greedy : AedSearch::beam;
    config.beam_size = 1 + i % 4;
    config.eos_id = eos;
    std::shared_ptr<const NgramLm> keep;
    if (i % 3 == 0) {
      config.lm = testing::random_lm(rng, vocab, Device::cpu(), keep);
      config.lm_weight = 0.5f;
    }
    SCOPED_TRACE("case " + std::to_string(i) + ": " + config.to_string());
    const auto want =
        AedDecoder(cpu_step, config).decode_nbest(batch.encoder_view(), batch.lengths_view(), batch.prompts);
    DeviceBuffer<float> encoder(batch.encoder.size(), cuda);
    const Stream stream(cuda);
    copy_bytes_async(encoder.data(), cuda, batch.encoder.data(), Device::cpu(), batch.encoder.size() * 4,
                     stream.handle());
    const TensorView on_device(encoder.data(), DType::f32,
                               {static_cast<std::int64_t>(batch.lengths.size()), batch.frames, 1}, cuda);
    const auto got =
        AedDecoder(cuda_step, config).decode_nbest(on_device, batch.lengths_view(), batch.prompts, stream.handle());
    expect_same(got, want, true);
    if (::testing::Test::HasFailure()) return;
  }
  // Fused models must be CPU models: the search runs on the CPU.
  AedDecoderConfig config;
  config.eos_id = 4;
  std::mt19937_64 lm_rng(1);
  std::shared_ptr<const NgramLm> keep;
  config.lm = testing::random_lm(lm_rng, 9, cuda, keep);
  EXPECT_THROW(
      AedDecoder(std::make_shared<testing::DeviceAedStep>(std::make_shared<testing::RandomAedStep>(1, 9, 4, 8), cuda),
                 config),
      InvalidArgument);
}

// A step whose sessions cannot be started for more than `limit` rows (OutOfMemory, as a step out of device memory
// would); the sessions it starts are RandomAedStep's, which refuse more rows than they were started for.
class LimitedAedStep final : public AedDecoderStep {
 public:
  LimitedAedStep(std::shared_ptr<const testing::RandomAedStep> step, std::int64_t limit)
      : step_(std::move(step)), limit_(limit) {}
  Device device() const override { return step_->device(); }
  std::int64_t vocab_size() const override { return step_->vocab_size(); }
  std::int64_t max_positions() const override { return step_->max_positions(); }
  std::unique_ptr<AedStepSession> start_session(std::int64_t max_rows) const override {
    if (max_rows > limit_) throw OutOfMemory("a session of " + std::to_string(max_rows) + " rows");
    return step_->start_session(max_rows);
  }

 private:
  std::shared_ptr<const testing::RandomAedStep> step_;
  std::int64_t limit_;
};

// A call whose session cannot be started throws and leaves the decoder's session as it was: the next call that fits
// starts one of the rows it needs (was: the decoder took the failed size as its session's and handed that session
// more rows than it was started for, which the step's contract rules out).
TEST(AedDecoder, ASessionThatCannotBeStartedLeavesTheOldOne) {
  auto random = std::make_shared<testing::RandomAedStep>(3, 6, 5, 8);
  AedDecoderConfig config;
  config.eos_id = 5;
  AedDecoder decoder(std::make_shared<LimitedAedStep>(random, 2), config);
  AedDecoder unlimited(random, config);
  std::vector<float> encoder(3 * 4, 0.0f);
  std::vector<std::int64_t> lengths{4, 3, 2};
  const auto decode = [&](AedDecoder& d, std::int64_t batch) {
    return d.decode(TensorView(encoder.data(), DType::f32, {batch, 4, 1}),
                    TensorView(lengths.data(), DType::i64, {batch}), {{0}});
  };
  EXPECT_EQ(decode(decoder, 1)[0].tokens, decode(unlimited, 1)[0].tokens);  // a session of 1 row
  EXPECT_THROW(decode(decoder, 3), OutOfMemory);                            // 3 rows: more than the step can start
  const auto got = decode(decoder, 2), want = decode(unlimited, 2);         // 2 rows: a session of 2
  ASSERT_EQ(got.size(), 2u);
  for (std::size_t b = 0; b < 2; ++b) EXPECT_EQ(got[b].tokens, want[b].tokens) << "utterance " << b;
}

TEST(AedDecoder, BadInputGetsTypedErrors) {
  auto step = std::make_shared<testing::RandomAedStep>(1, 6, 5, 8);
  std::vector<float> encoder(2 * 3, 0.0f);
  std::vector<std::int64_t> lengths{3, 1};
  const TensorView enc(encoder.data(), DType::f32, {2, 3, 1});
  const TensorView lens(lengths.data(), DType::i64, {2});
  AedDecoderConfig config;
  config.eos_id = 5;
  EXPECT_THROW(AedDecoder(nullptr, config), InvalidArgument);
  AedDecoderConfig bad = config;
  bad.eos_id = -1;
  EXPECT_THROW(AedDecoder(step, bad), InvalidArgument);
  bad.eos_id = 6;
  EXPECT_THROW(AedDecoder(step, bad), InvalidArgument);
  bad = config;
  bad.search = AedSearch::beam;
  bad.beam_size = 0;
  EXPECT_THROW(AedDecoder(step, bad), InvalidArgument);
  bad = config;
  bad.lm_weight = std::nanf("");
  EXPECT_THROW(AedDecoder(step, bad), InvalidArgument);
  bad = config;
  std::mt19937_64 rng(3);
  std::shared_ptr<const NgramLm> keep;
  bad.lm = testing::random_lm(rng, 7, Device::cpu(), keep);  // V = 7, the step has 6
  EXPECT_THROW(AedDecoder(step, bad), InvalidArgument);

  AedDecoder decoder(step, config);
  EXPECT_THROW(decoder.decode(enc, lens, {}), InvalidArgument);                          // no prompt
  EXPECT_THROW(decoder.decode(enc, lens, {{0}, {0}, {0}}), InvalidArgument);             // 3 prompts for 2 utterances
  EXPECT_THROW(decoder.decode(enc, lens, {{}}), InvalidArgument);                        // empty prompt
  EXPECT_THROW(decoder.decode(enc, lens, {{9}}), InvalidArgument);                       // token outside V
  EXPECT_THROW(decoder.decode(enc, lens, {{0, 0, 0, 0, 0, 0, 0, 0}}), InvalidArgument);  // no room to generate
  std::vector<std::int64_t> long_lengths{4, 1};
  EXPECT_THROW(decoder.decode(enc, TensorView(long_lengths.data(), DType::i64, {2}), {{0}}), InvalidArgument);
  std::vector<float> lengths_f{1, 1};
  EXPECT_THROW(decoder.decode(enc, TensorView(lengths_f.data(), DType::f32, {2}), {{0}}), InvalidArgument);
  EXPECT_THROW(decoder.decode(TensorView(encoder.data(), DType::f32, {6}), lens, {{0}}), InvalidArgument);
  try {
    step->poison_token = 2;
    decoder.decode(enc, lens, {{0}});
    ADD_FAILURE() << "NaN scores were accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("token 2 of utterance 0"), std::string::npos) << e.what();
  }
  step->poison_token = -1;
  // The decoder is still usable after errors.
  EXPECT_EQ(decoder.decode(enc, lens, {{0}}).size(), 2u);
}

}  // namespace
}  // namespace asrdec

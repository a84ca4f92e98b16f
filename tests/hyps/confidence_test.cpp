// Confidence measures (asrdec/hyps/confidence.hpp): the one-pass statistics of hyps/confidence_step.hpp give NeMo's
// formulas, which the greedy oracle (tests/oracles/transducer_greedy_reference.cpp) evaluates in double precision from
// the emitting step's full row of logits, for every measure, norm and a range of α, in every greedy algorithm, on the
// CPU and on CUDA; each measure is 1 for a one-hot step and 0 for a uniform one; bad settings are refused.

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "asrdec/asrdec.hpp"
#include "hyps/confidence_step.hpp"
#include "oracles/transducer_greedy_reference.hpp"
#include "support/test_support.hpp"
#include "transducer/random_transducer.hpp"

namespace asrdec {
namespace {

std::vector<ConfidenceMethod> every_method() {
  std::vector<ConfidenceMethod> methods = {{ConfidenceMeasure::probability, EntropyNorm::exp, 0.33f},
                                           {ConfidenceMeasure::max_prob, EntropyNorm::exp, 1.0f},
                                           {ConfidenceMeasure::max_prob, EntropyNorm::exp, 0.5f}};
  for (const auto measure : {ConfidenceMeasure::gibbs, ConfidenceMeasure::tsallis, ConfidenceMeasure::renyi}) {
    for (const auto norm : {EntropyNorm::lin, EntropyNorm::exp}) {
      for (const float alpha : {1.0f, 0.33f, 0.75f, 1.5f}) methods.push_back({measure, norm, alpha});
    }
  }
  return methods;
}

// The statistics of `logits` (added one by one, or as two merged halves) and the step's confidence.
float confidence_of(const ConfidenceMethod& method, const std::vector<float>& logits, bool halves) {
  detail::LogSumExp lse = detail::lse_identity();
  detail::ConfidenceStats first = detail::confidence_stats_identity(), second = first;
  float best = -__builtin_huge_valf();
  for (std::size_t i = 0; i < logits.size(); ++i) {
    lse = detail::lse_add(lse, logits[i]);
    best = std::max(best, logits[i]);
    auto& half = halves && i % 2 == 1 ? second : first;
    half = detail::confidence_stats_add(half, logits[i], method.alpha);
  }
  const auto stats = detail::confidence_stats_merge(first, second, method.alpha);
  return detail::step_confidence(method, lse, stats, best, best, static_cast<int>(logits.size()));
}

TEST(Confidence, OneHotStepsScoreOneAndUniformStepsZero) {
  for (const ConfidenceMethod& method : every_method()) {
    if (method.measure == ConfidenceMeasure::probability) continue;  // a probability: 1/C for a uniform step
    SCOPED_TRACE(method.to_string());
    for (const int classes : {2, 9, 257}) {
      std::vector<float> uniform(static_cast<std::size_t>(classes), 0.3f), one_hot(uniform.size(), -60.0f);
      one_hot[1] = 0.0f;
      EXPECT_NEAR(confidence_of(method, uniform, false), 0.0f, 2e-4f) << classes << " classes";
      EXPECT_NEAR(confidence_of(method, one_hot, true), 1.0f, 2e-4f) << classes << " classes";
    }
    // A -inf log-probability (p = 0) adds nothing to the sums: the measure stays finite, in whichever order it comes.
    const float inf = __builtin_huge_valf();
    for (const bool halves : {false, true}) {
      EXPECT_TRUE(std::isfinite(confidence_of(method, {-inf, 0.5f, 1.0f, -inf}, halves)));
      EXPECT_TRUE(std::isfinite(confidence_of(method, {0.5f, -inf, 1.0f}, halves)));
    }
  }
}

TEST(Confidence, MergedHalvesEqualOneByOne) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (const ConfidenceMethod& method : every_method()) {
    for (int row = 0; row < 20; ++row) {
      std::vector<float> logits(2 + rng() % 60);
      for (float& l : logits) l = normal(rng);
      EXPECT_NEAR(confidence_of(method, logits, true), confidence_of(method, logits, false), 2e-5f)
          << method.to_string();
    }
  }
}

TEST(Confidence, BadSettingsAreRefused) {
  ConfidenceMethod method;
  method.alpha = 0.0f;
  ASRDEC_EXPECT_THROW_MSG(method.validate(), InvalidArgument, "ConfidenceMethod.alpha must be finite and > 0, got 0");
  TransducerGreedyConfig config;
  config.confidence.alpha = std::nanf("");
  ASRDEC_EXPECT_THROW_MSG(config.validate(), InvalidArgument, "ConfidenceMethod.alpha");
  ASRDEC_EXPECT_THROW_MSG(parse_confidence_measure("entropy"), InvalidArgument,
                          "unknown confidence measure 'entropy': expected probability, max_prob, gibbs, tsallis or "
                          "renyi");
  ASRDEC_EXPECT_THROW_MSG(parse_entropy_norm("log"), InvalidArgument, "unknown entropy norm 'log'");
  EXPECT_EQ(parse_confidence_measure("tsallis"), ConfidenceMeasure::tsallis);
  EXPECT_EQ(ConfidenceMethod({ConfidenceMeasure::renyi, EntropyNorm::lin, 0.5f}).to_string(), "renyi/lin(alpha=0.5)");
}

class ConfidenceDecoding : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      ASRDEC_SKIP_WITHOUT_CUDA();
      device_ = Device::cuda(0);
    }
  }
  Device device_;
};

// Every greedy algorithm's token confidences equal the oracle's, measured from the emitting step's logits.
TEST_P(ConfidenceDecoding, GreedyTokenConfidencesEqualTheOracle) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const std::vector<ConfidenceMethod> methods = every_method();
  std::int64_t tokens = 0;
  for (int i = 0; i < (GetParam() ? 12 : 40); ++i) {
    testing::RandomTransducerSpec spec = testing::random_spec(rng);
    spec.quantised = false;  // no exact ties between the CPU's and the oracle's choices
    spec.dtype = DType::f32;
    const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
    const TransducerModel cpu_model = random.build(Device::cpu());
    const TransducerModel model = random.build(device_);
    const testing::RandomEncoded e = testing::random_encoded(rng, spec, 4, 16);
    DeviceBuffer<std::byte> storage;
    const TensorView enc = testing::f32_on(e.values, e.batch, e.frames, e.hidden, device_, storage);
    TransducerGreedyConfig config;
    config.confidence = methods[rng() % methods.size()];
    const auto want = transducer_greedy_reference(cpu_model, e.enc(), e.lens(), config);
    SCOPED_TRACE("case " + std::to_string(i) + ": " + random.spec.describe() + ", " + config.confidence.to_string());
    std::vector<std::pair<TransducerGreedyAlgorithm, std::int32_t>> algorithms = {
        {TransducerGreedyAlgorithm::frame_looping, 1}, {TransducerGreedyAlgorithm::label_looping, 1}};
    if (!spec.tdt) algorithms.push_back({TransducerGreedyAlgorithm::wind, 4});
    for (const auto& [algorithm, window] : algorithms) {
      config.algorithm = algorithm;
      config.window = window;
      const auto got = TransducerGreedyDecoder(model, config, BatchLimits{4, 17}).decode(enc, e.lens());
      testing::expect_same_hypotheses(
          got, want, GetParam() ? testing::cuda_agreement(DType::f32) : testing::Agreement{1e-4, false},
          to_string(algorithm));
      if (::testing::Test::HasFailure()) return;
    }
    for (const auto& h : want) tokens += static_cast<std::int64_t>(h.tokens.size());
  }
  EXPECT_GT(tokens, 50) << "too few tokens to compare confidences";
}

INSTANTIATE_TEST_SUITE_P(Executors, ConfidenceDecoding, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "CUDA" : "cpu"; });

}  // namespace
}  // namespace asrdec

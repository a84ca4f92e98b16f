// CTC beam search on CUDA: the GPU executor against the per-utterance oracle on random batches (dtypes, strides,
// lengths 0 and 1, ties, -inf), with and without fusion, in every graph mode, one decoder reused across calls of
// different shapes; bad input. Skips where no CUDA device is usable.

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

TEST(CtcBeamCUDA, EqualsTheOracleInEveryGraphMode) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const Device cuda = Device::cuda(0);
  const GraphMode modes[] = {GraphMode::conditional, GraphMode::per_step, GraphMode::eager};
  const float betas[] = {0.0f, 0.5f, 1.0f, 2.5f};
  const float thresholds[] = {20.0f, 2.0f, std::numeric_limits<float>::infinity()};
  std::int64_t utterances = 0, fused = 0;
  for (int i = 0; i < 150 || utterances < 520; ++i) {
    const bool with_fusion = i % 2 == 1;
    const DType dtype = with_fusion ? DType::f32 : static_cast<DType>(rng() % 3);
    CtcBeamConfig config;
    config.beam = std::uniform_int_distribution<std::int32_t>(1, 8)(rng);
    config.beam_beta = betas[rng() % 4];
    config.beam_threshold = thresholds[rng() % 3];
    config.graph_mode = modes[(i / 2) % 3];
    std::vector<testing::CtcBatch> calls;
    for (int call = 0; call < 2; ++call) {
      testing::CtcBatch batch;
      do {
        batch = testing::random_ctc_batch(rng, dtype, {6, 30, 12});
        // The second batch keeps the blank setting; without fusion and with the blank last it may change the
        // vocabulary (the decoder then reallocates and captures its graphs again).
      } while (call == 1 && (batch.blank_config != calls[0].blank_config ||
                             ((with_fusion || batch.blank_config != -1) && batch.columns != calls[0].columns)));
      if (with_fusion && call == 0) {
        while (batch.blank != batch.columns - 1 || batch.columns < 2) {
          batch = testing::random_ctc_batch(rng, dtype, {6, 30, 12});
        }
      }
      calls.push_back(std::move(batch));
    }
    config.blank_id = calls[0].blank_config;
    CtcBeamConfig oracle_config = config;
    std::shared_ptr<const NgramLm> lm_keep;
    std::shared_ptr<const BoostingTree> boost_keep;
    if (with_fusion) {
      const std::int64_t vocab = calls[0].columns - 1;
      const int which = static_cast<int>(rng() % 3);  // LM, boosting, both
      if (which != 1) {
        config.lm = testing::random_lm(rng, vocab, cuda, lm_keep);
        config.lm_weight = testing::random_weight(rng);
      }
      if (which != 0) {
        const auto plain = ctc_beam_reference(calls[0].logprobs(), calls[0].lengths(), oracle_config);
        std::vector<Hypothesis> best;
        for (const auto& beam : plain) best.push_back(beam.empty() ? Hypothesis{} : beam.front());
        config.boost = testing::random_boost(rng, vocab, best, cuda, boost_keep);
        config.boost_weight = testing::random_weight(rng);
        // A tree with one list per utterance serves only batches of that size.
        if (config.boost->num_lists() > 1) calls[1] = calls[0];
      }
      oracle_config.lm = lm_keep;
      oracle_config.boost = boost_keep;
      oracle_config.lm_weight = config.lm_weight;
      oracle_config.boost_weight = config.boost_weight;
      fused += calls[0].batch;
    }
    SCOPED_TRACE("case " + std::to_string(i) + ": " + calls[0].layout + ", " + config.to_string());
    CtcBeamDecoder decoder(cuda, config, BatchLimits{2, 4});
    for (int call = 0; call < 2; ++call) {
      const testing::CtcBatch& batch = calls[static_cast<std::size_t>(call)];
      const auto want = ctc_beam_reference(batch.logprobs(), batch.lengths(), oracle_config);
      const DeviceBuffer<std::byte> on_device = testing::to_device(batch.storage.data(), batch.storage.size(), cuda);
      const auto got = decoder.decode_nbest(batch.logprobs(cuda, on_device.data()), batch.lengths());
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t b = 0; b < want.size(); ++b) {
        testing::expect_same_hypotheses(got[b], want[b], 1e-4,
                                        "call " + std::to_string(call) + ", utterance " + std::to_string(b));
      }
      if (::testing::Test::HasFailure()) return;
      utterances += batch.batch;
    }
  }
  EXPECT_GE(utterances, 500);
  std::printf("%lld utterances (%lld with fusion)\n", static_cast<long long>(utterances),
              static_cast<long long>(fused));
}

TEST(CtcBeamCUDA, RejectsBadInput) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const Device cuda = Device::cuda(0);
  std::vector<float> values(2 * 3 * 4, -1.0f);
  std::vector<std::int32_t> lengths = {3, 2};
  const TensorView lens(lengths.data(), DType::i32, {2});
  CtcBeamDecoder decoder(cuda, CtcBeamConfig{});
  values[1 * 12 + 1 * 4 + 2] = std::nanf("");
  {
    const DeviceBuffer<std::byte> d = testing::to_device(values.data(), values.size() * 4, cuda);
    ASRDEC_EXPECT_THROW_MSG(decoder.decode(TensorView(d.data(), DType::f32, {2, 3, 4}, cuda), lens), InvalidArgument,
                            "logprobs[1, 1, 2] is NaN");
    // Host logprobs for a CUDA decoder.
    ASRDEC_EXPECT_THROW_MSG(decoder.decode(TensorView(values.data(), DType::f32, {2, 3, 4}), lens), InvalidArgument,
                            "logprobs");
    // A NaN past the utterance's length is never read.
    lengths[1] = 1;
    EXPECT_EQ(decoder.decode(TensorView(d.data(), DType::f32, {2, 3, 4}, cuda), lens).size(), 2u);
    lengths[1] = 4;
    ASRDEC_EXPECT_THROW_MSG(decoder.decode(TensorView(d.data(), DType::f32, {2, 3, 4}, cuda), lens), InvalidArgument,
                            "lengths[1] = 4 is outside [0, 3]");
  }
  // An LM on the CPU for a CUDA decoder.
  std::mt19937_64 rng(5);
  std::shared_ptr<const NgramLm> keep;
  CtcBeamConfig config;
  config.lm = testing::random_lm(rng, 3, Device::cpu(), keep);
  ASRDEC_EXPECT_THROW_MSG(CtcBeamDecoder(cuda, config), InvalidArgument, "decoder's device");
}

}  // namespace
}  // namespace asrdec

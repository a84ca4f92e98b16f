// ALSD++, AES++ and WIND beam search on CUDA: the batched GPU executor against the per-utterance oracles (the same
// ones the CPU executors are checked against) on random RNN-T/TDT models (AES++, WIND: RNN-T), in every graph mode,
// with and without
// fusion in every pruning × blank-scoring mode; one decoder reused across calls of different shapes (graph replay,
// buffer growth); bad input. Skips where no CUDA device is usable.

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

// enc_proj of `e` copied to `device`; the buffer must outlive the view.
struct DeviceEncoded {
  DeviceBuffer<std::byte> buffer;
  TensorView view;
};

DeviceEncoded on_device(const testing::RandomEncoded& e, Device device) {
  DeviceEncoded out;
  if (!e.values.empty()) out.buffer = testing::to_device(e.values.data(), e.values.size() * 4, device);
  out.view =
      TensorView(e.values.empty() ? nullptr : out.buffer.data(), DType::f32, {e.batch, e.frames, e.hidden}, device);
  return out;
}

TEST(TransducerBeamCUDA, AlsdAesAndWindEqualTheOraclesInEveryGraphMode) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const Device cuda = Device::cuda(0);
  const GraphMode modes[] = {GraphMode::conditional, GraphMode::per_step, GraphMode::eager};
  std::int64_t utterances = 0, fused = 0, replays = 0, aes = 0, wind = 0;
  for (int i = 0; i < 240 || utterances < 780 || aes < 260 || wind < 260; ++i) {
    testing::RandomTransducerSpec spec = beam_spec(rng);
    const bool with_fusion = i % 2 == 1;
    const int algorithm = (i / 2) % 3;  // alsd++, aes++, wind-beam
    const bool use_aes = algorithm == 1;
    const bool use_wind = algorithm == 2;
    if (use_aes || use_wind) spec.tdt = false;
    if (with_fusion) spec.blank = -1;  // fusion needs blank = V
    const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
    const TransducerModel cpu_model = random.build(Device::cpu());
    const TransducerModel cuda_model = random.build(cuda);
    TransducerBeamConfig config;
    config.beam = std::uniform_int_distribution<std::int32_t>(1, 8)(rng);
    config.max_symbols_per_frame = std::uniform_int_distribution<std::int32_t>(1, 4)(rng);
    config.length_normalized = rng() % 2 == 0;
    config.graph_mode = modes[(i / 6) % 3];
    if (use_aes) {
      config.algorithm = TransducerBeamAlgorithm::aes;
      config.aes_num_steps = std::uniform_int_distribution<std::int32_t>(1, 4)(rng);
      config.aes_expansion_beta = std::uniform_int_distribution<std::int32_t>(0, 3)(rng);
      config.aes_expansion_gamma = std::uniform_real_distribution<float>(0.5f, 5.0f)(rng);
    }
    if (use_wind) {
      config.algorithm = TransducerBeamAlgorithm::wind;
      config.wind_window = std::uniform_int_distribution<std::int32_t>(1, 6)(rng);
    }
    TransducerBeamConfig oracle_config = config;
    testing::FusionKeep keep;
    const testing::RandomEncoded first = testing::random_encoded(rng, spec, 8, 16);
    if (with_fusion) {
      const auto plain = transducer_beam_reference(cpu_model, first.enc(), first.lens(), config);
      testing::add_random_fusion(rng, spec, i / 6, plain, config, keep, cuda);
      oracle_config = config;
      oracle_config.lm = config.lm != nullptr ? keep.lm : nullptr;
      oracle_config.boost = config.boost != nullptr ? keep.boost : nullptr;
      fused += first.batch;
    }
    SCOPED_TRACE("case " + std::to_string(i) + ": " + random.spec.describe() + ", " + config.to_string());
    TransducerBeamDecoder decoder(cuda_model, config, BatchLimits{2, 4});
    if (config.graph_mode != GraphMode::conditional) {
      EXPECT_EQ(decoder.graph_mode(), config.graph_mode);
    }
    EXPECT_NE(decoder.graph_mode(), GraphMode::automatic);
    // Two calls on one decoder: the second replays (or re-captures after growth) the graphs of the first.
    for (int call = 0; call < 2; ++call) {
      testing::RandomEncoded e = call == 0 ? first : testing::random_encoded(rng, spec, 8, 16);
      if (call == 1 && config.boost != nullptr && config.boost->num_lists() > 1) e = first;  // lists fix the batch
      const auto want = transducer_beam_reference(cpu_model, e.enc(), e.lens(), oracle_config);
      const DeviceEncoded d = on_device(e, cuda);
      const Stream user_stream(cuda);  // the second call runs on a stream of the caller's
      expect_same_beams(decoder.decode_nbest(d.view, e.lens(), call == 1 ? user_stream.handle() : nullptr), want,
                        std::string(to_string(config.algorithm)) + " on CUDA, call " + std::to_string(call));
      if (::testing::Test::HasFailure()) return;
      utterances += e.batch;
      aes += use_aes ? e.batch : 0;
      wind += use_wind ? e.batch : 0;
      replays += call;
    }
  }
  EXPECT_GE(utterances, 750);
  EXPECT_GE(aes, 250);
  EXPECT_GE(wind, 250);
  std::printf("%lld utterances (%lld AES++, %lld WIND, %lld with fusion), %lld second calls\n",
              static_cast<long long>(utterances), static_cast<long long>(aes), static_cast<long long>(wind),
              static_cast<long long>(fused), static_cast<long long>(replays));
}

// Beam 1 is greedy decoding for ALSD++, and for WIND with a window of one frame.
TEST(TransducerBeamCUDA, BeamOneIsGreedy) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 60; ++i) {
    testing::RandomTransducerSpec spec = beam_spec(rng);
    TransducerBeamConfig config;
    if (i % 3 == 2) {
      spec.tdt = false;
      config.algorithm = TransducerBeamAlgorithm::wind;
      config.wind_window = 1;
    }
    const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
    const testing::RandomEncoded e = testing::random_encoded(rng, spec, 8, 24);
    config.beam = 1;
    config.max_symbols_per_frame = std::uniform_int_distribution<std::int32_t>(1, 4)(rng);
    SCOPED_TRACE("case " + std::to_string(i) + ": " + random.spec.describe() + ", " + config.to_string());
    const auto greedy =
        transducer_greedy_reference(random.build(Device::cpu()), e.enc(), e.lens(), config.max_symbols_per_frame);
    TransducerBeamDecoder decoder(random.build(Device::cuda(0)), config);
    const DeviceEncoded d = on_device(e, Device::cuda(0));
    const auto beam = decoder.decode(d.view, e.lens());
    ASSERT_EQ(beam.size(), greedy.size());
    for (std::size_t b = 0; b < beam.size(); ++b) EXPECT_EQ(beam[b].tokens, greedy[b].tokens) << "utterance " << b;
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(TransducerBeamCUDA, EveryAlgorithmRejectsBadInput) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  std::mt19937_64 rng(11);
  testing::RandomTransducerSpec spec = beam_spec(rng);
  spec.tdt = false;  // every frame is read
  spec.blank = -1;
  const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
  for (const TransducerBeamAlgorithm algorithm :
       {TransducerBeamAlgorithm::alsd, TransducerBeamAlgorithm::aes, TransducerBeamAlgorithm::wind}) {
    SCOPED_TRACE(to_string(algorithm));
    TransducerBeamConfig config;
    config.algorithm = algorithm;
    TransducerBeamDecoder decoder(random.build(Device::cuda(0)), config);
    testing::RandomEncoded e;
    e.batch = 2;
    e.frames = 4;
    e.hidden = spec.joint;
    e.values.assign(static_cast<std::size_t>(e.batch * e.frames * e.hidden), 0.25f);
    e.lengths = {4, 3};
    e.values[static_cast<std::size_t>(e.frames * e.hidden + 2 * e.hidden + 1)] = std::nanf("");
    {
      const DeviceEncoded d = on_device(e, Device::cuda(0));
      ASRDEC_EXPECT_THROW_MSG(decoder.decode(d.view, e.lens()), InvalidArgument, "enc_proj[1, 2, 1] is NaN");
    }
    // A NaN on a frame past the utterance's length is never read.
    e.lengths = {4, 2};
    {
      const DeviceEncoded d = on_device(e, Device::cuda(0));
      EXPECT_EQ(decoder.decode(d.view, e.lens()).size(), 2u);
      e.lengths = {4, 5};
      ASRDEC_EXPECT_THROW_MSG(decoder.decode(d.view, e.lens()), InvalidArgument, "lengths");
    }
    // Host memory for a CUDA model, an empty batch, zero-length utterances.
    ASRDEC_EXPECT_THROW_MSG(decoder.decode(e.enc(), e.lens()), InvalidArgument, "enc_proj");
    e.lengths = {0, 0};
    {
      const DeviceEncoded d = on_device(e, Device::cuda(0));
      const auto empty = decoder.decode(d.view, e.lens());
      ASSERT_EQ(empty.size(), 2u);
      EXPECT_TRUE(empty[0].tokens.empty());
      EXPECT_EQ(empty[0].score, 0.0f);
    }
  }
}

}  // namespace
}  // namespace asrdec

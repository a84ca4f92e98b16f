// Misuse of the transducer API as an engine might commit it: utterances continued in the wrong decoder, chunks that
// throw halfway, moved-from objects, absurd limits and configs, extreme finite inputs, two threads on one decoder.
// Each must be a typed error (or, for the utterances, no change) on the CPU and, where a GPU is at hand, on CUDA.

#include <atomic>
#include <cmath>
#include <limits>
#include <thread>

#include "src/core/exclusive_use.hpp"
#include "transducer/random_transducer.hpp"

namespace asrdec {
namespace {

using testing::make_random_transducer;
using testing::random_encoded;

class TransducerMisuse : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      ASRDEC_SKIP_WITHOUT_CUDA();
      device_ = Device::cuda(0);
    }
  }
  // A host array as a tensor on the decoder's device (kept alive in `buffers_`).
  TensorView place(const std::vector<float>& values, std::initializer_list<std::int64_t> shape) {
    if (device_.is_cpu()) return TensorView(values.data(), DType::f32, shape);
    buffers_.push_back(testing::to_device(values.data(), values.size() * 4, device_));
    return TensorView(buffers_.back().data(), DType::f32, shape, device_);
  }
  Device device_;
  std::vector<DeviceBuffer<std::byte>> buffers_;
};

std::string device_name(const ::testing::TestParamInfo<bool>& info) { return info.param ? "CUDA" : "cpu"; }
INSTANTIATE_TEST_SUITE_P(Devices, TransducerMisuse, ::testing::Values(false, true), device_name);

TEST_P(TransducerMisuse, UtterancesContinueOnlyInTheDecoderThatStartedThem) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  testing::RandomTransducerSpec rnnt_spec;
  testing::RandomTransducerSpec tdt_spec;
  tdt_spec.tdt = true;
  const testing::RandomTransducer rnnt = make_random_transducer(rnnt_spec, rng);
  const testing::RandomTransducer tdt = make_random_transducer(tdt_spec, rng);
  TransducerGreedyDecoder decoder(rnnt.build(device_));
  const testing::RandomEncoded e = random_encoded(rng, rnnt_spec, 3, 6);
  const TensorView enc = place(e.values, {e.batch, e.frames, e.hidden});
  std::vector<ChunkRow> rows;
  for (std::int64_t b = 0; b < e.batch; ++b) rows.push_back(ChunkRow{b, true, false});
  decoder.decode_chunks(rows, enc, e.lens());
  // An utterance's state lives in its decoder: another decoder (another model, another algorithm) does not know it.
  TransducerGreedyDecoder tdt_decoder(tdt.build(device_));
  TransducerGreedyConfig frame_looping;
  frame_looping.algorithm = TransducerGreedyAlgorithm::frame_looping;
  TransducerGreedyDecoder other_algorithm(rnnt.build(device_), frame_looping);
  for (ChunkRow& row : rows) row.first = false;
  for (TransducerGreedyDecoder* other : {&tdt_decoder, &other_algorithm}) {
    ASRDEC_EXPECT_THROW_MSG(other->decode_chunks(rows, enc, e.lens()), InvalidArgument, "utterance 0 is not open");
    EXPECT_EQ(other->open_utterances(), 0);
  }
  EXPECT_EQ(decoder.open_utterances(), e.batch);
}

TEST_P(TransducerMisuse, AChunkThatThrowsLeavesTheStreamAsItWas) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  for (const bool tdt_model : {false, true}) {
    testing::RandomTransducerSpec spec;
    spec.tdt = tdt_model;
    const testing::RandomTransducer model = make_random_transducer(spec, rng);
    TransducerGreedyDecoder decoder(model.build(device_));
    const std::int64_t B = 3, T = 16, C = 8, J = spec.joint;
    std::vector<float> values(static_cast<std::size_t>(B * T * J));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : values) v = normal(rng);
    // Chunks [0, 8) and [8, 16); a copy of the second has NaNs in utterance 2's frames 4-7. A chunk starts at most 3
    // frames in (TDT overshoot) and jumps at most 4, so some frame of 0-3 is read first, by every utterance, and some
    // frame of 4-7 later: the NaN is found after the stream state has moved.
    std::vector<float> first, second, poisoned;
    for (std::int64_t b = 0; b < B; ++b) {
      const auto row = values.begin() + b * T * J;
      first.insert(first.end(), row, row + C * J);
      second.insert(second.end(), row + C * J, row + T * J);
    }
    poisoned = second;
    for (std::int64_t t = 4; t < C; ++t) {
      poisoned[static_cast<std::size_t>((2 * C + t) * J + 1)] = std::numeric_limits<float>::quiet_NaN();
    }
    const std::vector<std::int32_t> eight(3, static_cast<std::int32_t>(C));
    const TensorView lengths(eight.data(), DType::i32, {B});
    const std::vector<ChunkRow> start = {ChunkRow{7, true}, ChunkRow{8, true}, ChunkRow{9, true}};
    const std::vector<ChunkRow> next = {ChunkRow{7}, ChunkRow{8}, ChunkRow{9}};
    decoder.decode_chunks(start, place(first, {B, C, J}), lengths);
    ASRDEC_EXPECT_THROW_MSG(decoder.decode_chunks(next, place(poisoned, {B, C, J}), lengths), InvalidArgument,
                            ", 1] is NaN");
    EXPECT_EQ(decoder.open_utterances(), 3);
    const std::vector<Hypothesis> part2 = decoder.decode_chunks(next, place(second, {B, C, J}), lengths);
    // The same two chunks through utterances that never saw the bad one.
    const std::vector<ChunkRow> clean_start = {ChunkRow{1, true}, ChunkRow{2, true}, ChunkRow{3, true}};
    const std::vector<ChunkRow> clean_next = {ChunkRow{1}, ChunkRow{2}, ChunkRow{3}};
    decoder.decode_chunks(clean_start, place(first, {B, C, J}), lengths);
    testing::expect_same_hypotheses(part2, decoder.decode_chunks(clean_next, place(second, {B, C, J}), lengths), 0.0,
                                    tdt_model ? "TDT" : "RNN-T");
  }
}

TEST_P(TransducerMisuse, MovedFromObjectsRefuseEveryCall) {
  std::mt19937_64 rng(3);
  const testing::RandomTransducerSpec spec;
  const testing::RandomTransducer model = make_random_transducer(spec, rng);
  TransducerGreedyDecoder greedy(model.build(device_));
  const TransducerGreedyDecoder moved_greedy = std::move(greedy);
  const std::vector<float> values(static_cast<std::size_t>(spec.joint), 0.5f);
  const std::vector<std::int32_t> one = {1};
  const TensorView enc = place(values, {1, 1, spec.joint});
  const TensorView lengths(one.data(), DType::i32, {1});
  ASRDEC_EXPECT_THROW_MSG(greedy.decode(enc, lengths), InvalidArgument,
                          "TransducerGreedyDecoder: used after it was moved from");
  ASRDEC_EXPECT_THROW_MSG(greedy.decode_chunks({ChunkRow{1, true}}, enc, lengths), InvalidArgument,
                          "used after it was moved from");
  ASRDEC_EXPECT_THROW_MSG(greedy.cancel(1), InvalidArgument, "used after it was moved from");
  ASRDEC_EXPECT_THROW_MSG(greedy.open_utterances(), InvalidArgument, "used after it was moved from");
  ASRDEC_EXPECT_THROW_MSG(greedy.graph_mode(), InvalidArgument, "used after it was moved from");
  ASRDEC_EXPECT_THROW_MSG(greedy.model(), InvalidArgument, "used after it was moved from");
  EXPECT_EQ(moved_greedy.config().algorithm, TransducerGreedyAlgorithm::label_looping);

  TransducerBeamDecoder beam(model.build(device_));
  const TransducerBeamDecoder moved_beam = std::move(beam);
  ASRDEC_EXPECT_THROW_MSG(beam.decode(enc, lengths), InvalidArgument,
                          "TransducerBeamDecoder: used after it was moved from");
  ASRDEC_EXPECT_THROW_MSG(beam.config(), InvalidArgument, "used after it was moved from");
  CtcGreedyDecoder ctc(device_);
  const CtcGreedyDecoder moved_ctc = std::move(ctc);
  ASRDEC_EXPECT_THROW_MSG(ctc.decode(enc, lengths), InvalidArgument, "CtcGreedyDecoder: used after it was moved from");
  CtcBeamDecoder ctc_beam(device_);
  const CtcBeamDecoder moved_ctc_beam = std::move(ctc_beam);
  ASRDEC_EXPECT_THROW_MSG(ctc_beam.decode(enc, lengths), InvalidArgument,
                          "CtcBeamDecoder: used after it was moved from");
}

TEST_P(TransducerMisuse, AbsurdLimitsAndConfigsAreRefusedBeforeAnythingIsSized) {
  std::mt19937_64 rng(4);
  const testing::RandomTransducerSpec spec;
  const TransducerModel model = make_random_transducer(spec, rng).build(device_);
  // Used to ask for a 2^46-byte allocation.
  ASRDEC_EXPECT_THROW_MSG(TransducerGreedyDecoder(model, {}, BatchLimits{std::int64_t{1} << 40, 16}), InvalidArgument,
                          "BatchLimits.max_batch must be in [1, 16777216], got 1099511627776");
  ASRDEC_EXPECT_THROW_MSG(TransducerBeamDecoder(model, {}, BatchLimits{4, std::int64_t{1} << 40}), InvalidArgument,
                          "BatchLimits.max_frames must be in [1, 1073741823]");
  TransducerGreedyConfig greedy;
  greedy.algorithm = TransducerGreedyAlgorithm::wind;
  greedy.window = 1000000000;  // ran for minutes
  ASRDEC_EXPECT_THROW_MSG(TransducerGreedyDecoder(model, greedy), InvalidArgument,
                          "TransducerGreedyConfig.window must be in [1, 64], got 1000000000");
  greedy = {};
  greedy.max_symbols_per_frame = 1000000000;  // bad_alloc
  ASRDEC_EXPECT_THROW_MSG(TransducerGreedyDecoder(model, greedy), InvalidArgument,
                          "TransducerGreedyConfig.max_symbols_per_frame must be in [1, 100], got 1000000000");
  TransducerBeamConfig beam;
  beam.max_symbols_per_frame = 101;
  ASRDEC_EXPECT_THROW_MSG(TransducerBeamDecoder(model, beam), InvalidArgument,
                          "TransducerBeamConfig.max_symbols_per_frame must be in [1, 100], got 101");
}

TEST_P(TransducerMisuse, FiniteInputsThatOverflowTheJointAreRefusedByEveryDecoder) {
  std::mt19937_64 rng(5);
  const testing::RandomTransducerSpec spec;
  const TransducerModel model = make_random_transducer(spec, rng).build(device_);
  const std::int64_t B = 2, T = 6, J = spec.joint;
  std::vector<float> values(static_cast<std::size_t>(B * T * J), 0.25f);
  for (std::int64_t j = 0; j < J; ++j) values[static_cast<std::size_t>((1 * T + 4) * J + j)] = 3e38f;
  const std::vector<std::int32_t> lengths = {6, 6};
  const TensorView enc = place(values, {B, T, J});
  const TensorView lens(lengths.data(), DType::i32, {B});
  const std::string message = "enc_proj[1, 4, :] makes the joint's outputs overflow float32";
  for (TransducerGreedyAlgorithm algorithm :
       {TransducerGreedyAlgorithm::frame_looping, TransducerGreedyAlgorithm::label_looping,
        TransducerGreedyAlgorithm::wind}) {
    TransducerGreedyConfig config;
    config.algorithm = algorithm;
    TransducerGreedyDecoder decoder(model, config);
    ASRDEC_EXPECT_THROW_MSG(decoder.decode(enc, lens), InvalidArgument, message);
  }
  // WIND beam search used to stop with "internal error: 16 hypotheses on frame 0, more than the beam 4".
  for (TransducerBeamAlgorithm algorithm :
       {TransducerBeamAlgorithm::alsd, TransducerBeamAlgorithm::aes, TransducerBeamAlgorithm::wind}) {
    TransducerBeamConfig config;
    config.algorithm = algorithm;
    config.beam = 4;
    TransducerBeamDecoder decoder(model, config);
    ASRDEC_EXPECT_THROW_MSG(decoder.decode(enc, lens), InvalidArgument, message);
  }
  // Large but representable: every decoder still finds hypotheses with finite scores (AES++ used to prune even its
  // best proposal once gamma was absorbed by scores near 1e21, and returned nothing).
  for (std::int64_t j = 0; j < J; ++j) values[static_cast<std::size_t>((1 * T + 4) * J + j)] = 1e20f;
  const TensorView large = place(values, {B, T, J});
  for (TransducerBeamAlgorithm algorithm :
       {TransducerBeamAlgorithm::alsd, TransducerBeamAlgorithm::aes, TransducerBeamAlgorithm::wind}) {
    TransducerBeamConfig config;
    config.algorithm = algorithm;
    config.beam = 4;
    TransducerBeamDecoder decoder(model, config);
    for (const std::vector<Hypothesis>& beam : decoder.decode_nbest(large, lens)) {
      ASSERT_FALSE(beam.empty()) << to_string(algorithm);
      EXPECT_TRUE(std::isfinite(beam.front().score) && beam.front().score < 0.0f) << to_string(algorithm);
    }
  }
  // Without check_values the caller asked for no checks.
  TransducerGreedyConfig unchecked;
  unchecked.check_values = false;
  TransducerGreedyDecoder decoder(model, unchecked);
  EXPECT_NO_THROW(decoder.decode(enc, lens));
}

TEST_P(TransducerMisuse, TwoThreadsOnOneDecoderGetAnErrorNeverWrongResults) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const testing::RandomTransducerSpec spec;
  const TransducerModel model = make_random_transducer(spec, rng).build(device_);
  const testing::RandomEncoded a = random_encoded(rng, spec, 8, 40);
  const testing::RandomEncoded b = random_encoded(rng, spec, 8, 40);
  const TensorView enc_a = place(a.values, {a.batch, a.frames, a.hidden});
  const TensorView enc_b = place(b.values, {b.batch, b.frames, b.hidden});
  TransducerGreedyDecoder reference(model);
  const std::vector<Hypothesis> want_a = reference.decode(enc_a, a.lens());
  const std::vector<Hypothesis> want_b = reference.decode(enc_b, b.lens());
  TransducerGreedyDecoder shared(model);
  std::atomic<int> refused{0}, wrong{0}, other{0};
  const auto worker = [&](const TensorView& enc, const TensorView& lens, const std::vector<Hypothesis>& want) {
    for (int i = 0; i < 200; ++i) {
      try {
        const std::vector<Hypothesis> got = shared.decode(enc, lens);
        for (std::size_t k = 0; k < got.size(); ++k) {
          if (got[k].tokens != want[k].tokens || got[k].timestamps != want[k].timestamps) ++wrong;
        }
      } catch (const InvalidArgument& error) {
        if (std::string(error.what()).find("another thread is using this object") != std::string::npos) {
          ++refused;
        } else {
          ++other;
        }
      }
    }
  };
  std::thread first(worker, std::cref(enc_a), a.lens(), std::cref(want_a));
  std::thread second(worker, std::cref(enc_b), b.lens(), std::cref(want_b));
  first.join();
  second.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(other.load(), 0);
  std::printf("two threads, 400 calls: %d refused\n", refused.load());
}

TEST(MovedFromAssets, StayTheSameWorkingAsset) {
  // Immutable assets share their data: a move leaves the source usable instead of null.
  std::mt19937_64 rng(6);
  const testing::RandomTransducerSpec spec;
  TransducerModel model = make_random_transducer(spec, rng).build(Device::cpu());
  const TransducerModel taken = std::move(model);
  EXPECT_EQ(model.joint_hidden(), taken.joint_hidden());
  NgramLmOptions options;
  options.vocab_size = 8;
  NgramLm lm = NgramLm::load(testing::source_path("tests/data/arpa/tokens_3gram.arpa"), options);
  const NgramLm lm_taken = std::move(lm);
  EXPECT_EQ(lm.score(NgramLm::bos_state(), 3), lm_taken.score(NgramLm::bos_state(), 3));
  BoostingTree tree = BoostingTree::build({{{1, 2}}}, 8);
  const BoostingTree tree_taken = std::move(tree);
  EXPECT_EQ(tree.num_states(), tree_taken.num_states());
  SafetensorsFile file(testing::source_path("tests/data/safetensors/small.safetensors"));
  const SafetensorsFile file_taken = std::move(file);
  EXPECT_EQ(file.names(), file_taken.names());
}

TEST(ExclusiveCall, ASecondThreadIsRefusedWhileTheOwnerMayNest) {
  detail::OwnerSlot slot;
  {
    const detail::ExclusiveCall outer(slot, "outer");
    const detail::ExclusiveCall nested(slot, "nested");  // the same thread: decode() calling decode_async()
    std::string message;
    std::thread other([&] {
      try {
        const detail::ExclusiveCall call(slot, "Decoder::decode");
      } catch (const InvalidArgument& error) {
        message = error.what();
      }
    });
    other.join();
    EXPECT_NE(message.find("Decoder::decode: another thread is using this object"), std::string::npos) << message;
  }
  std::thread after([&] { EXPECT_NO_THROW(detail::ExclusiveCall(slot, "after")); });
  after.join();
}

}  // namespace
}  // namespace asrdec

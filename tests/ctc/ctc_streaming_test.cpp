// Streaming CTC decoding (CtcGreedyDecoder and CtcBeamDecoder::decode_chunks): random server traffic over random
// batches — chunks of random sizes (0 included) of utterances that join and leave at any call, in any row order,
// cancelled or abandoned now and then — with and without an LM and a boosting tree. Every finished utterance equals
// decode() of the whole utterance on the same device exactly (scores bit for bit); a greedy partial result is a
// prefix of it; calls that throw (a NaN, an id twice, an utterance that is not open) change no utterance.

#include <cstring>
#include <type_traits>

#include "ctc/ctc_batch_generator.hpp"
#include "lm/random_fusion.hpp"
#include "support/streaming_schedule.hpp"
#include "support/test_support.hpp"

namespace asrdec {
namespace {

struct StreamCase {
  bool cuda;
  GraphMode mode;
  DType dtype;
};

std::string case_name(const ::testing::TestParamInfo<StreamCase>& info) {
  const StreamCase& c = info.param;
  return (c.cuda ? std::string("CUDA_") + to_string(c.mode) + "_" : std::string("cpu_")) + dtype_name(c.dtype);
}

std::vector<StreamCase> all_cases() {
  std::vector<StreamCase> cases;
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    cases.push_back({false, GraphMode::eager, dtype});
    for (GraphMode mode : {GraphMode::conditional, GraphMode::per_step, GraphMode::eager}) {
      cases.push_back({true, mode, dtype});
    }
  }
  return cases;
}

// The batch's frames as one contiguous [B, T, C] array of its dtype (the stored bits, whatever its layout); frames
// past an utterance's length hold NaN.
std::vector<std::byte> contiguous(const testing::CtcBatch& batch) {
  const std::size_t element = dtype_size(batch.dtype);
  std::vector<std::byte> out(static_cast<std::size_t>(batch.batch) * batch.frames * batch.columns * element,
                             std::byte{0xff});
  for (int b = 0; b < batch.batch; ++b) {
    for (int t = 0; t < batch.length(b); ++t) {
      for (int v = 0; v < batch.columns; ++v) {
        const std::size_t to = ((static_cast<std::size_t>(b) * batch.frames + t) * batch.columns + v) * element;
        std::memcpy(out.data() + to, batch.storage.data() + batch.offset(b, t, v) * static_cast<std::int64_t>(element),
                    element);
      }
    }
  }
  return out;
}

class CtcStreaming : public ::testing::TestWithParam<StreamCase> {
 protected:
  void SetUp() override {
    if (GetParam().cuda) {
      ASRDEC_SKIP_WITHOUT_CUDA();
      device_ = Device::cuda(0);
    }
  }
  TensorView place(const void* data, std::size_t bytes, DType dtype, const std::vector<std::int64_t>& shape,
                   DeviceBuffer<std::byte>& storage) const {
    if (device_.is_cuda()) {
      storage = testing::to_device(data, std::max<std::size_t>(bytes, 1), device_);
      data = storage.data();
    }
    return TensorView(data, dtype, {shape[0], shape[1], shape[2]}, device_);
  }
  template <class Decoder>
  void chunked_utterances_equal_whole_ones();
  Device device_;
};

// Random batches and configurations through whole and streamed decoding; `Decoder` is CtcGreedyDecoder or
// CtcBeamDecoder.
template <class Decoder>
void CtcStreaming::chunked_utterances_equal_whole_ones() {
  using Config = std::decay_t<decltype(std::declval<Decoder>().config())>;
  constexpr bool greedy = std::is_same_v<Decoder, CtcGreedyDecoder>;
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const DType dtype = GetParam().dtype;
  std::int64_t finished = 0, partials = 0, rejected = 0, fused_rounds = 0;
  for (int round = 0; round < (GetParam().cuda ? 12 : 40); ++round) {
    const bool fused = rng() % 2 == 0;
    testing::CtcBatch batch;
    do {
      batch = testing::random_ctc_batch(rng, dtype, {10, 30, 20});
    } while (fused && (batch.blank != batch.columns - 1 || batch.columns < 2));
    Config config;
    config.blank_id = batch.blank_config;
    config.graph_mode = GetParam().mode;
    std::string described = batch.layout + ", " + std::to_string(batch.batch) + " utterances";
    if constexpr (greedy) {
      config.threads = static_cast<std::int32_t>(1 + rng() % 3);
    } else {
      config.beam = static_cast<std::int32_t>(1 + rng() % 6);
      config.beam_beta = rng() % 2 == 0 ? 0.0f : 0.5f;
      config.beam_threshold = rng() % 3 == 0 ? 4.0f : 20.0f;
      config.threads = static_cast<std::int32_t>(1 + rng() % 3);
      described += ", beam " + std::to_string(config.beam);
    }
    if (fused) {
      ++fused_rounds;
      std::vector<Hypothesis> plain(static_cast<std::size_t>(batch.batch));
      for (int b = 0; b < batch.batch; ++b) plain[static_cast<std::size_t>(b)].tokens = batch.reference(b).tokens;
      std::shared_ptr<const NgramLm> lm_keep;
      std::shared_ptr<const BoostingTree> tree_keep;
      if (rng() % 3 != 0) {
        config.lm = testing::random_lm(rng, batch.columns - 1, device_, lm_keep);
        config.lm_weight = testing::random_weight(rng);
        described += ", " + lm_keep->describe();
      }
      if (config.lm == nullptr || rng() % 2 == 0) {
        config.boost = testing::random_boost(rng, batch.columns - 1, plain, device_, tree_keep);
        config.boost_weight = testing::random_weight(rng);
        described += ", " + tree_keep->describe();
      }
    }
    SCOPED_TRACE("round " + std::to_string(round) + ": " + described);
    std::vector<std::int32_t> lengths(static_cast<std::size_t>(batch.batch));
    for (int b = 0; b < batch.batch; ++b)
      lengths[static_cast<std::size_t>(b)] = static_cast<std::int32_t>(batch.length(b));

    DeviceBuffer<std::byte> whole_storage;
    Decoder reference(device_, config);
    TensorView whole_view = batch.logprobs();
    if (device_.is_cuda()) {
      whole_storage = testing::to_device(batch.storage.data(), batch.storage.size(), device_);
      whole_view = batch.logprobs(device_, whole_storage.data());
    }
    const std::vector<Hypothesis> whole = reference.decode(whole_view, batch.lengths());

    const std::vector<std::byte> frames = contiguous(batch);
    const int max_open = 1 + static_cast<int>(rng() % 6);
    const int lanes = 1 + static_cast<int>(rng() % 6);
    const testing::StreamingSchedule schedule = testing::random_streaming_schedule(rng, lengths, max_open, lanes, 0.2);
    BatchLimits limits{1 + static_cast<std::int64_t>(rng() % 3), 1 + static_cast<std::int64_t>(rng() % 8)};
    limits.max_open_utterances = std::max<std::int64_t>(schedule.max_open, 1);
    Decoder decoder(device_, config, limits);
    const std::int64_t lists = config.boost != nullptr ? config.boost->num_lists() : 1;
    for (const testing::StreamingCall& base : schedule.calls) {
      for (std::int64_t id : base.cancel) EXPECT_TRUE(decoder.cancel(id)) << "utterance " << id;
      if (base.rows.empty()) continue;
      testing::StreamingCall call = base;
      for (std::size_t r = 0; r < call.rows.size(); ++r) {
        call.rows[r].phrase_list = lists == 1 ? 0 : call.utterance[r];
      }
      std::int64_t T = 0;
      std::vector<std::byte> chunk =
          testing::gather_chunks(frames.data(), batch.frames, batch.columns, dtype_size(dtype), call, T);
      const std::vector<std::int64_t> shape = {static_cast<std::int64_t>(call.rows.size()), T, batch.columns};
      const TensorView chunk_lengths(call.length.data(), DType::i32, {static_cast<std::int64_t>(call.rows.size())});
      // Now and then a call that must be rejected comes first; it changes nothing.
      const std::uint64_t trouble = rng() % 10;
      int poisoned = -1;
      for (std::size_t r = 0; r < call.rows.size() && trouble == 0; ++r) {
        if (call.length[r] > 0) poisoned = static_cast<int>(r);
      }
      if (poisoned >= 0) {
        std::vector<std::byte> bad = chunk;
        const std::size_t element = dtype_size(dtype);
        const std::size_t at = (static_cast<std::size_t>(poisoned) * static_cast<std::size_t>(T) +
                                static_cast<std::size_t>(call.length[static_cast<std::size_t>(poisoned)] - 1)) *
                               static_cast<std::size_t>(batch.columns) * element;
        std::memset(bad.data() + at, 0xff, element);  // NaN in a frame that is read
        DeviceBuffer<std::byte> bad_storage;
        ASRDEC_EXPECT_THROW_MSG(
            decoder.decode_chunks(call.rows, place(bad.data(), bad.size(), dtype, shape, bad_storage), chunk_lengths),
            InvalidArgument, "is NaN");
        ++rejected;
      } else if (trouble == 1) {
        std::vector<ChunkRow> twice = call.rows;
        twice.push_back(call.rows.front());
        std::vector<std::int32_t> twice_lengths = call.length;
        twice_lengths.push_back(0);
        std::vector<std::byte> padded = chunk;
        padded.resize(padded.size() + static_cast<std::size_t>(T * batch.columns) * dtype_size(dtype), std::byte{0xff});
        DeviceBuffer<std::byte> padded_storage;
        std::vector<std::int64_t> padded_shape = shape;
        padded_shape[0] += 1;
        ASRDEC_EXPECT_THROW_MSG(
            decoder.decode_chunks(twice, place(padded.data(), padded.size(), dtype, padded_shape, padded_storage),
                                  TensorView(twice_lengths.data(), DType::i32, {padded_shape[0]})),
            InvalidArgument, "appears in more than one row");
        ++rejected;
      }
      DeviceBuffer<std::byte> chunk_storage;
      const std::vector<Hypothesis> got = decoder.decode_chunks(
          call.rows, place(chunk.data(), chunk.size(), dtype, shape, chunk_storage), chunk_lengths);
      ASSERT_EQ(got.size(), call.rows.size());
      for (std::size_t r = 0; r < call.rows.size(); ++r) {
        const int u = call.utterance[r];
        SCOPED_TRACE("utterance " + std::to_string(u) + " (id " + std::to_string(call.rows[r].utterance) +
                     "), frames " + std::to_string(call.start[r]) + " + " + std::to_string(call.length[r]) + " of " +
                     std::to_string(lengths[static_cast<std::size_t>(u)]));
        if (call.rows[r].last) {
          testing::expect_streamed_equals_whole(got[r], whole[static_cast<std::size_t>(u)]);
          ++finished;
        } else {
          if (greedy) testing::expect_prefix_of_whole(got[r], whole[static_cast<std::size_t>(u)]);
          EXPECT_FALSE(got[r].is_final);
          ++partials;
        }
      }
    }
    EXPECT_EQ(decoder.open_utterances(), 0);
  }
  std::printf("%lld utterances finished, %lld partial results, %lld rejected calls, %lld rounds with fusion\n",
              static_cast<long long>(finished), static_cast<long long>(partials), static_cast<long long>(rejected),
              static_cast<long long>(fused_rounds));
  EXPECT_GT(finished, 20);
  EXPECT_GT(rejected, 0);
}

TEST_P(CtcStreaming, GreedyChunkedUtterancesEqualWholeOnes) { chunked_utterances_equal_whole_ones<CtcGreedyDecoder>(); }

TEST_P(CtcStreaming, BeamChunkedUtterancesEqualWholeOnes) { chunked_utterances_equal_whole_ones<CtcBeamDecoder>(); }

TEST_P(CtcStreaming, RejectsRowsThatDoNotFitTheOpenUtterances) {
  std::vector<float> values(2 * 3 * 4, -1.0f);
  values[3] = -0.5f;
  std::vector<std::int32_t> lengths = {3, 2};
  DeviceBuffer<std::byte> storage;
  const TensorView logprobs = place(values.data(), values.size() * 4, DType::f32, {2, 3, 4}, storage);
  const TensorView lens(lengths.data(), DType::i32, {2});
  CtcGreedyConfig config;
  config.graph_mode = GetParam().mode;
  BatchLimits limits;
  limits.max_open_utterances = 2;
  CtcGreedyDecoder decoder(device_, config, limits);
  ASRDEC_EXPECT_THROW_MSG(decoder.decode_chunks({ChunkRow{1, true}}, logprobs, lens), InvalidArgument,
                          "CtcGreedyDecoder::decode_chunks: 1 rows for a batch of 2");
  ASRDEC_EXPECT_THROW_MSG(decoder.decode_chunks({ChunkRow{1, true}, ChunkRow{2, false}}, logprobs, lens),
                          InvalidArgument, "utterance 2 is not open");
  decoder.decode_chunks({ChunkRow{1, true}, ChunkRow{2, true}}, logprobs, lens);
  EXPECT_EQ(decoder.open_utterances(), 2);
  ASRDEC_EXPECT_THROW_MSG(decoder.decode_chunks({ChunkRow{1}, ChunkRow{3, true}}, logprobs, lens), OutOfMemory,
                          "utterance 3 cannot start: 2 utterances are open");
  if (device_.is_cuda()) {
    const DeviceBuffer<std::byte> device_lengths = testing::to_device(lengths.data(), 8, device_);
    ASRDEC_EXPECT_THROW_MSG(decoder.decode_chunks({ChunkRow{1}, ChunkRow{2}}, logprobs,
                                                  TensorView(device_lengths.data(), DType::i32, {2}, device_)),
                            InvalidArgument, "lengths must be in host memory");
  }
  EXPECT_TRUE(decoder.cancel(2));
  const std::vector<Hypothesis> last =
      decoder.decode_chunks({ChunkRow{1, false, true}, ChunkRow{3, true, true}}, logprobs, lens);
  // Utterance 1 saw row 0 twice: blank, 0, 0 — the run of 0s is cut by the next chunk's blank.
  EXPECT_TRUE(last[0].is_final);
  EXPECT_EQ(last[0].tokens, (std::vector<std::int32_t>{0, 0}));
  EXPECT_EQ(last[0].timestamps, (std::vector<std::int32_t>{1, 4}));
  EXPECT_EQ(decoder.open_utterances(), 0);
  // A phrase list the boosting tree lacks.
  config.boost = std::make_shared<const BoostingTree>(BoostingTree::build({{{0, 1}}}, 3, {}, device_));
  CtcGreedyDecoder boosted(device_, config, limits);
  std::vector<ChunkRow> rows = {ChunkRow{1, true}, ChunkRow{2, true}};
  rows[1].phrase_list = 1;
  ASRDEC_EXPECT_THROW_MSG(boosted.decode_chunks(rows, logprobs, lens), InvalidArgument,
                          "utterance 2 asks for phrase list 1, but the boosting tree has 1 list");
  EXPECT_EQ(boosted.open_utterances(), 0);
}

INSTANTIATE_TEST_SUITE_P(Executors, CtcStreaming, ::testing::ValuesIn(all_cases()), case_name);

}  // namespace
}  // namespace asrdec

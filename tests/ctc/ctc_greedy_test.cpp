#include <map>

#include "ctc/ctc_batch_generator.hpp"

namespace asrdec {
namespace {

using testing::CtcBatch;
using testing::random_ctc_batch;

struct CtcCase {
  bool cuda;
  GraphMode mode;
  DType dtype;
};

// Readable parameter in failure messages instead of a byte dump.
void PrintTo(const CtcCase& c, std::ostream* out) {
  *out << (c.cuda ? "cuda/" : "cpu/") << to_string(c.mode) << "/" << dtype_name(c.dtype);
}

std::string case_name(const ::testing::TestParamInfo<CtcCase>& info) {
  const CtcCase& c = info.param;
  return (c.cuda ? std::string("CUDA_") + to_string(c.mode) + "_" : std::string("cpu_")) + dtype_name(c.dtype);
}

std::vector<CtcCase> all_cases() {
  std::vector<CtcCase> cases;
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    cases.push_back({false, GraphMode::eager, dtype});
    for (GraphMode mode : {GraphMode::automatic, GraphMode::conditional, GraphMode::per_step, GraphMode::eager}) {
      cases.push_back({true, mode, dtype});
    }
  }
  return cases;
}

// Holds a batch's data where the decoder under test reads it.
class Placed {
 public:
  Placed(const CtcBatch& batch, Device device, bool lengths_on_device) : batch_(batch), device_(device) {
    if (device.is_cuda()) {
      logprobs_ = testing::to_device(batch.storage.data(), batch.storage.size(), device);
      if (lengths_on_device && batch.batch > 0) {
        lengths_ = testing::to_device(batch.lengths_data(), batch.lengths_bytes(), device);
      }
    }
  }
  TensorView logprobs() const {
    return device_.is_cuda() ? batch_.logprobs(device_, logprobs_.data()) : batch_.logprobs();
  }
  TensorView lengths() const { return lengths_.empty() ? batch_.lengths() : batch_.lengths(device_, lengths_.data()); }

 private:
  const CtcBatch& batch_;
  Device device_;
  DeviceBuffer<std::byte> logprobs_;
  DeviceBuffer<std::byte> lengths_;
};

void expect_matches_reference(const CtcBatch& batch, const std::vector<Hypothesis>& got) {
  ASSERT_EQ(got.size(), static_cast<std::size_t>(batch.batch));
  for (int b = 0; b < batch.batch; ++b) {
    SCOPED_TRACE("utterance " + std::to_string(b) + " of " + std::to_string(batch.batch) + ", length " +
                 std::to_string(batch.length(b)) + ", layout " + batch.layout + ", blank " +
                 std::to_string(batch.blank));
    const testing::CtcReference want = batch.reference(b);
    ASSERT_EQ(got[b].tokens, want.tokens);
    ASSERT_EQ(got[b].timestamps, want.timestamps);
    ASSERT_EQ(got[b].token_scores, want.token_logprobs);
    ASSERT_EQ(got[b].token_confidences.size(), want.token_logprobs.size());
    for (std::size_t i = 0; i < want.token_logprobs.size(); ++i) {
      ASSERT_FLOAT_EQ(got[b].token_confidences[i], std::exp(want.token_logprobs[i]));
    }
    if (std::isinf(want.score)) {
      EXPECT_EQ(got[b].score, static_cast<float>(want.score));
    } else {
      EXPECT_NEAR(got[b].score, want.score, 1e-5 + 1e-5 * std::fabs(want.score));
    }
    EXPECT_EQ(got[b].am_score, got[b].score);
    EXPECT_EQ(got[b].lm_score, 0.0f);
    EXPECT_TRUE(got[b].durations.empty());
  }
}

class CtcGreedy : public ::testing::TestWithParam<CtcCase> {
 protected:
  void SetUp() override {
    if (GetParam().cuda) {
      ASRDEC_SKIP_WITHOUT_CUDA();
      device_ = Device::cuda(0);
    }
  }
  CtcGreedyDecoder make_decoder(std::int32_t blank_config, BatchLimits limits = {}, std::int32_t threads = 0) const {
    CtcGreedyConfig config;
    config.blank_id = blank_config;
    config.threads = threads;
    config.graph_mode = GetParam().mode;
    return CtcGreedyDecoder(device_, config, limits);
  }
  Device device_;
};

TEST_P(CtcGreedy, MatchesPerUtteranceReferenceOnRandomBatches) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  // 3 CPU dtypes x 350 batches = 1050 random batches on the CPU; 120 per CUDA case.
  const int batches = GetParam().cuda ? 120 : 350;
  // Small limits so that buffers grow (and graphs are re-captured) during the run.
  std::map<std::int32_t, CtcGreedyDecoder> decoders;
  for (int i = 0; i < batches; ++i) {
    SCOPED_TRACE("batch " + std::to_string(i));
    const CtcBatch batch = random_ctc_batch(rng, GetParam().dtype);
    auto found = decoders.find(batch.blank_config);
    if (found == decoders.end()) {
      // CPU threads 1-3 (the reference is per utterance, so results must not depend on them).
      found = decoders
                  .emplace(batch.blank_config, make_decoder(batch.blank_config, BatchLimits{2, 8},
                                                            1 + static_cast<std::int32_t>(decoders.size() % 3)))
                  .first;
    }
    const Placed placed(batch, device_, /*lengths_on_device=*/(i % 2) == 1);
    expect_matches_reference(batch, found->second.decode(placed.logprobs(), placed.lengths()));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST_P(CtcGreedy, AsyncResultsEqualSyncResults) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const CtcBatch batch = random_ctc_batch(rng, GetParam().dtype, {16, 60, 30});
  CtcGreedyDecoder decoder = make_decoder(batch.blank_config);
  const Placed placed(batch, device_, false);
  Stream stream(device_);
  const CtcGreedyBatchResult r = decoder.decode_async(placed.logprobs(), placed.lengths(), stream.handle());
  decoder.synchronize_and_check(stream.handle());
  EXPECT_EQ(r.device, device_);
  EXPECT_EQ(r.batch, batch.batch);
  const std::size_t cells = static_cast<std::size_t>(r.batch * r.row_stride);
  HostBuffer<std::int32_t> tokens(cells), timestamps(cells), counts(static_cast<std::size_t>(r.batch));
  HostBuffer<float> logprobs(cells), scores(static_cast<std::size_t>(r.batch));
  copy_bytes_async(tokens.data(), Device::cpu(), r.tokens, r.device, cells * 4, stream.handle());
  copy_bytes_async(timestamps.data(), Device::cpu(), r.timestamps, r.device, cells * 4, stream.handle());
  copy_bytes_async(logprobs.data(), Device::cpu(), r.token_logprobs, r.device, cells * 4, stream.handle());
  copy_bytes_async(counts.data(), Device::cpu(), r.lengths, r.device, counts.bytes(), stream.handle());
  copy_bytes_async(scores.data(), Device::cpu(), r.scores, r.device, scores.bytes(), stream.handle());
  stream.synchronize();
  std::vector<Hypothesis> unpacked(static_cast<std::size_t>(r.batch));
  for (std::int64_t b = 0; b < r.batch; ++b) {
    const std::size_t row = static_cast<std::size_t>(b * r.row_stride);
    unpacked[b].tokens.assign(tokens.data() + row, tokens.data() + row + counts[b]);
    unpacked[b].timestamps.assign(timestamps.data() + row, timestamps.data() + row + counts[b]);
    unpacked[b].token_scores.assign(logprobs.data() + row, logprobs.data() + row + counts[b]);
    // The async tensors hold no confidences; decode() derives them from the token log-probabilities likewise.
    for (const float logp : unpacked[b].token_scores) unpacked[b].token_confidences.push_back(std::exp(logp));
    unpacked[b].score = unpacked[b].am_score = scores[b];
  }
  expect_matches_reference(batch, unpacked);
}

TEST_P(CtcGreedy, RejectsNaNAndInfinityWithTheirPosition) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  CtcBatch batch;
  do {
    batch = random_ctc_batch(rng, GetParam().dtype, {4, 12, 9});
  } while (batch.batch < 2 || batch.frames < 6 || batch.columns < 5 || batch.length(1) < 6);
  CtcGreedyDecoder decoder = make_decoder(batch.blank_config);
  batch.set(1, 2, 3, std::numeric_limits<float>::quiet_NaN());
  batch.set(1, 4, 0, std::numeric_limits<float>::infinity());
  {
    const Placed placed(batch, device_, false);
    ASRDEC_EXPECT_THROW_MSG(decoder.decode(placed.logprobs(), placed.lengths()), InvalidArgument,
                            "logprobs[1, 2, 3] is NaN; log-probabilities must be finite or -inf");
  }
  batch.set(1, 2, 3, -1.0f);
  {
    const Placed placed(batch, device_, false);
    ASRDEC_EXPECT_THROW_MSG(decoder.decode(placed.logprobs(), placed.lengths()), InvalidArgument,
                            "logprobs[1, 4, 0] is +inf");
  }
  // The decoder stays usable after an error, and NaN in frames beyond a length is never read.
  batch.set(1, 4, 0, -1.0f);
  const Placed placed(batch, device_, false);
  expect_matches_reference(batch, decoder.decode(placed.logprobs(), placed.lengths()));
}

TEST_P(CtcGreedy, UncheckedNaNFramesDecodeAsBlank) {
  std::vector<float> values = {-1, -2, -0.5f, NAN, NAN, NAN, -0.1f, -3, -3};  // [1, 3, 3], blank = 2
  CtcBatch batch;
  batch.batch = 1, batch.frames = 3, batch.columns = 3, batch.blank = 2, batch.dtype = DType::f32;
  batch.strides[0] = 9, batch.strides[1] = 3, batch.strides[2] = 1;
  batch.storage.resize(sizeof values[0] * values.size());
  std::memcpy(batch.storage.data(), values.data(), batch.storage.size());
  batch.lengths32 = {3};
  CtcGreedyConfig config;
  config.check_values = false;
  config.graph_mode = GetParam().mode;
  CtcGreedyDecoder decoder(device_, config);
  const Placed placed(batch, device_, false);
  const auto result = decoder.decode(placed.logprobs(), placed.lengths());
  EXPECT_EQ(result[0].tokens, (std::vector<std::int32_t>{0}));
  EXPECT_EQ(result[0].timestamps, (std::vector<std::int32_t>{2}));
}

TEST_P(CtcGreedy, RejectsBadShapesTypesLengthsAndBlank) {
  std::vector<float> values(2 * 5 * 4, -1.0f);
  const TensorView logprobs_host(values.data(), DType::f32, {2, 5, 4});
  DeviceBuffer<std::byte> on_device;
  if (device_.is_cuda()) on_device = testing::to_device(values.data(), values.size() * 4, device_);
  const TensorView logprobs =
      device_.is_cuda() ? TensorView(on_device.data(), DType::f32, {2, 5, 4}, device_) : logprobs_host;
  std::int32_t good[2] = {5, 0};
  std::int32_t too_long[2] = {3, 6};
  std::int64_t negative[2] = {-1, 2};
  float float_lengths[2] = {1, 1};
  CtcGreedyDecoder decoder = make_decoder(-1);

  EXPECT_EQ(decoder.decode(logprobs, TensorView(good, DType::i32, {2})).size(), 2u);
  ASRDEC_EXPECT_THROW_MSG(decoder.decode(logprobs, TensorView(too_long, DType::i32, {2})), InvalidArgument,
                          "lengths[1] = 6 is outside [0, 5] (T, the frames of logprobs)");
  ASRDEC_EXPECT_THROW_MSG(decoder.decode(logprobs, TensorView(negative, DType::i64, {2})), InvalidArgument,
                          "lengths[0] = -1 is outside [0, 5]");
  ASRDEC_EXPECT_THROW_MSG(decoder.decode(logprobs, TensorView(float_lengths, DType::f32, {2})), InvalidArgument,
                          "lengths: expected dtype int32 or int64, got float32");
  ASRDEC_EXPECT_THROW_MSG(decoder.decode(logprobs, TensorView(good, DType::i32, {1})), InvalidArgument,
                          "lengths: dimension 0 must be 2 (the batch size B of logprobs), got 1");
  std::int32_t ints[40] = {};
  ASRDEC_EXPECT_THROW_MSG(
      decoder.decode(TensorView(ints, DType::i32, {2, 5, 4}, device_), TensorView(good, DType::i32, {2})),
      InvalidArgument, "logprobs: expected dtype float32, float16 or bfloat16, got int32");
  ASRDEC_EXPECT_THROW_MSG(
      decoder.decode(TensorView(values.data(), DType::f32, {10, 4}, device_), TensorView(good, DType::i32, {2})),
      InvalidArgument, "logprobs: expected 3 dimensions [B, T, V+1], got 2 dimensions [10, 4]");
  ASRDEC_EXPECT_THROW_MSG(make_decoder(4).decode(logprobs, TensorView(good, DType::i32, {2})), InvalidArgument,
                          "blank_id 4 is out of range for logprobs with 4 columns (valid: 0..3, or -1 for the last)");
  CtcGreedyConfig config;
  config.blank_id = -2;
  ASRDEC_EXPECT_THROW_MSG(CtcGreedyDecoder(device_, config), InvalidArgument, "CtcGreedyConfig.blank_id must be -1");
  ASRDEC_EXPECT_THROW_MSG(CtcGreedyDecoder(device_, {}, BatchLimits{0, 10}), InvalidArgument,
                          "BatchLimits.max_batch must be in [1, 16777216], got 0");
}

TEST_P(CtcGreedy, EmptyBatchAndZeroFrames) {
  CtcGreedyDecoder decoder = make_decoder(-1);
  float dummy = 0;
  DeviceBuffer<std::byte> on_device;
  const void* data = &dummy;
  if (device_.is_cuda()) {
    on_device = testing::to_device(&dummy, sizeof dummy, device_);
    data = on_device.data();
  }
  std::int32_t zero[3] = {0, 0, 0};
  EXPECT_TRUE(
      decoder.decode(TensorView(data, DType::f32, {0, 5, 3}, device_), TensorView(zero, DType::i32, {0})).empty());
  const auto result =
      decoder.decode(TensorView(data, DType::f32, {3, 0, 3}, device_), TensorView(zero, DType::i32, {3}));
  ASSERT_EQ(result.size(), 3u);
  EXPECT_TRUE(result[2].tokens.empty());
  EXPECT_EQ(result[2].score, 0.0f);
}

INSTANTIATE_TEST_SUITE_P(Executors, CtcGreedy, ::testing::ValuesIn(all_cases()), case_name);

// With threads, a batch with bad values in several rows reports the first bad row, as one thread does, whichever
// thread reaches which row first.
TEST(CtcGreedyThreads, ReportTheFirstBadRowLikeOneThread) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  CtcBatch batch;
  do {
    batch = random_ctc_batch(rng, DType::f32, {8, 12, 9});
  } while (batch.batch < 6 || batch.columns < 4 || batch.length(2) < 3 || batch.length(5) < 1);
  batch.set(5, 0, 1, std::numeric_limits<float>::quiet_NaN());
  batch.set(2, 2, 3, std::numeric_limits<float>::infinity());
  CtcGreedyConfig config;
  config.blank_id = batch.blank_config;
  for (const std::int32_t threads : {1, 2, 4}) {
    config.threads = threads;
    CtcGreedyDecoder decoder(Device::cpu(), config);
    for (int repeat = 0; repeat < 20; ++repeat) {
      ASRDEC_EXPECT_THROW_MSG(decoder.decode(batch.logprobs(), batch.lengths()), InvalidArgument,
                              "logprobs[2, 2, 3] is +inf");
    }
  }
  config.threads = -1;
  ASRDEC_EXPECT_THROW_MSG(CtcGreedyDecoder(Device::cpu(), config), InvalidArgument,
                          "CtcGreedyConfig.threads must be in [0, 1024] (0: every core), got -1");
}

TEST(CtcGreedyConfig, PrintsItsFields) {
  CtcGreedyConfig config;
  EXPECT_EQ(config.to_string(), "CtcGreedyConfig{blank_id=-1 (last), graph_mode=auto, check_values=true}");
  EXPECT_EQ(BatchLimits{}.to_string(), "BatchLimits{max_batch=32, max_frames=2048, max_open_utterances=1024}");
  EXPECT_EQ(CtcGreedyDecoder(Device::cpu()).graph_mode(), GraphMode::eager);
}

TEST(CtcGreedyCUDA, RejectsHostMemoryAndBadDeviceLengths) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const Device device = Device::cuda(0);
  std::vector<float> values(2 * 5 * 4, -1.0f);
  CtcGreedyDecoder decoder(device);
  std::int32_t good[2] = {5, 5};
  ASRDEC_EXPECT_THROW_MSG(
      decoder.decode(TensorView(values.data(), DType::f32, {2, 5, 4}, device), TensorView(good, DType::i32, {2})),
      InvalidArgument, "logprobs: data is in pageable host memory but the decoder runs on cuda:0");
  const DeviceBuffer<std::byte> logprobs = testing::to_device(values.data(), values.size() * 4, device);
  std::int64_t bad[2] = {2, 9};
  const DeviceBuffer<std::byte> lengths = testing::to_device(bad, sizeof bad, device);
  ASRDEC_EXPECT_THROW_MSG(decoder.decode(TensorView(logprobs.data(), DType::f32, {2, 5, 4}, device),
                                         TensorView(lengths.data(), DType::i64, {2}, device)),
                          InvalidArgument, "lengths[1] = 9 is outside [0, 5]");
  // CPU-labelled logprobs handed to a CUDA decoder.
  ASRDEC_EXPECT_THROW_MSG(
      decoder.decode(TensorView(values.data(), DType::f32, {2, 5, 4}), TensorView(good, DType::i32, {2})),
      InvalidArgument, "logprobs: expected data on cuda:0, got cpu");
}

TEST(CtcGreedyCUDA, CudaEqualsCpuOnLargeBatches) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const Device device = Device::cuda(0);
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const CtcBatch batch = random_ctc_batch(rng, dtype, {32, 400, 1100});
    CtcGreedyConfig config;
    config.blank_id = batch.blank_config;
    CtcGreedyDecoder cpu(Device::cpu(), config);
    CtcGreedyDecoder cuda(device, config);
    const DeviceBuffer<std::byte> logprobs = testing::to_device(batch.storage.data(), batch.storage.size(), device);
    const auto want = cpu.decode(batch.logprobs(), batch.lengths());
    const auto got = cuda.decode(batch.logprobs(device, logprobs.data()), batch.lengths());
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t b = 0; b < got.size(); ++b) {
      ASSERT_EQ(got[b].tokens, want[b].tokens) << b;
      ASSERT_EQ(got[b].timestamps, want[b].timestamps) << b;
      ASSERT_EQ(got[b].token_scores, want[b].token_scores) << b;
      // The random logits include -inf (a token the model rules out), so a path's score can be -inf on both.
      if (std::isinf(want[b].score)) {
        EXPECT_EQ(got[b].score, want[b].score) << b;
      } else {
        EXPECT_NEAR(got[b].score, want[b].score, 1e-4 * std::max(1.0f, std::fabs(want[b].score))) << b;
      }
    }
  }
}

}  // namespace
}  // namespace asrdec

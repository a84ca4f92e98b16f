// The CUDA contract (docs/cuda-contract.md), checked on the decoders: work is ordered after the producer on the
// caller's stream (nullptr: the legacy default stream), calls on different streams are ordered, an allocation
// failure leaves a decoder usable at its old capacity, device memory is counted and capped, and graph_mode() reports
// what runs. The oracle is the CPU executor on the same values. Each case needs a GPU and says why it skips without
// one.

#include <chrono>
#include <cmath>
#include <random>
#include <thread>

#include "support/test_support.hpp"

#if ASRDEC_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace asrdec {
namespace {

#if ASRDEC_WITH_CUDA

// Random CTC log-probabilities [B, T, C] (a log-softmax per frame, blank last) and lengths in [0, T].
struct CtcValues {
  std::int64_t batch, frames, columns;
  std::vector<float> values;
  std::vector<std::int32_t> lengths;
  TensorView host_logprobs() const { return TensorView(values.data(), DType::f32, {batch, frames, columns}); }
  TensorView host_lengths() const { return TensorView(lengths.data(), DType::i32, {batch}); }
  std::size_t bytes() const { return values.size() * sizeof(float); }
};

CtcValues random_ctc(std::mt19937_64& rng, std::int64_t batch, std::int64_t frames, std::int64_t columns) {
  CtcValues v{batch, frames, columns, {}, {}};
  std::normal_distribution<float> normal(0.0f, 3.0f);
  v.values.resize(static_cast<std::size_t>(batch * frames * columns));
  for (std::int64_t row = 0; row < batch * frames; ++row) {
    float* x = v.values.data() + row * columns;
    float most = -INFINITY;
    for (std::int64_t c = 0; c < columns; ++c) most = std::max(most, x[c] = normal(rng));
    double sum = 0.0;
    for (std::int64_t c = 0; c < columns; ++c) sum += std::exp(static_cast<double>(x[c] - most));
    for (std::int64_t c = 0; c < columns; ++c) x[c] -= most + static_cast<float>(std::log(sum));
  }
  for (std::int64_t b = 0; b < batch; ++b) {
    v.lengths.push_back(static_cast<std::int32_t>(std::uniform_int_distribution<std::int64_t>(0, frames)(rng)));
  }
  return v;
}

// The values in device memory, copied and synchronised.
DeviceBuffer<float> upload(const CtcValues& v, Device device) {
  DeviceBuffer<float> buffer(v.values.size(), device);
  copy_bytes_async(buffer.data(), device, v.values.data(), Device::cpu(), v.bytes(), nullptr);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return buffer;
}

void expect_same(const std::vector<Hypothesis>& got, const std::vector<Hypothesis>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t b = 0; b < got.size(); ++b) {
    SCOPED_TRACE("utterance " + std::to_string(b));
    EXPECT_EQ(got[b].tokens, want[b].tokens);
    EXPECT_EQ(got[b].timestamps, want[b].timestamps);
  }
}

void sleep_on_stream(cudaStream_t stream, int milliseconds) {
  static int delay = 0;
  delay = milliseconds;
  ASSERT_EQ(
      cudaLaunchHostFunc(
          stream, [](void* ms) { std::this_thread::sleep_for(std::chrono::milliseconds(*static_cast<int*>(ms))); },
          &delay),
      cudaSuccess);
}

// The producer of the decoder's input (an encoder, in an engine) writes it on the caller's stream after a delay; a
// decoder that ran unordered on a stream of its own would read the stale values written before.
class OrderingCUDA : public ::testing::TestWithParam<bool> {};  // true: an own stream; false: nullptr

TEST_P(OrderingCUDA, DecodesRunAfterTheProducerOnTheCallersStream) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const Device device = Device::cuda(0);
  const CtcValues v = random_ctc(rng, 6, 80, 33);
  Stream own(device);
  const StreamHandle handle = GetParam() ? own.handle() : nullptr;
  const cudaStream_t stream = GetParam() ? own.handle() : cudaStreamLegacy;

  PinnedBuffer<float> staged(v.values.size(), Device::cpu());  // pinned: the copy below is truly asynchronous
  std::copy(v.values.begin(), v.values.end(), staged.data());
  DeviceBuffer<float> input(v.values.size(), device);
  ASSERT_EQ(cudaMemset(input.data(), 0, v.bytes()), cudaSuccess);  // stale values: every frame ties
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  CtcGreedyDecoder cpu(Device::cpu());
  const std::vector<Hypothesis> want = cpu.decode(v.host_logprobs(), v.host_lengths());
  CtcGreedyDecoder greedy(device);
  sleep_on_stream(stream, 200);
  ASSERT_EQ(cudaMemcpyAsync(input.data(), staged.data(), v.bytes(), cudaMemcpyHostToDevice, stream), cudaSuccess);
  const TensorView logprobs(input.data(), DType::f32, {v.batch, v.frames, v.columns}, device);
  expect_same(greedy.decode(logprobs, v.host_lengths(), handle), want);

  // The same for WFST decoding, which takes a stream too: a one-state graph whose arcs pass every token through.
  WfstGraphArrays arrays;
  arrays.num_states = 1;
  arrays.start = 0;
  arrays.emitting_begin = {0, v.columns};
  arrays.epsilon_begin = {v.columns, v.columns};
  for (std::int32_t c = 0; c < v.columns; ++c) {
    arrays.ilabel.push_back(c + 1);
    arrays.olabel.push_back(c + 1);
    arrays.weight.push_back(0.0f);
    arrays.next_state.push_back(0);
  }
  arrays.final_weight = {0.0f};
  const WfstGraph graph = WfstGraph::from_arrays(arrays, "pass-through");
  WfstDecoder wfst_cpu(graph, {}, Device::cpu());
  WfstDecoder wfst(graph, {}, device);
  ASSERT_EQ(cudaMemsetAsync(input.data(), 0, v.bytes(), stream), cudaSuccess);
  sleep_on_stream(stream, 200);
  ASSERT_EQ(cudaMemcpyAsync(input.data(), staged.data(), v.bytes(), cudaMemcpyHostToDevice, stream), cudaSuccess);
  const std::vector<WfstResult> got = wfst.decode(logprobs, v.host_lengths(), {}, handle);
  const std::vector<WfstResult> expected = wfst_cpu.decode(v.host_logprobs(), v.host_lengths());
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t b = 0; b < got.size(); ++b) {
    EXPECT_EQ(got[b].words, expected[b].words) << "utterance " << b;
    EXPECT_EQ(got[b].cost, expected[b].cost) << "utterance " << b;
  }
}

INSTANTIATE_TEST_SUITE_P(Streams, OrderingCUDA, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "own_stream" : "legacy_default_stream");
                         });

// A call on stream B after a call on stream A shares the decoder's buffers: it must wait for A's work.
TEST(ContractCUDA, CallsOnTwoStreamsAreOrdered) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const Device device = Device::cuda(0);
  const CtcValues first = random_ctc(rng, 8, 120, 40);
  const CtcValues second = random_ctc(rng, 8, 120, 40);
  Stream a(device), b(device);
  DeviceBuffer<float> first_input(first.values.size(), device), second_input(second.values.size(), device);
  copy_bytes_async(first_input.data(), device, first.values.data(), Device::cpu(), first.bytes(), a.handle());
  copy_bytes_async(second_input.data(), device, second.values.data(), Device::cpu(), second.bytes(), b.handle());
  a.synchronize();
  b.synchronize();
  CtcGreedyDecoder cpu(Device::cpu());
  CtcGreedyDecoder greedy(device);
  sleep_on_stream(a.handle(), 200);  // the first call's work starts late
  (void)greedy.decode_async(TensorView(first_input.data(), DType::f32, {8, 120, 40}, device), first.host_lengths(),
                            a.handle());
  expect_same(greedy.decode(TensorView(second_input.data(), DType::f32, {8, 120, 40}, device), second.host_lengths(),
                            b.handle()),
              cpu.decode(second.host_logprobs(), second.host_lengths()));
}

// Growing past what the device holds throws OutOfMemory and leaves the decoder at its old capacity: the next call
// that fits decodes correctly. The huge request reads one frame through zero strides, so only the decoder's own
// buffers (2^33 cells) are large.
TEST(ContractCUDA, OutOfMemoryLeavesTheDecoderUsable) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const Device device = Device::cuda(0);
  const CtcValues v = random_ctc(rng, 4, 50, 30);
  const DeviceBuffer<float> input = upload(v, device);
  CtcGreedyDecoder cpu(Device::cpu());
  const std::vector<Hypothesis> want = cpu.decode(v.host_logprobs(), v.host_lengths());
  CtcGreedyDecoder greedy(device, {}, BatchLimits{8, 64});
  expect_same(
      greedy.decode(TensorView(input.data(), DType::f32, {v.batch, v.frames, v.columns}, device), v.host_lengths()),
      want);
  const std::int64_t huge_batch = std::int64_t{1} << 20, huge_frames = std::int64_t{1} << 13;
  const TensorView huge(input.data(), DType::f32, {huge_batch, huge_frames, v.columns}, {0, 0, 1}, device);
  const std::vector<std::int32_t> huge_lengths(static_cast<std::size_t>(huge_batch), 1);
  ASRDEC_EXPECT_THROW_MSG(greedy.decode(huge, TensorView(huge_lengths.data(), DType::i32, {huge_batch})), OutOfMemory,
                          "bytes of device memory on cuda:0");
  expect_same(
      greedy.decode(TensorView(input.data(), DType::f32, {v.batch, v.frames, v.columns}, device), v.host_lengths()),
      want);
}

// device_bytes() is what the decoder's buffers took (every device allocation is counted as it is made); a
// max_device_bytes below it refuses the limits before allocating, and a call that would grow the buffers past the
// cap is refused while the decoder keeps decoding at its old size.
TEST(ContractCUDA, DeviceBytesAreCountedAndCapped) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const Device device = Device::cuda(0);
  const CtcValues small = random_ctc(rng, 4, 50, 30);
  const CtcValues large = random_ctc(rng, 16, 50, 30);
  const DeviceBuffer<float> small_input = upload(small, device), large_input = upload(large, device);
  const TensorView small_view(small_input.data(), DType::f32, {small.batch, small.frames, small.columns}, device);
  const TensorView large_view(large_input.data(), DType::f32, {large.batch, large.frames, large.columns}, device);
  CtcGreedyDecoder cpu(Device::cpu());
  EXPECT_EQ(cpu.device_bytes(), 0);

  const CtcGreedyDecoder sized(device, {}, BatchLimits{8, 64});
  const std::int64_t bytes = sized.device_bytes();
  EXPECT_GT(bytes, 8 * 64 * 4) << "the token buffers alone take more";
  std::printf("CTC greedy, limits {8, 64}: %lld device bytes\n", static_cast<long long>(bytes));
  CtcGreedyConfig capped;
  capped.max_device_bytes = bytes - 1;
  ASRDEC_EXPECT_THROW_MSG(CtcGreedyDecoder(device, capped, BatchLimits{8, 64}), OutOfMemory,
                          "need more than max_device_bytes = " + std::to_string(bytes - 1));
  capped.max_device_bytes = bytes;
  CtcGreedyDecoder greedy(device, capped, BatchLimits{8, 64});
  EXPECT_EQ(greedy.device_bytes(), bytes);
  ASRDEC_EXPECT_THROW_MSG(greedy.decode(large_view, large.host_lengths()), OutOfMemory, "max_device_bytes");
  EXPECT_EQ(greedy.device_bytes(), bytes);
  expect_same(greedy.decode(small_view, small.host_lengths()), cpu.decode(small.host_logprobs(), small.host_lengths()));

  // CTC beam search sizes its buffers on the first call (the vocabulary comes with the input).
  CtcBeamConfig beam_config;
  beam_config.beam = 4;
  CtcBeamDecoder beam(device, beam_config, BatchLimits{8, 64});
  (void)beam.decode(small_view, small.host_lengths());
  EXPECT_GT(beam.device_bytes(), 8 * 4 * 64 * 12) << "the history alone takes more";
  beam_config.max_device_bytes = beam.device_bytes() - 1;
  CtcBeamDecoder capped_beam(device, beam_config, BatchLimits{8, 64});
  ASRDEC_EXPECT_THROW_MSG(capped_beam.decode(small_view, small.host_lengths()), OutOfMemory, "max_device_bytes");
}

// A call on a stream that is being captured is refused with Unsupported before it enqueues anything: the caller's
// capture ends cleanly (an empty graph) and the decoder works afterwards.
TEST(ContractCUDA, CallsInsideACallersCaptureAreRefusedCleanly) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const Device device = Device::cuda(0);
  const CtcValues v = random_ctc(rng, 3, 20, 9);
  const DeviceBuffer<float> input = upload(v, device);
  const TensorView view(input.data(), DType::f32, {v.batch, v.frames, v.columns}, device);
  CtcGreedyDecoder cpu(Device::cpu());
  for (GraphMode mode : {GraphMode::conditional, GraphMode::per_step, GraphMode::eager}) {
    SCOPED_TRACE(to_string(mode));
    CtcGreedyConfig config;
    config.graph_mode = mode;
    CtcGreedyDecoder greedy(device, config);
    const Stream caller(device);
    auto* stream = static_cast<cudaStream_t>(caller.handle());
    ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    ASRDEC_EXPECT_THROW_MSG(greedy.decode_async(view, v.host_lengths(), caller.handle()), Unsupported,
                            "being captured into a CUDA graph");
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
    std::size_t nodes = 1;
    ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
    EXPECT_EQ(nodes, 0u) << "the refused call enqueued work into the capture";
    ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);
    expect_same(greedy.decode(view, v.host_lengths(), caller.handle()),
                cpu.decode(v.host_logprobs(), v.host_lengths()));
  }
}

// graph_mode() is the mode that runs: what the device supports for the mode asked for.
TEST(ContractCUDA, GraphModeReportsTheModeThatRuns) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const Device device = Device::cuda(0);
  const GraphSupport support = graph_support(device);
  std::mt19937_64 rng(testing::test_seed());
  const CtcValues v = random_ctc(rng, 2, 10, 5);
  const DeviceBuffer<float> input = upload(v, device);
  for (GraphMode requested : {GraphMode::automatic, GraphMode::conditional, GraphMode::per_step, GraphMode::eager}) {
    SCOPED_TRACE(to_string(requested));
    CtcGreedyConfig config;
    config.graph_mode = requested;
    CtcGreedyDecoder greedy(device, config);
    (void)greedy.decode(TensorView(input.data(), DType::f32, {v.batch, v.frames, v.columns}, device), v.host_lengths());
    const GraphMode expected = requested == GraphMode::eager                             ? GraphMode::eager
                               : requested != GraphMode::per_step && support.conditional ? GraphMode::conditional
                                                                                         : GraphMode::per_step;
    EXPECT_EQ(greedy.graph_mode(), expected);
  }
}

#endif  // ASRDEC_WITH_CUDA

}  // namespace
}  // namespace asrdec

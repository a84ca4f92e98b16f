// WFST beam search over CTC log-probabilities (decode ctc-wfst), CPU and CUDA executors: RTFx on a realistic TLG —
// the sample lexicon (about 12.8k words), its word 3-gram and the 256-piece BPE, standard CTC topology, built at
// start-up with the library's graph builder — over batches of the sample's 40 utterances (repeated to fill the
// batch), with beam and max_active sweeps, and the latency of one streaming call of 16-frame chunks at batch
// 1/64/256. The CPU executor, on every core the process may use (threads = 0; wfst/cpu_threads sweeps the count),
// is the baseline the CUDA executor is compared with (same batch, same process). Both return host results, so both are
// timed on the wall clock.

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "asrdec/detail/float16.hpp"
#include "common/bench_support.hpp"
#include "common/sample_tlg.hpp"

namespace asrdec::bench {
namespace {

constexpr std::int64_t kChunk = 16;

const SampleTlg& sample() { return sample_tlg(); }

// The sample's utterances repeated to `batch` rows, f32 [batch, T, C], with their lengths.
struct Batch {
  std::vector<float> values;
  std::vector<std::int32_t> lengths;
  std::int64_t batch = 0, frames = 0, columns = 0;
  std::int64_t total_frames = 0;
};

Batch make_batch(std::int64_t batch) {
  const SampleTlg& s = sample();
  Batch b;
  b.batch = batch;
  b.frames = s.logprobs.shape()[1];
  b.columns = s.logprobs.shape()[2];
  const auto* source = static_cast<const half_t*>(s.logprobs.data());
  const auto* lengths = static_cast<const std::int32_t*>(s.lengths.data());
  const std::int64_t utterances = s.logprobs.shape()[0];
  const std::int64_t row = b.frames * b.columns;
  b.values.resize(static_cast<std::size_t>(batch * row));
  for (std::int64_t i = 0; i < batch; ++i) {
    const std::int64_t u = i % utterances;
    for (std::int64_t e = 0; e < row; ++e) b.values[i * row + e] = detail::to_float(source[u * row + e]);
    b.lengths.push_back(lengths[u]);
    b.total_frames += lengths[u];
  }
  return b;
}

WfstDecoderConfig config_of(benchmark::State& state) {
  WfstDecoderConfig config;
  config.beam = static_cast<float>(state.range(1));
  config.max_active = state.range(2);
  config.acoustic_scale = 2.0f;  // the sample's setting (README)
  return config;
}

// The CUDA lanes without their shared-memory fast frames (WfstDecoderConfig::device_fast_tokens = 0): the baseline
// of the fast frames, in the same process.
WfstDecoderConfig lane_memory_only(benchmark::State& state) {
  WfstDecoderConfig config = config_of(state);
  config.device_fast_tokens = 0;
  return config;
}

// The CUDA lanes with a fast frame of at most `fast` tokens (argument 3; WfstDecoderConfig::device_fast_tokens): a
// smaller one leaves more of each multiprocessor's on-chip memory to its L1 cache, which the graph's arcs are read
// through.
WfstDecoderConfig fast_tokens(benchmark::State& state) {
  WfstDecoderConfig config = config_of(state);
  config.device_fast_tokens = state.range(3);
  return config;
}

// False (and the benchmark skipped) when the CUDA executor cannot run here.
bool device_usable(benchmark::State& state, Device device) {
  if (device.is_cpu()) return true;
  return !skip_if(state, cuda_unavailable_reason());
}

// `values` on `device` (a device copy, or the host vector itself for the CPU).
struct Placed {
  Stream stream;
  DeviceBuffer<std::byte> copy;
  const void* data = nullptr;

  Placed(const std::vector<float>& values, Device device) : stream(device), data(values.data()) {
    if (device.is_cpu()) return;
    copy = DeviceBuffer<std::byte>(values.size() * 4, device);
    place(values, device);
  }
  void place(const std::vector<float>& values, Device device) {
    if (device.is_cpu()) return;
    copy_bytes_async(copy.data(), device, values.data(), Device::cpu(), values.size() * 4, stream.handle());
    stream.synchronize();
    data = copy.data();
  }
};

void wfst_decode(benchmark::State& state, Device device, WfstDecoderConfig (*configure)(benchmark::State&)) {
  if (!device_usable(state, device)) return;
  const Batch b = make_batch(state.range(0));
  WfstDecoder decoder(*sample().graph, configure(state), device);
  const Placed values(b.values, device);
  const TensorView logprobs(values.data, DType::f32, {b.batch, b.frames, b.columns}, device);
  const TensorView lengths(b.lengths.data(), DType::i32, {b.batch});
  if (!device.is_cpu()) decoder.decode(logprobs, lengths);  // lanes allocated and graphs captured before timing
  for (auto _ : state) benchmark::DoNotOptimize(decoder.decode(logprobs, lengths));
  set_rtfx(state, b.total_frames);
  if (!device.is_cpu()) {
    state.counters["lane_MB"] = static_cast<double>(decoder.lane_device_bytes()) / 1e6;
    state.counters["host_rows"] = static_cast<double>(decoder.host_fallbacks());  // rows decoded on the CPU, all calls
  }
}

// CPU scaling: the batch on `threads` threads (argument 3); compare with threads = 1 of the same run.
void wfst_cpu_threads(benchmark::State& state) {
  const Batch b = make_batch(state.range(0));
  WfstDecoderConfig config = config_of(state);
  config.threads = static_cast<std::int32_t>(state.range(3));
  WfstDecoder decoder(*sample().graph, config, Device::cpu());
  const TensorView logprobs(b.values.data(), DType::f32, {b.batch, b.frames, b.columns});
  const TensorView lengths(b.lengths.data(), DType::i32, {b.batch});
  for (auto _ : state) benchmark::DoNotOptimize(decoder.decode(logprobs, lengths));
  set_rtfx(state, b.total_frames);
}

// One decode_chunks call: the next 16 frames of every stream (streams restart when their utterance ends).
void wfst_streaming(benchmark::State& state, Device device) {
  if (!device_usable(state, device)) return;
  const Batch b = make_batch(state.range(0));
  WfstDecoder decoder(*sample().graph, config_of(state), device);
  std::vector<float> chunk(static_cast<std::size_t>(b.batch * kChunk * b.columns));
  Placed placed(chunk, device);
  std::vector<std::int32_t> chunk_lengths(static_cast<std::size_t>(b.batch));
  std::vector<std::int64_t> position(static_cast<std::size_t>(b.batch), 0);
  std::vector<ChunkRow> chunks(static_cast<std::size_t>(b.batch));
  std::int64_t frames = 0;
  for (auto _ : state) {
    state.PauseTiming();
    for (std::int64_t i = 0; i < b.batch; ++i) {
      const auto u = static_cast<std::size_t>(i);
      const std::int64_t take = std::min<std::int64_t>(kChunk, b.lengths[u] - position[u]);
      chunks[u] = ChunkRow{i, position[u] == 0, position[u] + take >= b.lengths[u]};
      chunk_lengths[u] = static_cast<std::int32_t>(take);
      std::copy_n(b.values.begin() + (i * b.frames + position[u]) * b.columns, take * b.columns,
                  chunk.begin() + i * kChunk * b.columns);
      position[u] = chunks[u].last ? 0 : position[u] + take;
      frames += take;
    }
    placed.place(chunk, device);
    state.ResumeTiming();
    benchmark::DoNotOptimize(
        decoder.decode_chunks(chunks, TensorView(placed.data, DType::f32, {b.batch, kChunk, b.columns}, device),
                              TensorView(chunk_lengths.data(), DType::i32, {b.batch})));
  }
  state.counters["RTFx"] =
      benchmark::Counter(static_cast<double>(frames) * kDefaultFrameShiftSeconds, benchmark::Counter::kIsRate);
}

void register_all() {
  const auto configure = [](benchmark::internal::Benchmark* b) {
    b->ArgNames({"B", "beam", "max_active"})->Unit(benchmark::kMillisecond)->Repetitions(3)->ReportAggregatesOnly(true);
  };
  // Device::cuda(0) throws where CUDA cannot run, so the CUDA benchmarks are registered only where it can.
  std::vector<std::pair<const char*, Device>> devices = {{"cpu", Device::cpu()}};
  if (cuda_unavailable_reason().empty()) {
    devices.emplace_back("cuda", Device::cuda(0));
  } else {
    std::fprintf(stderr, "wfst/cuda benchmarks not registered: %s\n", cuda_unavailable_reason().c_str());
  }
  for (const auto& [name, device] : devices) {
    const std::string prefix = std::string("wfst/") + name;
    auto* batches = benchmark::RegisterBenchmark((prefix + "/batch").c_str(), wfst_decode, device, config_of);
    configure(batches);
    batches->ArgsProduct({{1, 8, 32, 64, 256}, {17}, {10000}});
    if (!device.is_cpu()) {
      auto* slow = benchmark::RegisterBenchmark((prefix + "/batch_lane_memory_only").c_str(), wfst_decode, device,
                                                lane_memory_only);
      configure(slow);
      slow->ArgsProduct({{1, 64, 256}, {17}, {10000}});
      auto* fast =
          benchmark::RegisterBenchmark((prefix + "/batch_fast_tokens").c_str(), wfst_decode, device, fast_tokens);
      configure(fast);
      fast->ArgNames({"B", "beam", "max_active", "fast"})->ArgsProduct({{1, 256}, {17}, {10000}, {64, 128, 256}});
    }
    auto* beams = benchmark::RegisterBenchmark((prefix + "/beam").c_str(), wfst_decode, device, config_of);
    configure(beams);
    beams->ArgsProduct({{32}, {10, 13, 20}, {10000}});
    auto* active = benchmark::RegisterBenchmark((prefix + "/max_active").c_str(), wfst_decode, device, config_of);
    configure(active);
    active->ArgsProduct({{32}, {17}, {500, 2000}});
    auto* streaming = benchmark::RegisterBenchmark((prefix + "/streaming_chunk16").c_str(), wfst_streaming, device);
    configure(streaming);
    streaming->ArgsProduct({{1, 64, 256}, {17}, {10000}});
  }
  const std::vector<std::int64_t> threads = cpu_thread_counts();
  benchmark::RegisterBenchmark("wfst/cpu_threads", wfst_cpu_threads)
      ->ArgNames({"B", "beam", "max_active", "threads"})
      ->ArgsProduct({{64}, {17}, {10000}, threads})
      ->Unit(benchmark::kMillisecond)
      ->Repetitions(3)
      ->ReportAggregatesOnly(true)
      ->UseRealTime();
}

}  // namespace
}  // namespace asrdec::bench

int main(int argc, char** argv) {
  asrdec::bench::register_all();
  return asrdec::bench::run_benchmarks(argc, argv, "wfst");
}

// CTC greedy decoding, CPU executor versus CUDA executor, over batch x frames x vocabulary x dtype.
// The CPU executor (every core) is the baseline the CUDA one is compared with, in the same process;
// ctc_greedy/cpu_threads measures the CPU executor's scaling from 1 thread to every core. Both are timed on
// decode_async (results stay in the decoder's buffers): CPU with wall time, CUDA with CUDA events.
// ctc_greedy/streaming compares streaming (decode_chunks, chunks of 16 frames of 32 utterances in flight) with whole
// utterances at equal lanes. ctc_greedy/cuda_copy is the memory floor of ctc_greedy/cuda: a device-to-device copy of
// the same logprobs bytes, timed the same way; both report bytes_per_second (of logprobs read), so their ratio is
// how close greedy decoding comes to reading its input at copy speed.

#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "common/bench_support.hpp"
#include "common/chunk_feeder.hpp"
#include "common/synthetic_ctc.hpp"

namespace asrdec::bench {
namespace {

using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, DType>;

// Inputs are generated once per configuration and shared by the CPU and CUDA benchmarks.
const SyntheticCtc& input(std::int64_t batch, std::int64_t frames, std::int64_t columns, DType dtype) {
  static std::map<Key, std::unique_ptr<SyntheticCtc>> cache;
  auto& slot = cache[Key{batch, frames, columns, dtype}];
  if (!slot) {
    slot = std::make_unique<SyntheticCtc>(make_synthetic_ctc(batch, frames, columns, dtype, 2026));
  }
  return *slot;
}

void ctc_greedy_cpu(benchmark::State& state, DType dtype) {
  const SyntheticCtc& data = input(state.range(0), state.range(1), state.range(2), dtype);
  CtcGreedyDecoder decoder(Device::cpu(), {}, BatchLimits{data.batch, data.frames});
  const TensorView logprobs(data.logprobs.data(), dtype, {data.batch, data.frames, data.columns});
  const TensorView lengths(data.lengths.data(), DType::i32, {data.batch});
  for (auto _ : state) {
    benchmark::DoNotOptimize(decoder.decode_async(logprobs, lengths));
  }
  set_rtfx(state, data.total_frames());
}

// CPU scaling: the same batch on `threads` threads (argument 3); compare with threads = 1 of the same run.
void ctc_greedy_cpu_threads(benchmark::State& state, DType dtype) {
  const SyntheticCtc& data = input(state.range(0), state.range(1), state.range(2), dtype);
  CtcGreedyConfig config;
  config.threads = static_cast<std::int32_t>(state.range(3));
  CtcGreedyDecoder decoder(Device::cpu(), config, BatchLimits{data.batch, data.frames});
  const TensorView logprobs(data.logprobs.data(), dtype, {data.batch, data.frames, data.columns});
  const TensorView lengths(data.lengths.data(), DType::i32, {data.batch});
  for (auto _ : state) {
    benchmark::DoNotOptimize(decoder.decode_async(logprobs, lengths));
  }
  set_rtfx(state, data.total_frames());
}

void ctc_greedy_cuda(benchmark::State& state, DType dtype) {
  if (skip_if(state, cuda_unavailable_reason())) return;
  const SyntheticCtc& data = input(state.range(0), state.range(1), state.range(2), dtype);
  const Device device = Device::cuda(0);
  Stream stream(device);
  DeviceBuffer<std::byte> logprobs_device(data.logprobs.size(), device);
  DeviceBuffer<std::int32_t> lengths_device(data.lengths.size(), device);
  copy_bytes_async(logprobs_device.data(), device, data.logprobs.data(), Device::cpu(), data.logprobs.size(),
                   stream.handle());
  copy_bytes_async(lengths_device.data(), device, data.lengths.data(), Device::cpu(), data.lengths.size() * 4,
                   stream.handle());
  stream.synchronize();
  CtcGreedyDecoder decoder(device, {}, BatchLimits{data.batch, data.frames});
  const TensorView logprobs(logprobs_device.data(), dtype, {data.batch, data.frames, data.columns}, device);
  const TensorView lengths(lengths_device.data(), DType::i32, {data.batch}, device);
  decoder.decode_async(logprobs, lengths, stream.handle());  // capture the graph outside the timed loop
  decoder.synchronize_and_check(stream.handle());
  time_on_stream(state, device, stream.handle(), [&] { decoder.decode_async(logprobs, lengths, stream.handle()); });
  decoder.synchronize_and_check(stream.handle());
  set_rtfx(state, data.total_frames());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(data.logprobs.size()));
  state.SetLabel(std::string("graph mode ") + to_string(decoder.graph_mode()));
}

// The baseline of ctc_greedy/cuda at the same arguments: the logprobs copied device to device (read once, written
// once), on a stream timed with CUDA events.
void ctc_greedy_cuda_copy(benchmark::State& state, DType dtype) {
  if (skip_if(state, cuda_unavailable_reason())) return;
  const SyntheticCtc& data = input(state.range(0), state.range(1), state.range(2), dtype);
  const Device device = Device::cuda(0);
  Stream stream(device);
  DeviceBuffer<std::byte> from(data.logprobs.size(), device), to(data.logprobs.size(), device);
  copy_bytes_async(from.data(), device, data.logprobs.data(), Device::cpu(), data.logprobs.size(), stream.handle());
  stream.synchronize();
  time_on_stream(state, device, stream.handle(), [&] {
    copy_bytes_async(to.data(), device, from.data(), device, data.logprobs.size(), stream.handle());
  });
  stream.synchronize();
  set_rtfx(state, data.total_frames());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(data.logprobs.size()));
}

// Streaming against whole utterances at equal lanes (docs/streaming.md): B utterances in flight, each call carrying
// the next `chunk` frames (argument 3) of every one of them; chunk 0 is the baseline, whole utterances through
// decode(). Both return host results and are timed by the wall clock.
void ctc_greedy_streaming(benchmark::State& state, bool cuda) {
  if (cuda && skip_if(state, cuda_unavailable_reason())) return;
  const Device device = cuda ? Device::cuda(0) : Device::cpu();
  const SyntheticCtc& data = input(state.range(0), state.range(1), state.range(2), DType::f32);
  const std::int64_t chunk = state.range(3);
  BatchLimits limits{data.batch, data.frames};
  limits.max_open_utterances = data.batch;
  CtcGreedyDecoder decoder(device, {}, limits);
  Stream stream(device);
  if (chunk == 0) {
    DeviceBuffer<std::byte> on_device;
    TensorView logprobs(data.logprobs.data(), DType::f32, {data.batch, data.frames, data.columns});
    if (device.is_cuda()) {
      on_device = DeviceBuffer<std::byte>(data.logprobs.size(), device);
      copy_bytes_async(on_device.data(), device, data.logprobs.data(), Device::cpu(), data.logprobs.size(),
                       stream.handle());
      logprobs = TensorView(on_device.data(), DType::f32, {data.batch, data.frames, data.columns}, device);
    }
    const TensorView lengths(data.lengths.data(), DType::i32, {data.batch});
    decoder.decode(logprobs, lengths, stream.handle());  // graph capture outside the timed loop
    for (auto _ : state) benchmark::DoNotOptimize(decoder.decode(logprobs, lengths, stream.handle()));
    set_rtfx(state, data.total_frames());
    return;
  }
  ChunkFeeder feeder(data.logprobs.data(), data.batch, data.frames, data.columns, 4, data.lengths, data.batch, chunk,
                     DType::f32, device);
  time_streaming(state, feeder, decoder, stream);
}

void register_all() {
  for (DType dtype : {DType::f32, DType::bf16}) {
    const std::string suffix = std::string("/") + dtype_name(dtype);
    for (auto [name, function, manual] :
         {std::tuple{"ctc_greedy/cpu", &ctc_greedy_cpu, false}, std::tuple{"ctc_greedy/cuda", &ctc_greedy_cuda, true},
          std::tuple{"ctc_greedy/cuda_copy", &ctc_greedy_cuda_copy, true}}) {
      auto* b = benchmark::RegisterBenchmark((name + suffix).c_str(), function, dtype);
      b->ArgNames({"B", "T", "V1"})
          ->ArgsProduct({{1, 8, 32}, {250, 1000}, {129, 1025}})
          ->Unit(benchmark::kMillisecond)
          ->Repetitions(3)
          ->ReportAggregatesOnly(true);
      if (manual) b->UseManualTime();
    }
  }
  const std::vector<std::int64_t> threads = cpu_thread_counts();
  benchmark::RegisterBenchmark("ctc_greedy/cpu_threads/float32", ctc_greedy_cpu_threads, DType::f32)
      ->ArgNames({"B", "T", "V1", "threads"})
      ->ArgsProduct({{8 * threads.back()}, {1000}, {1025}, threads})
      ->Unit(benchmark::kMillisecond)
      ->Repetitions(3)
      ->ReportAggregatesOnly(true)
      ->UseRealTime();
  for (const bool cuda : {false, true}) {
    benchmark::RegisterBenchmark(cuda ? "ctc_greedy/streaming/cuda" : "ctc_greedy/streaming/cpu", ctc_greedy_streaming,
                                 cuda)
        ->ArgNames({"B", "T", "V1", "chunk"})
        ->ArgsProduct({{32}, {1000}, {1025}, {0, 16}})
        ->Unit(benchmark::kMillisecond)
        ->Repetitions(3)
        ->ReportAggregatesOnly(true)
        ->UseRealTime();
  }
}

}  // namespace
}  // namespace asrdec::bench

int main(int argc, char** argv) {
  asrdec::bench::register_all();
  return asrdec::bench::run_benchmarks(argc, argv, "ctc_greedy");
}

// Greedy transducer decoding, decoder only (encoder excluded): frame-looping (the conventional batched baseline),
// label-looping in each CUDA-graph mode and WIND windows, side by side in one process, on realistic-size random
// models (V = 1024 + blank, LSTM 1 x 640, joint 640, TDT durations 0..4) whose inputs emit about one label per
// three frames. Models and inputs come from `python3 -m tools.sample_data --bench-models DIR`; point
// ASRDEC_BENCH_MODELS at DIR (default: bench-models/ in the current directory).
//
// Inputs of any batch x frames are tiled from the generated utterances (each row cycles through them along time),
// which keeps the emission statistics; the "frames_per_label" counter reports what was decoded. "outer_passes" and
// "inner_passes" count the decode loop's passes per call (TransducerGreedyDecoder::loop_counts, on the device for
// CUDA) and "busy_rows" the fraction of the rows' joint evaluations that did work (1: no row waited for another).

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include "common/bench_support.hpp"
#include "common/chunk_feeder.hpp"
#include "common/transducer_models.hpp"

namespace asrdec::bench {
namespace {

struct Case {
  std::string kind;  // rnnt | tdt
  TransducerGreedyAlgorithm algorithm;
  std::int32_t window;
  GraphMode mode;
  bool cuda;
  bool lm = false;          // shallow fusion of the order-6 token LM over V = 1024 (weight 0.3)
  bool fused = false;       // CUDA: with the fused small-batch kernels (ASRDEC_FUSED_KERNELS=1), against the default
  bool no_cut = false;      // label looping without its straggler cut (ASRDEC_CUT_STRAGGLERS=0), its baseline
  bool persistent = false;  // CUDA: label looping as one persistent kernel (ASRDEC_PERSISTENT_GREEDY=1)
};

void run(benchmark::State& state, Case c) {
  const std::int64_t batch = state.range(0), frames = state.range(1);
  if (c.cuda && skip_if(state, cuda_unavailable_reason())) return;
  const ScopedEnv fused_kernels("ASRDEC_FUSED_KERNELS", "1", c.fused);
  const ScopedEnv no_cut("ASRDEC_CUT_STRAGGLERS", "0", c.no_cut);
  const ScopedEnv persistent("ASRDEC_PERSISTENT_GREEDY", "1", c.persistent);
  if (skip_if(state, missing_models_reason(c.kind))) return;
  const Device device = c.cuda ? Device::cuda(0) : Device::cpu();
  const TransducerModel& m = model(c.kind, device);
  const std::vector<float> host = tiled_input(source(c.kind), batch, frames);
  const std::vector<std::int32_t> lengths(static_cast<std::size_t>(batch), static_cast<std::int32_t>(frames));
  const std::int64_t J = m.joint_hidden();
  Stream stream(device);
  DeviceBuffer<float> on_device;
  TensorView enc(host.data(), DType::f32, {batch, frames, J});
  if (c.cuda) {
    on_device = DeviceBuffer<float>(host.size(), device);
    copy_bytes_async(on_device.data(), device, host.data(), Device::cpu(), host.size() * 4, stream.handle());
    stream.synchronize();
    enc = TensorView(on_device.data(), DType::f32, {batch, frames, J}, device);
  }
  const TensorView lens(lengths.data(), DType::i32, {batch});
  TransducerGreedyConfig config;
  config.algorithm = c.algorithm;
  config.window = c.window;
  config.graph_mode = c.mode;
  if (c.lm) {
    config.lm = bench_lm(m.vocab_size(), device);
    config.lm_weight = 0.3f;
  }
  TransducerGreedyDecoder decoder(m, config, BatchLimits{batch, frames});
  // Untimed: capture graphs and count the labels of one decode.
  const std::vector<Hypothesis> once = decoder.decode(enc, lens, stream.handle());
  std::int64_t labels = 0;
  for (const auto& h : once) labels += static_cast<std::int64_t>(h.tokens.size());
  // The loop's passes per call (counted on the device on CUDA) and the fraction of the rows' step slots that did work:
  // what the slowest row costs the others.
  const GreedyLoopCounts loops = decoder.loop_counts();
  if (c.cuda) {
    time_on_stream(state, device, stream.handle(), [&] { decoder.decode_async(enc, lens, stream.handle()); });
    decoder.synchronize_and_check(stream.handle());
  } else {
    for (auto _ : state) {
      benchmark::DoNotOptimize(decoder.decode_async(enc, lens));
    }
  }
  set_rtfx(state, batch * frames);
  state.counters["frames_per_label"] =
      labels > 0 ? static_cast<double>(batch * frames) / static_cast<double>(labels) : 0;
  state.counters["outer_passes"] = static_cast<double>(loops.outer);
  state.counters["inner_passes"] = static_cast<double>(loops.inner);
  const double slots = static_cast<double>(loops.joint_passes) * static_cast<double>(batch);
  state.counters["busy_rows"] = slots > 0 ? static_cast<double>(loops.choices) / slots : 0;
  state.SetLabel(std::string("graph mode ") + to_string(decoder.graph_mode()));
}

// Streaming against whole utterances at equal lanes (docs/streaming.md): B utterances in flight, each call carrying
// the next `chunk` frames (argument 2) of every one of them; chunk 0 is the baseline, whole utterances through
// decode(). Label looping in the default graph mode; both return host results and are timed by the wall clock.
void run_streaming(benchmark::State& state, Case c) {
  const std::int64_t batch = state.range(0), frames = state.range(1), chunk = state.range(2);
  if ((c.cuda && skip_if(state, cuda_unavailable_reason())) || skip_if(state, missing_models_reason(c.kind))) return;
  const Device device = c.cuda ? Device::cuda(0) : Device::cpu();
  const TransducerModel& m = model(c.kind, device);
  const std::vector<float> host = tiled_input(source(c.kind), batch, frames);
  const std::vector<std::int32_t> lengths(static_cast<std::size_t>(batch), static_cast<std::int32_t>(frames));
  const std::int64_t J = m.joint_hidden();
  Stream stream(device);
  BatchLimits limits{batch, chunk > 0 ? chunk : frames};
  limits.max_open_utterances = batch;
  TransducerGreedyDecoder decoder(m, TransducerGreedyConfig{}, limits);
  if (chunk == 0) {
    DeviceBuffer<float> on_device;
    TensorView enc(host.data(), DType::f32, {batch, frames, J});
    if (c.cuda) {
      on_device = DeviceBuffer<float>(host.size(), device);
      copy_bytes_async(on_device.data(), device, host.data(), Device::cpu(), host.size() * 4, stream.handle());
      enc = TensorView(on_device.data(), DType::f32, {batch, frames, J}, device);
    }
    const TensorView lens(lengths.data(), DType::i32, {batch});
    decoder.decode(enc, lens, stream.handle());  // graph capture outside the timed loop
    for (auto _ : state) benchmark::DoNotOptimize(decoder.decode(enc, lens, stream.handle()));
    set_rtfx(state, batch * frames);
    return;
  }
  ChunkFeeder feeder(host.data(), batch, frames, J, 4, lengths, batch, chunk, DType::f32, device);
  time_streaming(state, feeder, decoder, stream);
}

// CPU scaling: label looping on `threads` threads (argument 2); compare with threads = 1 of the same run.
void run_threads(benchmark::State& state, std::string kind) {
  const std::int64_t batch = state.range(0), frames = state.range(1);
  if (skip_if(state, missing_models_reason(kind))) return;
  const TransducerModel& m = model(kind, Device::cpu());
  const std::vector<float> host = tiled_input(source(kind), batch, frames);
  const std::vector<std::int32_t> lengths(static_cast<std::size_t>(batch), static_cast<std::int32_t>(frames));
  const TensorView enc(host.data(), DType::f32, {batch, frames, m.joint_hidden()});
  const TensorView lens(lengths.data(), DType::i32, {batch});
  TransducerGreedyConfig config;
  config.threads = static_cast<std::int32_t>(state.range(2));
  TransducerGreedyDecoder decoder(m, config, BatchLimits{batch, frames});
  for (auto _ : state) benchmark::DoNotOptimize(decoder.decode_async(enc, lens));
  set_rtfx(state, batch * frames);
}

std::string name_of(const Case& c) {
  std::string algo = to_string(c.algorithm);
  if (c.algorithm == TransducerGreedyAlgorithm::wind) algo += "-W" + std::to_string(c.window);
  if (c.cuda) algo += std::string("/") + to_string(c.mode);
  if (c.lm) algo += "/lm";
  if (c.fused) algo += "/fused";
  if (c.no_cut) algo += "/no_cut";
  if (c.persistent) algo += "/persistent";
  return "transducer_greedy/" + std::string(c.cuda ? "cuda" : "cpu") + "/" + c.kind + "/" + algo;
}

void register_all() {
  const std::vector<std::vector<std::int64_t>> gpu_shapes = {{1, 250},  {1, 1000},  {1, 3000},  {4, 1000},  {16, 1000},
                                                             {32, 250}, {32, 1000}, {32, 3000}, {128, 1000}};
  const std::vector<std::vector<std::int64_t>> cpu_shapes = {{1, 250}, {4, 250}};
  for (const std::string kind : {"rnnt", "tdt"}) {
    std::vector<Case> cases;
    for (bool cuda : {false, true}) {
      cases.push_back({kind, TransducerGreedyAlgorithm::frame_looping, 1, GraphMode::automatic, cuda});
      for (GraphMode mode : cuda ? std::vector<GraphMode>{GraphMode::eager, GraphMode::per_step, GraphMode::conditional}
                                 : std::vector<GraphMode>{GraphMode::eager}) {
        cases.push_back({kind, TransducerGreedyAlgorithm::label_looping, 1, mode, cuda});
      }
      // With vs without LM fusion: the same algorithm and mode, in the same process.
      cases.push_back({kind, TransducerGreedyAlgorithm::label_looping, 1,
                       cuda ? GraphMode::conditional : GraphMode::eager, cuda, true});
      // With vs without the fused small-batch kernels (the joint step and the predictor step in one kernel each;
      // off by default until they measure faster).
      if (cuda)
        cases.push_back({kind, TransducerGreedyAlgorithm::label_looping, 1, GraphMode::conditional, cuda, false, true});
      // With vs without the persistent kernel (the whole label loop in one launch, for up to 32 rows; off by
      // default until it measures faster; larger batches fall back to the default program).
      if (cuda) {
        for (bool lm : {false, true}) {
          cases.push_back({kind, TransducerGreedyAlgorithm::label_looping, 1, GraphMode::conditional, cuda, lm, false,
                           false, true});
        }
      }
      // With vs without the straggler cut of label looping (the same results; fewer inner passes at large batches).
      cases.push_back({kind, TransducerGreedyAlgorithm::label_looping, 1,
                       cuda ? GraphMode::conditional : GraphMode::eager, cuda, false, false, true});
      if (kind == "rnnt") {
        for (std::int32_t w : {2, 4, 8, 16}) {
          if (!cuda && w != 8) continue;
          cases.push_back({kind, TransducerGreedyAlgorithm::wind, w, GraphMode::automatic, cuda});
        }
      }
    }
    for (const Case& c : cases) {
      auto* b = benchmark::RegisterBenchmark(name_of(c).c_str(), run, c);
      b->ArgNames({"B", "T"})->Unit(benchmark::kMillisecond)->Repetitions(3)->ReportAggregatesOnly(true);
      for (const auto& shape : c.cuda ? gpu_shapes : cpu_shapes) b->Args(shape);
      if (c.cuda) b->UseManualTime();
    }
    const std::vector<std::int64_t> threads = cpu_thread_counts();
    benchmark::RegisterBenchmark(("transducer_greedy/cpu_threads/" + kind + "/label-looping").c_str(), run_threads,
                                 kind)
        ->ArgNames({"B", "T", "threads"})
        ->ArgsProduct({{4 * threads.back()}, {250}, threads})
        ->Unit(benchmark::kMillisecond)
        ->Repetitions(3)
        ->ReportAggregatesOnly(true)
        ->UseRealTime();
    for (bool cuda : {false, true}) {
      const Case c{kind, TransducerGreedyAlgorithm::label_looping, 1, GraphMode::automatic, cuda};
      benchmark::RegisterBenchmark(
          ("transducer_greedy/streaming/" + std::string(cuda ? "cuda/" : "cpu/") + kind + "/label-looping").c_str(),
          run_streaming, c)
          ->ArgNames({"B", "T", "chunk"})
          ->ArgsProduct({{cuda ? 32 : 4}, {cuda ? 1000 : 250}, {0, 16}})
          ->Unit(benchmark::kMillisecond)
          ->Repetitions(3)
          ->ReportAggregatesOnly(true)
          ->UseRealTime();
    }
  }
}

}  // namespace
}  // namespace asrdec::bench

int main(int argc, char** argv) {
  asrdec::bench::register_all();
  return asrdec::bench::run_benchmarks(argc, argv, "transducer_greedy");
}

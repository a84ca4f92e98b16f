// Transducer beam search (ALSD++; AES++ and WIND beam with window 8 for RNN-T), decoder only, beside greedy label
// looping (the baseline) in the same process, on the realistic-size benchmark models (common/transducer_models.hpp),
// with and without the order-6 token LM (late pruning, lm_weighted_full blank scoring, α = 0.3). Report the ratio of
// each beam's RTFx to greedy's at the same batch and device. Every timed call returns host hypotheses (greedy
// included), so the copies back are in both sides of the ratio.
//
// CUDA: ALSD++ (automatic graph mode: conditional graphs where the driver has them) at beams 1..12 × batches
// 1..32, and AES++ and WIND beam (RNN-T) at beam 4; the three at beam 4 also launched eagerly (`/eager`), ALSD++ and
// WIND beam at beam 4 also as one persistent kernel where it takes the batch (`/persistent`). Every case
// reports the search loop's joint passes per call (`joint_passes`, TransducerBeamDecoder::loop_counts). CPU: a small
// grid (a beam step evaluates the joint for B·K hypotheses over V = 1025 outputs), CPU thread scaling (`cpu_threads`),
// and streaming against whole utterances at equal lanes (`streaming`).

#include <utility>
#include <vector>

#include "common/bench_support.hpp"
#include "common/chunk_feeder.hpp"
#include "common/transducer_models.hpp"

namespace asrdec::bench {
namespace {

struct Case {
  std::string kind;   // rnnt | tdt
  std::int32_t beam;  // 0: greedy label looping
  bool lm = false;
  TransducerBeamAlgorithm algorithm = TransducerBeamAlgorithm::alsd;
  bool cuda = false;
  bool fused = false;       // CUDA: with the fused small-batch kernels (ASRDEC_FUSED_KERNELS=1), against the default
  bool eager = false;       // CUDA: kernels launched one by one (GraphMode::eager), against the default graphs
  bool persistent = false;  // CUDA: ALSD++'s or WIND's step loop as one kernel (ASRDEC_PERSISTENT_BEAM=1)
};

void run(benchmark::State& state, Case c) {
  const std::int64_t batch = state.range(0), frames = state.range(1);
  if (c.cuda && skip_if(state, cuda_unavailable_reason())) return;
  if (skip_if(state, missing_models_reason(c.kind))) return;
  const ScopedEnv fused_kernels("ASRDEC_FUSED_KERNELS", "1", c.fused);
  const ScopedEnv persistent_kernel("ASRDEC_PERSISTENT_BEAM", "1", c.persistent);
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
  const std::shared_ptr<const NgramLm> lm = c.lm ? bench_lm(m.vocab_size(), device) : nullptr;
  // Times one call: on CUDA by events on the stream (manual time), on the CPU by the wall clock.
  const auto timed = [&](auto&& call) {
    if (c.cuda) {
      time_on_stream(state, device, stream.handle(), call);
    } else {
      for (auto _ : state) call();
    }
  };
  std::int64_t labels = 0, joint_passes = 0;
  if (c.beam == 0) {
    TransducerGreedyConfig config;
    config.lm = lm;
    config.lm_weight = 0.3f;
    TransducerGreedyDecoder decoder(m, config, BatchLimits{batch, frames});
    for (const auto& h : decoder.decode(enc, lens, stream.handle())) {
      labels += static_cast<std::int64_t>(h.tokens.size());
    }
    timed([&] { benchmark::DoNotOptimize(decoder.decode(enc, lens, stream.handle())); });
    joint_passes = decoder.loop_counts().joint_passes;
  } else {
    TransducerBeamConfig config;
    config.algorithm = c.algorithm;
    config.beam = c.beam;
    config.lm = lm;
    config.lm_weight = 0.3f;
    if (c.eager) config.graph_mode = GraphMode::eager;
    TransducerBeamDecoder decoder(m, config, BatchLimits{batch, frames});
    for (const auto& h : decoder.decode(enc, lens, stream.handle())) {
      labels += static_cast<std::int64_t>(h.tokens.size());
    }
    timed([&] { benchmark::DoNotOptimize(decoder.decode_nbest(enc, lens, stream.handle())); });
    joint_passes = decoder.loop_counts().joint_passes;
  }
  set_rtfx(state, batch * frames);
  // The search loop's joint evaluations per call (loop_counts; WIND revisits a frame while its hypotheses emit):
  // the time over them is the cost of one pass, to compare across algorithms.
  state.counters["joint_passes"] = static_cast<double>(joint_passes);
  state.counters["frames_per_label"] =
      labels > 0 ? static_cast<double>(batch * frames) / static_cast<double>(labels) : 0;
}

// CPU scaling: ALSD++ beam 4 on `threads` threads (argument 2); compare with threads = 1 of the same run.
void run_threads(benchmark::State& state, std::string kind) {
  const std::int64_t batch = state.range(0), frames = state.range(1);
  if (skip_if(state, missing_models_reason(kind))) return;
  const TransducerModel& m = model(kind, Device::cpu());
  const std::vector<float> host = tiled_input(source(kind), batch, frames);
  const std::vector<std::int32_t> lengths(static_cast<std::size_t>(batch), static_cast<std::int32_t>(frames));
  const TensorView enc(host.data(), DType::f32, {batch, frames, m.joint_hidden()});
  const TensorView lens(lengths.data(), DType::i32, {batch});
  TransducerBeamConfig config;
  config.threads = static_cast<std::int32_t>(state.range(2));
  TransducerBeamDecoder decoder(m, config, BatchLimits{batch, frames});
  for (auto _ : state) benchmark::DoNotOptimize(decoder.decode_nbest(enc, lens));
  set_rtfx(state, batch * frames);
}

// Streaming against whole utterances at equal lanes (docs/streaming.md), CPU: B utterances in flight, each call
// carrying the next `chunk` frames (argument 2) of every one of them; chunk 0 is the baseline, whole utterances
// through decode(). Beam 4, one thread (the comparison is of the streaming path, not of threads).
void run_streaming(benchmark::State& state, Case c) {
  const std::int64_t batch = state.range(0), frames = state.range(1), chunk = state.range(2);
  if (skip_if(state, missing_models_reason(c.kind))) return;
  const TransducerModel& m = model(c.kind, Device::cpu());
  const std::vector<float> host = tiled_input(source(c.kind), batch, frames);
  const std::vector<std::int32_t> lengths(static_cast<std::size_t>(batch), static_cast<std::int32_t>(frames));
  TransducerBeamConfig config;
  config.algorithm = c.algorithm;
  config.beam = c.beam;
  config.threads = 1;
  BatchLimits limits{batch, chunk > 0 ? chunk : frames};
  limits.max_open_utterances = batch;
  TransducerBeamDecoder decoder(m, config, limits);
  Stream stream(Device::cpu());
  if (chunk == 0) {
    const TensorView enc(host.data(), DType::f32, {batch, frames, m.joint_hidden()});
    const TensorView lens(lengths.data(), DType::i32, {batch});
    for (auto _ : state) benchmark::DoNotOptimize(decoder.decode(enc, lens));
    set_rtfx(state, batch * frames);
    return;
  }
  ChunkFeeder feeder(host.data(), batch, frames, m.joint_hidden(), 4, lengths, batch, chunk, DType::f32, Device::cpu());
  time_streaming(state, feeder, decoder, stream);
}

std::string name_of(const Case& c) {
  const std::string algo =
      c.beam == 0 ? "greedy-label-looping" : std::string(to_string(c.algorithm)) + "-beam" + std::to_string(c.beam);
  return "transducer_beam/" + std::string(c.cuda ? "cuda" : "cpu") + "/" + c.kind + "/" + algo + (c.lm ? "/lm" : "") +
         (c.fused ? "/fused" : "") + (c.eager ? "/eager" : "") + (c.persistent ? "/persistent" : "");
}

void register_all() {
  const std::vector<std::vector<std::int64_t>> cpu_shapes = {{1, 100}, {8, 100}};
  const std::vector<std::vector<std::int64_t>> gpu_shapes = {{1, 500}, {8, 500}, {16, 500}, {32, 500}};
  for (const std::string kind : {"rnnt", "tdt"}) {
    for (bool lm : {false, true}) {
      std::vector<Case> cases;
      for (std::int32_t beam : {0, 1, 2, 4, 8}) cases.push_back(Case{kind, beam, lm});
      if (kind == "rnnt") {
        for (std::int32_t beam : {1, 4}) cases.push_back(Case{kind, beam, lm, TransducerBeamAlgorithm::aes});
        for (std::int32_t beam : {1, 4}) cases.push_back(Case{kind, beam, lm, TransducerBeamAlgorithm::wind});
      }
      for (std::int32_t beam : {0, 1, 2, 4, 6, 8, 12}) {
        cases.push_back(Case{kind, beam, lm, TransducerBeamAlgorithm::alsd, true});
      }
      // ALSD++ beam 4 (B=1: 4 joint rows, which the fused kernels take; B=32: 128, always cuBLAS) and greedy, with
      // the fused kernels.
      if (!lm) {
        for (std::int32_t beam : {0, 4})
          cases.push_back(Case{kind, beam, lm, TransducerBeamAlgorithm::alsd, true, true});
      }
      if (kind == "rnnt") {
        cases.push_back(Case{kind, 4, lm, TransducerBeamAlgorithm::aes, true});
        cases.push_back(Case{kind, 4, lm, TransducerBeamAlgorithm::wind, true});
        // Beam 4 launched eagerly: what the graphs save, and the launches ncu can profile (scripts/gpu-check profile;
        // it does not profile the kernel nodes of graphs with conditional nodes).
        if (!lm) {
          for (TransducerBeamAlgorithm algorithm :
               {TransducerBeamAlgorithm::alsd, TransducerBeamAlgorithm::aes, TransducerBeamAlgorithm::wind}) {
            cases.push_back(Case{kind, 4, lm, algorithm, true, false, true});
          }
        }
      }
      for (const Case& c : cases) {
        auto* b = benchmark::RegisterBenchmark(name_of(c).c_str(), run, c);
        b->ArgNames({"B", "T"})->Unit(benchmark::kMillisecond)->Repetitions(3)->ReportAggregatesOnly(true);
        for (const auto& shape : c.cuda ? gpu_shapes : cpu_shapes) b->Args(shape);
        if (c.cuda) b->UseManualTime();
      }
      // Beam 4's step loop as one persistent kernel, at the batches it takes (at most 32 joint rows: WIND's 4 x 8
      // window rows at B=1, ALSD++'s 4 slots an utterance up to B=8), against the same algorithm's default above.
      std::vector<std::pair<Case, std::vector<std::vector<std::int64_t>>>> persistent_cases = {
          {Case{kind, 4, lm, TransducerBeamAlgorithm::alsd, true}, {{1, 500}, {8, 500}}}};
      if (kind == "rnnt")
        persistent_cases.push_back({Case{kind, 4, lm, TransducerBeamAlgorithm::wind, true}, {{1, 500}}});
      for (auto& [c, shapes] : persistent_cases) {
        c.persistent = true;
        auto* b = benchmark::RegisterBenchmark(name_of(c).c_str(), run, c);
        b->ArgNames({"B", "T"})->Unit(benchmark::kMillisecond)->Repetitions(3)->ReportAggregatesOnly(true);
        for (const auto& shape : shapes) b->Args(shape);
        b->UseManualTime();
      }
    }
    const std::vector<std::int64_t> threads = cpu_thread_counts();
    benchmark::RegisterBenchmark(("transducer_beam/cpu_threads/" + kind + "/alsd++-beam4").c_str(), run_threads, kind)
        ->ArgNames({"B", "T", "threads"})
        ->ArgsProduct({{4 * threads.back()}, {50}, threads})
        ->Unit(benchmark::kMillisecond)
        ->Repetitions(3)
        ->ReportAggregatesOnly(true)
        ->UseRealTime();
    std::vector<Case> streamed = {Case{kind, 4, false, TransducerBeamAlgorithm::alsd}};
    if (kind == "rnnt") streamed.push_back(Case{kind, 4, false, TransducerBeamAlgorithm::aes});
    for (const Case& c : streamed) {
      benchmark::RegisterBenchmark(
          ("transducer_beam/streaming/cpu/" + kind + "/" + to_string(c.algorithm) + "-beam4").c_str(), run_streaming, c)
          ->ArgNames({"B", "T", "chunk"})
          ->ArgsProduct({{4}, {100}, {0, 16}})
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
  return asrdec::bench::run_benchmarks(argc, argv, "transducer_beam");
}

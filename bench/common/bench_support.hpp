#pragma once
// Shared pieces of asrdec's Google Benchmark binaries:
// - run_benchmarks(): main() body; writes JSON to bench/results/<bench>-<device>-<date>.json (unless
//   --benchmark_out is given) with the commit, device, build flags and date in the context block;
// - RTFx counters (audio seconds = frames x frame shift, 80 ms by default) as rates over the measured time;
// - CUDA-event timing for GPU work (UseManualTime), so host overheads outside the stream are not counted.
//
// Each benchmark binary registers the baseline it is compared with (e.g. the CPU executor, or a reference
// implementation) in the same process; scripts/bench-report turns the JSON into tables of medians and
// ratios.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "asrdec/asrdec.hpp"

namespace asrdec::bench {

constexpr double kDefaultFrameShiftSeconds = 0.08;

/** Initialises Google Benchmark with asrdec's defaults, runs the registered benchmarks, writes the JSON. */
int run_benchmarks(int argc, char** argv, const std::string& bench_name);

/** Adds the RTFx counter: audio seconds decoded per second of measured time. */
void set_rtfx(benchmark::State& state, std::int64_t frames_per_iteration,
              double frame_shift_seconds = kDefaultFrameShiftSeconds);

/** Short, file-name-safe device description: the GPU's name when CUDA is usable, else "cpu-<model>". */
std::string device_slug();

/** Thread counts of a CPU scaling benchmark: 1, the powers of two below the cores, and every core. */
std::vector<std::int64_t> cpu_thread_counts();

/** "no CUDA device: ..." when the CUDA benchmarks cannot run, empty otherwise. */
std::string cuda_unavailable_reason();

/** With a non-empty `reason` (a missing GPU or model), marks the benchmark skipped and returns true. */
bool skip_if(benchmark::State& state, const std::string& reason);

/** While it lives (and `active`), the environment variable `name` is `value`; it is unset afterwards. The decoders'
 *  diagnostic switches, to measure a variant against the default in one process: ASRDEC_FUSED_KERNELS=1 (the fused
 *  small-batch kernels, off by default; docs/cuda-contract.md), ASRDEC_CUT_STRAGGLERS=0 (label looping without its
 *  straggler cut; docs/transducer-greedy.md). */
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value, bool active);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool active_;
};

/** Runs `body` (which enqueues GPU work on `stream`) once per benchmark iteration and reports the time between
 *  CUDA events around it. Use with ->UseManualTime(). */
template <class Body>
void time_on_stream(benchmark::State& state, Device device, StreamHandle stream, Body&& body) {
  CudaEventTimer timer(device);
  for (auto _ : state) {
    timer.start(stream);
    body();
    timer.stop(stream);
    state.SetIterationTime(static_cast<double>(timer.elapsed_ms()) / 1000.0);
  }
}

}  // namespace asrdec::bench

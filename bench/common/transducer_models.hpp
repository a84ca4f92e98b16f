#pragma once
// The realistic-size transducer benchmark models and their inputs (python3 -m tools.sample_data --bench-models
// DIR; ASRDEC_BENCH_MODELS points at DIR, default bench-models/ in the current directory), shared by the
// transducer benchmarks.

#include <cstdint>
#include <string>
#include <vector>

#include "asrdec/asrdec.hpp"

namespace asrdec::bench {

std::string models_dir();

struct Source {
  NpyArray enc;      // [N, T, J] float32
  NpyArray lengths;  // [N]
};

/** The generated utterances of `kind` (rnnt | tdt), loaded once. */
const Source& source(const std::string& kind);

/** The model of `kind` on `device`, loaded once. */
const TransducerModel& model(const std::string& kind, Device device);

/** "no benchmark models in ...: run ..." when the models of `kind` are missing, empty otherwise. */
std::string missing_models_reason(const std::string& kind);

/** [batch, frames, J] float32: row b walks utterances b, b+1, ... (their valid frames) until `frames` are filled. */
std::vector<float> tiled_input(const Source& s, std::int64_t batch, std::int64_t frames);

/** The order-6 token LM over V = 1024 shipped with the tests, on `device`. */
std::shared_ptr<const NgramLm> bench_lm(std::int64_t vocab, Device device);

}  // namespace asrdec::bench

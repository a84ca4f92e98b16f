// Full-vocabulary n-gram queries (NGPU-LM) against the per-token baseline, in the same process: for B states,
// the scores of all V tokens. The LM is the order-6 token model over V = 1024 built from text
// (tests/data/arpa/kjv_tokens_6gram_v1024.arpa.gz); the states come from random walks through it, so they are
// the deep contexts a decoder meets. Throughput counter: state x token scores per second (items_per_second).
//
// - ngram_query/cpu/per_token: the baseline — one KenLM-style backoff lookup per (state, token) (NgramLm::score);
// - ngram_query/cpu/full_vocab: NgramLm::advance on the CPU (one pass over each context's arcs);
// - ngram_query/cuda/full_vocab: NgramLm::advance on CUDA (CUDA-event timed, inputs and outputs on the device).

#include <memory>
#include <random>

#include "common/bench_support.hpp"

namespace asrdec::bench {
namespace {

constexpr std::int64_t kVocab = 1024;

std::string lm_path() { return std::string(ASRDEC_SOURCE_DIR) + "/tests/data/arpa/kjv_tokens_6gram_v1024.arpa.gz"; }

NgramLmOptions options() {
  NgramLmOptions o;
  o.vocabulary = LmVocabularyKind::token_level;
  o.vocab_size = kVocab;
  return o;
}

const NgramLm& cpu_lm() {
  static const NgramLm lm = NgramLm::load(lm_path(), options());
  return lm;
}

// States met by random walks from <s>: tokens drawn by the model's own probabilities, restarted now and then.
std::vector<std::int32_t> walk_states(std::int64_t count) {
  const NgramLm& lm = cpu_lm();
  std::mt19937_64 rng(2026);
  std::vector<float> scores(static_cast<std::size_t>(kVocab));
  std::vector<std::int32_t> next(static_cast<std::size_t>(kVocab));
  std::vector<std::int32_t> states;
  std::int32_t state = NgramLm::bos_state();
  while (static_cast<std::int64_t>(states.size()) < count) {
    states.push_back(state);
    lm.advance(&state, 1, scores.data(), next.data());
    std::vector<double> weights(scores.begin(), scores.end());
    for (double& w : weights) w = std::exp(w);
    const auto token = std::discrete_distribution<std::int32_t>(weights.begin(), weights.end())(rng);
    state = rng() % 40 == 0 ? NgramLm::bos_state() : next[static_cast<std::size_t>(token)];
  }
  return states;
}

void set_items(benchmark::State& state, std::int64_t batch) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * batch * kVocab);
}

void per_token_cpu(benchmark::State& state) {
  const std::int64_t batch = state.range(0);
  const NgramLm& lm = cpu_lm();
  const std::vector<std::int32_t> states = walk_states(batch);
  std::vector<float> scores(static_cast<std::size_t>(batch * kVocab));
  std::vector<std::int32_t> next(scores.size());
  for (auto _ : state) {
    for (std::int64_t b = 0; b < batch; ++b) {
      for (std::int32_t v = 0; v < kVocab; ++v) {
        const auto [score, to] = lm.score(states[static_cast<std::size_t>(b)], v);
        scores[static_cast<std::size_t>(b * kVocab + v)] = score;
        next[static_cast<std::size_t>(b * kVocab + v)] = to;
      }
    }
    benchmark::DoNotOptimize(scores.data());
    benchmark::DoNotOptimize(next.data());
  }
  set_items(state, batch);
}

void full_vocab_cpu(benchmark::State& state) {
  const std::int64_t batch = state.range(0);
  const NgramLm& lm = cpu_lm();
  const std::vector<std::int32_t> states = walk_states(batch);
  std::vector<float> scores(static_cast<std::size_t>(batch * kVocab));
  std::vector<std::int32_t> next(scores.size());
  for (auto _ : state) {
    lm.advance(states.data(), batch, scores.data(), next.data());
    benchmark::DoNotOptimize(scores.data());
  }
  set_items(state, batch);
}

void full_vocab_cuda(benchmark::State& state) {
  if (skip_if(state, cuda_unavailable_reason())) return;
  const std::int64_t batch = state.range(0);
  const Device device = Device::cuda(0);
  static std::unique_ptr<NgramLm> lm;
  if (!lm) lm = std::make_unique<NgramLm>(NgramLm::load(lm_path(), options(), device));
  const std::vector<std::int32_t> states = walk_states(batch);
  Stream stream(device);
  DeviceBuffer<std::int32_t> d_states(states.size(), device);
  DeviceBuffer<float> d_scores(static_cast<std::size_t>(batch * kVocab), device);
  DeviceBuffer<std::int32_t> d_next(static_cast<std::size_t>(batch * kVocab), device);
  copy_bytes_async(d_states.data(), device, states.data(), Device::cpu(), states.size() * 4, stream.handle());
  lm->advance(d_states.data(), batch, d_scores.data(), d_next.data(), stream.handle());  // warm-up
  stream.synchronize();
  time_on_stream(state, device, stream.handle(),
                 [&] { lm->advance(d_states.data(), batch, d_scores.data(), d_next.data(), stream.handle()); });
  stream.synchronize();
  set_items(state, batch);
}

void register_all() {
  for (auto [name, function, manual] : {std::tuple{"ngram_query/cpu/per_token", &per_token_cpu, false},
                                        std::tuple{"ngram_query/cpu/full_vocab", &full_vocab_cpu, false},
                                        std::tuple{"ngram_query/cuda/full_vocab", &full_vocab_cuda, true}}) {
    auto* b = benchmark::RegisterBenchmark(name, function);
    b->ArgNames({"B"})
        ->RangeMultiplier(4)
        ->Range(1, 1024)
        ->Unit(benchmark::kMicrosecond)
        ->Repetitions(3)
        ->ReportAggregatesOnly(true);
    if (manual) b->UseManualTime();
  }
}

}  // namespace
}  // namespace asrdec::bench

int main(int argc, char** argv) {
  asrdec::bench::register_all();
  return asrdec::bench::run_benchmarks(argc, argv, "ngram_lm");
}

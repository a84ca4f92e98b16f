// AED decoding on the shipped sample (40 utterances, the built-in Transformer decoder step, CPU): greedy and beam 4,
// without the LM, with the sample 4-gram LM at weight 0 (all the fusion work, the same search: the ratio to no LM is
// the fusion overhead; the NGPU-LM paper reports < 7% with real decoders, and the sample's one-layer decoder is much
// cheaper than a real one, so its ratio is an upper bound) and at weight 0.5 (a different search: other hypotheses,
// other lengths).

#include <memory>

#include "common/bench_support.hpp"

namespace asrdec::bench {
namespace {

std::string data(const std::string& file) { return std::string(ASRDEC_SOURCE_DIR) + "/examples/data/" + file; }

struct Sample {
  std::shared_ptr<TransformerDecoderStep> step = TransformerDecoderStep::load(data("aed/model.safetensors"));
  NpyArray encoder = read_npy(data("aed/encoder.npy"));
  NpyArray lengths = read_npy(data("aed/lengths.npy"));
  std::shared_ptr<const NgramLm> lm;
  Sample() {
    NgramLmOptions options;
    options.vocab_size = step->vocab_size();
    lm = std::make_shared<const NgramLm>(NgramLm::load(data("lm/tokens_4gram.arpa.gz"), options));
  }
  std::int64_t frames() const {
    std::int64_t total = 0;
    for (std::int64_t b = 0; b < lengths.shape()[0]; ++b) total += lengths.data_as<std::int32_t>()[b];
    return total;
  }
};

const Sample& sample() {
  static const Sample s;
  return s;
}

/** lm_weight < 0: no LM. A weight of 0 with the LM loaded does all the fusion work and finds the same hypotheses as
 *  no LM, so its ratio to no LM is the cost of fusion alone (NeMo's way of measuring it). */
void decode(benchmark::State& state, AedSearch search, float lm_weight) {
  const Sample& s = sample();
  AedDecoderConfig config;
  config.search = search;
  config.beam_size = 4;
  config.eos_id = *s.step->eos_id();
  if (lm_weight >= 0.0f) {
    config.lm = s.lm;
    config.lm_weight = lm_weight;
  }
  AedDecoder decoder(s.step, config);
  const std::vector<std::vector<std::int32_t>> prompt{s.step->default_prompt()};
  std::int64_t tokens = 0;
  for (auto _ : state) {
    const auto hyps = decoder.decode(s.encoder.view(), s.lengths.view(), prompt);
    tokens = 0;
    for (const auto& h : hyps) tokens += static_cast<std::int64_t>(h.tokens.size());
    benchmark::DoNotOptimize(hyps.data());
  }
  state.counters["tokens"] = static_cast<double>(tokens);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * s.lengths.shape()[0]);
  set_rtfx(state, s.frames());
}

void register_all() {
  for (auto [name, search, lm] :
       {std::tuple{"aed/cpu/greedy", AedSearch::greedy, -1.0f},
        std::tuple{"aed/cpu/greedy+lm_weight_0", AedSearch::greedy, 0.0f},
        std::tuple{"aed/cpu/greedy+lm", AedSearch::greedy, 0.5f}, std::tuple{"aed/cpu/beam4", AedSearch::beam, -1.0f},
        std::tuple{"aed/cpu/beam4+lm_weight_0", AedSearch::beam, 0.0f},
        std::tuple{"aed/cpu/beam4+lm", AedSearch::beam, 0.5f}}) {
    benchmark::RegisterBenchmark(name,
                                 [search = search, lm = lm](benchmark::State& state) { decode(state, search, lm); })
        ->Unit(benchmark::kMillisecond)
        ->Repetitions(5)
        ->ReportAggregatesOnly(true);
  }
}

}  // namespace
}  // namespace asrdec::bench

int main(int argc, char** argv) {
  asrdec::bench::register_all();
  return asrdec::bench::run_benchmarks(argc, argv, "aed");
}

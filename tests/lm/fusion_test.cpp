// LM fusion and phrase boosting in greedy decoding: every transducer algorithm and the CTC decoder against
// oracles that query the LM and the boosting tree one token at a time (NgramLm::score, BoostingTree::score) on
// random models, LMs, phrase lists and weights (LM alone, boosting alone, both); bad configurations are rejected.
// Streaming with fusion is tested with streaming (tests/transducer/greedy_test.cpp,
// tests/ctc/ctc_greedy_streaming_test.cpp).

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "asrdec/asrdec.hpp"
#include "ctc/ctc_batch_generator.hpp"
#include "lm/random_arpa.hpp"
#include "lm/random_fusion.hpp"
#include "oracles/transducer_greedy_reference.hpp"
#include "support/test_support.hpp"
#include "transducer/random_transducer.hpp"

namespace asrdec {
namespace {

// Which models a case fuses: the LM alone, the boosting tree alone, or both.
enum class Fused { lm, boost, both };

Fused random_fused(std::mt19937_64& rng) { return static_cast<Fused>(rng() % 3); }
bool uses_lm(Fused f) { return f != Fused::boost; }
bool uses_boost(Fused f) { return f != Fused::lm; }

struct FusionCase {
  bool cuda;
  GraphMode mode;
};

std::string case_name(const ::testing::TestParamInfo<FusionCase>& info) {
  return info.param.cuda ? std::string("CUDA_") + to_string(info.param.mode) : std::string("cpu");
}

std::vector<FusionCase> all_cases() {
  return {
      {false, GraphMode::eager}, {true, GraphMode::conditional}, {true, GraphMode::per_step}, {true, GraphMode::eager}};
}

class LmFusion : public ::testing::TestWithParam<FusionCase> {
 protected:
  void SetUp() override {
    if (GetParam().cuda) {
      ASRDEC_SKIP_WITHOUT_CUDA();
      device_ = Device::cuda(0);
    }
  }
  // CPU results equal the oracle exactly; CUDA ones within what the model's dtype allows (cuda_agreement).
  testing::Agreement agreement(DType dtype) const {
    return GetParam().cuda ? testing::cuda_agreement(dtype) : testing::Agreement{0.0, false};
  }
  TensorView place(const testing::RandomEncoded& e, DeviceBuffer<std::byte>& storage) const {
    if (device_.is_cpu() || e.values.empty()) {
      return TensorView(e.values.data(), DType::f32, {e.batch, e.frames, e.hidden}, device_);
    }
    storage = testing::to_device(e.values.data(), e.values.size() * 4, device_);
    return TensorView(storage.data(), DType::f32, {e.batch, e.frames, e.hidden}, device_);
  }
  Device device_;
};

// Every algorithm with an LM and/or a boosting tree equals the fused per-utterance oracle; fusion changes some
// outputs.
TEST_P(LmFusion, TransducerAlgorithmsEqualTheFusedOracle) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const int cases = GetParam().cuda ? 60 : 300;
  std::int64_t utterances = 0, changed = 0, boosted = 0;
  for (int i = 0; i < cases; ++i) {
    testing::RandomTransducerSpec spec = testing::random_spec(rng);
    spec.blank = -1;  // the oracle speaks LM ids; other blank columns: blank_position_test.cpp
    const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
    const TransducerModel cpu_model = random.build(Device::cpu());
    const TransducerModel model = random.build(device_);
    const testing::RandomEncoded e = testing::random_encoded(rng, spec, 8, 24);
    const std::int32_t max_symbols = std::uniform_int_distribution<std::int32_t>(1, 4)(rng);
    const auto plain = transducer_greedy_reference(cpu_model, e.enc(), e.lens(), max_symbols);
    const Fused fused = random_fused(rng);
    TransducerGreedyConfig reference;
    TransducerGreedyConfig config;
    std::string described;
    if (uses_lm(fused)) {
      std::shared_ptr<const NgramLm> keep;
      config.lm = testing::random_lm(rng, spec.vocab, device_, keep);
      reference.lm = keep;
      config.lm_weight = reference.lm_weight = testing::random_weight(rng);
      described += ", " + keep->describe() + ", lm weight " + std::to_string(config.lm_weight);
    }
    if (uses_boost(fused)) {
      std::shared_ptr<const BoostingTree> keep;
      config.boost = testing::random_boost(rng, spec.vocab, plain, device_, keep);
      reference.boost = keep;
      config.boost_weight = reference.boost_weight = testing::random_weight(rng);
      described += ", " + keep->describe() + ", boost weight " + std::to_string(config.boost_weight);
    }
    const testing::ScopedGreedyKernels kernels(GetParam().cuda, i);
    SCOPED_TRACE("case " + std::to_string(i) + ": " + random.spec.describe() + described + ", " + kernels.describe());
    reference.max_symbols_per_frame = max_symbols;
    const auto want = transducer_greedy_reference(cpu_model, e.enc(), e.lens(), reference);
    for (std::size_t b = 0; b < want.size(); ++b) {
      changed += want[b].tokens != plain[b].tokens ? 1 : 0;
      boosted += want[b].boost_score != 0.0f ? 1 : 0;
    }
    utterances += e.batch;
    DeviceBuffer<std::byte> storage;
    const TensorView enc = place(e, storage);
    // CUDA: the oracle on rounding-level perturbations of the model (expect_same_hypotheses); CPU: exact, none.
    const testing::PerturbedGreedyOracle perturbed =
        GetParam().cuda
            ? testing::perturbed_greedy_oracle(random,
                                               [&e, &reference](const TransducerModel& m) {
                                                 return transducer_greedy_reference(m, e.enc(), e.lens(), reference);
                                               })
            : testing::PerturbedGreedyOracle{};
    std::vector<std::pair<TransducerGreedyAlgorithm, std::int32_t>> algorithms = {
        {TransducerGreedyAlgorithm::frame_looping, 1}, {TransducerGreedyAlgorithm::label_looping, 1}};
    if (!spec.tdt) {
      for (std::int32_t w : {2, 8}) algorithms.push_back({TransducerGreedyAlgorithm::wind, w});
    }
    for (const auto& [algorithm, window] : algorithms) {
      config.algorithm = algorithm;
      config.window = window;
      config.max_symbols_per_frame = max_symbols;
      config.graph_mode = GetParam().mode;
      TransducerGreedyDecoder decoder(model, config, BatchLimits{3, 5});
      testing::expect_same_hypotheses(decoder.decode(enc, e.lens()), want, agreement(spec.dtype),
                                      std::string(to_string(algorithm)) + " W=" + std::to_string(window), false,
                                      perturbed);
      if (GetParam().cuda) {  // a capture that failed falls back to per-step graphs, with the same results
        EXPECT_EQ(decoder.graph_mode(), resolve_graph_mode(config.graph_mode, device_)) << "a capture fell back";
      }
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  EXPECT_GT(changed, utterances / 20) << "fusion changed too few transcripts to test anything";
  EXPECT_GT(boosted, utterances / 20) << "too few transcripts matched a boosted phrase";
  std::printf("%lld utterances, %lld changed by fusion, %lld with a boosting score\n",
              static_cast<long long>(utterances), static_cast<long long>(changed), static_cast<long long>(boosted));
}

// Chunk by chunk, the stream carries each utterance's LM and boosting states: the concatenation equals the whole
// decode.
// CTC fusion against an oracle written here from the rule in ctc_greedy.hpp.
struct FusedCtc {
  std::vector<std::int32_t> tokens, timestamps;
  std::vector<float> token_logprobs;
  double am = 0.0;
  float lm = 0.0f;
  float boost = 0.0f;
};

FusedCtc fused_ctc_oracle(const testing::CtcBatch& batch, int b, const CtcGreedyConfig& config) {
  FusedCtc out;
  const int V = batch.columns - 1;
  int previous = -1;
  std::int32_t state = NgramLm::bos_state();
  std::int32_t boost_state = config.boost != nullptr ? config.boost->root_for(b, batch.batch) : 0;
  const auto bonus = [&](int v) {
    const float lm_part = config.lm != nullptr ? config.lm_weight * config.lm->score(state, v).first : 0.0f;
    const float boost_part =
        config.boost != nullptr ? config.boost_weight * config.boost->score(boost_state, v).first : 0.0f;
    return lm_part + boost_part;
  };
  for (int t = 0; t < batch.length(b); ++t) {
    int best = 0;
    for (int v = 1; v < batch.columns; ++v) {
      if (batch.value(b, t, v) > batch.value(b, t, best)) best = v;
    }
    if (best != V && best != previous) {
      int fused = -1;
      float fused_value = 0.0f;
      for (int v = 0; v < V; ++v) {
        if (v == previous) continue;
        const float value = batch.value(b, t, v) + bonus(v);
        if (fused < 0 || value > fused_value) {
          fused = v;
          fused_value = value;
        }
      }
      if (fused >= 0) best = fused;
      if (config.lm != nullptr) {
        const auto [score, next] = config.lm->score(state, best);
        out.lm += config.lm_weight * score;
        state = next;
      }
      if (config.boost != nullptr) {
        const auto [score, next] = config.boost->score(boost_state, best);
        out.boost += config.boost_weight * score;
        boost_state = next;
      }
      out.tokens.push_back(best);
      out.timestamps.push_back(t);
      out.token_logprobs.push_back(batch.value(b, t, best));
    }
    out.am += batch.value(b, t, best);
    previous = best;
  }
  return out;
}

TEST_P(LmFusion, CtcGreedyEqualsTheFusedOracle) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t utterances = 0, changed = 0;
  for (int i = 0; i < (GetParam().cuda ? 60 : 240); ++i) {
    testing::CtcBatch batch;
    do {
      batch = testing::random_ctc_batch(rng, DType::f32, {6, 40, 24});
    } while (batch.blank != batch.columns - 1 || batch.columns < 2);
    std::vector<Hypothesis> plain(static_cast<std::size_t>(batch.batch));
    for (int b = 0; b < batch.batch; ++b) plain[static_cast<std::size_t>(b)].tokens = batch.reference(b).tokens;
    const Fused fused = random_fused(rng);
    CtcGreedyConfig config, reference;
    config.graph_mode = GetParam().mode;
    config.threads = static_cast<std::int32_t>(1 + rng() % 4);  // CPU: results must not depend on it
    std::string described = ", threads " + std::to_string(config.threads);
    if (uses_lm(fused)) {
      std::shared_ptr<const NgramLm> keep;
      config.lm = testing::random_lm(rng, batch.columns - 1, device_, keep);
      reference.lm = keep;
      config.lm_weight = reference.lm_weight = testing::random_weight(rng);
      described += ", " + keep->describe() + ", lm weight " + std::to_string(config.lm_weight);
    }
    if (uses_boost(fused)) {
      std::shared_ptr<const BoostingTree> keep;
      config.boost = testing::random_boost(rng, batch.columns - 1, plain, device_, keep);
      reference.boost = keep;
      config.boost_weight = reference.boost_weight = testing::random_weight(rng);
      described += ", " + keep->describe() + ", boost weight " + std::to_string(config.boost_weight);
    }
    SCOPED_TRACE("case " + std::to_string(i) + ": " + batch.layout + described);
    CtcGreedyDecoder decoder(device_, config, BatchLimits{2, 8});
    DeviceBuffer<std::byte> storage;
    TensorView logprobs = batch.logprobs();
    if (device_.is_cuda()) {
      storage = testing::to_device(batch.storage.data(), batch.storage.size(), device_);
      logprobs = batch.logprobs(device_, storage.data());
    }
    const auto got = decoder.decode(logprobs, batch.lengths());
    ASSERT_EQ(got.size(), static_cast<std::size_t>(batch.batch));
    for (int b = 0; b < batch.batch; ++b) {
      SCOPED_TRACE("utterance " + std::to_string(b));
      const FusedCtc want = fused_ctc_oracle(batch, b, reference);
      changed += want.tokens != batch.reference(b).tokens ? 1 : 0;
      ++utterances;
      ASSERT_EQ(got[b].tokens, want.tokens);
      ASSERT_EQ(got[b].timestamps, want.timestamps);
      ASSERT_EQ(got[b].token_scores, want.token_logprobs);
      // -inf log-probabilities are valid input, so sums may be -inf on both sides.
      const auto close = [](double a, double b) {
        return a == b || std::fabs(a - b) <= 1e-3 * std::max(1.0, std::fabs(b));
      };
      ASSERT_PRED2(close, got[b].am_score, want.am);
      ASSERT_PRED2(close, got[b].lm_score, want.lm);
      ASSERT_PRED2(close, got[b].boost_score, want.boost);
      ASSERT_PRED2(close, got[b].score, static_cast<double>(got[b].am_score) + got[b].lm_score + got[b].boost_score);
    }
  }
  EXPECT_GT(changed, utterances / 20) << "fusion changed too few transcripts to test anything";
}

TEST_P(LmFusion, MismatchedLmsAreRejected) {
  std::mt19937_64 rng(7);
  testing::RandomTransducerSpec spec = testing::random_spec(rng);
  spec.blank = -1;
  spec.tdt = false;
  const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
  const TransducerModel model = random.build(device_);
  const std::string path = testing::source_path("tests/data/arpa/tokens_3gram.arpa");
  TransducerGreedyConfig config;
  config.lm = std::make_shared<const NgramLm>(NgramLm::load(path, testing::token_lm_options(8), device_));
  if (spec.vocab != 8) {
    ASRDEC_EXPECT_THROW_MSG(TransducerGreedyDecoder(model, config), InvalidArgument,
                            "vocabulary mismatch: the LM has V = 8 tokens, the model " + std::to_string(spec.vocab));
  }
  config.lm_weight = std::nanf("");
  ASRDEC_EXPECT_THROW_MSG(TransducerGreedyDecoder(model, config), InvalidArgument,
                          "TransducerGreedyConfig.lm_weight must be finite, got nan");
  CtcGreedyConfig ctc;
  ctc.lm = config.lm;
  CtcGreedyDecoder decoder(device_, ctc);
  std::vector<float> host_logprobs(2 * 12, -1.0f);
  std::vector<std::int32_t> lengths = {2};
  // The logprobs live where the decoder runs, so that the vocabulary check is what refuses them.
  DeviceBuffer<std::byte> storage;
  void* logprobs = host_logprobs.data();
  if (device_.is_cuda()) {
    storage = testing::to_device(reinterpret_cast<const std::byte*>(host_logprobs.data()),
                                 host_logprobs.size() * sizeof(float), device_);
    logprobs = storage.data();
  }
  ASRDEC_EXPECT_THROW_MSG(decoder.decode(TensorView(logprobs, DType::f32, {1, 2, 12}, device_),
                                         TensorView(lengths.data(), DType::i32, {1})),
                          InvalidArgument, "vocabulary mismatch: the LM has V = 8 tokens, logprobs has 12 columns");
  if (device_.is_cpu() && cuda_info().available) {
    CtcGreedyConfig elsewhere;
    elsewhere.lm = std::make_shared<const NgramLm>(NgramLm::load(path, testing::token_lm_options(8), Device::cuda(0)));
    ASRDEC_EXPECT_THROW_MSG(CtcGreedyDecoder(Device::cpu(), elsewhere), InvalidArgument,
                            "CtcGreedyConfig.lm is on cuda:0, the decoder on cpu");
  }
}

TEST_P(LmFusion, MismatchedBoostingTreesAreRejected) {
  std::mt19937_64 rng(11);
  testing::RandomTransducerSpec spec = testing::random_spec(rng);
  spec.blank = -1;
  spec.tdt = false;
  const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
  const TransducerModel model = random.build(device_);
  TransducerGreedyConfig config;
  config.boost = std::make_shared<const BoostingTree>(BoostingTree::build({{{0, 1}}}, spec.vocab + 1, {}, device_));
  ASRDEC_EXPECT_THROW_MSG(TransducerGreedyDecoder(model, config), InvalidArgument,
                          "vocabulary mismatch: the boosting tree has V = " + std::to_string(spec.vocab + 1) +
                              " tokens, the model " + std::to_string(spec.vocab));
  config.boost = std::make_shared<const BoostingTree>(BoostingTree::build({{{0}}, {{1}}, {}}, spec.vocab, {}, device_));
  config.boost_weight = std::nanf("");
  ASRDEC_EXPECT_THROW_MSG(TransducerGreedyDecoder(model, config), InvalidArgument,
                          "TransducerGreedyConfig.boost_weight must be finite, got nan");
  config.boost_weight = 1.0f;
  TransducerGreedyDecoder decoder(model, config);
  // Three phrase lists serve batches of three utterances only.
  const testing::RandomEncoded e = testing::random_encoded(rng, spec, 2, 6);
  DeviceBuffer<std::byte> storage;
  if (e.batch != 3) {
    ASRDEC_EXPECT_THROW_MSG(decoder.decode(place(e, storage), e.lens()), InvalidArgument,
                            "the boosting tree has 3 phrase lists but the batch has " + std::to_string(e.batch));
  }
  // Streamed utterances name their list; one the tree lacks is refused.
  const testing::RandomEncoded one = testing::random_encoded(rng, spec, 1, 6);
  std::vector<ChunkRow> rows(static_cast<std::size_t>(one.batch), ChunkRow{5, true, true, 3});
  DeviceBuffer<std::byte> one_storage;
  ASRDEC_EXPECT_THROW_MSG(decoder.decode_chunks(rows, place(one, one_storage), one.lens()), InvalidArgument,
                          "utterance 5 asks for phrase list 3, but the boosting tree has 3 lists");
  CtcGreedyConfig ctc;
  ctc.boost = config.boost;
  CtcGreedyDecoder ctc_decoder(device_, ctc);
  std::vector<float> logprobs(2 * 2 * (spec.vocab + 1), -1.0f);
  std::vector<std::int32_t> lengths = {2, 2};
  DeviceBuffer<std::byte> ctc_storage;
  TensorView view(logprobs.data(), DType::f32, {2, 2, spec.vocab + 1}, Device::cpu());
  if (device_.is_cuda()) {
    ctc_storage = testing::to_device(logprobs.data(), logprobs.size() * 4, device_);
    view = TensorView(ctc_storage.data(), DType::f32, {2, 2, spec.vocab + 1}, device_);
  }
  ASRDEC_EXPECT_THROW_MSG(ctc_decoder.decode(view, TensorView(lengths.data(), DType::i32, {2})), InvalidArgument,
                          "the boosting tree has 3 phrase lists but the batch has 2 utterances");
  if (device_.is_cpu() && cuda_info().available) {
    CtcGreedyConfig elsewhere;
    elsewhere.boost = std::make_shared<const BoostingTree>(BoostingTree::build({{{0}}}, 4, {}, Device::cuda(0)));
    ASRDEC_EXPECT_THROW_MSG(CtcGreedyDecoder(Device::cpu(), elsewhere), InvalidArgument,
                            "CtcGreedyConfig.boost is on cuda:0, the decoder on cpu");
  }
}

INSTANTIATE_TEST_SUITE_P(Executors, LmFusion, ::testing::ValuesIn(all_cases()), case_name);

}  // namespace
}  // namespace asrdec

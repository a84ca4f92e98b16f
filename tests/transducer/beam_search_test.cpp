// Transducer beam search, one table over algorithm (ALSD++, AES++, WIND beam) × executor (CPU; CUDA in every graph
// mode): the batched decoder against the per-utterance oracles (tests/oracles: whole transcripts, merging and
// prefixes found by comparison, one-token LM queries) on random RNN-T/TDT models (AES++, WIND: RNN-T), with and
// without fusion in every pruning × blank-scoring mode; beam 1 against greedy decoding; bad input; bad configs.
// CUDA cases skip with the reason where no device is usable.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <random>

#include "asrdec/asrdec.hpp"
#include "oracles/transducer_beam_reference.hpp"
#include "oracles/transducer_greedy_reference.hpp"
#include "support/streaming_schedule.hpp"
#include "support/test_support.hpp"
#include "transducer/beam/aes_step.hpp"
#include "transducer/beam_test_support.hpp"

namespace asrdec {
namespace {

using testing::beam_spec;
using testing::expect_same_beams;

struct BeamCase {
  TransducerBeamAlgorithm algorithm;
  bool cuda;
  GraphMode mode;
};

std::vector<BeamCase> all_cases() {
  std::vector<BeamCase> cases;
  for (const TransducerBeamAlgorithm algorithm :
       {TransducerBeamAlgorithm::alsd, TransducerBeamAlgorithm::aes, TransducerBeamAlgorithm::wind}) {
    cases.push_back({algorithm, false, GraphMode::eager});
    for (const GraphMode mode : {GraphMode::conditional, GraphMode::per_step, GraphMode::eager}) {
      cases.push_back({algorithm, true, mode});
    }
  }
  return cases;
}

std::string case_name(const ::testing::TestParamInfo<BeamCase>& info) {
  std::string algorithm = to_string(info.param.algorithm);
  algorithm = algorithm.substr(0, algorithm.find_first_of("+-"));
  return algorithm + (info.param.cuda ? std::string("_CUDA_") + to_string(info.param.mode) : "_cpu");
}

// enc_proj of `e` on the case's device; the buffer must outlive the view.
struct Placed {
  DeviceBuffer<std::byte> buffer;
  TensorView view;
};

class TransducerBeamSearch : public ::testing::TestWithParam<BeamCase> {
 protected:
  void SetUp() override {
    if (GetParam().cuda) ASRDEC_SKIP_WITHOUT_CUDA();
  }
  Device device() const { return GetParam().cuda ? Device::cuda(0) : Device::cpu(); }
  bool aes() const { return GetParam().algorithm == TransducerBeamAlgorithm::aes; }
  bool wind() const { return GetParam().algorithm == TransducerBeamAlgorithm::wind; }
  // Fewer cases on CUDA: each of its three graph modes is a table row of its own.
  int cases(int on_cpu) const { return GetParam().cuda ? on_cpu / 4 : on_cpu; }
  std::int64_t utterances_wanted(std::int64_t on_cpu) const { return GetParam().cuda ? on_cpu / 4 : on_cpu; }

  // A model spec the algorithm serves (AES++ and WIND beam: RNN-T only).
  testing::RandomTransducerSpec spec(std::mt19937_64& rng) const {
    testing::RandomTransducerSpec spec = beam_spec(rng);
    if (aes() || wind()) spec.tdt = false;
    return spec;
  }

  // Batched beam search against the oracle on the random cases of `seed` (EqualsTheOracle).
  void check_oracle(std::uint64_t seed);
  struct StreamedCounts {
    std::int64_t finished = 0;  // utterances streamed to their end
    std::int64_t rejected = 0;  // calls with a bad value, refused
  };
  StreamedCounts stream_against_whole_decodes(const TransducerModel& model, const testing::RandomEncoded& e,
                                              const TransducerBeamConfig& config, std::mt19937_64& rng);
  // max_device_bytes refuses a history that outgrows it (DeviceBytesCapRefusesGrowthAndKeepsTheDecoder).
  void check_device_bytes_cap(std::uint64_t seed);
  void expect_cap_refuses_growth(const testing::RandomTransducer& random, const TransducerModel& cpu_model,
                                 TransducerBeamConfig config, const BatchLimits& limits,
                                 const testing::RandomEncoded& e, const std::vector<std::vector<Hypothesis>>& want,
                                 std::mt19937_64& rng);

  // A random config of the case's algorithm, beam at most `max_beam`.
  TransducerBeamConfig config(std::mt19937_64& rng, std::int32_t max_beam) const {
    TransducerBeamConfig config;
    config.algorithm = GetParam().algorithm;
    config.graph_mode = GetParam().mode;
    config.beam = std::uniform_int_distribution<std::int32_t>(1, max_beam)(rng);
    config.max_symbols_per_frame = std::uniform_int_distribution<std::int32_t>(1, 4)(rng);
    config.length_normalized = rng() % 2 == 0;
    if (aes()) {
      config.aes_num_steps = std::uniform_int_distribution<std::int32_t>(1, 4)(rng);
      config.aes_expansion_beta = std::uniform_int_distribution<std::int32_t>(0, 3)(rng);
      config.aes_expansion_gamma = std::uniform_real_distribution<float>(0.5f, 6.0f)(rng);
    }
    if (wind()) config.wind_window = std::uniform_int_distribution<std::int32_t>(1, 8)(rng);  // 8: the benchmarks'
    config.threads = std::uniform_int_distribution<std::int32_t>(1, 4)(rng);  // CPU: results never depend on it
    return config;
  }

  // CPU results equal the oracle within 1e-4; CUDA ones within what the model's dtype allows.
  testing::Agreement agreement(const testing::RandomTransducerSpec& spec) const {
    return GetParam().cuda ? testing::cuda_agreement(spec.dtype) : testing::Agreement{};
  }

  // The symbols per frame of the greedy decoding that beam 1 equals.
  static std::int32_t greedy_symbols(const TransducerBeamConfig& config) {
    return config.algorithm == TransducerBeamAlgorithm::aes ? config.aes_num_steps : config.max_symbols_per_frame;
  }

  Placed place(const testing::RandomEncoded& e) const {
    Placed out;
    if (!GetParam().cuda) {
      out.view = e.enc();
      return out;
    }
    if (!e.values.empty()) out.buffer = testing::to_device(e.values.data(), e.values.size() * 4, device());
    out.view =
        TensorView(e.values.empty() ? nullptr : out.buffer.data(), DType::f32, {e.batch, e.frames, e.hidden}, device());
    return out;
  }
};

// After a CUDA decode: the mode that ran is still the one the device supports for the mode asked for. A program
// whose capture failed (say, a side stream joined into two captures at once) falls back to per-step graphs with the
// same results and only a warning, so the results alone would not show it.
void expect_no_graph_fallback(const TransducerBeamDecoder& decoder, const TransducerBeamConfig& config, Device device) {
  if (!device.is_cpu()) {
    EXPECT_EQ(decoder.graph_mode(), resolve_graph_mode(config.graph_mode, device)) << "a capture fell back";
  }
}

void TransducerBeamSearch::check_oracle(std::uint64_t seed) {
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t utterances = 0, multiple = 0, differs = 0;
  for (int i = 0; i < cases(75) || utterances < utterances_wanted(520); ++i) {
    const testing::RandomTransducerSpec spec = this->spec(rng);
    const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
    const TransducerModel cpu_model = random.build(Device::cpu());
    const TransducerModel model = random.build(device());
    const TransducerBeamConfig config = this->config(rng, 8);
    const testing::ScopedFusedKernels fused_kernels(GetParam().cuda && i % 2 == 1);
    SCOPED_TRACE("case " + std::to_string(i) + ": " + random.spec.describe() + ", " + config.to_string() + ", " +
                 fused_kernels.describe());
    TransducerBeamDecoder decoder(model, config, BatchLimits{3, 5});
    EXPECT_EQ(decoder.graph_mode(),
              GetParam().cuda && config.graph_mode == GraphMode::conditional && !graph_support(device()).conditional
                  ? GraphMode::per_step
                  : config.graph_mode);
    // Two calls on one decoder (the second may grow it and capture again), the second on a stream of the caller's.
    for (int call = 0; call < 2; ++call) {
      const testing::RandomEncoded e = testing::random_encoded(rng, spec, 8, 16);
      const auto want = transducer_beam_reference(cpu_model, e.enc(), e.lens(), config);
      const Placed placed = place(e);
      const Stream caller(device());
      expect_same_beams(decoder.decode_nbest(placed.view, e.lens(), call == 1 ? caller.handle() : nullptr), want,
                        std::string(to_string(config.algorithm)) + ", call " + std::to_string(call), agreement(spec),
                        testing::perturbed_oracle(random, e.enc(), e.lens(), config, agreement(spec)));
      if (::testing::Test::HasFailure()) return;
      const auto greedy = transducer_greedy_reference(cpu_model, e.enc(), e.lens(), greedy_symbols(config));
      for (std::size_t b = 0; b < want.size(); ++b) {
        multiple += want[b].size() > 1 ? 1 : 0;
        differs += want[b].front().tokens != greedy[b].tokens ? 1 : 0;
      }
      utterances += e.batch;
    }
    expect_no_graph_fallback(decoder, config, device());
  }
  EXPECT_GE(utterances, utterances_wanted(500));
  EXPECT_GT(multiple, utterances / 3) << "too few utterances kept more than one hypothesis";
  EXPECT_GT(differs, utterances / 20) << "beam search never differed from greedy decoding";
  std::printf("%lld utterances, %lld with several hypotheses, %lld whose best differs from greedy\n",
              static_cast<long long>(utterances), static_cast<long long>(multiple), static_cast<long long>(differs));
}

TEST_P(TransducerBeamSearch, EqualsTheOracle) { check_oracle(testing::test_seed()); }

// Hypotheses that emit up to max_symbols tokens on every frame need more history than a decode starts with
// (2·T + 16 entries a slot): the CPU executors widen it between steps, the CUDA executor decodes the batch again
// with twice the entries. Either way the result must equal the oracle's.
TEST_P(TransducerBeamSearch, HistoryThatOutgrowsItsStartEqualsTheOracle) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t outgrown = 0;
  // Random models and lengths do not always outgrow it: more cases until a few utterances have.
  for (int i = 0; i < cases(16) || (outgrown < 4 && i < 400); ++i) {
    testing::RandomTransducerSpec spec = this->spec(rng);
    spec.bias_mode = "token";  // one token wins every step: max_symbols tokens on every frame
    const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
    const TransducerModel cpu_model = random.build(Device::cpu());
    const TransducerModel model = random.build(device());
    TransducerBeamConfig config = this->config(rng, 4);
    config.max_symbols_per_frame = std::uniform_int_distribution<std::int32_t>(4, 6)(rng);
    if (aes()) config.aes_num_steps = std::uniform_int_distribution<std::int32_t>(4, 6)(rng);
    SCOPED_TRACE("case " + std::to_string(i) + ": " + random.spec.describe() + ", " + config.to_string());
    TransducerBeamDecoder decoder(model, config, BatchLimits{2, 8});
    const testing::RandomEncoded e = testing::random_encoded(rng, spec, 3, 48);
    const auto want = transducer_beam_reference(cpu_model, e.enc(), e.lens(), config);
    const Placed placed = place(e);
    expect_same_beams(decoder.decode_nbest(placed.view, e.lens()), want, to_string(config.algorithm), agreement(spec),
                      testing::perturbed_oracle(random, e.enc(), e.lens(), config, agreement(spec)));
    if (::testing::Test::HasFailure()) return;
    // A hypothesis of n tokens took at least n steps (ALSD++, AES++: and one per frame), an entry each.
    for (std::size_t b = 0; b < want.size(); ++b) {
      const std::int64_t frames = e.lengths[b];
      const std::int64_t entries = static_cast<std::int64_t>(want[b].front().tokens.size()) + (wind() ? 0 : frames);
      outgrown += entries > 2 * e.frames + 16 ? 1 : 0;
    }
  }
  EXPECT_GT(outgrown, 0) << "no decode needed more history than it starts with";
  std::printf("%lld utterances outgrew their starting history\n", static_cast<long long>(outgrown));
}

// max_device_bytes caps what a CUDA decoder's buffers take, history included: a call whose history would widen past
// the cap is refused with OutOfMemory and the decoder keeps decoding what fits. On the CPU there is no device memory
// to count, and the cap does not apply.
void TransducerBeamSearch::check_device_bytes_cap(std::uint64_t seed) {
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const BatchLimits limits{2, 48};
  const std::int32_t start = beam_history_start(limits.max_frames, std::numeric_limits<std::int32_t>::max());
  // One token wins every step and (TDT) stays on its frame. Greedy decoding then takes max_symbols tokens on every
  // frame; beam search need not: every RNN-T path pays one blank a frame, so paths of few and of many tokens score
  // within rounding of each other, and a draw (an fp16 model, say) may rank a short one best. The premise, from the
  // oracle, is that the best path takes more entries (one per step; ALSD++ and AES++ also one per frame) than a
  // slot's history starts with, so that the decode must widen it: a draw without it is drawn again.
  for (int draw = 0;; ++draw) {
    testing::RandomTransducerSpec spec = this->spec(rng);
    // A TDT model whose durations lack 0, or whose tokens move on, emits at most one token a frame and never
    // outgrows the history.
    spec.bias_mode = "token_stays";
    if (spec.tdt) spec.durations = {0, 1, 2};
    const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
    const TransducerModel cpu_model = random.build(Device::cpu());
    TransducerBeamConfig config = this->config(rng, 4);
    config.max_symbols_per_frame = 6;
    config.aes_num_steps = 6;
    testing::RandomEncoded e = testing::random_encoded(rng, spec, 2, 48);
    while (e.frames < 40 || *std::max_element(e.lengths.begin(), e.lengths.end()) < 40) {
      e = testing::random_encoded(rng, spec, 2, 48);
    }
    const auto want = transducer_beam_reference(cpu_model, e.enc(), e.lens(), config);
    std::int64_t entries = 0;
    for (std::size_t b = 0; b < want.size(); ++b) {
      const std::int64_t tokens = static_cast<std::int64_t>(want[b].front().tokens.size());
      entries = std::max<std::int64_t>(entries, tokens + (wind() ? 0 : e.lengths[b]));
    }
    if (entries <= start && draw < 8) continue;
    SCOPED_TRACE(random.spec.describe() + ", " + config.to_string() + ", draw " + std::to_string(draw));
    ASSERT_GT(entries, start) << "in 9 draws no input outgrew the history it starts with: nothing to refuse";
    expect_cap_refuses_growth(random, cpu_model, config, limits, e, want, rng);
    return;
  }
}

// check_device_bytes_cap's cap, on an input whose best path outgrows the history a slot starts with.
void TransducerBeamSearch::expect_cap_refuses_growth(const testing::RandomTransducer& random,
                                                     const TransducerModel& cpu_model, TransducerBeamConfig config,
                                                     const BatchLimits& limits, const testing::RandomEncoded& e,
                                                     const std::vector<std::vector<Hypothesis>>& want,
                                                     std::mt19937_64& rng) {
  const testing::RandomTransducerSpec& spec = random.spec;
  const TransducerModel model = random.build(device());
  const std::int64_t bytes = TransducerBeamDecoder(model, config, limits).device_bytes();
  if (!GetParam().cuda) {
    EXPECT_EQ(bytes, 0);
    config.max_device_bytes = 1;
  } else {
    EXPECT_GT(bytes, 0);
    config.max_device_bytes = bytes;
  }
  TransducerBeamDecoder decoder(model, config, limits);
  EXPECT_EQ(decoder.device_bytes(), bytes);
  const Placed placed = place(e);
  if (GetParam().cuda) {
    ASRDEC_EXPECT_THROW_MSG(decoder.decode_nbest(placed.view, e.lens()), OutOfMemory, "max_device_bytes");
    EXPECT_EQ(decoder.device_bytes(), bytes);
    // A short batch fits in the history it has.
    const testing::RandomEncoded short_batch = testing::random_encoded(rng, spec, 2, 4);
    const Placed short_placed = place(short_batch);
    expect_same_beams(decoder.decode_nbest(short_placed.view, short_batch.lens()),
                      transducer_beam_reference(cpu_model, short_batch.enc(), short_batch.lens(), config),
                      "after the refusal", agreement(spec));
  } else {
    expect_same_beams(decoder.decode_nbest(placed.view, e.lens()), want, "CPU", agreement(spec));
  }
}

TEST_P(TransducerBeamSearch, DeviceBytesCapRefusesGrowthAndKeepsTheDecoder) {
  check_device_bytes_cap(testing::test_seed());
}

// loop_counts() says how the last call's search ran. Bounds that any search meets: a step of ALSD++ adds one entry to
// every live hypothesis, so on RNN-T the loop runs at least frames + tokens steps for every final hypothesis, and
// exactly the most of those at beam 1 (one path an utterance, never pruned); AES++ searches every frame of the longest
// utterance, with one to aes_num_steps expansion steps each; a WIND step moves a hypothesis by one token or by a
// window of blanks, so each final path takes at least a step a token and one per W frames. More CPU threads search
// each slice of rows on their own and report the counts of the slice with the most joint passes, which one-thread
// decoders of each slice alone give. The CUDA executor counts on the device, the same in every graph mode, and what
// a one-thread CPU decoder counts unless rounding tipped a near tie the other way (float32 cases are compared).
TEST_P(TransducerBeamSearch, LoopCountsFollowTheSearch) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const auto same = [](const BeamLoopCounts& a, const BeamLoopCounts& b) {
    return a.outer == b.outer && a.inner == b.inner && a.joint_passes == b.joint_passes;
  };
  const auto describe = [](const BeamLoopCounts& c) {
    return "{outer " + std::to_string(c.outer) + ", inner " + std::to_string(c.inner) + ", joint passes " +
           std::to_string(c.joint_passes) + "}";
  };
  // The hypotheses of each utterance's beam as a set (transcripts on their frames), whatever their order.
  const auto paths = [](const std::vector<std::vector<Hypothesis>>& beams) {
    std::vector<std::vector<std::pair<std::vector<std::int32_t>, std::vector<std::int32_t>>>> out;
    for (const auto& beam : beams) {
      out.emplace_back();
      for (const Hypothesis& h : beam) out.back().emplace_back(h.tokens, h.timestamps);
      std::sort(out.back().begin(), out.back().end());
    }
    return out;
  };
  std::int64_t compared = 0, agreed = 0, beam_one = 0;
  for (int i = 0; i < cases(40); ++i) {
    testing::RandomTransducerSpec spec = this->spec(rng);
    if (GetParam().cuda && i % 2 == 0) spec.dtype = DType::f32;  // cases to compare with the CPU's counts
    const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
    const TransducerModel cpu_model = random.build(Device::cpu());
    const TransducerModel model = random.build(device());
    TransducerBeamConfig config = this->config(rng, 4);
    if (i % 4 == 0) config.beam = 1;
    const testing::RandomEncoded e = testing::random_encoded(rng, spec, 6, 30);
    SCOPED_TRACE("case " + std::to_string(i) + ": " + random.spec.describe() + ", " + config.to_string());
    const Placed placed = place(e);
    const BatchLimits limits{std::max<std::int64_t>(e.batch, 1), std::max<std::int64_t>(e.frames, 1)};
    TransducerBeamDecoder decoder(model, config, limits);
    EXPECT_TRUE(same(decoder.loop_counts(), BeamLoopCounts{})) << "before the first call";
    const std::vector<std::vector<Hypothesis>> beams = decoder.decode_nbest(placed.view, e.lens());
    const BeamLoopCounts got = decoder.loop_counts();
    SCOPED_TRACE("counts " + describe(got));
    EXPECT_EQ(got.joint_passes, got.outer + (aes() ? got.inner : 0));
    std::int64_t longest = 0, most_steps = 0;
    for (std::size_t b = 0; b < beams.size(); ++b) {
      const std::int64_t length = e.lengths[b];
      longest = std::max(longest, length);
      for (const Hypothesis& h : beams[b]) {
        const auto tokens = static_cast<std::int64_t>(h.tokens.size());
        if (wind()) {
          const std::int64_t windows = (length + config.wind_window - 1) / config.wind_window;
          EXPECT_GE(got.outer, std::max(tokens, windows)) << "utterance " << b;
        } else if (!aes() && !spec.tdt) {
          EXPECT_GE(got.outer, length + tokens) << "utterance " << b;
          most_steps = std::max(most_steps, length + tokens);
        } else if (!aes()) {
          EXPECT_GE(got.outer, tokens) << "utterance " << b;
        }
      }
    }
    // (CPU threads cut the batch into slices; the counts are then the slice's with the most joint passes, whose
    // longest utterance need not be the batch's.)
    const std::int64_t slices =
        GetParam().cuda ? 1 : std::max<std::int64_t>(1, std::min<std::int64_t>(e.batch, config.threads));
    if (aes()) {
      if (slices == 1) {
        EXPECT_EQ(got.outer, longest) << "AES++ searches every frame of the longest utterance";
      } else {
        EXPECT_LE(got.outer, longest);
      }
      EXPECT_GE(got.inner, got.outer);
      EXPECT_LE(got.inner, got.outer * config.aes_num_steps);
    } else {
      EXPECT_EQ(got.inner, 0);
      if (!wind() && !spec.tdt && config.beam == 1) {
        EXPECT_EQ(got.outer, most_steps) << "beam 1: the longest path's frames and tokens";
        ++beam_one;
      }
    }
    // One-thread CPU decoders: of each slice as the CPU decoder cut the batch, or of the whole batch (CUDA).
    TransducerBeamConfig one = config;
    one.threads = 1;
    one.graph_mode = GraphMode::eager;
    BeamLoopCounts want{};
    std::vector<std::vector<Hypothesis>> cpu_beams;
    for (std::int64_t k = 0; k < slices; ++k) {
      const std::int64_t first = k * e.batch / slices, count = (k + 1) * e.batch / slices - first;
      const TensorView rows(e.values.data() + first * e.frames * e.hidden, DType::f32, {count, e.frames, e.hidden});
      const TensorView lengths(const_cast<std::int32_t*>(e.lengths.data()) + first, DType::i32, {count});
      TransducerBeamDecoder single(cpu_model, one, limits);
      for (auto& beam : single.decode_nbest(rows, lengths)) cpu_beams.push_back(std::move(beam));
      const BeamLoopCounts c = single.loop_counts();
      if (c.joint_passes > want.joint_passes || (c.joint_passes == want.joint_passes && c.outer > want.outer)) {
        want = c;
      }
    }
    if (!GetParam().cuda) {
      EXPECT_EQ(paths(cpu_beams), paths(beams)) << "the CPU's slices found other beams";
      EXPECT_TRUE(same(got, want)) << "one-thread decoders of the slices count " << describe(want);
      ++compared;
      ++agreed;
    } else {
      // The same search launched eagerly: the same kernels in the same order, so the same counts.
      TransducerBeamConfig eager = config;
      eager.graph_mode = GraphMode::eager;
      TransducerBeamDecoder eager_decoder(model, eager, limits);
      eager_decoder.decode_nbest(placed.view, e.lens());
      EXPECT_TRUE(same(got, eager_decoder.loop_counts()))
          << "launched eagerly, the search counts " << describe(eager_decoder.loop_counts());
      if (spec.dtype == DType::f32 && paths(cpu_beams) == paths(beams)) {
        ++compared;
        agreed += same(got, want) ? 1 : 0;
        if (!same(got, want)) std::printf("case %d: the CPU counts %s\n", i, describe(want).c_str());
      }
    }
    // A second call replaces the counts: the first utterance alone (on the CPU its search does not depend on the
    // rest of the batch, so it takes no more steps than the batch did).
    if (e.frames == 0 || e.batch == 0) continue;
    const TensorView first_row(placed.view.data(), DType::f32, {1, e.frames, e.hidden}, device());
    decoder.decode_nbest(first_row, TensorView(const_cast<std::int32_t*>(e.lengths.data()), DType::i32, {1}));
    const BeamLoopCounts alone = decoder.loop_counts();
    if (!GetParam().cuda && (slices == 1 || !aes())) {
      EXPECT_LE(alone.outer, got.outer);
    }
    if (aes()) {
      EXPECT_EQ(alone.outer, e.lengths[0]);
    }
  }
  // CUDA: most float32 searches that end in the CPU's beams count what it counts (a near tie pruned on the way may
  // change the steps of a few).
  EXPECT_GE(2 * agreed, compared) << agreed << " of " << compared << " searches counted as the CPU's";
  if (!aes() && !wind()) {
    EXPECT_GT(beam_one, 0);
  }
  std::printf("%lld of %lld searches compared with one-thread CPU decoders counted as they did\n",
              static_cast<long long>(agreed), static_cast<long long>(compared));
}

TEST_P(TransducerBeamSearch, FusionEqualsTheOracleInEveryMode) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t utterances = 0, changed = 0;
  for (int i = 0; i < cases(190) || utterances < utterances_wanted(520); ++i) {
    testing::RandomTransducerSpec spec = this->spec(rng);
    spec.blank = -1;  // fusion needs blank = V
    const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
    const TransducerModel cpu_model = random.build(Device::cpu());
    const TransducerModel model = random.build(device());
    const testing::RandomEncoded e = testing::random_encoded(rng, spec, 6, 14);
    TransducerBeamConfig config = this->config(rng, 6);
    const auto plain = transducer_beam_reference(cpu_model, e.enc(), e.lens(), config);
    testing::FusionKeep keep;  // the CPU copies of the fused models, for the oracle
    testing::add_random_fusion(rng, spec, i, plain, config, keep, device());
    TransducerBeamConfig oracle_config = config;
    oracle_config.lm = config.lm != nullptr ? keep.lm : nullptr;
    oracle_config.boost = config.boost != nullptr ? keep.boost : nullptr;
    const testing::ScopedFusedKernels fused_kernels(GetParam().cuda && i % 2 == 1);
    SCOPED_TRACE("case " + std::to_string(i) + ": " + random.spec.describe() + ", " + config.to_string() + ", " +
                 fused_kernels.describe());
    const auto want = transducer_beam_reference(cpu_model, e.enc(), e.lens(), oracle_config);
    TransducerBeamDecoder decoder(model, config, BatchLimits{2, 4});
    const Placed placed = place(e);
    expect_same_beams(decoder.decode_nbest(placed.view, e.lens()), want,
                      std::string("fused ") + to_string(config.algorithm), agreement(spec),
                      testing::perturbed_oracle(random, e.enc(), e.lens(), oracle_config, agreement(spec)));
    expect_no_graph_fallback(decoder, config, device());
    if (::testing::Test::HasFailure()) return;
    for (std::size_t b = 0; b < want.size(); ++b) changed += want[b].front().tokens != plain[b].front().tokens ? 1 : 0;
    utterances += e.batch;
  }
  EXPECT_GE(utterances, utterances_wanted(500));
  EXPECT_GT(changed, utterances / 20) << "fusion changed too few transcripts to test anything";
  std::printf("%lld utterances, %lld changed by fusion\n", static_cast<long long>(utterances),
              static_cast<long long>(changed));
}

// Beam 1 is greedy decoding: for ALSD++ and AES++ (with its num_steps symbols per frame), and for WIND with a
// window of one frame.
TEST_P(TransducerBeamSearch, BeamOneIsGreedy) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t utterances = 0;
  for (int i = 0; i < cases(120); ++i) {
    const testing::RandomTransducerSpec spec = this->spec(rng);
    const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
    const testing::RandomEncoded e = testing::random_encoded(rng, spec, 8, 24);
    TransducerBeamConfig config = this->config(rng, 1);
    config.wind_window = 1;
    SCOPED_TRACE("case " + std::to_string(i) + ": " + random.spec.describe() + ", " + config.to_string());
    const auto greedy =
        transducer_greedy_reference(random.build(Device::cpu()), e.enc(), e.lens(), greedy_symbols(config));
    TransducerBeamDecoder decoder(random.build(device()), config);
    const Placed placed = place(e);
    const auto beam = decoder.decode(placed.view, e.lens());
    ASSERT_EQ(beam.size(), greedy.size());
    for (std::size_t b = 0; b < beam.size(); ++b) {
      EXPECT_EQ(beam[b].tokens, greedy[b].tokens) << "utterance " << b;
      if (spec.tdt) {
        EXPECT_EQ(beam[b].durations, greedy[b].durations) << "utterance " << b;
      } else {
        EXPECT_EQ(beam[b].timestamps, greedy[b].timestamps) << "utterance " << b;
      }
    }
    if (::testing::Test::HasFailure()) return;
    utterances += e.batch;
  }
  std::printf("%lld utterances\n", static_cast<long long>(utterances));
}

// Streams `e` through a decoder of `config` under random server traffic (StreamingSchedule: arrivals, chunk sizes,
// row order, cancellations, ids reused; now and then a call poisoned with a NaN first, which must change nothing)
// and expects every finished utterance to equal decode()'s result for the whole utterance.
TransducerBeamSearch::StreamedCounts TransducerBeamSearch::stream_against_whole_decodes(
    const TransducerModel& model, const testing::RandomEncoded& e, const TransducerBeamConfig& config,
    std::mt19937_64& rng) {
  StreamedCounts counts;
  const testing::StreamingSchedule schedule = testing::random_streaming_schedule(
      rng, e.lengths, 1 + static_cast<int>(rng() % 6), 1 + static_cast<int>(rng() % 6), 0.2);
  // Small limits on the CPU, so that buffers grow while utterances are open. On CUDA both decoders get the same
  // fixed limits, large enough for every call: the joint's GEMM then has one shape, and a row gets the same bits
  // in every lane.
  BatchLimits limits{1 + static_cast<std::int64_t>(rng() % 3), 1 + static_cast<std::int64_t>(rng() % 8)};
  if (GetParam().cuda) {
    limits = BatchLimits{std::max<std::int64_t>(e.batch, schedule.max_open), std::max<std::int64_t>(e.frames, 1)};
  }
  limits.max_open_utterances = std::max<std::int64_t>(schedule.max_open, 1);
  // The reference decodes whole utterances on one thread: the streamed results on several must equal it.
  TransducerBeamConfig one_thread = config;
  one_thread.threads = 1;
  TransducerBeamDecoder reference(model, one_thread, GetParam().cuda ? limits : BatchLimits{});
  const Placed whole_enc = place(e);
  const std::vector<Hypothesis> whole = reference.decode(whole_enc.view, e.lens());
  TransducerBeamDecoder decoder(model, config, limits);
  const std::int64_t lists = config.boost != nullptr ? config.boost->num_lists() : 1;
  for (const testing::StreamingCall& base : schedule.calls) {
    for (std::int64_t id : base.cancel) EXPECT_TRUE(decoder.cancel(id));
    if (base.rows.empty()) continue;
    testing::StreamingCall call = base;
    for (std::size_t r = 0; r < call.rows.size(); ++r) call.rows[r].phrase_list = lists == 1 ? 0 : call.utterance[r];
    std::int64_t T = 0;
    const std::vector<std::byte> chunk = testing::gather_chunks(e.values.data(), e.frames, e.hidden, 4, call, T);
    testing::RandomEncoded piece;
    piece.batch = static_cast<std::int64_t>(call.rows.size()), piece.frames = T, piece.hidden = e.hidden;
    piece.values.resize(chunk.size() / 4);
    if (!chunk.empty()) std::memcpy(piece.values.data(), chunk.data(), chunk.size());
    piece.lengths = call.length;
    // Now and then a call with a NaN in a frame every algorithm reads (the last of a row's chunk) comes first:
    // it must change nothing.
    int poisoned = -1;
    for (std::size_t r = 0; r < call.rows.size() && rng() % 8 == 0; ++r) {
      if (call.length[r] > 0) poisoned = static_cast<int>(r);
    }
    if (poisoned >= 0) {
      testing::RandomEncoded bad = piece;
      const auto r = static_cast<std::size_t>(poisoned);
      bad.values[(r * static_cast<std::size_t>(T) + static_cast<std::size_t>(call.length[r] - 1)) *
                 static_cast<std::size_t>(e.hidden)] = std::nanf("");
      const Placed bad_enc = place(bad);
      ASRDEC_EXPECT_THROW_MSG(decoder.decode_chunks(call.rows, bad_enc.view, bad.lens()), InvalidArgument, "is NaN");
      ++counts.rejected;
    }
    const Placed enc = place(piece);
    const std::vector<Hypothesis> got = decoder.decode_chunks(call.rows, enc.view, piece.lens());
    EXPECT_EQ(got.size(), call.rows.size());
    if (got.size() != call.rows.size()) return counts;
    for (std::size_t r = 0; r < call.rows.size(); ++r) {
      const auto u = static_cast<std::size_t>(call.utterance[r]);
      SCOPED_TRACE("utterance " + std::to_string(u) + ", frames " + std::to_string(call.start[r]) + " + " +
                   std::to_string(call.length[r]) + " of " + std::to_string(e.lengths[u]));
      EXPECT_EQ(got[r].is_final, call.rows[r].last);
      if (call.rows[r].last) {
        testing::expect_streamed_equals_whole(got[r], whole[u]);
        ++counts.finished;
      }
    }
    if (::testing::Test::HasFailure()) return counts;
  }
  EXPECT_EQ(decoder.open_utterances(), 0);
  return counts;
}

// Streaming (decode_chunks) under random server traffic — arrivals, chunk sizes (0 included), row order,
// cancellations, ids reused — gives every finished utterance exactly decode()'s result for the whole utterance
// (tokens, timestamps, durations, scores bit for bit), for AES++, ALSD++ (RNN-T and TDT) and WIND beam search, with
// and without fusion, on the CPU (random threads) and on CUDA (every graph mode).
TEST_P(TransducerBeamSearch, ChunkedDecodingEqualsWholeUtterances) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t finished = 0, fused = 0, tdt = 0, rejected = 0;
  for (int i = 0; i < cases(40); ++i) {
    testing::RandomTransducerSpec spec = this->spec(rng);
    if (i % 2 == 1) spec.blank = -1;  // fusion needs blank = V
    const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
    const TransducerModel model = random.build(device());
    // Case 0 streams a batch of no frames at all (every utterance empty), which random lengths reach only now and then.
    const testing::RandomEncoded e = testing::random_encoded(rng, spec, 8, i == 0 ? 0 : 24);
    TransducerBeamConfig config = this->config(rng, 6);
    testing::FusionKeep keep;
    if (i % 2 == 1) {
      ++fused;
      const auto plain = transducer_beam_reference(random.build(Device::cpu()), e.enc(), e.lens(), config);
      testing::add_random_fusion(rng, spec, i / 2, plain, config, keep, device());
    }
    SCOPED_TRACE("case " + std::to_string(i) + ": " + random.spec.describe() + ", " + config.to_string());
    const StreamedCounts counts = stream_against_whole_decodes(model, e, config, rng);
    if (::testing::Test::HasFailure()) return;
    finished += counts.finished;
    tdt += spec.tdt ? counts.finished : 0;
    rejected += counts.rejected;
  }
  std::printf("%lld utterances finished streamed (%lld TDT), %lld decoders with fusion, %lld rejected calls\n",
              static_cast<long long>(finished), static_cast<long long>(tdt), static_cast<long long>(fused),
              static_cast<long long>(rejected));
  if (!GetParam().cuda) {  // fewer cases on CUDA, where StreamingRejectsBadChunksAndChangesNothing checks it
    EXPECT_GT(rejected, 5);
  }
  EXPECT_GT(finished, utterances_wanted(50));
}

// Counts the debug messages of beam decoders whose step loop runs as the persistent kernel (TransducerBeamCuda says
// so when it builds that program); warnings still go to stderr.
class PersistentProgramLog {
 public:
  PersistentProgramLog() {
    set_log_handler([this](LogLevel level, const std::string& message) {
      if (message.find("runs as one persistent kernel") != std::string::npos) ++count_;
      if (level >= LogLevel::warning) std::fprintf(stderr, "asrdec %s: %s\n", to_string(level), message.c_str());
    });
  }
  ~PersistentProgramLog() { set_log_handler(nullptr); }
  PersistentProgramLog(const PersistentProgramLog&) = delete;
  PersistentProgramLog& operator=(const PersistentProgramLog&) = delete;
  std::int64_t count() const { return count_; }

 private:
  std::atomic<std::int64_t> count_{0};
};

// ASRDEC_PERSISTENT_BEAM=1 runs ALSD++'s and WIND's step loop as one persistent kernel (off by default until a GPU
// measures it). On the shapes it takes (an LSTM predictor; at most 32 joint rows a step — ALSD++'s slots, WIND's
// batch x beam x window — and 32 predictor rows, WIND's batch x beam x beam) it runs, and the N-best lists still equal
// the oracle's, with and without fusion, and streamed utterances (lanes seeded from their channels) still equal whole
// ones. AES++ keeps its graph program under the switch, and the CPU executors ignore it: the same checks run there
// too.
TEST_P(TransducerBeamSearch, PersistentKernelEqualsTheOracle) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const testing::ScopedEnvironmentVariable persistent("ASRDEC_PERSISTENT_BEAM", "1");
  const PersistentProgramLog log;
  const bool takes_it = GetParam().cuda && !aes();
  std::int64_t utterances = 0, fused = 0, streamed = 0;
  for (int i = 0; i < cases(80); ++i) {
    testing::RandomTransducerSpec spec = this->spec(rng);
    spec.stateless = false;           // the kernel steps the built-in LSTM
    if (i % 2 == 1) spec.blank = -1;  // fusion needs blank = V
    const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
    const TransducerModel cpu_model = random.build(Device::cpu());
    const TransducerModel model = random.build(device());
    TransducerBeamConfig config = this->config(rng, 4);
    const std::int64_t K = config.beam;
    const std::int64_t joint_rows = wind() ? K * config.wind_window : K;  // an utterance's, and its predictor's:
    const std::int64_t step_rows = wind() ? K * K : K;
    const std::int64_t max_batch = std::clamp<std::int64_t>(32 / std::max(joint_rows, step_rows), 1, 4);
    const testing::RandomEncoded e = testing::random_encoded(rng, spec, max_batch, 20);
    testing::FusionKeep keep;
    TransducerBeamConfig oracle_config = config;
    if (i % 2 == 1) {
      ++fused;
      const auto plain = transducer_beam_reference(cpu_model, e.enc(), e.lens(), config);
      testing::add_random_fusion(rng, spec, i / 2, plain, config, keep, device());
      oracle_config = config;
      oracle_config.lm = config.lm != nullptr ? keep.lm : nullptr;
      oracle_config.boost = config.boost != nullptr ? keep.boost : nullptr;
    }
    SCOPED_TRACE("case " + std::to_string(i) + ": " + random.spec.describe() + ", " + config.to_string() +
                 ", batch limit " + std::to_string(max_batch));
    const auto want = transducer_beam_reference(cpu_model, e.enc(), e.lens(), oracle_config);
    const std::int64_t built = log.count();
    TransducerBeamDecoder decoder(model, config, BatchLimits{max_batch, 20});
    const Placed placed = place(e);
    expect_same_beams(decoder.decode_nbest(placed.view, e.lens()), want,
                      std::string("persistent ") + to_string(config.algorithm), agreement(spec),
                      testing::perturbed_oracle(random, e.enc(), e.lens(), oracle_config, agreement(spec)));
    expect_no_graph_fallback(decoder, config, device());
    // At least one program built as the persistent kernel (one more each time a full history rebuilds the buffers).
    if (takes_it) {
      EXPECT_GE(log.count() - built, 1) << "the persistent kernel did not run";
    } else {
      EXPECT_EQ(log.count(), built) << "a persistent kernel ran where none should";
    }
    if (::testing::Test::HasFailure()) return;
    utterances += e.batch;
    if (i % 3 == 0) streamed += stream_against_whole_decodes(model, e, config, rng).finished;
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GE(utterances, cases(80));
  EXPECT_GT(streamed, 0);
  std::printf("%lld utterances (%lld decoders with fusion), %lld streamed to their end\n",
              static_cast<long long>(utterances), static_cast<long long>(fused), static_cast<long long>(streamed));
}

// CPU threads: every N-best list is the one-thread list, field by field and bit for bit.
TEST_P(TransducerBeamSearch, ThreadsGiveTheOneThreadResults) {
  if (GetParam().cuda) return;  // threads is a CPU setting
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t utterances = 0;
  for (int i = 0; i < 30; ++i) {
    testing::RandomTransducerSpec spec = this->spec(rng);
    if (i % 2 == 1) spec.blank = -1;
    const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
    const TransducerModel model = random.build(device());
    const testing::RandomEncoded e = testing::random_encoded(rng, spec, 12, 16);
    TransducerBeamConfig config = this->config(rng, 5);
    testing::FusionKeep keep;
    if (i % 2 == 1) {
      const auto plain = transducer_beam_reference(model, e.enc(), e.lens(), config);
      testing::add_random_fusion(rng, spec, i / 2, plain, config, keep);
    }
    config.threads = 1;
    const auto want = TransducerBeamDecoder(model, config).decode_nbest(e.enc(), e.lens());
    config.threads = 2 + static_cast<std::int32_t>(rng() % 4);
    SCOPED_TRACE("case " + std::to_string(i) + ": " + random.spec.describe() + ", " + config.to_string());
    const auto got = TransducerBeamDecoder(model, config, BatchLimits{2, 4}).decode_nbest(e.enc(), e.lens());
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t b = 0; b < want.size(); ++b) {
      ASSERT_EQ(got[b].size(), want[b].size()) << "utterance " << b;
      for (std::size_t n = 0; n < want[b].size(); ++n) testing::expect_streamed_equals_whole(got[b][n], want[b][n]);
    }
    if (::testing::Test::HasFailure()) return;
    utterances += e.batch;
  }
  std::printf("%lld utterances\n", static_cast<long long>(utterances));
}

// A streaming call that meets a bad value or rows that do not fit the open utterances throws and changes nothing —
// with several threads too, where the bad row is in the last slice and the others have been searched: the same
// utterances, continued with clean frames, still end with the whole utterances' results.
TEST_P(TransducerBeamSearch, StreamingRejectsBadChunksAndChangesNothing) {
  std::mt19937_64 rng(13);
  testing::RandomTransducerSpec spec = beam_spec(rng);
  spec.tdt = false;
  const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
  const TransducerModel model = random.build(device());
  TransducerBeamConfig config = this->config(rng, 4);
  config.beam = 3;
  testing::RandomEncoded e = testing::random_encoded(rng, spec, 1, 1);
  e.batch = 3;
  e.frames = 9;
  e.lengths = {9, 9, 9};
  e.values.resize(static_cast<std::size_t>(e.batch * e.frames * e.hidden));
  for (float& v : e.values) v = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
  config.threads = 1;
  const BatchLimits limits{3, 9};  // CUDA: one GEMM shape for every call (ChunkedDecodingEqualsWholeUtterances)
  const std::vector<Hypothesis> whole = TransducerBeamDecoder(model, config, limits).decode(place(e).view, e.lens());

  for (const std::int32_t threads : {1, 2, 3}) {
    if (GetParam().cuda && threads > 1) break;  // threads is a CPU setting
    SCOPED_TRACE("threads " + std::to_string(threads));
    config.threads = threads;
    TransducerBeamDecoder decoder(model, config, limits);
    // Frames [first, first + count) of every utterance.
    const auto chunk = [&](std::int32_t first, std::int32_t count) {
      testing::RandomEncoded piece = e;
      piece.frames = count;
      piece.lengths.assign(3, count);
      piece.values.clear();
      for (std::int64_t b = 0; b < e.batch; ++b) {
        const auto from = e.values.begin() + (b * e.frames + first) * e.hidden;
        piece.values.insert(piece.values.end(), from, from + count * e.hidden);
      }
      return piece;
    };
    const std::vector<ChunkRow> firsts = {{7, true, false, 0}, {8, true, false, 0}, {9, true, false, 0}};
    const std::vector<ChunkRow> lasts = {{7, false, true, 0}, {8, false, true, 0}, {9, false, true, 0}};
    const testing::RandomEncoded a = chunk(0, 4);
    decoder.decode_chunks(firsts, place(a).view, a.lens());
    testing::RandomEncoded bad = chunk(4, 5);
    bad.values[static_cast<std::size_t>((2 * 5 + 1) * e.hidden + 2)] = std::nanf("");
    const Placed bad_enc = place(bad);
    ASRDEC_EXPECT_THROW_MSG(decoder.decode_chunks(lasts, bad_enc.view, bad.lens()), InvalidArgument,
                            "enc_proj[2, 1, 2] is NaN");
    std::vector<ChunkRow> unknown = lasts;
    unknown[1].utterance = 10;
    ASRDEC_EXPECT_THROW_MSG(decoder.decode_chunks(unknown, bad_enc.view, bad.lens()), InvalidArgument, "not open");
    ASRDEC_EXPECT_THROW_MSG(decoder.decode_chunks({lasts[0], lasts[1]}, bad_enc.view, bad.lens()), InvalidArgument,
                            "2 rows for a batch of 3");
    EXPECT_EQ(decoder.open_utterances(), 3);
    testing::RandomEncoded none = chunk(4, 0);  // a call of no rows: nothing to decode or change
    none.batch = 0;
    none.lengths.clear();
    EXPECT_TRUE(decoder.decode_chunks({}, place(none).view, none.lens()).empty());
    const testing::RandomEncoded rest = chunk(4, 5);
    const std::vector<Hypothesis> got = decoder.decode_chunks(lasts, place(rest).view, rest.lens());
    ASSERT_EQ(got.size(), 3u);
    for (std::size_t b = 0; b < 3; ++b) testing::expect_streamed_equals_whole(got[b], whole[b]);
    EXPECT_EQ(decoder.open_utterances(), 0);
    EXPECT_FALSE(decoder.cancel(7));
  }
}

TEST_P(TransducerBeamSearch, BadInputIsRejected) {
  std::mt19937_64 rng(11);
  testing::RandomTransducerSpec spec = beam_spec(rng);
  spec.tdt = false;  // every frame is read
  spec.blank = -1;
  const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
  TransducerBeamConfig config;
  config.algorithm = GetParam().algorithm;
  config.graph_mode = GetParam().mode;
  TransducerBeamDecoder decoder(random.build(device()), config);
  testing::RandomEncoded e;
  e.batch = 2;
  e.frames = 4;
  e.hidden = spec.joint;
  e.values.assign(static_cast<std::size_t>(e.batch * e.frames * e.hidden), 0.25f);
  e.lengths = {4, 3};
  e.values[static_cast<std::size_t>(e.frames * e.hidden + 2 * e.hidden + 1)] = std::nanf("");
  {
    const Placed placed = place(e);
    ASRDEC_EXPECT_THROW_MSG(decoder.decode(placed.view, e.lens()), InvalidArgument, "enc_proj[1, 2, 1] is NaN");
  }
  // A NaN on a frame past the utterance's length is never read; lengths beyond T are refused.
  e.lengths = {4, 2};
  {
    const Placed placed = place(e);
    EXPECT_EQ(decoder.decode(placed.view, e.lens()).size(), 2u);
    e.lengths = {4, 5};
    ASRDEC_EXPECT_THROW_MSG(decoder.decode(placed.view, e.lens()), InvalidArgument, "lengths");
  }
  if (GetParam().cuda) {
    ASRDEC_EXPECT_THROW_MSG(decoder.decode(e.enc(), e.lens()), InvalidArgument, "enc_proj");  // host memory
  }
  // Zero-length utterances and an empty batch are valid.
  e.lengths = {0, 0};
  {
    const Placed placed = place(e);
    const auto empty = decoder.decode(placed.view, e.lens());
    ASSERT_EQ(empty.size(), 2u);
    EXPECT_TRUE(empty[0].tokens.empty());
    EXPECT_EQ(empty[0].score, 0.0f);
    const TensorView no_utterances(placed.view.data(), DType::f32, {0, 4, spec.joint}, device());
    const TensorView no_lengths(e.lengths.data(), DType::i32, {0});
    EXPECT_TRUE(decoder.decode(no_utterances, no_lengths).empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Table, TransducerBeamSearch, ::testing::ValuesIn(all_cases()), case_name);

// Seeds that once failed on a GPU, replayed on every CUDA row: on the row that failed they draw the same cases again
// (the CPU rows draw other cases from a seed, and each algorithm its own).
class TransducerBeamRecordedSeeds : public TransducerBeamSearch {};

TEST_P(TransducerBeamRecordedSeeds, EqualsTheOracle) {
  check_oracle(2473970470903615640ull);  // 2026-11-27, H200, WIND per_step: two tokens too many
}

TEST_P(TransducerBeamRecordedSeeds, DeviceBytesCapRefusesGrowthAndKeepsTheDecoder) {
  // 2026-11-27, H200, ALSD++ eager: a TDT model whose tokens moved on emitted too few tokens to outgrow the history.
  check_device_bytes_cap(1954441270372038203ull);
}

std::vector<BeamCase> cuda_cases() {
  std::vector<BeamCase> cases = all_cases();
  cases.erase(std::remove_if(cases.begin(), cases.end(), [](const BeamCase& c) { return !c.cuda; }), cases.end());
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Table, TransducerBeamRecordedSeeds, ::testing::ValuesIn(cuda_cases()), case_name);

TEST(TransducerBeamConfigs, BadConfigsAreRejected) {
  std::mt19937_64 rng(7);
  testing::RandomTransducerSpec spec = beam_spec(rng);
  spec.tdt = false;
  spec.blank = -1;
  const TransducerModel rnnt = testing::make_random_transducer(spec, rng).build(Device::cpu());
  spec.tdt = true;
  const TransducerModel tdt = testing::make_random_transducer(spec, rng).build(Device::cpu());
  TransducerBeamConfig config;
  config.beam = 0;
  ASRDEC_EXPECT_THROW_MSG(TransducerBeamDecoder(rnnt, config), InvalidArgument, "beam must be in [1, 64], got 0");
  config.beam = 65;
  ASRDEC_EXPECT_THROW_MSG(TransducerBeamDecoder(rnnt, config), InvalidArgument, "got 65");
  config.beam = 4;
  config.max_symbols_per_frame = 0;
  ASRDEC_EXPECT_THROW_MSG(TransducerBeamDecoder(rnnt, config), InvalidArgument, "max_symbols_per_frame");
  config.max_symbols_per_frame = 3;
  config.lm_weight = std::nanf("");
  ASRDEC_EXPECT_THROW_MSG(TransducerBeamDecoder(rnnt, config), InvalidArgument, "lm_weight must be finite");
  config.lm_weight = 0.5f;
  std::shared_ptr<const NgramLm> keep;
  config.lm = testing::random_lm(rng, spec.vocab + 1, Device::cpu(), keep);
  ASRDEC_EXPECT_THROW_MSG(TransducerBeamDecoder(rnnt, config), InvalidArgument, "vocabulary");
  config.lm = nullptr;

  config.algorithm = TransducerBeamAlgorithm::aes;
  ASRDEC_EXPECT_THROW_MSG(TransducerBeamDecoder(tdt, config), Unsupported, "aes++ beam search is for RNN-T models");
  config.aes_num_steps = 0;
  ASRDEC_EXPECT_THROW_MSG(TransducerBeamDecoder(rnnt, config), InvalidArgument, "aes_num_steps must be in [1, 64]");
  config.aes_num_steps = 2;
  config.aes_expansion_beta = 17;
  ASRDEC_EXPECT_THROW_MSG(TransducerBeamDecoder(rnnt, config), InvalidArgument,
                          "aes_expansion_beta must be in [0, 16], got 17");
  config.aes_expansion_beta = 2;
  config.aes_expansion_gamma = std::nanf("");
  ASRDEC_EXPECT_THROW_MSG(TransducerBeamDecoder(rnnt, config), InvalidArgument, "aes_expansion_gamma must be positive");
  config.aes_expansion_gamma = 0.0f;
  ASRDEC_EXPECT_THROW_MSG(TransducerBeamDecoder(rnnt, config), InvalidArgument, "aes_expansion_gamma must be positive");
  config.aes_expansion_gamma = 2.3f;

  config.algorithm = TransducerBeamAlgorithm::wind;
  ASRDEC_EXPECT_THROW_MSG(TransducerBeamDecoder(tdt, config), Unsupported, "wind-beam beam search is for RNN-T models");
  config.wind_window = 0;
  ASRDEC_EXPECT_THROW_MSG(TransducerBeamDecoder(rnnt, config), InvalidArgument,
                          "wind_window must be in [1, 64], got 0");
  config.wind_window = 65;
  ASRDEC_EXPECT_THROW_MSG(TransducerBeamDecoder(rnnt, config), InvalidArgument, "got 65");

  EXPECT_THROW(parse_beam_algorithm("beam"), InvalidArgument);
  EXPECT_EQ(parse_beam_algorithm("maes"), TransducerBeamAlgorithm::aes);
  EXPECT_EQ(parse_beam_algorithm("aes++"), TransducerBeamAlgorithm::aes);
  EXPECT_EQ(parse_beam_algorithm("wind-beam"), TransducerBeamAlgorithm::wind);
  EXPECT_THROW(parse_fusion_pruning("middle"), InvalidArgument);
  EXPECT_THROW(parse_blank_lm_scoring("half"), InvalidArgument);
  EXPECT_EQ(parse_blank_lm_scoring("full"), BlankLmScoring::lm_weighted_full);
}

}  // namespace
}  // namespace asrdec

namespace asrdec {
namespace {

// AES++ with early pruning follows NeMo's maes_batch order: the acoustic K + beta best, the gamma cut on acoustic
// scores, then the LM on the survivors. Token 0 is acoustically best but the LM makes it 5 worse: it survives gamma
// (asrdec 0.1 cut on fused scores and dropped it); token 2 is acoustically 3.5 below the best and is dropped
// although the LM does not penalise it.
TEST(AesPropose, EarlyPruningCutsOnAcousticScoresBeforeTheLm) {
  const float logp[4] = {-0.5f, -1.0f, -4.0f, -2.0f};  // tokens 0..2, blank 3
  float lm_scores[3] = {-5.0f, 0.0f, 0.0f};
  detail::FusionRef fusion;
  fusion.lm.scores = lm_scores;
  fusion.lm.weight = 1.0f;
  fusion.vocab = 3;
  detail::AlsdRow row{logp, nullptr, 3, 4, nullptr, 0, &fusion, 0};
  detail::BeamFusionRule rule;
  rule.active = true;
  rule.blank_full = false;
  rule.lambda = 1.0f;
  const float gamma = 2.3f;

  rule.late = false;
  detail::AesProposals early{};
  detail::aes_propose(rule, row, 4, gamma, early);
  ASSERT_EQ(early.count, 4);
  std::map<std::int32_t, float> got;
  for (std::int32_t j = 0; j < early.count; ++j) got[early.label[j]] = early.score[j];
  EXPECT_EQ(early.label[0], 0) << "kept in acoustic order";
  EXPECT_FLOAT_EQ(got[0], -5.5f) << "within gamma acoustically; the LM is added after the cut";
  EXPECT_FLOAT_EQ(got[1], -1.0f);
  EXPECT_FLOAT_EQ(got[3], -2.0f) << "blank";
  EXPECT_EQ(got[2], -std::numeric_limits<float>::infinity()) << "3.5 below the acoustic best";

  rule.late = true;  // late pruning: labels chosen and cut by fused scores
  detail::AesProposals late{};
  detail::aes_propose(rule, row, 4, gamma, late);
  got.clear();
  for (std::int32_t j = 0; j < late.count; ++j) got[late.label[j]] = late.score[j];
  EXPECT_EQ(late.label[0], 1) << "fused order";
  EXPECT_EQ(got[0], -std::numeric_limits<float>::infinity()) << "fused -5.5 is 4.5 below the fused best";
  EXPECT_EQ(got[2], -std::numeric_limits<float>::infinity()) << "fused -4.0 is 3.0 below the fused best";
  EXPECT_FLOAT_EQ(got[3], -2.0f) << "blank";
}

}  // namespace
}  // namespace asrdec

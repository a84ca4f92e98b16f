#include <gtest/gtest-spi.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "lm/random_fusion.hpp"
#include "oracles/transducer_greedy_reference.hpp"
#include "support/streaming_schedule.hpp"
#include "transducer/random_transducer.hpp"

namespace asrdec {
namespace {

using testing::expect_same_hypotheses;
using testing::make_random_transducer;
using testing::random_encoded;
using testing::random_spec;

struct GreedyCase {
  bool cuda;
  GraphMode mode;
};

void PrintTo(const GreedyCase& c, std::ostream* out) { *out << (c.cuda ? "cuda/" : "cpu/") << to_string(c.mode); }

std::string case_name(const ::testing::TestParamInfo<GreedyCase>& info) {
  return info.param.cuda ? std::string("CUDA_") + to_string(info.param.mode) : std::string("cpu");
}

std::vector<GreedyCase> all_cases() {
  std::vector<GreedyCase> cases = {{false, GraphMode::eager}};
  for (GraphMode mode : {GraphMode::conditional, GraphMode::per_step, GraphMode::eager}) {
    cases.push_back({true, mode});
  }
  return cases;
}

class TransducerGreedy : public ::testing::TestWithParam<GreedyCase> {
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
  // CUDA: the oracle on rounding-level perturbations of the model, for results the model's recurrence moved beyond
  // the tolerance (expect_same_hypotheses). CPU: none, its results equal the oracle exactly.
  testing::PerturbedGreedyOracle perturbed_oracle(const testing::RandomTransducer& random,
                                                  const testing::RandomEncoded& e, std::int32_t max_symbols) const {
    if (!GetParam().cuda) return {};
    return testing::perturbed_greedy_oracle(random, [&e, max_symbols](const TransducerModel& m) {
      return transducer_greedy_reference(m, e.enc(), e.lens(), max_symbols);
    });
  }

  struct Placed {
    DeviceBuffer<std::byte> buffer;
    TensorView view;
  };
  // CPU views point into `e`, which must outlive the Placed result.
  Placed place(const testing::RandomEncoded&& e) const = delete;
  Placed place(const testing::RandomEncoded& e) const {
    if (device_.is_cpu() || e.values.empty()) {
      return Placed{{}, TensorView(e.values.data(), DType::f32, {e.batch, e.frames, e.hidden}, device_)};
    }
    Placed p{testing::to_device(e.values.data(), e.values.size() * 4, device_), {}};
    p.view = TensorView(p.buffer.data(), DType::f32, {e.batch, e.frames, e.hidden}, device_);
    return p;
  }

  // A random model, built on the CPU and on the case's device, and a random batch for it.
  struct RandomCase {
    testing::RandomTransducer random;
    TransducerModel cpu_model;
    TransducerModel model;
    testing::RandomEncoded e;
  };
  RandomCase random_case(std::mt19937_64& rng) const {
    const testing::RandomTransducerSpec spec = random_spec(rng);
    testing::RandomTransducer random = make_random_transducer(spec, rng);
    TransducerModel cpu_model = random.build(Device::cpu());
    TransducerModel model = random.build(device_);
    testing::RandomEncoded e = random_encoded(rng, spec, 10, 24);
    return RandomCase{std::move(random), std::move(cpu_model), std::move(model), std::move(e)};
  }

  Device device_;
};

// The acceptance check: every algorithm equals the per-utterance oracle on thousands of random utterances of
// random models (ties, max_symbols hits, TDT duration 0 at the last frame, lengths 0 and 1 included).
TEST_P(TransducerGreedy, EveryAlgorithmEqualsThePerUtteranceOracle) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const int cases = GetParam().cuda ? 60 : 400;
  std::int64_t utterances = 0, labels = 0, capped = 0;
  for (int i = 0; i < cases; ++i) {
    const RandomCase c = random_case(rng);
    const testing::ScopedGreedyKernels kernels(GetParam().cuda, i);
    SCOPED_TRACE("case " + std::to_string(i) + ": " + c.random.spec.describe() + ", " + kernels.describe());
    const testing::RandomTransducerSpec& spec = c.random.spec;
    const TransducerModel& cpu_model = c.cpu_model;
    const TransducerModel& model = c.model;
    const testing::RandomEncoded& e = c.e;
    const std::int32_t max_symbols = std::uniform_int_distribution<std::int32_t>(1, 4)(rng);
    const auto want = transducer_greedy_reference(cpu_model, e.enc(), e.lens(), max_symbols);
    utterances += e.batch;
    for (const auto& h : want) {
      labels += static_cast<std::int64_t>(h.tokens.size());
      for (std::size_t k = 0; max_symbols > 1 && k + static_cast<std::size_t>(max_symbols) <= h.timestamps.size();
           ++k) {
        capped += h.timestamps[k] == h.timestamps[k + static_cast<std::size_t>(max_symbols) - 1] ? 1 : 0;
      }
    }
    const Placed enc = place(e);
    const testing::PerturbedGreedyOracle perturbed = perturbed_oracle(c.random, e, max_symbols);
    std::vector<std::pair<TransducerGreedyAlgorithm, std::int32_t>> algorithms = {
        {TransducerGreedyAlgorithm::frame_looping, 1}, {TransducerGreedyAlgorithm::label_looping, 1}};
    if (!spec.tdt) {
      for (std::int32_t w : {1, 2, 3, 8}) algorithms.push_back({TransducerGreedyAlgorithm::wind, w});
    }
    for (const auto& [algorithm, window] : algorithms) {
      TransducerGreedyConfig config;
      config.algorithm = algorithm;
      config.window = window;
      config.max_symbols_per_frame = max_symbols;
      config.graph_mode = GetParam().mode;
      config.threads = static_cast<std::int32_t>(1 + rng() % 4);          // CPU: results must not depend on it
      TransducerGreedyDecoder decoder(model, config, BatchLimits{3, 5});  // small: buffers grow during the test
      expect_same_hypotheses(decoder.decode(enc.view, e.lens()), want, agreement(spec.dtype),
                             std::string(to_string(algorithm)) + " W=" + std::to_string(window), false, perturbed);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  if (!GetParam().cuda) {
    EXPECT_GE(utterances, 2000) << "the acceptance bar is 2000 random utterances";
  }
  EXPECT_GT(capped, 0) << "no case reached max_symbols; the generator lost its edge cases";
  std::printf("%lld utterances, %lld labels, %lld max_symbols runs\n", static_cast<long long>(utterances),
              static_cast<long long>(labels), static_cast<long long>(capped));
}

// With its fused kernels on, the CUDA executor evaluates the joint of up to 32 rows with them and of more rows with
// cuBLAS (transducer/model/joint_gemv_shape.hpp); the test above meets the first. Batches of 33-48 utterances, one
// row each, take the second; on the CPU this is one more random check.
TEST_P(TransducerGreedy, LargeBatchesEqualThePerUtteranceOracle) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 6; ++i) {
    const testing::RandomTransducerSpec spec = random_spec(rng);
    const testing::RandomTransducer random = make_random_transducer(spec, rng);
    SCOPED_TRACE("case " + std::to_string(i) + ": " + spec.describe());
    const TransducerModel cpu_model = random.build(Device::cpu());
    const TransducerModel model = random.build(device_);
    testing::RandomEncoded e = random_encoded(rng, spec, 48, 16);
    while (e.batch <= 32) e = random_encoded(rng, spec, 48, 16);
    const testing::ScopedFusedKernels fused_kernels(GetParam().cuda);
    const std::int32_t max_symbols = std::uniform_int_distribution<std::int32_t>(1, 3)(rng);
    const auto want = transducer_greedy_reference(cpu_model, e.enc(), e.lens(), max_symbols);
    const Placed enc = place(e);
    const testing::PerturbedGreedyOracle perturbed = perturbed_oracle(random, e, max_symbols);
    for (const TransducerGreedyAlgorithm algorithm :
         {TransducerGreedyAlgorithm::label_looping, TransducerGreedyAlgorithm::frame_looping}) {
      TransducerGreedyConfig config;
      config.algorithm = algorithm;
      config.max_symbols_per_frame = max_symbols;
      config.graph_mode = GetParam().mode;
      TransducerGreedyDecoder decoder(model, config, BatchLimits{e.batch, 16});
      expect_same_hypotheses(decoder.decode(enc.view, e.lens()), want, agreement(spec.dtype),
                             std::string(to_string(algorithm)) + " B=" + std::to_string(e.batch), false, perturbed);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// Label looping (and WIND) stops an inner loop early for its stragglers (label_looping_cut_stragglers). In batches
// of 16-40 utterances the cut often fires (other pass counts than the same decoder without it,
// ASRDEC_CUT_STRAGGLERS=0), and every utterance still equals the per-utterance oracle: a paused row goes on from the
// same frame with the same state. Both decoders make the same joint choices. The cut is a schedule, not a bound: it
// usually saves inner passes, but a paused row can fall out of step with the rest and cost more (seed
// 3767124503365087745, case 4: 85 inner passes against 57), so whether it pays is the benchmarks' question
// (asrdec_bench_transducer_greedy's /no_cut cases), and this test only counts how often it does.
TEST_P(TransducerGreedy, CutStragglersKeepEveryResult) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t runs = 0, cut = 0, fewer = 0;
  for (int i = 0; i < (GetParam().cuda ? 6 : 12); ++i) {
    const testing::RandomTransducerSpec spec = random_spec(rng);
    const testing::RandomTransducer random = make_random_transducer(spec, rng);
    const testing::ScopedGreedyKernels kernels(GetParam().cuda, i);
    SCOPED_TRACE("case " + std::to_string(i) + ": " + spec.describe() + ", " + kernels.describe());
    const TransducerModel cpu_model = random.build(Device::cpu());
    const TransducerModel model = random.build(device_);
    testing::RandomEncoded e = random_encoded(rng, spec, 40, 60);
    while (e.batch < 16 || e.frames < 20) e = random_encoded(rng, spec, 40, 60);
    const std::int32_t max_symbols = std::uniform_int_distribution<std::int32_t>(1, 4)(rng);
    const auto want = transducer_greedy_reference(cpu_model, e.enc(), e.lens(), max_symbols);
    const Placed enc = place(e);
    const testing::PerturbedGreedyOracle perturbed = perturbed_oracle(random, e, max_symbols);
    std::vector<std::pair<TransducerGreedyAlgorithm, std::int32_t>> algorithms = {
        {TransducerGreedyAlgorithm::label_looping, 1}};
    if (!spec.tdt) algorithms.push_back({TransducerGreedyAlgorithm::wind, static_cast<std::int32_t>(2 + rng() % 4)});
    for (const auto& [algorithm, window] : algorithms) {
      const std::string what =
          std::string(to_string(algorithm)) + " W=" + std::to_string(window) + " B=" + std::to_string(e.batch);
      TransducerGreedyConfig config;
      config.algorithm = algorithm;
      config.window = window;
      config.max_symbols_per_frame = max_symbols;
      config.graph_mode = GetParam().mode;
      config.threads = 1;  // one batch on the CPU too, so that its passes are the batch's
      TransducerGreedyDecoder decoder(model, config, BatchLimits{e.batch, e.frames});
      const std::vector<Hypothesis> got = decoder.decode(enc.view, e.lens());
      expect_same_hypotheses(got, want, agreement(spec.dtype), what, false, perturbed);
      std::vector<Hypothesis> uncut;
      GreedyLoopCounts baseline{};
      {
        const testing::ScopedEnvironmentVariable no_cut("ASRDEC_CUT_STRAGGLERS", "0");
        TransducerGreedyDecoder plain(model, config, BatchLimits{e.batch, e.frames});
        uncut = plain.decode(enc.view, e.lens());
        baseline = plain.loop_counts();
      }
      expect_same_hypotheses(uncut, want, agreement(spec.dtype), what + " without the cut", false, perturbed);
      if (::testing::Test::HasFatalFailure()) return;
      const GreedyLoopCounts counts = decoder.loop_counts();
      EXPECT_EQ(counts.choices, baseline.choices) << what;
      ++runs;
      cut += counts.inner != baseline.inner || counts.outer != baseline.outer ? 1 : 0;
      fewer += counts.joint_passes < baseline.joint_passes ? 1 : 0;
    }
  }
  EXPECT_GT(cut, 0) << "the stragglers were cut in none of " << runs << " batches";  // about half, usually
  std::printf("%lld of %lld batches cut their stragglers, %lld of them with fewer joint passes\n",
              static_cast<long long>(cut), static_cast<long long>(runs), static_cast<long long>(fewer));
}

// Streaming (decode_chunks) under random server traffic — utterances joining and leaving at any call, chunks of
// random sizes (0 included), cancellations — gives exactly decode()'s result for every finished utterance (scores bit
// for bit), for every algorithm, with and without an LM and a boosting tree; partial results are prefixes of it.
TEST_P(TransducerGreedy, ChunkedDecodingEqualsWholeUtterances) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const int cases = GetParam().cuda ? 10 : 40;
  std::int64_t finished = 0, fused = 0, rejected = 0;
  for (int i = 0; i < cases; ++i) {
    const testing::RandomTransducerSpec spec = random_spec(rng);
    const testing::RandomTransducer random = make_random_transducer(spec, rng);
    const testing::ScopedGreedyKernels kernels(GetParam().cuda, i);
    SCOPED_TRACE("case " + std::to_string(i) + ": " + random.spec.describe() + ", " + kernels.describe());
    const TransducerModel model = random.build(device_);
    const testing::RandomEncoded e = random_encoded(rng, spec, 8, 30);
    const Placed whole_enc = place(e);
    std::vector<TransducerGreedyAlgorithm> algorithms = {TransducerGreedyAlgorithm::label_looping,
                                                         TransducerGreedyAlgorithm::frame_looping};
    if (!spec.tdt) algorithms.push_back(TransducerGreedyAlgorithm::wind);
    for (TransducerGreedyAlgorithm algorithm : algorithms) {
      TransducerGreedyConfig config;
      config.algorithm = algorithm;
      config.window = 4;
      config.max_symbols_per_frame = std::uniform_int_distribution<std::int32_t>(1, 4)(rng);
      config.graph_mode = GetParam().mode;
      config.threads = static_cast<std::int32_t>(1 + rng() % 4);
      std::string fusion = "no fusion";
      if (model.blank_id() == model.vocab_size() && rng() % 2 == 0) {
        ++fused;
        std::shared_ptr<const NgramLm> lm_keep;
        config.lm = testing::random_lm(rng, model.vocab_size(), device_, lm_keep);
        config.lm_weight = testing::random_weight(rng);
        std::shared_ptr<const BoostingTree> tree_keep;
        config.boost = testing::random_boost(
            rng, model.vocab_size(), transducer_greedy_reference(random.build(Device::cpu()), e.enc(), e.lens()),
            device_, tree_keep);
        config.boost_weight = testing::random_weight(rng);
        fusion = lm_keep->describe() + ", " + tree_keep->describe();
      }
      SCOPED_TRACE(std::string(to_string(algorithm)) + ", " + fusion);
      const testing::StreamingSchedule schedule = testing::random_streaming_schedule(
          rng, e.lengths, 1 + static_cast<int>(rng() % 6), 1 + static_cast<int>(rng() % 6), 0.2);
      // CPU: small limits, so that buffers grow while utterances are open. CUDA: the same fixed limits for both
      // decoders, since a row's GEMM results are only promised the same bits for the same GEMM shape.
      BatchLimits limits{1 + static_cast<std::int64_t>(rng() % 3), 1 + static_cast<std::int64_t>(rng() % 8)};
      if (GetParam().cuda)
        limits = BatchLimits{std::max(e.batch, schedule.max_rows), std::max<std::int64_t>(e.frames, 1)};
      limits.max_open_utterances = std::max<std::int64_t>(schedule.max_open, 1);
      TransducerGreedyDecoder reference(model, config, GetParam().cuda ? limits : BatchLimits{});
      const std::vector<Hypothesis> whole = reference.decode(whole_enc.view, e.lens());
      TransducerGreedyDecoder decoder(model, config, limits);
      const std::int64_t lists = config.boost != nullptr ? config.boost->num_lists() : 1;
      for (const testing::StreamingCall& base : schedule.calls) {
        for (std::int64_t id : base.cancel) EXPECT_TRUE(decoder.cancel(id));
        if (base.rows.empty()) continue;
        testing::StreamingCall call = base;
        for (std::size_t r = 0; r < call.rows.size(); ++r)
          call.rows[r].phrase_list = lists == 1 ? 0 : call.utterance[r];
        std::int64_t T = 0;
        const std::vector<std::byte> chunk = testing::gather_chunks(e.values.data(), e.frames, e.hidden, 4, call, T);
        testing::RandomEncoded piece;
        piece.batch = static_cast<std::int64_t>(call.rows.size()), piece.frames = T, piece.hidden = e.hidden;
        piece.values.resize(chunk.size() / 4);
        std::memcpy(piece.values.data(), chunk.data(), chunk.size());
        piece.lengths = call.length;
        // Now and then (RNN-T: every frame is read; a TDT duration may skip one) a call with a NaN in a row's last
        // frame comes first: it must change nothing.
        int poisoned = -1;
        for (std::size_t r = 0; r < call.rows.size() && !spec.tdt && rng() % 8 == 0; ++r) {
          if (call.length[r] > 0) poisoned = static_cast<int>(r);
        }
        if (poisoned >= 0) {
          testing::RandomEncoded bad = piece;
          const auto r = static_cast<std::size_t>(poisoned);
          bad.values[(r * static_cast<std::size_t>(T) + static_cast<std::size_t>(call.length[r] - 1)) *
                     static_cast<std::size_t>(e.hidden)] = std::nanf("");
          const Placed bad_enc = place(bad);
          ASRDEC_EXPECT_THROW_MSG(decoder.decode_chunks(call.rows, bad_enc.view, bad.lens()), InvalidArgument,
                                  "is NaN");
          ++rejected;
        }
        const Placed enc = place(piece);
        const std::vector<Hypothesis> got = decoder.decode_chunks(call.rows, enc.view, piece.lens());
        ASSERT_EQ(got.size(), call.rows.size());
        for (std::size_t r = 0; r < call.rows.size(); ++r) {
          const auto u = static_cast<std::size_t>(call.utterance[r]);
          SCOPED_TRACE("utterance " + std::to_string(u) + ", frames " + std::to_string(call.start[r]) + " + " +
                       std::to_string(call.length[r]) + " of " + std::to_string(e.lengths[u]));
          if (call.rows[r].last) {
            testing::expect_streamed_equals_whole(got[r], whole[u]);
            ++finished;
          } else {
            testing::expect_prefix_of_whole(got[r], whole[u]);
          }
        }
        if (::testing::Test::HasFailure()) return;
      }
      EXPECT_EQ(decoder.open_utterances(), 0);
    }
  }
  std::printf("%lld utterances finished streamed, %lld decoders with fusion, %lld rejected calls\n",
              static_cast<long long>(finished), static_cast<long long>(fused), static_cast<long long>(rejected));
  EXPECT_GT(rejected, 0);
  EXPECT_GT(finished, 50);
}

TEST_P(TransducerGreedy, RejectsBadInputWithPreciseMessages) {
  std::mt19937_64 rng(7);
  testing::RandomTransducerSpec spec;
  spec.vocab = 5, spec.joint = 4, spec.hidden = 3;
  const testing::RandomTransducer random = make_random_transducer(spec, rng);
  const TransducerModel model = random.build(device_);
  TransducerGreedyDecoder decoder(model);
  std::vector<float> values(2 * 6 * 4, 0.25f);
  const testing::RandomEncoded good_input{2, 6, 4, values, {6, 2}};
  const Placed good = place(good_input);
  std::int32_t lengths[2] = {6, 2};
  EXPECT_EQ(decoder.decode(good.view, TensorView(lengths, DType::i32, {2})).size(), 2u);

  std::int32_t too_long[2] = {7, 1};
  ASRDEC_EXPECT_THROW_MSG(decoder.decode(good.view, TensorView(too_long, DType::i32, {2})), InvalidArgument,
                          "lengths[0] = 7 is outside [0, 6] (T, the frames of enc_proj)");
  std::int32_t negative[2] = {1, -3};
  ASRDEC_EXPECT_THROW_MSG(decoder.decode(good.view, TensorView(negative, DType::i32, {2})), InvalidArgument,
                          "lengths[1] = -3 is outside [0, 6]");
  const testing::RandomEncoded wide{2, 6, 5, std::vector<float>(2 * 6 * 5, 0.25f), {6, 2}};
  const Placed wrong_j = place(wide);
  ASRDEC_EXPECT_THROW_MSG(decoder.decode(wrong_j.view, TensorView(lengths, DType::i32, {2})), InvalidArgument,
                          "enc_proj: dimension 2 must be 4 (J, the joint hidden size of the model), got 5");
  std::vector<std::int32_t> ints(48, 0);
  ASRDEC_EXPECT_THROW_MSG(
      decoder.decode(TensorView(ints.data(), DType::i32, {2, 6, 4}, device_), TensorView(lengths, DType::i32, {2})),
      InvalidArgument, "enc_proj: expected dtype float32, float16 or bfloat16, got int32");
  ASRDEC_EXPECT_THROW_MSG(decoder.decode(good.view, TensorView(lengths, DType::i32, {1})), InvalidArgument,
                          "lengths: dimension 0 must be 2 (the batch size B of enc_proj)");
  std::vector<float> with_nan = values;
  with_nan[(1 * 6 + 1) * 4 + 2] = std::numeric_limits<float>::quiet_NaN();
  const testing::RandomEncoded nan_input{2, 6, 4, with_nan, {6, 2}};
  const Placed nan = place(nan_input);
  ASRDEC_EXPECT_THROW_MSG(decoder.decode(nan.view, TensorView(lengths, DType::i32, {2})), InvalidArgument,
                          "enc_proj[1, 1, 2] is NaN");
  // NaN beyond a length is never read.
  std::int32_t short_lengths[2] = {6, 1};
  EXPECT_NO_THROW(decoder.decode(nan.view, TensorView(short_lengths, DType::i32, {2})));

  // With value checks off, NaN input must still decode (a NaN joint row counts as blank), never crash.
  {
    testing::RandomTransducerSpec tanh_spec = spec;
    tanh_spec.activation = JointActivation::tanh;  // tanh(NaN) = NaN: every logit of that row is NaN
    std::mt19937_64 rng3(9);
    const testing::RandomTransducer tanh_model = make_random_transducer(tanh_spec, rng3);
    TransducerGreedyConfig unchecked;
    unchecked.check_values = false;
    TransducerGreedyDecoder lenient(tanh_model.build(device_), unchecked);
    const auto result = lenient.decode(nan.view, TensorView(lengths, DType::i32, {2}));
    ASSERT_EQ(result.size(), 2u);
    for (const auto& h : result) {
      for (std::int32_t token : h.tokens) EXPECT_TRUE(token >= 0 && token < 5) << token;
    }
  }

  TransducerGreedyConfig bad;
  bad.max_symbols_per_frame = 0;
  ASRDEC_EXPECT_THROW_MSG(TransducerGreedyDecoder(model, bad), InvalidArgument,
                          "max_symbols_per_frame must be in [1, 100], got 0");
  bad = {};
  bad.window = 0;
  ASRDEC_EXPECT_THROW_MSG(TransducerGreedyDecoder(model, bad), InvalidArgument, "window must be in [1, 64], got 0");
  spec.tdt = true;
  std::mt19937_64 rng2(8);
  const testing::RandomTransducer tdt = make_random_transducer(spec, rng2);
  bad = {};
  bad.algorithm = TransducerGreedyAlgorithm::wind;
  ASRDEC_EXPECT_THROW_MSG(TransducerGreedyDecoder(tdt.build(device_), bad), Unsupported,
                          "WIND greedy decoding is defined for RNN-T models; this model is TDT");
  ASRDEC_EXPECT_THROW_MSG(decoder.decode_chunks({ChunkRow{1, true}}, good.view, TensorView(lengths, DType::i32, {2})),
                          InvalidArgument, "TransducerGreedyDecoder::decode_chunks: 1 rows for a batch of 2");
}

// WIND rejects an invalid encoder value exactly when the frame-by-frame oracle does (it reads a frame inside
// the utterance), names the same position, and never looks at frames beyond the length.
TEST_P(TransducerGreedy, WindRejectsInvalidInputLikeTheOracle) {
  std::mt19937_64 rng(11);
  testing::RandomTransducerSpec spec;
  spec.vocab = 4, spec.joint = 4, spec.hidden = 3;
  const testing::RandomTransducer random = make_random_transducer(spec, rng);
  std::vector<float> values(6 * 4, 0.5f);
  values[3 * 4 + 1] = std::numeric_limits<float>::infinity();  // frame 3
  const testing::RandomEncoded input{1, 6, 4, values, {6}};
  const Placed enc = place(input);
  TransducerGreedyConfig config;
  config.algorithm = TransducerGreedyAlgorithm::wind;
  config.window = 8;
  config.graph_mode = GetParam().mode;
  TransducerGreedyDecoder decoder(random.build(device_), config);
  std::int32_t short_length[1] = {3};  // frames 0..2: the window may cover frame 3, but it is not read
  EXPECT_NO_THROW(decoder.decode(enc.view, TensorView(short_length, DType::i32, {1})));
  std::int32_t full_length[1] = {6};
  ASRDEC_EXPECT_THROW_MSG(
      transducer_greedy_reference(random.build(Device::cpu()), TensorView(values.data(), DType::f32, {1, 6, 4}),
                                  TensorView(full_length, DType::i32, {1})),
      InvalidArgument, "enc_proj[0, 3, 1] is infinite");
  ASRDEC_EXPECT_THROW_MSG(decoder.decode(enc.view, TensorView(full_length, DType::i32, {1})), InvalidArgument,
                          "enc_proj[0, 3, 1] is infinite");
}

// loop_counts(): the passes of a batch's loops follow from those of its rows decoded one by one (rows never look at
// each other): the batch's choices are the rows' sum. Frame looping's outer passes are its longest row's and its
// inner passes lie between the largest row's and the rows' sum; label looping (and WIND) may cut an inner loop short
// for its stragglers (label_looping_cut_stragglers), so its outer passes are at least the longest row's and its inner
// passes at most the rows' sum. One row of RNN-T label or frame looping evaluates the joint once a
// label and once a frame, less the frames left by the max_symbols rule (read from its timestamps). CUDA counts on
// the device what the CPU counts on one thread; more CPU threads loop each slice on its own.
TEST_P(TransducerGreedy, LoopCountsFollowTheRows) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const int cases = GetParam().cuda ? 20 : 120;
  std::int64_t waited = 0, compared_with_cuda = 0, cut_short = 0;
  for (int i = 0; i < cases; ++i) {
    const RandomCase c = random_case(rng);
    SCOPED_TRACE("case " + std::to_string(i) + ": " + c.random.spec.describe());
    const testing::RandomTransducerSpec& spec = c.random.spec;
    const testing::RandomEncoded& e = c.e;
    const Placed enc = place(e);
    std::vector<std::pair<TransducerGreedyAlgorithm, std::int32_t>> algorithms = {
        {TransducerGreedyAlgorithm::frame_looping, 1}, {TransducerGreedyAlgorithm::label_looping, 1}};
    if (!spec.tdt) algorithms.push_back({TransducerGreedyAlgorithm::wind, static_cast<std::int32_t>(2 + rng() % 7)});
    for (const auto& [algorithm, window] : algorithms) {
      const std::string what = std::string(to_string(algorithm)) + " W=" + std::to_string(window);
      SCOPED_TRACE(what);
      TransducerGreedyConfig config;
      config.algorithm = algorithm;
      config.window = window;
      config.max_symbols_per_frame = std::uniform_int_distribution<std::int32_t>(1, 4)(rng);
      config.graph_mode = GetParam().mode;
      config.threads = 1;
      // The rows one by one, on the CPU.
      TransducerGreedyDecoder single(c.cpu_model, config);
      GreedyLoopCounts sum{}, most{};
      std::int64_t most_inner = 0;
      for (std::int64_t b = 0; b < e.batch; ++b) {
        const TensorView row(e.values.data() + b * e.frames * e.hidden, DType::f32, {1, e.frames, e.hidden});
        std::int32_t length[1] = {e.lengths[static_cast<std::size_t>(b)]};
        const std::vector<Hypothesis> h = single.decode(row, TensorView(length, DType::i32, {1}));
        const GreedyLoopCounts c = single.loop_counts();
        sum.outer += c.outer, sum.inner += c.inner, sum.choices += c.choices;
        most.outer = std::max(most.outer, c.outer);
        most_inner = std::max(most_inner, c.inner);
        const bool label_looping = algorithm == TransducerGreedyAlgorithm::label_looping;
        EXPECT_EQ(c.choices,
                  label_looping || algorithm == TransducerGreedyAlgorithm::wind ? c.outer + c.inner : c.inner)
            << "row " << b << ": every pass of one row evaluates it";
        if (!spec.tdt && algorithm != TransducerGreedyAlgorithm::wind) {
          std::int64_t capped_frames = 0;
          const std::vector<std::int32_t>& stamps = h[0].timestamps;
          for (std::size_t k = 0; k < stamps.size(); ++k) {
            const bool run_starts = k == 0 || stamps[k - 1] != stamps[k];
            std::size_t run = 0;
            while (run_starts && k + run < stamps.size() && stamps[k + run] == stamps[k]) ++run;
            capped_frames += run_starts && run == static_cast<std::size_t>(config.max_symbols_per_frame) ? 1 : 0;
          }
          EXPECT_EQ(c.choices, length[0] + static_cast<std::int64_t>(stamps.size()) - capped_frames) << "row " << b;
        }
        if (length[0] == 0) {
          EXPECT_EQ(c.choices, 0) << "row " << b;
        }
      }
      // The batch together, on the case's device.
      TransducerGreedyDecoder decoder(c.model, config, BatchLimits{3, 5});
      const std::vector<Hypothesis> got = decoder.decode(enc.view, e.lens());
      const GreedyLoopCounts batch = decoder.loop_counts();
      if (!GetParam().cuda) {
        EXPECT_EQ(batch.choices, sum.choices);
        if (algorithm == TransducerGreedyAlgorithm::frame_looping) {
          EXPECT_EQ(batch.outer, most.outer);
          EXPECT_GE(batch.inner, most_inner);
        } else {
          EXPECT_GE(batch.outer, most.outer);
          cut_short += batch.outer > most.outer ? 1 : 0;
        }
        EXPECT_LE(batch.inner, sum.inner);
        EXPECT_EQ(batch.joint_passes,
                  algorithm == TransducerGreedyAlgorithm::frame_looping ? batch.inner : batch.outer + batch.inner);
        EXPECT_GE(batch.joint_passes * e.batch, batch.choices);
        waited += batch.joint_passes * e.batch - batch.choices;
        config.threads = static_cast<std::int32_t>(2 + rng() % 3);
        TransducerGreedyDecoder threaded(c.model, config);
        threaded.decode(enc.view, e.lens());
        const GreedyLoopCounts slices = threaded.loop_counts();
        EXPECT_EQ(slices.choices, batch.choices) << config.threads << " threads";
        if (algorithm == TransducerGreedyAlgorithm::frame_looping) {
          EXPECT_EQ(slices.outer, batch.outer) << config.threads << " threads";
          EXPECT_LE(slices.inner, batch.inner) << config.threads << " threads";
          EXPECT_GE(slices.inner, most_inner) << config.threads << " threads";
        } else {
          EXPECT_GE(slices.outer, most.outer) << config.threads << " threads";
          EXPECT_LE(slices.inner, sum.inner) << config.threads << " threads";
        }
      } else if (spec.dtype == DType::f32 && !spec.tdt) {
        // The same passes as the CPU on one thread, where both made the same choices (float32 RNN-T models; results
        // whose tokens differ near a tie would take other paths, and a TDT blank's duration, which could differ
        // unseen, changes the passes).
        TransducerGreedyDecoder on_cpu(c.cpu_model, config);
        const std::vector<Hypothesis> want = on_cpu.decode(e.enc(), e.lens());
        bool same = got.size() == want.size();
        for (std::size_t b = 0; same && b < got.size(); ++b) {
          same = got[b].tokens == want[b].tokens && got[b].timestamps == want[b].timestamps &&
                 got[b].durations == want[b].durations;
        }
        if (same) {
          const GreedyLoopCounts cpu = on_cpu.loop_counts();
          EXPECT_EQ(batch.outer, cpu.outer);
          EXPECT_EQ(batch.inner, cpu.inner);
          EXPECT_EQ(batch.choices, cpu.choices);
          EXPECT_EQ(batch.joint_passes, cpu.joint_passes);
          ++compared_with_cuda;
        }
      }
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  if (GetParam().cuda) {
    EXPECT_GT(compared_with_cuda, 0) << "no case compared the device's counts";
  } else {
    EXPECT_GT(waited, 0) << "no row ever waited for another: the batches are too easy";
    EXPECT_GT(cut_short, 0) << "no label-looping batch ever cut its stragglers short";
  }
  std::printf(
      "%lld row step slots waited; %lld label-looping runs cut stragglers short; %lld algorithm runs compared "
      "with the CPU's counts\n",
      static_cast<long long>(waited), static_cast<long long>(cut_short), static_cast<long long>(compared_with_cuda));
}

INSTANTIATE_TEST_SUITE_P(Executors, TransducerGreedy, ::testing::ValuesIn(all_cases()), case_name);

// The rule that lets a CUDA result differ from the oracle by more than the fixed tolerance (expect_same_hypotheses with
// a perturbed oracle) is checked on the CPU: an fp16 two-layer LSTM's oracle on a model perturbed at rounding level
// stands in for a GPU's rounding. Some such result lies outside the fixed tolerance and is accepted; the same result
// with one token score moved by 0.05 is refused.
TEST(TransducerOracleAgreement, AcceptsAmplifiedRoundingAndRefusesAWrongScore) {
  const testing::Agreement agreement = testing::cuda_agreement(DType::f16);
  const auto failures = [&](const std::vector<Hypothesis>& got, const std::vector<Hypothesis>& want,
                            const testing::PerturbedGreedyOracle& perturbed) {
    ::testing::TestPartResultArray results;
    {
      const ::testing::ScopedFakeTestPartResultReporter reporter(
          ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
      expect_same_hypotheses(got, want, agreement, "probe", false, perturbed);
    }
    return results.size();
  };
  int amplified = 0;
  for (std::uint64_t seed = 1; seed <= 200 && amplified == 0; ++seed) {  // seed 81 is one
    std::mt19937_64 rng(seed);
    testing::RandomTransducerSpec spec = random_spec(rng);
    spec.stateless = false;
    spec.quantised = false;
    spec.tdt = false;
    spec.layers = 2;
    spec.dtype = DType::f16;
    spec.vocab = 5;
    spec.blank = -1;  // V
    spec.hidden = 8;
    const testing::RandomTransducer random = make_random_transducer(spec, rng);
    const testing::RandomEncoded e = random_encoded(rng, spec, 8, 24);
    const auto oracle = [&e](const TransducerModel& m) { return transducer_greedy_reference(m, e.enc(), e.lens(), 4); };
    const auto want = oracle(random.build(Device::cpu()));
    const testing::PerturbedGreedyOracle perturbed = testing::perturbed_greedy_oracle(random, oracle);
    std::mt19937_64 noise(1000 + seed);  // not one of the perturbed oracle's draws
    std::vector<Hypothesis> got = oracle(random.build_perturbed(testing::kRoundingPerturbation, noise));
    if (failures(got, want, {}) == 0) continue;  // within the fixed tolerance: nothing to show here
    bool paths_equal = true;
    for (std::size_t b = 0; b < got.size(); ++b) paths_equal = paths_equal && got[b].tokens == want[b].tokens;
    if (!paths_equal) continue;  // a near tie of paths: another rule
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + spec.describe());
    EXPECT_EQ(failures(got, want, perturbed), 0u) << "amplified rounding was refused";
    for (auto& h : got) {
      if (!h.token_scores.empty()) {
        h.token_scores.front() += 0.05f;
        break;
      }
    }
    EXPECT_GT(failures(got, want, perturbed), 0u) << "a token score 0.05 off was accepted";
    ++amplified;
  }
  EXPECT_EQ(amplified, 1) << "no fp16 two-layer LSTM in 200 seeds amplified rounding beyond the fixed tolerance";
}

TEST(TransducerGreedyConfig, ParsesAndPrints) {
  EXPECT_EQ(parse_greedy_algorithm("label-looping"), TransducerGreedyAlgorithm::label_looping);
  EXPECT_EQ(parse_greedy_algorithm("frame_looping"), TransducerGreedyAlgorithm::frame_looping);
  EXPECT_EQ(parse_greedy_algorithm("wind"), TransducerGreedyAlgorithm::wind);
  ASRDEC_EXPECT_THROW_MSG(parse_greedy_algorithm("beam"), InvalidArgument,
                          "unknown greedy algorithm 'beam': expected frame-looping, label-looping or wind");
  EXPECT_EQ(TransducerGreedyConfig{}.to_string(),
            "TransducerGreedyConfig{algorithm=label-looping, window=8, max_symbols_per_frame=10, graph_mode=auto, "
            "check_values=true}");
}

}  // namespace
}  // namespace asrdec

#include "transducer/random_transducer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace asrdec::testing {
namespace {

float sample(std::mt19937_64& rng, bool quantised, float scale) {
  if (quantised) {
    return static_cast<float>(std::uniform_int_distribution<int>(-16, 16)(rng)) / 16.0f;
  }
  return std::normal_distribution<float>(0.0f, scale)(rng);
}

}  // namespace

std::string RandomTransducerSpec::describe() const {
  std::ostringstream out;
  out << (tdt ? "tdt" : "rnnt")
      << (stateless ? " stateless(C=" + std::to_string(context) + (layer_norm ? ",ln)" : ")")
                    : " lstm(L=" + std::to_string(layers) + ")")
      << (quantised ? " quantised" : "") << " V=" << vocab << " J=" << joint << " P=" << hidden << " blank=" << blank
      << " act=" << static_cast<int>(activation) << " dtype=" << dtype_name(dtype) << " bias=" << bias_mode;
  return out.str();
}

RandomTransducerSpec random_spec(std::mt19937_64& rng) {
  const auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  RandomTransducerSpec s;
  s.tdt = uniform(0, 1) == 1;
  s.stateless = uniform(0, 2) == 0;
  s.quantised = s.stateless && uniform(0, 1) == 1;
  s.vocab = uniform(2, 12);
  s.joint = uniform(2, 12);
  s.hidden = uniform(2, 10);
  s.layers = uniform(1, 2);
  s.context = uniform(1, 3);
  s.layer_norm = !s.quantised && uniform(0, 1) == 1;
  s.blank = uniform(0, 3) == 0 ? uniform(0, static_cast<int>(s.vocab)) : static_cast<std::int32_t>(s.vocab);
  if (uniform(0, 2) == 0) s.durations = {0, 1, 2};
  if (uniform(0, 3) == 0) s.durations = {1, 2, 4};
  // Quantised models stay exact only with relu (tanh and sigmoid round).
  s.activation = s.quantised ? JointActivation::relu : static_cast<JointActivation>(uniform(0, 2));
  s.dtype = s.quantised ? DType::f32 : static_cast<DType>(uniform(0, 2));
  const char* modes[] = {"none", "none", "token", "blank", "zero_duration"};
  s.bias_mode = modes[uniform(0, 4)];
  return s;
}

RandomTransducer make_random_transducer(const RandomTransducerSpec& spec, std::mt19937_64& rng) {
  RandomTransducer m;
  m.spec = spec;
  if (m.spec.blank < 0) m.spec.blank = static_cast<std::int32_t>(spec.vocab);
  const std::int64_t V = spec.vocab, J = spec.joint, P = spec.hidden;
  const std::int64_t D = spec.tdt ? static_cast<std::int64_t>(spec.durations.size()) : 0;
  const std::int64_t outputs = V + 1 + D;
  const auto tensor = [&](std::initializer_list<std::int64_t> shape, float scale) -> TensorView {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    std::vector<float> values(static_cast<std::size_t>(n));
    for (auto& v : values) v = sample(rng, spec.quantised, scale);
    m.storage.push_back(std::move(values));
    return TensorView(m.storage.back().data(), DType::f32, shape);
  };
  m.storage.reserve(64);  // views point into the storage vectors; no reallocation of the outer vector
  m.out_weight = tensor({outputs, J}, 1.0f);
  m.out_bias = tensor({outputs}, 0.5f);
  float* bias = m.storage.back().data();
  // "token" makes one token likely; "token_stays" makes it win every step, and (TDT) stay on its frame, whatever the
  // weights (a bias of 40 outweighs any logit of these models): max_symbols tokens on every frame.
  const int token = static_cast<int>((m.spec.blank + 1) % (V + 1));
  if (spec.bias_mode == "token") bias[token] += spec.quantised ? 4.0f : 6.0f;
  if (spec.bias_mode == "blank") bias[m.spec.blank] += spec.quantised ? 2.0f : 3.0f;
  if (spec.bias_mode == "zero_duration" && D > 0) bias[V + 1] += 6.0f;
  if (spec.bias_mode == "token_stays") {
    if (D > 0 && spec.durations.front() != 0) {
      throw std::invalid_argument("bias mode token_stays needs TDT durations that start with 0");
    }
    bias[token] += 40.0f;
    if (D > 0) bias[V + 1] += 40.0f;
  }
  if (spec.stateless) {
    std::int64_t width = 0;
    for (std::int64_t i = 0; i < spec.context; ++i) {
      const std::int64_t w = i == 0 ? P : std::max<std::int64_t>(1, P / 2);
      m.stateless.embeddings.push_back(tensor({V + 1, w}, 1.0f));
      width += w;
    }
    m.stateless.layer_norm = spec.layer_norm;
    m.stateless.projection_weight = tensor({J, width}, spec.quantised ? 1.0f : 0.7f);
    m.stateless.projection_bias = tensor({J}, 0.3f);
  } else {
    m.lstm.embedding = tensor({V + 1, P}, 1.0f);
    for (std::int64_t l = 0; l < spec.layers; ++l) {
      m.lstm.weight_ih.push_back(tensor({4 * P, P}, 0.8f));
      m.lstm.weight_hh.push_back(tensor({4 * P, P}, 0.8f));
      m.lstm.bias_ih.push_back(tensor({4 * P}, 0.3f));
      m.lstm.bias_hh.push_back(tensor({4 * P}, 0.3f));
    }
    m.lstm.projection_weight = tensor({J, P}, 1.5f);
    m.lstm.projection_bias = tensor({J}, 0.3f);
  }
  return m;
}

void move_blank(RandomTransducer& m, std::int32_t blank) {
  const std::int64_t V = m.spec.vocab;
  if (m.spec.blank != V || blank < 0 || blank > V) throw std::invalid_argument("move_blank needs a blank-last model");
  // Rows blank..V of a [rows, width] table rotate right by one: row V (the blank) first.
  const auto rotate_rows = [&](const TensorView& table) {
    const std::int64_t width = table.ndim() == 1 ? 1 : table.size(1);
    auto* rows = static_cast<float*>(const_cast<void*>(table.data()));
    std::rotate(rows + blank * width, rows + V * width, rows + (V + 1) * width);
  };
  rotate_rows(m.out_weight);
  rotate_rows(m.out_bias);
  if (m.spec.stateless) {
    for (const TensorView& embedding : m.stateless.embeddings) rotate_rows(embedding);
  } else {
    rotate_rows(m.lstm.embedding);
  }
  m.spec.blank = blank;
}

TransducerModel RandomTransducer::build(Device device) const {
  auto joint = std::make_shared<const TransducerJoint>(out_weight, out_bias, spec.activation, spec.dtype, device);
  std::shared_ptr<TransducerPredictor> predictor =
      spec.stateless ? make_stateless_predictor(stateless, spec.blank, spec.dtype, device)
                     : make_lstm_predictor(lstm, spec.blank, spec.dtype, device);
  return TransducerModel(joint, predictor, spec.vocab, spec.blank,
                         spec.tdt ? spec.durations : std::vector<std::int32_t>{});
}

TransducerModel RandomTransducer::build_perturbed(double relative, std::mt19937_64& noise) const {
  // The views point into `storage`, and a model copies its weights when it is built: perturb them in place for the
  // build, then put them back.
  auto& values = const_cast<std::vector<std::vector<float>>&>(storage);
  const std::vector<std::vector<float>> kept = values;
  std::normal_distribution<double> normal;
  for (auto& tensor : values) {
    for (float& v : tensor) v = static_cast<float>(v * (1.0 + relative * normal(noise)));
  }
  TransducerModel model = build(Device::cpu());
  values = kept;
  return model;
}

RandomEncoded random_encoded(std::mt19937_64& rng, const RandomTransducerSpec& spec, std::int64_t max_batch,
                             std::int64_t max_frames) {
  const auto uniform = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  RandomEncoded e;
  e.batch = uniform(1, max_batch);
  e.frames = uniform(0, max_frames);
  e.hidden = spec.joint;
  e.values.resize(static_cast<std::size_t>(e.batch * e.frames * e.hidden));
  for (auto& v : e.values) v = sample(rng, spec.quantised, 1.0f);
  for (std::int64_t b = 0; b < e.batch; ++b) {
    const std::int64_t pick = uniform(0, 7);
    e.lengths.push_back(static_cast<std::int32_t>(pick == 0   ? 0
                                                  : pick == 1 ? std::min<std::int64_t>(1, e.frames)
                                                  : pick == 2 ? e.frames
                                                              : uniform(0, e.frames)));
  }
  return e;
}

Agreement cuda_agreement(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return {4.0 * std::ldexp(1.0, -11), true, 4.0 * std::ldexp(1.0, -11)};
    case DType::bf16:
      return {4.0 * std::ldexp(1.0, -8), true, 4.0 * std::ldexp(1.0, -8)};
    default:
      return {1e-4, true};
  }
}

PerturbedGreedyOracle perturbed_greedy_oracle(const RandomTransducer& random,
                                              std::function<std::vector<Hypothesis>(const TransducerModel&)> oracle) {
  return [&random, oracle = std::move(oracle)](int trial) {
    std::mt19937_64 noise(static_cast<std::uint64_t>(trial) + 1);
    return oracle(random.build_perturbed(kRoundingPerturbation, noise));
  };
}

namespace {

// The score tolerances of expect_same_hypotheses, in one place for the check and the assertions.
struct ScoreTolerances {
  double relative;
  double token_absolute;
  double score;  // score and ranking_score

  ScoreTolerances(const Hypothesis& want, const Agreement& agreement)
      : relative(agreement.relative), token_absolute(agreement.token_absolute) {
    // score = am + lm + boost, each a float sum over the path in the executor's order: rounding grows with the
    // parts' magnitudes (boosts of either sign cancel in the total), not with the total.
    const double parts = std::fabs(want.am_score) + std::fabs(want.lm_score) + std::fabs(want.boost_score);
    score = std::max({1e-4, relative * std::fabs(want.score), 4e-6 * parts});
  }
  double token(double want) const { return std::max(token_absolute, relative * std::fabs(want)); }
  double confidence() const { return std::max(1e-5, relative); }
  double part(double want) const { return std::max(1e-4, relative * std::fabs(want)); }  // lm_score, boost_score
};

bool same_path(const Hypothesis& a, const Hypothesis& b) {
  return a.tokens == b.tokens && a.timestamps == b.timestamps && a.durations == b.durations;
}

// What the assertions of expect_same_hypotheses check for one hypothesis, without failing.
bool agrees(const Hypothesis& got, const Hypothesis& want, const Agreement& agreement) {
  if (!same_path(got, want) || got.token_scores.size() != want.token_scores.size() ||
      got.token_confidences.size() != want.token_confidences.size()) {
    return false;
  }
  const ScoreTolerances tol(want, agreement);
  const auto near = [](double a, double b, double t) { return std::fabs(a - b) <= t; };
  for (std::size_t i = 0; i < got.token_scores.size(); ++i) {
    if (!near(got.token_scores[i], want.token_scores[i], tol.token(want.token_scores[i])) ||
        !near(got.token_confidences[i], want.token_confidences[i], tol.confidence())) {
      return false;
    }
  }
  return near(got.score, want.score, tol.score) && near(got.ranking_score, want.ranking_score, tol.score) &&
         near(got.lm_score, want.lm_score, tol.part(want.lm_score)) &&
         near(got.boost_score, want.boost_score, tol.part(want.boost_score));
}

}  // namespace

void expect_same_hypotheses(const std::vector<Hypothesis>& got, const std::vector<Hypothesis>& want,
                            const Agreement& agreement, const std::string& what, bool nbest,
                            const PerturbedGreedyOracle& perturbed) {
  const double tolerance = agreement.relative;
  const auto close = [&](double a, double b, double floor) {
    return std::fabs(a - b) <= std::max(floor, tolerance * std::fabs(b));
  };
  ASSERT_EQ(got.size(), want.size()) << what;
  std::vector<std::vector<Hypothesis>> trials;  // perturbed draws, made when first needed
  for (std::size_t b = 0; b < got.size(); ++b) {
    SCOPED_TRACE(what + ", utterance " + std::to_string(b));
    if (!same_path(got[b], want[b]) && agreement.near_ties_may_swap && close(got[b].score, want[b].score, 1e-4)) {
      std::printf("%s, utterance %zu: a near tie swapped (scores %.6f and %.6f)%s\n", what.c_str(), b,
                  static_cast<double>(got[b].score), static_cast<double>(want[b].score),
                  nbest ? "; the rest of this N-best list follows from which tied hypothesis survived pruning, and "
                          "is not compared"
                        : "");
      if (nbest) return;
      continue;
    }
    const Hypothesis* reference = &want[b];
    if (perturbed && !agrees(got[b], want[b], agreement)) {
      for (int t = 0; t < 16; ++t) {
        if (static_cast<std::size_t>(t) == trials.size()) trials.push_back(perturbed(t));
        ASSERT_EQ(trials.back().size(), want.size()) << what << ": the perturbed oracle's batch";
        if (agrees(got[b], trials[static_cast<std::size_t>(t)][b], agreement)) {
          reference = &trials[static_cast<std::size_t>(t)][b];
          std::printf(
              "%s, utterance %zu: outside the tolerance of the oracle, within it of the oracle on a model perturbed "
              "at rounding level (draw %d): the model amplifies rounding\n",
              what.c_str(), b, t);
          break;
        }
      }
    }
    const Hypothesis& expected = *reference;
    const ScoreTolerances tol(expected, agreement);
    ASSERT_EQ(got[b].tokens, expected.tokens) << "scores " << got[b].score << " and " << expected.score;
    ASSERT_EQ(got[b].timestamps, expected.timestamps);
    ASSERT_EQ(got[b].durations, expected.durations);
    ASSERT_EQ(got[b].token_scores.size(), expected.token_scores.size());
    ASSERT_EQ(got[b].token_confidences.size(), expected.token_confidences.size());
    for (std::size_t i = 0; i < got[b].token_scores.size(); ++i) {
      ASSERT_NEAR(got[b].token_scores[i], expected.token_scores[i], tol.token(expected.token_scores[i]));
      ASSERT_NEAR(got[b].token_confidences[i], expected.token_confidences[i], tol.confidence());
    }
    ASSERT_NEAR(got[b].score, expected.score, tol.score);
    ASSERT_NEAR(got[b].ranking_score, expected.ranking_score, tol.score);  // |ranking| <= |score|
    ASSERT_NEAR(got[b].lm_score, expected.lm_score, tol.part(expected.lm_score));
    ASSERT_NEAR(got[b].boost_score, expected.boost_score, tol.part(expected.boost_score));
  }
}

}  // namespace asrdec::testing

// Algorithm 1 of the label-looping paper, one utterance at a time: the oracle. It shares only the primitives
// (the joint's output logits, the predictor step) with the decoders, not their argmax, log-softmax, control flow
// or step functions.

#include "oracles/transducer_greedy_reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "asrdec/core/error.hpp"
#include "lm/fusion_checks.hpp"
#include "lm/fusion_step.hpp"
#include "transducer/greedy/greedy_backend.hpp"

namespace asrdec {

namespace {

// NeMo's confidence measures (asrdec/hyps/confidence.hpp's table), in double precision, straight from the step's C
// token logits: p_i, then the sums over them.
double measured_confidence(const ConfidenceMethod& method, const std::vector<float>& logits, std::int64_t columns,
                           std::int32_t label) {
  double top = -std::numeric_limits<double>::infinity();
  for (std::int64_t i = 0; i < columns; ++i) top = std::max(top, static_cast<double>(logits[i]));
  double sum = 0.0;
  for (std::int64_t i = 0; i < columns; ++i) sum += std::exp(static_cast<double>(logits[i]) - top);
  const double log_sum = top + std::log(sum);
  const auto x = [&](std::int64_t i) { return static_cast<double>(logits[i]) - log_sum; };  // log p_i
  if (method.measure == ConfidenceMeasure::probability) return std::exp(x(label));
  const double c = static_cast<double>(columns), a = method.alpha;
  if (method.measure == ConfidenceMeasure::max_prob) {
    const double p_max = std::exp(top - log_sum);
    return a == 1.0 ? (c * p_max - 1.0) / (c - 1.0) : (std::pow(c * p_max, a) - 1.0) / (std::pow(c, a) - 1.0);
  }
  double s_alpha = 0.0, g_alpha = 0.0;  // Σ p^α, Σ p^α log p
  for (std::int64_t i = 0; i < columns; ++i) {
    s_alpha += std::exp(a * x(i));
    g_alpha += std::exp(a * x(i)) * x(i);
  }
  const bool lin = method.norm == EntropyNorm::lin;
  if (a == 1.0) return lin ? 1.0 + g_alpha / std::log(c) : (c * std::exp(g_alpha) - 1.0) / (c - 1.0);
  const double c_1a = std::pow(c, 1.0 - a);
  switch (method.measure) {
    case ConfidenceMeasure::gibbs: {
      if (lin) return 1.0 + g_alpha / (std::log(c) * c_1a);
      const double floor = std::pow(c, -a * c_1a);
      return (std::exp(a * g_alpha) - floor) / (1.0 - floor);
    }
    case ConfidenceMeasure::tsallis: {
      if (lin) return 1.0 + (1.0 - s_alpha) / (c_1a - 1.0);
      const double floor = std::exp((1.0 - c_1a) / (1.0 - a));
      return (std::exp((1.0 - s_alpha) / (1.0 - a)) - floor) / (1.0 - floor);
    }
    default:  // renyi
      if (lin) return 1.0 + std::log2(s_alpha) / ((a - 1.0) * std::log2(c));
      return (std::pow(s_alpha, 1.0 / (a - 1.0)) * c - 1.0) / (c - 1.0);
  }
}

std::vector<Hypothesis> reference(const TransducerModel& model, const TensorView& enc_proj, const TensorView& lengths,
                                  std::int32_t max_symbols, const NgramLm* lm, float lm_weight,
                                  const BoostingTree* boost, float boost_weight,
                                  const ConfidenceMethod& confidence = {}) {
  ASRDEC_CHECK_ARG(model.device().is_cpu(), "the reference decoder needs a CPU model, got one on ",
                   model.device().to_string());
  ASRDEC_CHECK_ARG(max_symbols >= 1, "max_symbols_per_frame must be at least 1, got ", max_symbols);
  const detail::TransducerInput p = detail::make_transducer_input(model, enc_proj, lengths, nullptr);
  const bool tdt = model.type() == TransducerType::tdt;
  const std::int32_t blank = model.blank_id();
  detail::JointCpu joint(model.joint().impl(), model.vocab_size() + 1, model.durations(), model.blank_id());
  std::unique_ptr<PredictorSession> session = model.predictor().start_session(1);
  std::vector<float> state(static_cast<std::size_t>(model.predictor().state_size()));
  std::vector<float> dec(static_cast<std::size_t>(model.joint_hidden()));
  const std::int32_t one = 1;
  const std::int64_t columns = model.vocab_size() + 1;
  const auto num_durations = static_cast<std::int64_t>(model.durations().size());
  std::vector<float> logits(static_cast<std::size_t>(columns + num_durations));
  // log-softmax of entry `at` of [begin, end), in double precision.
  const auto log_softmax = [&](std::int64_t begin, std::int64_t end, std::int64_t at) {
    double top = -std::numeric_limits<double>::infinity();
    for (std::int64_t i = begin; i < end; ++i) top = std::max(top, static_cast<double>(logits[i]));
    double sum = 0.0;
    for (std::int64_t i = begin; i < end; ++i) sum += std::exp(static_cast<double>(logits[i]) - top);
    return static_cast<double>(logits[static_cast<std::size_t>(at)]) - top - std::log(sum);
  };
  // The first maximum of [begin, end) of `values`.
  const auto first_max = [](const std::vector<float>& values, std::int64_t begin, std::int64_t end) {
    std::int64_t best = begin;
    for (std::int64_t i = begin + 1; i < end; ++i) {
      if (values[static_cast<std::size_t>(i)] > values[static_cast<std::size_t>(best)]) best = i;
    }
    return best;
  };

  std::vector<Hypothesis> out(static_cast<std::size_t>(p.batch));
  for (std::int64_t b = 0; b < p.batch; ++b) {
    Hypothesis& hyp = out[static_cast<std::size_t>(b)];
    // Start symbol: the blank, from the initial state.
    session->initial_state(state.data(), 1, nullptr);
    session->step(&blank, &one, state.data(), dec.data(), 1, nullptr);
    const std::int32_t length = p.lengths[static_cast<std::size_t>(b)];
    std::int32_t t = 0;
    std::int32_t on_frame = 0;  // labels emitted on frame t so far
    std::int32_t lm_state = NgramLm::bos_state();
    std::int32_t boost_state = boost != nullptr ? boost->root_for(b, p.batch) : 0;
    double path_logprob = 0.0;
    // α·LM + β·boost of token v from the current states, each model asked one token at a time.
    const auto bonus = [&](std::int32_t v) {
      const float lm_part = lm != nullptr ? detail::weighted(lm_weight, lm->score(lm_state, v).first) : 0.0f;
      const float boost_part =
          boost != nullptr ? detail::weighted(boost_weight, boost->score(boost_state, v).first) : 0.0f;
      return lm_part + boost_part;
    };
    while (t < length) {
      const detail::JointRow row{b, t};
      const float* dec_row = dec.data();
      joint.logits_rows(p.enc, &row, &dec_row, 1, true, logits.data());
      auto label = static_cast<std::int32_t>(first_max(logits, 0, columns));
      if ((lm != nullptr || boost != nullptr) && label != blank) {
        // Fusion: the best non-blank token by logit + α·LM + β·boost.
        std::vector<float> fused(static_cast<std::size_t>(model.vocab_size()));
        for (std::int32_t v = 0; v < model.vocab_size(); ++v) fused[static_cast<std::size_t>(v)] = logits[v] + bonus(v);
        label = static_cast<std::int32_t>(first_max(fused, 0, model.vocab_size()));
        if (lm != nullptr) {
          const auto [lm_score, next] = lm->score(lm_state, label);
          hyp.lm_score += detail::weighted(lm_weight, lm_score);
          lm_state = next;
        }
        if (boost != nullptr) {
          const auto [boost_score, next] = boost->score(boost_state, label);
          hyp.boost_score += detail::weighted(boost_weight, boost_score);
          boost_state = next;
        }
      }
      const double token_logprob = log_softmax(0, columns, label);
      std::int32_t duration = 0;
      path_logprob += token_logprob;
      if (tdt) {
        const std::int64_t d = first_max(logits, columns, columns + num_durations);
        duration = model.durations()[static_cast<std::size_t>(d - columns)];
        path_logprob += log_softmax(columns, columns + num_durations, d);
      }
      std::int32_t step;
      if (label == blank) {
        step = tdt ? std::max(duration, 1) : 1;
      } else {
        hyp.tokens.push_back(label);
        hyp.timestamps.push_back(t);
        if (tdt) hyp.durations.push_back(duration);
        hyp.token_scores.push_back(static_cast<float>(token_logprob));
        hyp.token_confidences.push_back(static_cast<float>(measured_confidence(confidence, logits, columns, label)));
        session->step(&label, &one, state.data(), dec.data(), 1, nullptr);
        step = tdt ? duration : 0;
        if (step == 0 && ++on_frame >= max_symbols) {
          step = 1;  // max_symbols labels on this frame: move on without another joint evaluation (unscored)
        }
      }
      if (step > 0) {
        on_frame = 0;
      }
      t += step;
    }
    hyp.am_score = static_cast<float>(path_logprob);
    hyp.score = hyp.am_score + hyp.lm_score + hyp.boost_score;
    hyp.ranking_score = hyp.score;
  }
  return out;
}

}  // namespace

std::vector<Hypothesis> transducer_greedy_reference(const TransducerModel& model, const TensorView& enc_proj,
                                                    const TensorView& lengths, std::int32_t max_symbols) {
  return reference(model, enc_proj, lengths, max_symbols, nullptr, 0.0f, nullptr, 0.0f);
}

std::vector<Hypothesis> transducer_greedy_reference(const TransducerModel& model, const TensorView& enc_proj,
                                                    const TensorView& lengths, const TransducerGreedyConfig& config) {
  config.validate();
  if (config.lm != nullptr) {
    ASRDEC_CHECK_ARG(config.lm->device().is_cpu(), "the reference decoder needs a CPU LM, got one on ",
                     config.lm->device().to_string());
  }
  if (config.boost != nullptr) {
    ASRDEC_CHECK_ARG(config.boost->device().is_cpu(), "the reference decoder needs a CPU boosting tree, got one on ",
                     config.boost->device().to_string());
  }
  detail::check_fusion_vocab(config.lm.get(), config.boost.get(), model.vocab_size(),
                             detail::concat("the model ", model.vocab_size()));
  return reference(model, enc_proj, lengths, config.max_symbols_per_frame, config.lm.get(), config.lm_weight,
                   config.boost.get(), config.boost_weight, config.confidence);
}

}  // namespace asrdec

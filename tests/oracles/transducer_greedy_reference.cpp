// Algorithm 1 of the label-looping paper, one utterance at a time: the oracle. It shares only the primitives
// (joint evaluation, predictor step) with the decoders, not their control flow or step functions.

#include "oracles/transducer_greedy_reference.hpp"

#include "asrdec/core/error.hpp"
#include "lm/fusion_checks.hpp"
#include "lm/fusion_step.hpp"
#include "transducer/greedy/greedy_backend.hpp"

namespace asrdec {

namespace {

std::vector<Hypothesis> reference(const TransducerModel& model, const TensorView& enc_proj, const TensorView& lengths,
                                  std::int32_t max_symbols, const NgramLm* lm, float lm_weight,
                                  const BoostingTree* boost, float boost_weight) {
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
  std::vector<float> logits(static_cast<std::size_t>(model.vocab_size() + 1));

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
    // α·LM + β·boost of token v from the current states, each model asked one token at a time.
    const auto bonus = [&](std::int32_t v) {
      const float lm_part = lm != nullptr ? detail::weighted(lm_weight, lm->score(lm_state, v).first) : 0.0f;
      const float boost_part =
          boost != nullptr ? detail::weighted(boost_weight, boost->score(boost_state, v).first) : 0.0f;
      return lm_part + boost_part;
    };
    while (t < length) {
      detail::JointChoice c = joint.evaluate(p.enc, b, t, dec.data(), true);
      if ((lm != nullptr || boost != nullptr) && c.label != blank) {
        // Fusion: the best non-blank token by logit + α·LM + β·boost.
        joint.token_logits(p.enc, b, t, dec.data(), logits.data());
        detail::ArgMax best = detail::argmax_identity();
        detail::LogSumExp lse = detail::lse_identity();
        for (std::int32_t v = 0; v <= model.vocab_size(); ++v) {
          const float logit = logits[static_cast<std::size_t>(v)];
          lse = detail::lse_add(lse, logit);
          if (v < model.vocab_size()) {
            detail::argmax_update(best, logit + bonus(v), v);
          }
        }
        c.label = best.index;
        c.score = logits[static_cast<std::size_t>(best.index)];
        c.confidence = detail::lse_max_probability(lse, c.score);
        if (lm != nullptr) {
          const auto [lm_score, next] = lm->score(lm_state, c.label);
          hyp.lm_score += detail::weighted(lm_weight, lm_score);
          lm_state = next;
        }
        if (boost != nullptr) {
          const auto [boost_score, next] = boost->score(boost_state, c.label);
          hyp.boost_score += detail::weighted(boost_weight, boost_score);
          boost_state = next;
        }
      }
      std::int32_t step;
      if (c.label == blank) {
        step = tdt ? std::max(c.duration, 1) : 1;
      } else {
        hyp.tokens.push_back(c.label);
        hyp.timestamps.push_back(t);
        if (tdt) hyp.durations.push_back(c.duration);
        hyp.token_scores.push_back(c.score);
        hyp.token_confidences.push_back(c.confidence);
        hyp.score += c.score;
        session->step(&c.label, &one, state.data(), dec.data(), 1, nullptr);
        step = tdt ? c.duration : 0;
        if (step == 0 && ++on_frame >= max_symbols) {
          step = 1;  // max_symbols labels on this frame: move on without another joint evaluation
        }
      }
      if (step > 0) {
        on_frame = 0;
      }
      t += step;
    }
    hyp.am_score = hyp.score;
    hyp.score = hyp.am_score + hyp.lm_score + hyp.boost_score;
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
                   config.boost.get(), config.boost_weight);
}

}  // namespace asrdec

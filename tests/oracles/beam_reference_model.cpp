#include "oracles/beam_reference_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "hyps/beam_search_step.hpp"

namespace asrdec::detail {

ReferenceBeamModel::ReferenceBeamModel(const TransducerModel& model, const TransducerBeamConfig& config,
                                       float blank_clamp)
    : model_(model),
      config_(config),
      blank_clamp_(blank_clamp),
      joint_(model.joint().impl(), model.vocab_size() + 1, model.durations(), model.blank_id()),
      session_(model.predictor().start_session(1)) {}

RefHyp ReferenceBeamModel::start(std::int64_t b, std::int64_t batch) {
  RefHyp h;
  h.state.resize(static_cast<std::size_t>(model_.predictor().state_size()));
  h.dec.resize(static_cast<std::size_t>(model_.joint_hidden()));
  session_->initial_state(h.state.data(), 1, nullptr);
  const std::int32_t one = 1;
  const std::int32_t blank = model_.blank_id();
  session_->step(&blank, &one, h.state.data(), h.dec.data(), 1, nullptr);
  h.lm_state = NgramLm::bos_state();
  h.boost_state = config_.boost != nullptr ? config_.boost->root_for(b, batch) : 0;
  return h;
}

std::pair<std::vector<float>, std::vector<float>> ReferenceBeamModel::log_probs(const TransducerInput& p,
                                                                                std::int64_t b, std::int32_t t,
                                                                                const RefHyp& h) {
  const std::int64_t V1 = model_.vocab_size() + 1;
  std::vector<float> logits(static_cast<std::size_t>(model_.joint().output_size()));
  const JointRow row{b, t};
  const float* dec = h.dec.data();
  joint_.logits_rows(p.enc, &row, &dec, 1, config_.check_values, logits.data());
  // The decoders' log-softmax, so that exact ties (common in small random models) stay ties.
  std::vector<float> labels(logits.begin(), logits.begin() + V1);
  std::vector<float> durations(logits.begin() + V1, logits.end());
  log_softmax_in_place(labels.data(), static_cast<std::int32_t>(labels.size()));
  log_softmax_in_place(durations.data(), static_cast<std::int32_t>(durations.size()));
  return {std::move(labels), std::move(durations)};
}

float ReferenceBeamModel::lambda() const {
  return (config_.lm != nullptr ? config_.lm_weight : 0.0f) + (config_.boost != nullptr ? config_.boost_weight : 0.0f);
}

float ReferenceBeamModel::label_score(const RefHyp& h, const std::vector<float>& logp, std::int32_t v) const {
  const std::int32_t blank = model_.blank_id();
  const bool full = config_.blank_scoring == BlankLmScoring::lm_weighted_full;
  if (!fused()) return logp[static_cast<std::size_t>(v)];
  const float lp_blank = logp[static_cast<std::size_t>(blank)];
  if (v == blank) return full ? (1.0f + lambda()) * lp_blank : lp_blank;
  const float offset = full ? lambda() * std::log(1.0f - std::min(std::exp(lp_blank), 1.0f - blank_clamp_)) : 0.0f;
  const float lm = config_.lm != nullptr ? config_.lm_weight * config_.lm->score(h.lm_state, v).first : 0.0f;
  const float boost =
      config_.boost != nullptr ? config_.boost_weight * config_.boost->score(h.boost_state, v).first : 0.0f;
  return logp[static_cast<std::size_t>(v)] + offset + (lm + boost);
}

void ReferenceBeamModel::emit(RefHyp& h, std::int32_t v) {
  if (config_.lm != nullptr) {
    const auto [score, next] = config_.lm->score(h.lm_state, v);
    h.lm_total += config_.lm_weight * score;
    h.lm_state = next;
  }
  if (config_.boost != nullptr) {
    const auto [score, next] = config_.boost->score(h.boost_state, v);
    h.boost_total += config_.boost_weight * score;
    h.boost_state = next;
  }
  const std::int32_t one = 1;
  session_->step(&v, &one, h.state.data(), h.dec.data(), 1, nullptr);
}

std::vector<float> ReferenceBeamModel::token_logprobs(const TransducerInput& p, std::int64_t b,
                                                      const std::vector<std::int32_t>& tokens,
                                                      const std::vector<std::int32_t>& timestamps) {
  // Replays the path: the predictor after tokens[0..i), the joint on the frame token i was emitted on.
  RefHyp h = start(b, p.batch);
  std::vector<float> out;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    out.push_back(log_probs(p, b, timestamps[i], h).first[static_cast<std::size_t>(tokens[i])]);
    emit(h, tokens[i]);
  }
  return out;
}

std::vector<Hypothesis> ReferenceBeamModel::ranked(std::vector<RefHyp> beam, const TransducerInput& p, std::int64_t b) {
  const auto key = [&](const RefHyp& h) {
    return config_.length_normalized ? h.score / static_cast<float>(h.tokens.size() + 1) : h.score;
  };
  std::stable_sort(beam.begin(), beam.end(), [&](const RefHyp& x, const RefHyp& y) { return key(x) > key(y); });
  std::vector<Hypothesis> out;
  for (const RefHyp& h : beam) {
    // unique_transcripts: a later (worse-ranked) hypothesis with the transcript of one already listed is left out.
    const auto same = [&](const Hypothesis& listed) { return listed.tokens == h.tokens; };
    if (config_.unique_transcripts && std::any_of(out.begin(), out.end(), same)) continue;
    Hypothesis hyp;
    hyp.tokens = h.tokens;
    hyp.timestamps = h.timestamps;
    hyp.durations = h.durations;
    hyp.token_scores = token_logprobs(p, b, h.tokens, h.timestamps);
    for (const float logp : hyp.token_scores) hyp.token_confidences.push_back(std::exp(logp));
    hyp.score = h.score;
    hyp.ranking_score = key(h);
    hyp.lm_score = h.lm_total;
    hyp.boost_score = h.boost_total;
    hyp.am_score = h.score - h.lm_total - h.boost_total;
    out.push_back(std::move(hyp));
  }
  return out;
}

float reference_log_add(float a, float b) {
  const float hi = std::max(a, b);
  if (hi == -std::numeric_limits<float>::infinity()) return hi;
  return hi + std::log(1.0f + std::exp(std::min(a, b) - hi));
}

}  // namespace asrdec::detail

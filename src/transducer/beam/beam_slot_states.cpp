#include "transducer/beam/beam_slot_states.hpp"

#include <algorithm>

#include "asrdec/core/error.hpp"
#include "hyps/ranked_beams.hpp"
#include "lm/ngram_lm_impl.hpp"

namespace asrdec::detail {

BeamSlotStates::BeamSlotStates(const TransducerModel& model, const TransducerBeamConfig& config)
    : model_(model),
      config_(config),
      blank_(model.blank_id()),
      state_size_(model.predictor().state_size()),
      hidden_(model.joint_hidden()),
      vocab_(model.vocab_size()) {}

void BeamSlotStates::reserve(std::int64_t slots) {
  if (slots <= max_slots_) return;
  max_slots_ = slots;
  session_ = model_.predictor().start_session(slots);
  const auto n = static_cast<std::size_t>(slots);
  const auto S = static_cast<std::size_t>(state_size_);
  const auto J = static_cast<std::size_t>(hidden_);
  const auto V = static_cast<std::size_t>(vocab_);
  for (auto* buffer : {&state_, &next_state_}) *buffer = HostBuffer<float>(n * S);
  for (auto* buffer : {&dec_, &next_dec_}) *buffer = HostBuffer<float>(n * J);
  for (auto* buffer : {&lm_state_, &next_lm_state_, &boost_state_, &next_boost_state_, &mask_, &step_label_}) {
    *buffer = HostBuffer<std::int32_t>(n);
  }
  for (auto* buffer : {&lm_total_, &next_lm_total_, &boost_total_, &next_boost_total_}) *buffer = HostBuffer<float>(n);
  fusion_ = FusionRef{};
  fusion_.vocab = static_cast<std::int32_t>(vocab_);
  fusion_.blank = blank_;
  if (config_.lm != nullptr) {
    lm_scores_ = HostBuffer<float>(n * V);
    lm_next_ = HostBuffer<std::int32_t>(n * V);
    fusion_.lm = FusionSource{lm_scores_.data(), lm_next_.data(), nullptr, nullptr, config_.lm_weight};
  }
  if (config_.boost != nullptr) {
    boost_scores_ = HostBuffer<float>(n * V);
    boost_next_ = HostBuffer<std::int32_t>(n * V);
    fusion_.boost = FusionSource{boost_scores_.data(), boost_next_.data(), nullptr, nullptr, config_.boost_weight};
  }
}

void BeamSlotStates::start(std::int64_t batch, std::int32_t beam, const std::vector<std::int32_t>& boost_roots) {
  const std::int64_t slots = batch * beam;
  reserve(slots);
  std::fill(mask_.data(), mask_.data() + slots, 1);
  std::fill(step_label_.data(), step_label_.data() + slots, blank_);
  session_->initial_state(state_.data(), slots, nullptr);
  session_->step(step_label_.data(), mask_.data(), state_.data(), dec_.data(), slots, nullptr);
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int32_t k = 0; k < beam; ++k) {
      const std::int64_t s = b * beam + k;
      lm_state_[s] = NgramLm::bos_state();
      boost_state_[s] = boost_roots[static_cast<std::size_t>(b)];
      lm_total_[s] = 0.0f;
      boost_total_[s] = 0.0f;
    }
  }
}

BeamSlotArrays BeamSlotStates::arrays() {
  return BeamSlotArrays{state_.data(), dec_.data(), state_size_, hidden_,
                        BeamFusedSlots{config_.lm != nullptr ? lm_state_.data() : nullptr, lm_total_.data(),
                                       config_.boost != nullptr ? boost_state_.data() : nullptr, boost_total_.data()}};
}

void BeamSlotStates::query(std::int64_t s) {
  if (config_.lm != nullptr)
    advance_row(config_.lm->ref(), lm_state_[s], lm_scores_.data() + s * vocab_, lm_next_.data() + s * vocab_);
  if (config_.boost != nullptr) {
    advance_row(config_.boost->ref(), boost_state_[s], boost_scores_.data() + s * vocab_,
                boost_next_.data() + s * vocab_);
  }
}

void BeamSlotStates::take(std::int64_t s, std::int64_t from, std::int32_t label) {
  const bool token = label >= 0 && label != blank_;
  std::copy_n(state_.data() + from * state_size_, state_size_, next_state_.data() + s * state_size_);
  std::copy_n(dec_.data() + from * hidden_, hidden_, next_dec_.data() + s * hidden_);
  mask_[s] = token ? 1 : 0;
  step_label_[s] = token ? label : blank_;
  FusionSource lm = fusion_.lm, boost = fusion_.boost;
  lm.state = lm_state_.data();
  lm.total = lm_total_.data();
  boost.state = boost_state_.data();
  boost.total = boost_total_.data();
  fusion_take(fusion_, lm, next_lm_state_.data(), next_lm_total_.data(), s, from, token ? label : -1);
  fusion_take(fusion_, boost, next_boost_state_.data(), next_boost_total_.data(), s, from, token ? label : -1);
}

void BeamSlotStates::advance(std::int64_t slots) {
  std::swap(state_, next_state_);
  std::swap(dec_, next_dec_);
  std::swap(lm_state_, next_lm_state_);
  std::swap(boost_state_, next_boost_state_);
  std::swap(lm_total_, next_lm_total_);
  std::swap(boost_total_, next_boost_total_);
  session_->step(step_label_.data(), mask_.data(), state_.data(), dec_.data(), slots, nullptr);
}

std::vector<std::vector<Hypothesis>> BeamSlotStates::ranked_beams(const BeamHypsRef& h, std::int64_t batch) const {
  return ranked_beams_of(h, batch, config_.length_normalized, config_.lm != nullptr ? lm_total_.data() : nullptr,
                         config_.boost != nullptr ? boost_total_.data() : nullptr);
}

}  // namespace asrdec::detail

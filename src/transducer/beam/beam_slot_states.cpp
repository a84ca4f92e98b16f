#include "transducer/beam/beam_slot_states.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <utility>

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
  // Everything of the new size is allocated before anything is replaced, so a reservation that throws leaves the
  // slots as they were: max_slots_ is still that of their buffers, and the fused queries still have theirs.
  const auto n = static_cast<std::size_t>(slots);
  const auto S = static_cast<std::size_t>(state_size_);
  const auto J = static_cast<std::size_t>(hidden_);
  const auto V = static_cast<std::size_t>(vocab_);
  HostBuffer<float> state(n * S), next_state(n * S), dec(n * J), next_dec(n * J);
  std::array<HostBuffer<std::int32_t>, 6> per_slot;  // lm, next lm, boost, next boost states; mask; step label
  for (auto& buffer : per_slot) buffer = HostBuffer<std::int32_t>(n);
  std::array<HostBuffer<float>, 4> totals;  // lm, next lm, boost, next boost
  for (auto& buffer : totals) buffer = HostBuffer<float>(n);
  HostBuffer<float> lm_scores(config_.lm != nullptr ? n * V : 0), boost_scores(config_.boost != nullptr ? n * V : 0);
  HostBuffer<std::int32_t> lm_next(lm_scores.size()), boost_next(boost_scores.size());
  std::unique_ptr<PredictorSession> session = model_.predictor().start_session(slots);
  session_ = std::move(session);
  state_ = std::move(state);
  next_state_ = std::move(next_state);
  dec_ = std::move(dec);
  next_dec_ = std::move(next_dec);
  lm_state_ = std::move(per_slot[0]);
  next_lm_state_ = std::move(per_slot[1]);
  boost_state_ = std::move(per_slot[2]);
  next_boost_state_ = std::move(per_slot[3]);
  mask_ = std::move(per_slot[4]);
  step_label_ = std::move(per_slot[5]);
  lm_total_ = std::move(totals[0]);
  next_lm_total_ = std::move(totals[1]);
  boost_total_ = std::move(totals[2]);
  next_boost_total_ = std::move(totals[3]);
  lm_scores_ = std::move(lm_scores);
  lm_next_ = std::move(lm_next);
  boost_scores_ = std::move(boost_scores);
  boost_next_ = std::move(boost_next);
  fusion_ = FusionRef{};
  fusion_.vocab = static_cast<std::int32_t>(vocab_);
  fusion_.blank = blank_;
  if (config_.lm != nullptr) {
    fusion_.lm = FusionSource{lm_scores_.data(), lm_next_.data(), nullptr, nullptr, config_.lm_weight};
  }
  if (config_.boost != nullptr) {
    fusion_.boost = FusionSource{boost_scores_.data(), boost_next_.data(), nullptr, nullptr, config_.boost_weight};
  }
  max_slots_ = slots;
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

#pragma once
// Internal: what the CPU beam-search executors keep per hypothesis slot besides BatchedBeamHyps — predictor state and
// output, LM and boosting states with their weighted totals, and the slot's LM/boosting queries — and how a new beam
// takes them over from its parents.

#include <cstdint>
#include <memory>
#include <vector>

#include "asrdec/core/buffer.hpp"
#include "asrdec/hyps/batched_beam_hyps.hpp"
#include "asrdec/transducer/beam_decoder.hpp"
#include "hyps/beam_channel.hpp"
#include "lm/fusion_step.hpp"
#include "transducer/beam/beam_lanes.hpp"

namespace asrdec::detail {

class BeamSlotStates {
 public:
  BeamSlotStates(const TransducerModel& model, const TransducerBeamConfig& config);

  /** Makes room for `slots` hypothesis slots (grows only). A reservation that cannot be allocated throws and leaves
   *  the slots as they were. */
  void reserve(std::int64_t slots);
  /** The slots there is room for. */
  std::int64_t max_slots() const noexcept { return max_slots_; }
  /** Every slot of `batch` utterances × `beam` starts after the start symbol; LM at <s>, boosting at its
   *  utterance's root boost_roots[b], totals 0. */
  void start(std::int64_t batch, std::int32_t beam, const std::vector<std::int32_t>& boost_roots);

  /** Streaming (BeamLanes): the slots' current predictor and fused arrays (they move on every advance()). */
  BeamSlotArrays arrays();

  /** The predictor output (joint hidden size) of slot s. */
  const float* dec(std::int64_t s) const { return dec_.data() + s * hidden_; }
  /** The LM and boosting queries of every slot, indexed by slot (fusion_bonus). */
  const FusionRef& fusion() const { return fusion_; }
  /** Queries the LM and the boosting tree from slot s's current states. */
  void query(std::int64_t s);

  /** The next state of slot s is slot `from`'s; a token (`label` ≥ 0, not blank) adds its weighted scores from
   *  `from`'s queries and moves the states on, and the predictor steps it in advance(). */
  void take(std::int64_t s, std::int64_t from, std::int32_t label);
  /** The next state of slot s is its current one. */
  void keep(std::int64_t s) { take(s, s, -1); }
  /** Every slot of [0, slots) must have been taken or kept: the next states become current, and the predictor
   *  steps the slots that took a token. */
  void advance(std::int64_t slots);

  /** The live hypotheses of each of `batch` utterances, ranked (beam_ranking with the config's normalisation). */
  std::vector<std::vector<Hypothesis>> ranked_beams(const BeamHypsRef& h, std::int64_t batch) const;

 private:
  TransducerModel model_;
  const TransducerBeamConfig& config_;
  std::int32_t blank_;
  std::int64_t state_size_, hidden_, vocab_;
  std::int64_t max_slots_ = 0;
  std::unique_ptr<PredictorSession> session_;
  HostBuffer<float> state_, next_state_, dec_, next_dec_;
  HostBuffer<std::int32_t> lm_state_, next_lm_state_, boost_state_, next_boost_state_;
  HostBuffer<float> lm_total_, next_lm_total_, boost_total_, next_boost_total_;
  HostBuffer<float> lm_scores_, boost_scores_;  // [slots, V] queries of each slot's current states
  HostBuffer<std::int32_t> lm_next_, boost_next_;
  HostBuffer<std::int32_t> mask_, step_label_;
  FusionRef fusion_;
};

}  // namespace asrdec::detail

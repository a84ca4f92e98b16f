#pragma once
// One frame of batched CTC beam search, the scoring rule shared by the CPU loop and the CUDA kernels.

#include <cmath>
#include <cstdint>

#include "asrdec/detail/hd.hpp"
#include "asrdec/hyps/beam_hyps_ref.hpp"
#include "lm/fusion_step.hpp"

namespace asrdec::detail {

struct CtcBeamRule {
  std::int32_t blank;
  float beta;            ///< insertion bonus per emitted token
  bool log_add = false;  ///< equal hypotheses merge by log-sum-exp (flashlight's logAdd), else by maximum
};

/** What column v adds to a hypothesis whose last label is `last` (slot `slot` of the fusion queries): its
 *  log-probability, plus β and the fusion bonus when v emits a token (not blank, not a repeat of `last`). */
ASRDEC_HD_INLINE float ctc_beam_extension(const CtcBeamRule& rule, const FusionRef& fusion, std::int64_t slot,
                                          std::int32_t last, std::int32_t v, float logp) {
  if (v == rule.blank || v == last) return logp;
  const float bonus = fusion.active() ? fusion_bonus(fusion, slot, v) : 0.0f;
  return (logp + rule.beta) + bonus;
}

/** The fused states of every hypothesis slot: the current ones in `fusion` (queries [slots, V], state and total
 *  [slots]; a model that is not fused has null pointers) and the next ones, written while a frame ends. */
struct CtcBeamStates {
  FusionRef fusion;
  std::int32_t* next_lm_state;
  float* next_lm_total;
  std::int32_t* next_boost_state;
  float* next_boost_total;
};

/** Utterance b's frame ends. `best`/`ids` hold its `kept` best proposals in beam_before order (id = k·columns + v:
 *  slot k extended by column v); those more than `threshold` below the best die. Slot i becomes proposal i, its
 *  fused states follow its parent (moved on when the column emits a token), then equal hypotheses merge (by
 *  maximum, or by log-sum-exp with `log_add`). `logp(v)` is column v's log-probability on the frame (each entry
 *  records its label's, the token score of a token that starts there). */
template <class FrameLogp>
ASRDEC_HD_INLINE void ctc_beam_keep(const BeamHypsRef& h, std::int64_t b, const float* best, const std::int32_t* ids,
                                    std::int32_t kept, std::int32_t columns, float threshold,
                                    const CtcBeamStates& states, bool log_add, const FrameLogp& logp) {
  const FusionRef& f = states.fusion;
  const float floor = kept > 0 ? best[0] - threshold : -__builtin_huge_valf();
  for (std::int32_t i = 0; i < h.beam; ++i) {
    const bool live = i < kept && best[i] != -__builtin_huge_valf() && best[i] > floor;
    const std::int32_t parent = live ? ids[i] / columns : 0;
    const std::int32_t label = live ? ids[i] % columns : -1;
    const std::int64_t from = beam_slot(h, b, parent);
    const std::int64_t s = beam_slot(h, b, i);
    const std::int32_t token = live && beam_emits(h, label, h.last_label[from]) ? label : -1;
    if (f.lm.state != nullptr) fusion_take(f, f.lm, states.next_lm_state, states.next_lm_total, s, from, token);
    if (f.boost.state != nullptr) {
      fusion_take(f, f.boost, states.next_boost_state, states.next_boost_total, s, from, token);
    }
    beam_stage_result(h, b, i, parent, label, live ? best[i] : -__builtin_huge_valf(), 0, live ? logp(label) : 0.0f);
  }
  for (std::int32_t i = 0; i < h.beam; ++i) {
    const std::int64_t s = beam_slot(h, b, i);
    beam_commit_result(h, b, i);
    if (f.lm.state != nullptr) {
      f.lm.state[s] = states.next_lm_state[s];
      f.lm.total[s] = states.next_lm_total[s];
    }
    if (f.boost.state != nullptr) {
      f.boost.state[s] = states.next_boost_state[s];
      f.boost.total[s] = states.next_boost_total[s];
    }
  }
  for (std::int32_t i = 0; i < h.beam; ++i) beam_stage_recombination(h, b, i, log_add);
  for (std::int32_t i = 0; i < h.beam; ++i) beam_commit_recombination(h, b, i);
}

/** The end of utterance b with log-add merging: hypotheses with the same transcript (a prefix ending in blank and
 *  the same prefix ending in its last token) are one CTC prefix, so they merge into the first slot with the highest
 *  score, which takes the log-sum-exp of the group's scores (in slot order); the others die. Host only: it runs
 *  once per utterance, after the end-of-sentence scores. */
inline void ctc_merge_equal_transcripts(const BeamHypsRef& h, std::int64_t b) {
  for (std::int32_t k = 0; k < h.beam; ++k) {
    const std::int64_t s = beam_slot(h, b, k);
    if (h.scores[s] == -__builtin_huge_valf()) continue;
    float best = h.scores[s];
    bool survives = true;
    for (std::int32_t j = 0; j < h.beam; ++j) {
      const std::int64_t o = beam_slot(h, b, j);
      if (j == k || h.hash[o] != h.hash[s] || h.tokens[o] != h.tokens[s]) continue;
      if (h.scores[o] > h.scores[s] || (h.scores[o] == h.scores[s] && j < k)) survives = false;
      if (h.scores[o] > best) best = h.scores[o];
    }
    h.staged_score[s] = best;
    if (!survives) {
      h.staged_score[s] = -__builtin_huge_valf();
      continue;
    }
    float sum = 0.0f;
    for (std::int32_t j = 0; j < h.beam; ++j) {
      const std::int64_t o = beam_slot(h, b, j);
      if (j != k && (h.hash[o] != h.hash[s] || h.tokens[o] != h.tokens[s])) continue;
      sum += portable_exp(h.scores[o] - best);  // as beam_stage_recombination: the same bits on every executor
    }
    h.staged_score[s] = best + portable_log(sum);
  }
  for (std::int32_t k = 0; k < h.beam; ++k) {
    const std::int64_t s = beam_slot(h, b, k);
    if (h.scores[s] != -__builtin_huge_valf()) h.scores[s] = h.staged_score[s];
  }
}

}  // namespace asrdec::detail

#pragma once
// One frame of AES++ (modified adaptive expansion search, RNN-T), the rules shared by the CPU loop and the CUDA
// kernels: prefix search at the start of the frame, then up to num_steps expansion steps in which every hypothesis
// still expanding proposes its K + beta best labels within gamma of its best, and each utterance keeps the K best
// proposals (hypotheses done with the frame compete with their own score).

#include <cstdint>

#include "asrdec/hyps/beam_hyps_ref.hpp"
#include "transducer/beam/alsd_step.hpp"

namespace asrdec::detail {

/** The largest expansion beta: proposal lists have K + beta entries. */
constexpr std::int32_t kMaxAesExpansionBeta = 16;
constexpr std::int32_t kMaxAesProposals = kMaxBeam + kMaxAesExpansionBeta;

/** The proposals of one hypothesis in one expansion step: added score (-inf: pruned), label, in proposal order. */
struct AesProposals {
  float score[kMaxAesProposals];
  std::int32_t label[kMaxAesProposals];
  std::int32_t count;
};

/** ln(e^a + e^b), -inf when both are. */
ASRDEC_HD_INLINE float aes_log_add(float a, float b) {
  const float hi = a > b ? a : b;
  if (hi == -__builtin_huge_valf()) return hi;
  const float lo = a > b ? b : a;
  return hi + logf(1.0f + expf(lo - hi));
}

/** Entry j of aes_proposals_from_topk (below), given `offset` (beam_token_offset of the row's blank) and `best`
 *  (the highest of scores[0 … kept)): the entries are independent, so a CUDA block fills them a thread each. */
ASRDEC_HD_INLINE void aes_proposal_from_topk(const BeamFusionRule& rule, const AlsdRow& row, float gamma, float offset,
                                             float best, const float* scores, const std::int32_t* ids, std::int32_t j,
                                             AesProposals& out) {
  const bool early = rule.active && !rule.late;
  const bool within = scores[j] > best - gamma;
  const float score = early ? alsd_label_score(rule, row, ids[j], offset) : scores[j];
  out.score[j] = within ? score : -__builtin_huge_valf();
  out.label[j] = ids[j];
}

/** The highest of scores[0 … kept) (-inf for none). */
ASRDEC_HD_INLINE float aes_best_of(const float* scores, std::int32_t kept) {
  float best = -__builtin_huge_valf();
  for (std::int32_t j = 0; j < kept; ++j) best = scores[j] > best ? scores[j] : best;
  return best;
}

/** The proposals of a hypothesis that is still expanding from its `count` best labels (`scores`/`ids`, `kept` of
 *  them in beam_before order, ranked as aes_propose ranks them), and the gamma rule: a proposal whose total (the
 *  hypothesis' score + its score) is not above the best total minus gamma is pruned (score -inf); the threshold is
 *  per hypothesis.
 *  - Late pruning, or no fusion: the best `count` by fused score over the whole vocabulary; gamma on fused scores.
 *  - Early pruning (NeMo's maes_batch order): the acoustic best `count`, the gamma cut on their acoustic scores,
 *    then the survivors re-scored with fusion, kept in acoustic order. The LM can neither bring in a label outside
 *    the acoustic top `count` nor rescue one gamma dropped.
 *  The totals share the hypothesis' score, so the rule is applied to the proposals' own scores: the same comparison
 *  without the hypothesis' magnitude, which at large scores absorbed gamma and pruned even the best proposal. */
ASRDEC_HD_INLINE void aes_proposals_from_topk(const BeamFusionRule& rule, const AlsdRow& row, float gamma,
                                              const float* scores, const std::int32_t* ids, std::int32_t kept,
                                              AesProposals& out) {
  const float offset = beam_token_offset(rule, row.logp[row.blank]);
  const float best = aes_best_of(scores, kept);
  for (std::int32_t j = 0; j < kept; ++j) aes_proposal_from_topk(rule, row, gamma, offset, best, scores, ids, j, out);
  out.count = kept;
}

/** The proposals of a hypothesis that is still expanding (see aes_proposals_from_topk), by one thread: the best
 *  `count` of alsd_candidates by alsd_candidate_score (the CUDA kernel ranks them with a block: block_topk_merge).
 *  `row.num_durations` must be 0. */
ASRDEC_HD_INLINE void aes_propose(const BeamFusionRule& rule, const AlsdRow& row, std::int32_t count, float gamma,
                                  AesProposals& out) {
  const float offset = beam_token_offset(rule, row.logp[row.blank]);
  float scores[kMaxAesProposals];
  std::int32_t ids[kMaxAesProposals];
  std::int32_t kept = 0;
  alsd_rank_share(rule, row, offset, count, 0, 1, scores, ids, kept);
  aes_proposals_from_topk(rule, row, gamma, scores, ids, kept, out);
}

/** The one proposal of a live hypothesis that is done with the frame: keep its score (label -1). */
ASRDEC_HD_INLINE void aes_keep(AesProposals& out) {
  out.score[0] = 0.0f;
  out.label[0] = -1;
  out.count = 1;
}

/** Whether extending slot `parent` of utterance b by token `label` gives a hypothesis already in the beam (a live
 *  slot with the same hash, last label and token count): AES++ drops such proposals, so the hypotheses of a beam
 *  stay distinct and never need recombining. */
ASRDEC_HD_INLINE bool aes_already_in_beam(const BeamHypsRef& h, std::int64_t b, std::int32_t parent,
                                          std::int32_t label) {
  const std::int64_t p = beam_slot(h, b, parent);
  const std::uint64_t hash = beam_hash_extend(h.hash[p], label);
  const std::int32_t tokens = h.tokens[p] + 1;
  for (std::int32_t j = 0; j < h.beam; ++j) {
    const std::int64_t o = beam_slot(h, b, j);
    if (h.scores[o] != -__builtin_huge_valf() && h.hash[o] == hash && h.last_label[o] == label &&
        h.tokens[o] == tokens) {
      return true;
    }
  }
  return false;
}

/** aes_drop_repeats (below) for proposal j alone: the proposals are independent, so a CUDA block checks them a
 *  thread each. */
ASRDEC_HD_INLINE void aes_drop_repeat(const BeamHypsRef& h, std::int64_t b, std::int32_t k, std::int32_t blank,
                                      std::int32_t j, AesProposals& p) {
  if (p.label[j] != blank && p.score[j] != -__builtin_huge_valf() && aes_already_in_beam(h, b, k, p.label[j])) {
    p.score[j] = -__builtin_huge_valf();
  }
}

/** Drops (score -inf) the token proposals of slot k of utterance b that would recreate a hypothesis already in the
 *  beam. */
ASRDEC_HD_INLINE void aes_drop_repeats(const BeamHypsRef& h, std::int64_t b, std::int32_t k, std::int32_t blank,
                                       AesProposals& p) {
  for (std::int32_t j = 0; j < p.count; ++j) aes_drop_repeat(h, b, k, blank, j, p);
}

/** Prefix search, phase 1: the score slot k of utterance b takes. Only slots on frame `frame` take part (AES++: all
 *  of them; WIND beam search: the group being expanded). For every such live slot y holding k's transcript without
 *  its last token, the probability of y emitting that token on the frame is added:
 *  score_k ⊕ ⊕_y (score_y + token_score(y, last label of k)), ⊕ = log-add, in slot order. `token_score(j, label)`
 *  is slot j's fused score of the label on the frame. Writes h.staged_score. */
template <class TokenScore>
ASRDEC_HD_INLINE void beam_stage_prefix_search(const BeamHypsRef& h, std::int64_t b, std::int32_t k, std::int32_t frame,
                                               const TokenScore& token_score) {
  const std::int64_t s = beam_slot(h, b, k);
  float score = h.scores[s];
  if (score != -__builtin_huge_valf() && h.tokens[s] > 0 && h.next_time[s] == frame) {
    float extra = -__builtin_huge_valf();
    for (std::int32_t j = 0; j < h.beam; ++j) {
      const std::int64_t y = beam_slot(h, b, j);
      if (j == k || h.scores[y] == -__builtin_huge_valf() || h.next_time[y] != frame || h.hash[y] != h.prefix_hash[s] ||
          h.tokens[y] != h.tokens[s] - 1) {
        continue;
      }
      extra = aes_log_add(extra, h.scores[y] + token_score(j, h.last_label[s]));
    }
    score = aes_log_add(score, extra);
  }
  h.staged_score[s] = score;
}

/** Prefix search, phase 2 (the same as recombination's). */
ASRDEC_HD_INLINE void beam_commit_prefix_search(const BeamHypsRef& h, std::int64_t b, std::int32_t k) {
  beam_commit_recombination(h, b, k);
}

/** What one utterance's AES++ frame reads: the log-softmax of every slot evaluated on the frame ([slots, V+1],
 *  rows of slots not evaluated are never read) and the fused queries of those slots. */
struct AesFrame {
  const float* logp;
  std::int32_t tokens;  ///< V + 1
  std::int32_t blank;
  const FusionRef* fusion;

  ASRDEC_HD_INLINE AlsdRow row(std::int64_t s) const {
    return AlsdRow{logp + s * tokens, nullptr, blank, tokens, nullptr, 0, fusion, s};
  }
};

/** Slot j's fused score of `label` on the frame (prefix search's token_score). */
struct AesTokenScore {
  const BeamFusionRule& rule;
  const AesFrame& frame;
  const BeamHypsRef& h;
  std::int64_t b;

  ASRDEC_HD_INLINE float operator()(std::int32_t j, std::int32_t label) const {
    const AlsdRow row = frame.row(beam_slot(h, b, j));
    return alsd_label_score(rule, row, label, beam_token_offset(rule, row.logp[frame.blank]));
  }
};

/** Prefix search of utterance b on frame t (both phases). */
ASRDEC_HD_INLINE void aes_prefix_search(const BeamFusionRule& rule, const BeamHypsRef& h, std::int64_t b,
                                        std::int32_t t, const AesFrame& frame) {
  const AesTokenScore token_score{rule, frame, h, b};
  for (std::int32_t k = 0; k < h.beam; ++k) beam_stage_prefix_search(h, b, k, t, token_score);
  for (std::int32_t k = 0; k < h.beam; ++k) beam_commit_prefix_search(h, b, k);
}

/** Whether some slot of utterance b is still expanding on the frame. */
ASRDEC_HD_INLINE bool aes_any_expanding(const BeamHypsRef& h, std::int64_t b, const std::int32_t* expanding) {
  for (std::int32_t k = 0; k < h.beam; ++k) {
    if (expanding[beam_slot(h, b, k)]) return true;
  }
  return false;
}

/** Slot k's proposals in an expansion step of utterance b: aes_propose's, less those that would recreate a
 *  hypothesis already in the beam, for a slot still expanding; aes_keep's for a live slot done with the frame; none
 *  for a dead slot. */
ASRDEC_HD_INLINE void aes_slot_proposals(const BeamFusionRule& rule, const BeamHypsRef& h, std::int64_t b,
                                         std::int32_t k, std::int32_t per_hypothesis, float gamma,
                                         const AesFrame& frame, const std::int32_t* expanding, AesProposals& p) {
  const std::int64_t s = beam_slot(h, b, k);
  p.count = 0;
  if (h.scores[s] == -__builtin_huge_valf()) return;
  if (!expanding[s]) {
    aes_keep(p);
    return;
  }
  aes_propose(rule, frame.row(s), per_hypothesis, gamma, p);
  aes_drop_repeats(h, b, k, frame.blank, p);
}

/** An expansion step's selection, after the ranking (beam_rank_proposal over ids k·C + j): new slot i of utterance b
 *  takes the candidate chosen for it (from[slot], -1 for none; beam_choice), stages its result entry, and sets
 * from[slot] to its parent's slot and label[slot] to its label (-1 for a dead slot). */
ASRDEC_HD_INLINE void aes_stage_choice(const BeamHypsRef& h, std::int64_t b, std::int32_t i,
                                       std::int32_t per_hypothesis, const AesFrame& frame,
                                       const AesProposals* proposals, std::int64_t* from, std::int32_t* label) {
  const BeamChoice x = beam_choice(h, b, i, proposals, per_hypothesis, from);
  const std::int64_t s = beam_slot(h, b, i);
  const std::int64_t ps = beam_slot(h, b, x.parent);
  const std::int32_t chosen = x.live ? proposals[ps].label[x.entry] : -1;
  const float logp = chosen >= 0 ? frame.logp[ps * frame.tokens + chosen] : 0.0f;
  beam_stage_result(h, b, i, x.parent, chosen, x.score, 0, logp);
  from[s] = ps;
  label[s] = chosen;
}

/** One expansion step: every slot proposes (aes_slot_proposals; with `propose` false the caller has written
 *  `proposals`, indexed by slot, already), and the K best of each utterance's proposals become its beam (hypotheses
 *  done with the frame compete with their own score). For each new slot s, from[s] is the slot its state comes from
 *  and label[s] what it took in (a token moves the predictor, LM and boosting states on); `expanding` follows: a
 *  slot goes on expanding after a token.
 *
 *  The step runs as phases over the utterances that expand, as alsd_select_phases: `each_slot(f)` calls f(b, k) for
 *  their slots, `each_candidate(f)` f(b, c) for every c < K·C, `sync()` separates the phases. */
template <class EachSlot, class EachCandidate, class Sync>
ASRDEC_HD_INLINE void aes_expand_phases(const BeamFusionRule& rule, const BeamHypsRef& h, std::int32_t per_hypothesis,
                                        float gamma, const AesFrame& frame, AesProposals* proposals,
                                        std::int32_t* expanding, std::int64_t* from, std::int32_t* label, bool propose,
                                        const EachSlot& each_slot, const EachCandidate& each_candidate,
                                        const Sync& sync) {
  const std::int32_t C = per_hypothesis;
  if (propose) {
    each_slot([&](std::int64_t b, std::int32_t k) {
      aes_slot_proposals(rule, h, b, k, C, gamma, frame, expanding, proposals[beam_slot(h, b, k)]);
    });
    sync();
  }
  each_slot([&](std::int64_t b, std::int32_t k) { from[beam_slot(h, b, k)] = -1; });
  sync();
  each_candidate([&](std::int64_t b, std::int32_t c) { beam_rank_proposal(h, b, proposals, C, c, from); });
  sync();
  each_slot([&](std::int64_t b, std::int32_t i) { aes_stage_choice(h, b, i, C, frame, proposals, from, label); });
  sync();
  each_slot([&](std::int64_t b, std::int32_t i) {
    beam_commit_result(h, b, i);
    // A hypothesis goes on expanding after a token (its own label: NeMo's mask ignores the reorder).
    const std::int64_t s = beam_slot(h, b, i);
    expanding[s] = label[s] >= 0 && label[s] != frame.blank ? 1 : 0;
  });
}

/** aes_expand_phases for utterance b on one thread (the CPU executor). */
inline void aes_expand(const BeamFusionRule& rule, const BeamHypsRef& h, std::int64_t b, std::int32_t per_hypothesis,
                       float gamma, const AesFrame& frame, AesProposals* proposals, std::int32_t* expanding,
                       std::int64_t* from, std::int32_t* label) {
  const std::int32_t K = h.beam;
  const std::int32_t candidates = K * per_hypothesis;
  const auto each_slot = [b, K](const auto& f) {
    for (std::int32_t k = 0; k < K; ++k) f(b, k);
  };
  const auto each_candidate = [b, candidates](const auto& f) {
    for (std::int32_t c = 0; c < candidates; ++c) f(b, c);
  };
  aes_expand_phases(rule, h, per_hypothesis, gamma, frame, proposals, expanding, from, label, /*propose=*/true,
                    each_slot, each_candidate, [] {});
}

/** The end of utterance b's frame: hypotheses still expanding after num_steps leave it with a blank (scored with
 *  their last evaluation); the others add a no-op entry, as the slots of an utterance write their back-pointer
 *  entries in lockstep. Nothing is written when no slot is expanding. */
ASRDEC_HD_INLINE void aes_end_frame(const BeamFusionRule& rule, const BeamHypsRef& h, std::int64_t b,
                                    const std::int32_t* expanding, const AesFrame& frame) {
  if (!aes_any_expanding(h, b, expanding)) return;
  for (std::int32_t k = 0; k < h.beam; ++k) {
    const std::int64_t s = beam_slot(h, b, k);
    const bool leaves = expanding[s] != 0;
    const float logp_blank = leaves ? frame.logp[s * frame.tokens + frame.blank] : 0.0f;
    const float score = leaves ? h.scores[s] + beam_blank_score(rule, logp_blank) : h.scores[s];
    beam_stage_result(h, b, k, k, leaves ? frame.blank : -1, score, 0, logp_blank);
  }
  for (std::int32_t k = 0; k < h.beam; ++k) beam_commit_result(h, b, k);
}

}  // namespace asrdec::detail

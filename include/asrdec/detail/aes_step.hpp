#pragma once
// One frame of AES++ (modified adaptive expansion search, RNN-T), the rules shared by the CPU loop and the CUDA
// kernels: prefix search at the start of the frame, then up to num_steps expansion steps in which every hypothesis
// still expanding proposes its K + beta best labels within gamma of its best, and each utterance keeps the K best
// proposals (hypotheses done with the frame compete with their own score).

#include <cstdint>

#include "asrdec/detail/alsd_step.hpp"
#include "asrdec/detail/beam_hyps_step.hpp"

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

/** The `count` best labels of a hypothesis that is still expanding: by fused score over the whole vocabulary (late
 *  pruning, or no fusion), or the acoustic best `count` re-scored with fusion and kept in acoustic order (early
 *  pruning). Then the gamma rule: a proposal whose total (parent_score + its score) is not above the best total
 *  minus gamma is pruned (score -inf); the threshold is per hypothesis. `row.num_durations` must be 0. */
ASRDEC_HD_INLINE void aes_propose(const BeamFusionRule& rule, const AlsdRow& row, float parent_score,
                                  std::int32_t count, float gamma, AesProposals& out) {
  const float offset = beam_token_offset(rule, row.logp[row.blank]);
  float scores[kMaxAesProposals];
  std::int32_t ids[kMaxAesProposals];
  std::int32_t kept = 0;
  if (rule.active && !rule.late) {
    for (std::int32_t v = 0; v < row.tokens; ++v) topk_insert(scores, ids, count, kept, row.logp[v], v);
    for (std::int32_t j = 0; j < kept; ++j) scores[j] = alsd_label_score(rule, row, ids[j], offset);
  } else {
    for (std::int32_t v = 0; v < row.tokens; ++v)
      topk_insert(scores, ids, count, kept, alsd_label_score(rule, row, v, offset), v);
  }
  float best = -__builtin_huge_valf();
  for (std::int32_t j = 0; j < kept; ++j) {
    const float total = parent_score + scores[j];
    best = total > best ? total : best;
  }
  for (std::int32_t j = 0; j < kept; ++j) {
    out.score[j] = parent_score + scores[j] > best - gamma ? scores[j] : -__builtin_huge_valf();
    out.label[j] = ids[j];
  }
  out.count = kept;
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

}  // namespace asrdec::detail

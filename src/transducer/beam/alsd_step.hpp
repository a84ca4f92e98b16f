#pragma once
// One step of ALSD++ (alignment-length synchronous beam search, transducers), the rules shared by the CPU loop and
// the CUDA kernels: every hypothesis proposes up to K extensions (a token, blank, or -1 once it has finished its
// utterance), and each utterance keeps the best K of the K·K proposals.

#include <cstdint>

#include "asrdec/hyps/beam_hyps_ref.hpp"
#include "hyps/beam_search_step.hpp"

namespace asrdec::detail {

/** What one hypothesis sees at its frame. */
struct AlsdRow {
  const float* logp;           ///< [V+1] log-softmax of the token logits
  const float* logp_duration;  ///< TDT: [D] log-softmax of the duration logits; nullptr for RNN-T
  std::int32_t blank;
  std::int32_t tokens;            ///< V + 1
  const std::int32_t* durations;  ///< TDT: [D] frame jumps
  std::int32_t num_durations;     ///< D (0 for RNN-T)
  const FusionRef* fusion;        ///< LM/boosting queries, indexed by `slot`
  std::int64_t slot;
};

/** Up to K extensions of one hypothesis: added score, label, frame jump (TDT; RNN-T 0), and the label's acoustic
 *  log-probability (what the results report as its token score), in proposal order. */
struct AlsdProposals {
  float score[kMaxBeam];
  std::int32_t label[kMaxBeam];
  std::int32_t jump[kMaxBeam];
  float logp[kMaxBeam];
  std::int32_t count;
};

/** The frame jump of TDT duration index d for `label`: the duration, but a blank moves at least one frame. */
ASRDEC_HD_INLINE std::int32_t alsd_jump(const AlsdRow& row, std::int32_t label, std::int32_t d) {
  const std::int32_t jump = row.durations[d];
  return label == row.blank && jump < 1 ? 1 : jump;
}

/** The fused score of label v of the row (blank-scoring offset precomputed). */
ASRDEC_HD_INLINE float alsd_label_score(const BeamFusionRule& rule, const AlsdRow& row, std::int32_t v, float offset) {
  if (v == row.blank) return beam_blank_score(rule, row.logp[v]);
  const float bonus = rule.active ? fusion_bonus(*row.fusion, row.slot, v) : 0.0f;
  return beam_token_score(rule, row.logp[v], offset, bonus);
}

/** The candidates a hypothesis that is on a frame of its utterance and may still emit ranks for its K best
 *  extensions, whose scores alsd_candidate_score gives:
 *  - late pruning (and no fusion): labels (RNN-T) or (label, duration) pairs (TDT, id label·D + d) by fused score;
 *  - early pruning: labels by acoustic log-probability (alsd_proposals_from_topk scores them with fusion). */
ASRDEC_HD_INLINE std::int32_t alsd_candidates(const BeamFusionRule& rule, const AlsdRow& row) {
  const bool early = rule.active && !rule.late;
  return early || row.num_durations == 0 ? row.tokens : row.tokens * row.num_durations;
}

/** Candidate i's score (alsd_candidates); `offset` is beam_token_offset of the row's blank. */
ASRDEC_HD_INLINE float alsd_candidate_score(const BeamFusionRule& rule, const AlsdRow& row, float offset,
                                            std::int32_t i) {
  if (rule.active && !rule.late) return row.logp[i];
  if (row.num_durations == 0) return alsd_label_score(rule, row, i, offset);
  const std::int32_t label = i / row.num_durations;
  return alsd_label_score(rule, row, label, offset) + row.logp_duration[i - label * row.num_durations];
}

/** Ranks the share of one of `stride` threads of a row's candidates (first, first + stride, …) into its list
 *  `scores`/`ids` of `count` (topk_insert, capped at k). */
ASRDEC_HD_INLINE void alsd_rank_share(const BeamFusionRule& rule, const AlsdRow& row, float offset, std::int32_t k,
                                      std::int32_t first, std::int32_t stride, float* scores, std::int32_t* ids,
                                      std::int32_t& count) {
  const std::int32_t n = alsd_candidates(rule, row);
  for (std::int32_t i = first; i < n; i += stride) {
    topk_insert(scores, ids, k, count, alsd_candidate_score(rule, row, offset, i), i);
  }
}

/** The proposals from the K best candidates (`scores`/`ids`, `count` of them in beam_before order).
 *  - Late pruning: the candidates themselves.
 *  - Early pruning: the acoustic top K scored with fusion; TDT pairs each with every duration and keeps the K best
 *    pairs. The LM can reorder but never bring in a label outside the acoustic top K. */
ASRDEC_HD_INLINE void alsd_proposals_from_topk(const BeamFusionRule& rule, const AlsdRow& row, std::int32_t k,
                                               float offset, const float* scores, const std::int32_t* ids,
                                               std::int32_t count, AlsdProposals& out) {
  const std::int32_t D = row.num_durations;
  if (!rule.active || rule.late) {
    for (std::int32_t j = 0; j < count; ++j) {
      const std::int32_t label = D == 0 ? ids[j] : ids[j] / D;
      out.score[j] = scores[j];
      out.label[j] = label;
      out.jump[j] = D == 0 ? 0 : alsd_jump(row, label, ids[j] - label * D);
      out.logp[j] = row.logp[label];
    }
    out.count = count;
    return;
  }
  float label_scores[kMaxBeam];
  for (std::int32_t j = 0; j < count; ++j) label_scores[j] = alsd_label_score(rule, row, ids[j], offset);
  if (D == 0) {
    for (std::int32_t j = 0; j < count; ++j) {
      out.score[j] = label_scores[j];
      out.label[j] = ids[j];
      out.jump[j] = 0;
      out.logp[j] = row.logp[ids[j]];
    }
    out.count = count;
    return;
  }
  float pair_scores[kMaxBeam];
  std::int32_t pairs[kMaxBeam];
  std::int32_t kept = 0;
  for (std::int32_t j = 0; j < count; ++j) {
    for (std::int32_t d = 0; d < D; ++d) {
      topk_insert(pair_scores, pairs, k, kept, label_scores[j] + row.logp_duration[d], j * D + d);
    }
  }
  for (std::int32_t j = 0; j < kept; ++j) {
    const std::int32_t label = ids[pairs[j] / D];
    out.score[j] = pair_scores[j];
    out.label[j] = label;
    out.jump[j] = alsd_jump(row, label, pairs[j] % D);
    out.logp[j] = row.logp[label];
  }
  out.count = kept;
}

/** The K best extensions of a hypothesis that is on a frame of its utterance and may still emit, by one thread
 *  (the CUDA kernel ranks the same candidates with a block: block_topk_merge). */
ASRDEC_HD_INLINE void alsd_propose(const BeamFusionRule& rule, const AlsdRow& row, std::int32_t k, AlsdProposals& out) {
  const float offset = beam_token_offset(rule, row.logp[row.blank]);
  float scores[kMaxBeam];
  std::int32_t ids[kMaxBeam];
  std::int32_t count = 0;
  alsd_rank_share(rule, row, offset, k, 0, 1, scores, ids, count);
  alsd_proposals_from_topk(rule, row, k, offset, scores, ids, count, out);
}

/** The only extension of a hypothesis that has emitted max_symbols labels on its frame: blank to the next frame,
 *  as in greedy decoding (so beam 1 is greedy), scored with the fused blank score (TDT: + the best duration's
 *  log-probability, NeMo's forced-blank score). */
ASRDEC_HD_INLINE void alsd_force_blank(const BeamFusionRule& rule, const AlsdRow& row, AlsdProposals& out) {
  float score = beam_blank_score(rule, row.logp[row.blank]);
  if (row.num_durations > 0) {
    float best = row.logp_duration[0];
    for (std::int32_t d = 1; d < row.num_durations; ++d)
      best = row.logp_duration[d] > best ? row.logp_duration[d] : best;
    score += best;
  }
  out.score[0] = score;
  out.label[0] = row.blank;
  out.jump[0] = 1;
  out.logp[0] = row.logp[row.blank];
  out.count = 1;
}

/** Whether slot s is evaluated this step: a live hypothesis on a frame of its utterance (of `length` frames). */
ASRDEC_HD_INLINE bool alsd_row_active(const BeamHypsRef& h, std::int64_t s, std::int32_t length) {
  return h.scores[s] != -__builtin_huge_valf() && h.next_time[s] < length;
}

/** Streaming: whether utterance b's beam must wait for more frames before its next step — some live hypothesis stands
 *  on or past frame `length`, the end of the frames brought so far (a row that ends its utterance never waits). */
ASRDEC_HD_INLINE bool alsd_waits_for_frames(const BeamHypsRef& h, std::int64_t b, std::int32_t length) {
  for (std::int32_t k = 0; k < h.beam; ++k) {
    const std::int64_t s = beam_slot(h, b, k);
    if (h.scores[s] != -__builtin_huge_valf() && h.next_time[s] >= length) return true;
  }
  return false;
}

/** The proposals of a slot that is not evaluated this step. A live hypothesis past the end of a still running
 *  utterance competes with its own score (one -1 entry that adds nothing); a dead slot proposes nothing. */
ASRDEC_HD_INLINE void alsd_idle_proposals(bool utterance_running, float score, AlsdProposals& out) {
  out.count = 0;
  if (!utterance_running || score == -__builtin_huge_valf()) return;
  out.score[0] = 0.0f;
  out.label[0] = -1;
  out.jump[0] = 0;
  out.logp[0] = 0.0f;
  out.count = 1;
}

/** Utterance b keeps the K best of its slots' proposals (`proposals` indexed by slot) and adds them to `h`: the
 *  result entries, then recombination of equal hypotheses. For each new slot s of the utterance, from[s] is the slot
 *  its state comes from and label[s] what that state must take in (a token moves the predictor, LM and boosting
 *  states on; blank, -1, and slots that died in recombination take nothing). */
ASRDEC_HD_INLINE void alsd_select(const BeamHypsRef& h, std::int64_t b, const AlsdProposals* proposals,
                                  std::int64_t* from, std::int32_t* label) {
  const std::int32_t K = h.beam;
  float best[kMaxBeam];
  std::int32_t ids[kMaxBeam];
  std::int32_t kept = 0;
  for (std::int32_t k = 0; k < K; ++k) {
    const std::int64_t s = beam_slot(h, b, k);
    for (std::int32_t j = 0; j < proposals[s].count; ++j) {
      topk_insert(best, ids, K, kept, h.scores[s] + proposals[s].score[j], k * K + j);
    }
  }
  std::int32_t parents[kMaxBeam], labels[kMaxBeam];
  for (std::int32_t i = 0; i < K; ++i) {
    const bool live = i < kept && best[i] != -__builtin_huge_valf();
    parents[i] = live ? ids[i] / K : 0;
    const AlsdProposals& p = proposals[beam_slot(h, b, parents[i])];
    const std::int32_t j = live ? ids[i] % K : 0;
    labels[i] = live ? p.label[j] : -1;
    beam_stage_result(h, b, i, parents[i], labels[i], live ? best[i] : -__builtin_huge_valf(), live ? p.jump[j] : 0,
                      live ? p.logp[j] : 0.0f);
  }
  for (std::int32_t i = 0; i < K; ++i) beam_commit_result(h, b, i);
  for (std::int32_t i = 0; i < K; ++i) beam_stage_recombination(h, b, i);
  for (std::int32_t i = 0; i < K; ++i) beam_commit_recombination(h, b, i);
  for (std::int32_t i = 0; i < K; ++i) {
    const std::int64_t s = beam_slot(h, b, i);
    from[s] = beam_slot(h, b, parents[i]);
    label[s] = h.scores[s] != -__builtin_huge_valf() ? labels[i] : -1;
  }
}

}  // namespace asrdec::detail

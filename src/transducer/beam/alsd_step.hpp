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

/** Selection of an utterance's K best proposals (ALSD++ and AES++), one candidate's part: candidate c = k·W + j
 *  (proposal j of slot k; `width` W proposals at most per slot) of utterance b finds its rank among all the
 *  utterance's proposals by total score h.scores + proposal score (beam_before order, ids k·W + j, so the ranks are
 *  distinct and the K best are those one topk_insert over every proposal keeps, in its order). A candidate of rank
 *  r < K writes c to chosen[slot r]; slots no candidate reaches keep what the caller set (-1). Counting stops at
 *  rank K, so a candidate that is not chosen compares only until K others beat it. */
/** The total score of a proposal as the selection ranks it: its hypothesis's score plus its own, a NaN (possible
 *  only when the caller turned off the checks of its inputs) counted as -inf, so that the ranking's order stays total
 *  and every executor keeps the same hypotheses. */
ASRDEC_HD_INLINE float beam_proposal_total(float hypothesis_score, float proposal_score) {
  const float total = hypothesis_score + proposal_score;
  return total != total ? -__builtin_huge_valf() : total;
}

template <class Proposals>
ASRDEC_HD_INLINE void beam_rank_proposal(const BeamHypsRef& h, std::int64_t b, const Proposals* proposals,
                                         std::int32_t width, std::int32_t c, std::int64_t* chosen) {
  const std::int32_t K = h.beam;
  const std::int32_t k = c / width;
  const std::int32_t j = c - k * width;
  const std::int64_t s = beam_slot(h, b, k);
  if (j >= proposals[s].count) return;
  const float score = beam_proposal_total(h.scores[s], proposals[s].score[j]);
  std::int32_t rank = 0;
  for (std::int32_t other = 0; other < K; ++other) {
    const std::int64_t o = beam_slot(h, b, other);
    const float base = h.scores[o];
    const Proposals& p = proposals[o];
    for (std::int32_t i = 0; i < p.count; ++i) {
      if (beam_before(beam_proposal_total(base, p.score[i]), other * width + i, score, c) && ++rank == K) return;
    }
  }
  chosen[beam_slot(h, b, rank)] = c;
}

/** The candidate new slot i of utterance b takes after the ranking: chosen[slot] (-1 for none), an id k·W + j over
 *  `width` W proposals a slot, as its parent slot k, its entry j and its total. No candidate, or one of total -inf,
 *  is a dead choice: parent 0, total -inf. */
struct BeamChoice {
  std::int32_t parent;
  std::int32_t entry;
  float score;
  bool live;
};

template <class Proposals>
ASRDEC_HD_INLINE BeamChoice beam_choice(const BeamHypsRef& h, std::int64_t b, std::int32_t i,
                                        const Proposals* proposals, std::int32_t width, const std::int64_t* chosen) {
  const std::int64_t c = chosen[beam_slot(h, b, i)];
  if (c < 0) return BeamChoice{0, 0, -__builtin_huge_valf(), false};
  const auto parent = static_cast<std::int32_t>(c / width);
  const auto entry = static_cast<std::int32_t>(c - static_cast<std::int64_t>(parent) * width);
  const std::int64_t ps = beam_slot(h, b, parent);
  const float score = beam_proposal_total(h.scores[ps], proposals[ps].score[entry]);
  if (score == -__builtin_huge_valf()) return BeamChoice{0, entry, score, false};
  return BeamChoice{parent, entry, score, true};
}

/** Selection, after the ranking: new slot i of utterance b takes the candidate chosen for it (`from`, which the
 *  first phase set to -1 and beam_rank_proposal to the candidate, if any; beam_choice): stages the result entry
 *  (beam_stage_result) and sets from[slot] to its parent's slot and label[slot] to the candidate's label (-1 for a
 *  dead slot). */
ASRDEC_HD_INLINE void alsd_stage_choice(const BeamHypsRef& h, std::int64_t b, std::int32_t i,
                                        const AlsdProposals* proposals, std::int64_t* from, std::int32_t* label) {
  const BeamChoice x = beam_choice(h, b, i, proposals, h.beam, from);
  const AlsdProposals& p = proposals[beam_slot(h, b, x.parent)];
  const std::int64_t s = beam_slot(h, b, i);
  label[s] = x.live ? p.label[x.entry] : -1;
  beam_stage_result(h, b, i, x.parent, label[s], x.score, x.live ? p.jump[x.entry] : 0,
                    x.live ? p.logp[x.entry] : 0.0f);
  from[s] = beam_slot(h, b, x.parent);
}

/** Utterance b keeps the K best of its slots' proposals (`proposals` indexed by slot) and adds them to `h`: the
 *  result entries, then recombination of equal hypotheses. For each new slot s of the utterance, from[s] is the slot
 *  its state comes from and label[s] what that state must take in (a token moves the predictor, LM and boosting
 *  states on; blank, -1, and slots that died in recombination take nothing).
 *
 *  The selection runs as phases over the utterances that select: `each_slot(f)` calls f(b, k) for every slot k of
 *  each of them and `each_candidate(f)` f(b, c) for every c < K·K (in any order, on any threads); `sync()`
 *  separates the phases. alsd_select runs them on one thread for one utterance; the CUDA kernel runs every
 *  utterance's in one block, a thread per slot or candidate, so ranking costs O(K²) a thread, not K² inserts into a
 *  list on one thread. */
template <class EachSlot, class EachCandidate, class Sync>
ASRDEC_HD_INLINE void alsd_select_phases(const BeamHypsRef& h, const AlsdProposals* proposals, std::int64_t* from,
                                         std::int32_t* label, const EachSlot& each_slot,
                                         const EachCandidate& each_candidate, const Sync& sync) {
  each_slot([&](std::int64_t b, std::int32_t k) { from[beam_slot(h, b, k)] = -1; });
  sync();
  each_candidate([&](std::int64_t b, std::int32_t c) { beam_rank_proposal(h, b, proposals, h.beam, c, from); });
  sync();
  each_slot([&](std::int64_t b, std::int32_t i) { alsd_stage_choice(h, b, i, proposals, from, label); });
  sync();
  each_slot([&](std::int64_t b, std::int32_t i) { beam_commit_result(h, b, i); });
  sync();
  each_slot([&](std::int64_t b, std::int32_t i) { beam_stage_recombination(h, b, i); });
  sync();
  each_slot([&](std::int64_t b, std::int32_t i) { beam_commit_recombination(h, b, i); });
  sync();
  each_slot([&](std::int64_t b, std::int32_t i) {
    const std::int64_t s = beam_slot(h, b, i);
    if (h.scores[s] == -__builtin_huge_valf()) label[s] = -1;
  });
}

/** alsd_select_phases for utterance b on one thread (the CPU executor). */
inline void alsd_select(const BeamHypsRef& h, std::int64_t b, const AlsdProposals* proposals, std::int64_t* from,
                        std::int32_t* label) {
  const std::int32_t K = h.beam;
  const auto each_slot = [b, K](const auto& f) {
    for (std::int32_t k = 0; k < K; ++k) f(b, k);
  };
  const auto each_candidate = [b, K](const auto& f) {
    for (std::int32_t c = 0; c < K * K; ++c) f(b, c);
  };
  alsd_select_phases(h, proposals, from, label, each_slot, each_candidate, [] {});
}

}  // namespace asrdec::detail

#pragma once
// One step of WIND beam search (windowed inference for non-blank detection, RNN-T), the rules shared by the CPU
// loop and the CUDA kernels: a hypothesis on frame t looks at the window t … t+n-1 with one predictor output and
// proposes its K best "first outputs" — a token v on frame t+j after blanks on t … t+j-1, or blank on the whole
// window — and each frame keeps at most K hypotheses.

#include <cstdint>

#include "asrdec/detail/alsd_step.hpp"
#include "asrdec/detail/beam_hyps_step.hpp"

namespace asrdec::detail {

/** What one hypothesis sees in its window. */
struct WindowRow {
  const float* logp;    ///< [frames, V+1] log-softmax of the token logits on frames t … t+frames-1
  std::int32_t frames;  ///< n ≥ 1
  std::int32_t blank;
  std::int32_t tokens;      ///< V + 1
  bool may_emit_here;       ///< fewer than max_symbols tokens on frame t: a token on t itself is allowed
  const FusionRef* fusion;  ///< LM/boosting queries, indexed by `slot`
  std::int64_t slot;
};

/** The K best first outputs of a hypothesis (proposal label, jump = frames moved, added score), by the paper's
 *  P'(v, j): token v at position j scores Σ_{i<j} blank(t+i) + token(v, t+j), blank scores Σ_{i<n} blank(t+i) and
 *  moves n frames; blank and token scores are the fused ones (beam_blank_score, beam_token_score). Candidates are
 *  numbered j·(V+1) + v (blank: (n-1)·(V+1) + blank) for the total order. Late pruning (and no fusion) ranks the
 *  fused scores; early pruning takes the K best acoustic scores and re-scores them, keeping the acoustic order. */
ASRDEC_HD_INLINE void wind_propose(const BeamFusionRule& rule, const WindowRow& row, std::int32_t k,
                                   AlsdProposals& out) {
  const bool early = rule.active && !rule.late;
  float scores[kMaxBeam];
  std::int32_t ids[kMaxBeam];
  std::int32_t count = 0;
  float blanks = 0.0f;           // fused blank scores of the positions before j
  float acoustic_blanks = 0.0f;  // their log-probabilities
  for (std::int32_t j = 0; j < row.frames; ++j) {
    const float* lp = row.logp + static_cast<std::int64_t>(j) * row.tokens;
    if (j > 0 || row.may_emit_here) {
      const float offset = beam_token_offset(rule, lp[row.blank]);
      for (std::int32_t v = 0; v < row.tokens; ++v) {
        if (v == row.blank) continue;
        const float score =
            early ? acoustic_blanks + lp[v]
                  : blanks + beam_token_score(rule, lp[v], offset,
                                              rule.active ? fusion_bonus(*row.fusion, row.slot, v) : 0.0f);
        topk_insert(scores, ids, k, count, score, j * row.tokens + v);
      }
    }
    blanks += beam_blank_score(rule, lp[row.blank]);
    acoustic_blanks += lp[row.blank];
  }
  topk_insert(scores, ids, k, count, early ? acoustic_blanks : blanks, (row.frames - 1) * row.tokens + row.blank);
  for (std::int32_t i = 0; i < count; ++i) {
    const std::int32_t j = ids[i] / row.tokens;
    const std::int32_t v = ids[i] % row.tokens;
    out.label[i] = v;
    out.jump[i] = v == row.blank ? row.frames : j;
    out.score[i] = scores[i];
  }
  out.count = count;
  if (!early) return;
  // Early pruning: re-score the acoustic K best with fusion (blank sums recomputed up to each position).
  for (std::int32_t i = 0; i < count; ++i) {
    const std::int32_t v = out.label[i];
    const std::int32_t upto = v == row.blank ? row.frames : out.jump[i];
    float fused = 0.0f;
    for (std::int32_t j = 0; j < upto; ++j)
      fused += beam_blank_score(rule, row.logp[static_cast<std::int64_t>(j) * row.tokens + row.blank]);
    if (v != row.blank) {
      const float* lp = row.logp + static_cast<std::int64_t>(upto) * row.tokens;
      fused +=
          beam_token_score(rule, lp[v], beam_token_offset(rule, lp[row.blank]), fusion_bonus(*row.fusion, row.slot, v));
    }
    out.score[i] = fused;
  }
}

/** The frame cap, phase 1: slot k of utterance b dies when `cap` live slots on its frame rank before it (higher
 *  score, then lower slot). Writes h.staged_score. */
ASRDEC_HD_INLINE void wind_stage_frame_cap(const BeamHypsRef& h, std::int64_t b, std::int32_t k, std::int32_t cap) {
  const std::int64_t s = beam_slot(h, b, k);
  const float score = h.scores[s];
  float kept = score;
  if (score != -__builtin_huge_valf()) {
    std::int32_t better = 0;
    for (std::int32_t j = 0; j < h.beam; ++j) {
      const std::int64_t o = beam_slot(h, b, j);
      if (j != k && h.scores[o] != -__builtin_huge_valf() && h.next_time[o] == h.next_time[s] &&
          beam_before(h.scores[o], j, score, k)) {
        ++better;
      }
    }
    if (better >= cap) kept = -__builtin_huge_valf();
  }
  h.staged_score[s] = kept;
}

/** The frame cap, phase 2. */
ASRDEC_HD_INLINE void wind_commit_frame_cap(const BeamHypsRef& h, std::int64_t b, std::int32_t k) {
  beam_commit_recombination(h, b, k);
}

}  // namespace asrdec::detail

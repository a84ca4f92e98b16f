#pragma once
// The scoring and selection rules of batched beam search (transducer ALSD++ and CTC), shared by the CPU loops and
// the CUDA kernels: a fixed-size top-K list with a total order, the fused scores of tokens and blank (the
// beam-search paper's blank scoring), and the per-hypothesis candidate lists.

#include <cmath>
#include <cstdint>

#include "asrdec/detail/hd.hpp"
#include "core/logsumexp.hpp"
#include "lm/fusion_step.hpp"

namespace asrdec::detail {

/** The largest beam the decoders accept: candidate lists live in fixed-size arrays (registers on the GPU). */
constexpr std::int32_t kMaxBeam = 64;

/** The order of candidates: higher score first, then the lower id. A total order, so every executor keeps the
 *  same K candidates (torch.topk leaves ties unspecified). */
ASRDEC_HD_INLINE bool beam_before(float score, std::int32_t id, float other_score, std::int32_t other_id) {
  return score > other_score || (score == other_score && id < other_id);
}

/** Inserts (score, id) into the list `scores`/`ids` of `count` entries kept in beam_before order, capped at `k`. A
 *  NaN score (possible only when the caller turned off the checks of its inputs) is inserted as -inf: beam_before is
 *  a total order only over numbers, and the lists must stay sorted for a block's merge of several lists
 *  (block_topk.cuh) to keep the candidates one list over all of them keeps. */
ASRDEC_HD_INLINE void topk_insert(float* scores, std::int32_t* ids, std::int32_t k, std::int32_t& count, float score,
                                  std::int32_t id) {
  if (score != score) score = -__builtin_huge_valf();
  if (count == k && !beam_before(score, id, scores[k - 1], ids[k - 1])) return;
  std::int32_t i = count < k ? count++ : k - 1;
  while (i > 0 && beam_before(score, id, scores[i - 1], ids[i - 1])) {
    scores[i] = scores[i - 1];
    ids[i] = ids[i - 1];
    --i;
  }
  scores[i] = score;
  ids[i] = id;
}

/** x[0..n) becomes its log-softmax. */
ASRDEC_HD_INLINE void log_softmax_in_place(float* x, std::int32_t n) {
  LogSumExp lse = lse_identity();
  for (std::int32_t i = 0; i < n; ++i) lse = lse_add(lse, x[i]);
  const float norm = lse.max + logf(lse.sum);
  for (std::int32_t i = 0; i < n; ++i) x[i] -= norm;
}

/** How fusion enters the beam (the beam-search paper, section on blank scoring and pruning). */
struct BeamFusionRule {
  bool active = false;       ///< an LM or a boosting tree is fused
  bool late = true;          ///< late pruning: fused scores of the whole vocabulary, then top-K; early: ASR top-K first
  bool blank_full = true;    ///< lm_weighted_full blank scoring, else none
  float lambda = 0.0f;       ///< Σ of the fusion weights (α + β)
  float blank_clamp = 0.0f;  ///< eps: p_blank is clamped to 1 - eps before ln(1 - p_blank)
};

/** What fusion adds to every token's log-probability besides its own LM and boosting scores: λ·ln(1 - p_blank)
 *  under lm_weighted_full (p_blank clamped to 1 - eps), else 0. */
ASRDEC_HD_INLINE float beam_token_offset(const BeamFusionRule& rule, float logp_blank) {
  if (!rule.active || !rule.blank_full) return 0.0f;
  float p_blank = expf(logp_blank);
  const float cap = 1.0f - rule.blank_clamp;
  if (p_blank > cap) p_blank = cap;
  return weighted(rule.lambda, logf(1.0f - p_blank));
}

/** The fused score of blank: (1 + λ)·ln p_blank under lm_weighted_full, else ln p_blank. */
ASRDEC_HD_INLINE float beam_blank_score(const BeamFusionRule& rule, float logp_blank) {
  if (!rule.active || !rule.blank_full) return logp_blank;
  return weighted(1.0f + rule.lambda, logp_blank);
}

/** The fused score of a token: its log-probability + the blank-scoring offset + α·LM + β·boost (`bonus`), added in
 *  this order. Without fusion, the log-probability. */
ASRDEC_HD_INLINE float beam_token_score(const BeamFusionRule& rule, float logp, float offset, float bonus) {
  if (!rule.active) return logp;
  return (logp + offset) + bonus;
}

}  // namespace asrdec::detail

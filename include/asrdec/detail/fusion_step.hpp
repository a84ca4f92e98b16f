#pragma once
// Shallow fusion of an n-gram LM into greedy decoding, the rules shared by the CPU loops and the CUDA kernels.
// The LM never scores blank and never decides blank versus non-blank: only once the acoustic model has chosen a
// non-blank token is the token re-chosen among the non-blank ones by acoustic score + weight * LM score.

#include <cstdint>

#include "asrdec/detail/hd.hpp"

namespace asrdec::detail {

/** weight * score, rounded once. On the device the product is kept out of fused multiply-adds so that
 *  `acoustic + weighted(...)` rounds exactly as on the CPU. */
ASRDEC_HD_INLINE float weighted(float weight, float score) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(weight, score);
#else
  return weight * score;
#endif
}

/** The per-utterance LM side of a greedy decode, struct-of-arrays over the batch. `scores`/`next` hold the
 *  full-vocabulary query of each utterance's current `state` (row stride V). */
struct LmFusionRef {
  const float* scores;       ///< [B, V] ln p(token | state)
  const std::int32_t* next;  ///< [B, V] the state each token leads to
  std::int32_t* state;       ///< [B] current LM state
  float* total;              ///< [B] sum of weighted LM scores of the emitted tokens
  float weight;              ///< α
  std::int32_t vocab;        ///< V
};

/** Utterance b emitted `token`: its weighted LM score is added and its LM state moves on. */
ASRDEC_HD_INLINE void lm_fusion_emit(const LmFusionRef& f, std::int64_t b, std::int32_t token) {
  const std::int64_t at = b * f.vocab + token;
  f.total[b] += weighted(f.weight, f.scores[at]);
  f.state[b] = f.next[at];
}

}  // namespace asrdec::detail

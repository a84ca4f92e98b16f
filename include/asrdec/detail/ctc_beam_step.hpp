#pragma once
// One frame of batched CTC beam search, the scoring rule shared by the CPU loop and the CUDA kernels.

#include <cstdint>

#include "asrdec/detail/fusion_step.hpp"
#include "asrdec/detail/hd.hpp"

namespace asrdec::detail {

struct CtcBeamRule {
  std::int32_t blank;
  float beta;  ///< insertion bonus per emitted token
};

/** What column v adds to a hypothesis whose last label is `last` (slot `slot` of the fusion queries): its
 *  log-probability, plus β and the fusion bonus when v emits a token (not blank, not a repeat of `last`). */
ASRDEC_HD_INLINE float ctc_beam_extension(const CtcBeamRule& rule, const FusionRef& fusion, std::int64_t slot,
                                          std::int32_t last, std::int32_t v, float logp) {
  if (v == rule.blank || v == last) return logp;
  const float bonus = fusion.active() ? fusion_bonus(fusion, slot, v) : 0.0f;
  return (logp + rule.beta) + bonus;
}

}  // namespace asrdec::detail

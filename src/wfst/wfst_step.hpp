#pragma once
// The per-token rules of WFST beam search, shared by the CPU executor and the CUDA kernels so both keep the same
// tokens: the cost of taking an arc, which of two ways into a state wins (recombination), and the max_active cut
// by a cost histogram.

#include <cstdint>

#include "asrdec/detail/float16.hpp"
#include "asrdec/detail/hd.hpp"
#include "asrdec/detail/rounded.hpp"

namespace asrdec::detail {

// Costs round once per operation on both executors (asrdec/detail/rounded.hpp), so the CPU and CUDA executors compute
// bit-identical costs.

/** Times a frame that outgrows max_tokens_per_frame is decoded again with half the beam. */
constexpr int kWfstBeamTightenings = 8;

/** Bins of the max_active cost histogram over [best, cutoff). */
constexpr std::int32_t kWfstHistogramBins = 255;

/** The acoustic cost of consuming a frame's column with log-probability `logp` (an impossible column stays
 *  impossible whatever the scale, 0 included). */
ASRDEC_HD_INLINE float wfst_acoustic_cost(float acoustic_scale, float logp) {
  if (logp == -__builtin_huge_valf()) return __builtin_huge_valf();
  return rounded_mul(-acoustic_scale, logp);
}

/** The cost of a way in along an emitting arc: the predecessor's cost, the arc's weight less its word's boost,
 *  then the acoustic cost (in this order). */
ASRDEC_HD_INLINE float wfst_emitting_way(float from, float weight, float boost, float acoustic) {
  return rounded_add(rounded_add(from, rounded_sub(weight, boost)), acoustic);
}

/** The cost of a way in along an ε-arc. */
ASRDEC_HD_INLINE float wfst_epsilon_way(float from, float weight, float boost) {
  return rounded_add(from, rounded_sub(weight, boost));
}

/** Recombination: a way into a state with total `cost`, `depth` ε-arcs after the frame's emitting arc (0 for an
 *  emitting arc or the start) and last arc `arc` (-1: the start) beats the state's current one when it is cheaper;
 *  as cheap, with fewer ε-arcs; then through a lower arc id. Arc ids identify the predecessor (an arc has one source
 *  state, which holds one token per frame), so the winner never depends on the order ways are tried; depth makes
 *  back-pointers within a frame acyclic even when float rounding makes a way round an ε-cycle cost nothing. */
ASRDEC_HD_INLINE bool wfst_better(float cost, std::int32_t depth, std::int64_t arc, float best_cost,
                                  std::int32_t best_depth, std::int64_t best_arc) {
  return cost < best_cost || (cost == best_cost && (depth < best_depth || (depth == best_depth && arc < best_arc)));
}

/** The ε-closure's relaxation cap, tested before each round: the closure stops (and the frame counts as an overflow)
 *  once its rounds have relaxed the ε-arcs of more than 1024 tokens per token of the frame list, plus 2^20. ε-cycles
 *  cost more than 0 (checked at load, and with boosts), so only float rounding on a nearly free cycle can reach it. */
ASRDEC_HD_INLINE bool wfst_closure_cut(std::int64_t relaxed, std::int64_t tokens) {
  return relaxed > 1024 * tokens + (std::int64_t{1} << 20);
}

/** A cost as an unsigned key that orders like the float (−0 as +0), for atomicMin on packed keys. */
ASRDEC_HD_INLINE std::uint32_t wfst_ordered_cost(float cost) {
  std::uint32_t bits = float_to_bits(cost);
  if (bits == 0x80000000u) bits = 0;
  return (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
}

/** The inverse of wfst_ordered_cost. */
ASRDEC_HD_INLINE float wfst_cost_of_ordered(std::uint32_t key) {
  const std::uint32_t bits = (key & 0x80000000u) != 0 ? key & 0x7fffffffu : ~key;
  return bits_to_float(bits);
}

/** One step of a path (the start excluded): the arc taken and the frames consumed after it (WfstToken::frame). */
struct WfstPathStep {
  std::int32_t arc;
  std::int32_t frame;
};

/** The histogram bin of a token cost in [best, best + range) (range > 0): 0 … kWfstHistogramBins − 1. */
ASRDEC_HD_INLINE std::int32_t wfst_cost_bin(float cost, float best, float range) {
  const float position = (cost - best) / range * static_cast<float>(kWfstHistogramBins);
  if (!(position > 0.0f)) return 0;
  // Compared before the conversion: a position past int32 (a range that rounds to 0, or an infinite cost) is undefined
  // to convert on the CPU, where a GPU saturates; both executors take the last bin.
  if (!(position < static_cast<float>(kWfstHistogramBins))) return kWfstHistogramBins - 1;
  return static_cast<std::int32_t>(position);
}

/** max_active: given the token count per bin, the last bin to keep — the first at which the running count reaches
 *  max_active (so at least max_active tokens stay, the whole of that bin included). */
ASRDEC_HD_INLINE std::int32_t wfst_last_kept_bin(const std::int64_t* counts, std::int64_t max_active) {
  std::int64_t seen = 0;
  for (std::int32_t bin = 0; bin < kWfstHistogramBins; ++bin) {
    seen += counts[bin];
    if (seen >= max_active) return bin;
  }
  return kWfstHistogramBins - 1;
}

}  // namespace asrdec::detail

#pragma once
// Internal: recombination of WFST tokens by one 64-bit minimum — the rule of wfst_better (lower cost, then fewer
// ε-arcs since the frame's emitting arc, then lower arc id) as an unsigned key that a parallel frame step keeps with
// atomicMin.
//
// The frame step offers ways in rounds (wfst_lane_step.hpp): round 0 the emitting arcs, round r the r-th round of
// the ε-closure, so every way offered in one round has the same ε-depth, the round's number. A way offered in a round
// is keyed (ordered cost, arc + 1); once the round is over, the winners are frozen to (ordered cost, 0). A frozen way
// then beats an offer of a later round at the same cost (it is shallower) and loses only to a cheaper one; within a
// round, offers compare by cost, then arc. That is wfst_better exactly, whatever the order of the offers.

#include <cstdint>

#include "asrdec/detail/hd.hpp"
#include "wfst/wfst_step.hpp"

namespace asrdec::detail {

/** No way in yet. */
constexpr std::uint64_t kWfstNoWay = ~std::uint64_t{0};

/** The key of a way of cost `cost` along `arc` (-1: the start), offered in the current round. */
ASRDEC_HD_INLINE std::uint64_t wfst_way_key(float cost, std::int64_t arc) {
  return static_cast<std::uint64_t>(wfst_ordered_cost(cost)) << 32 | static_cast<std::uint64_t>(arc + 1);
}

/** The key of a frozen way of cost `cost` (set in an earlier round). */
ASRDEC_HD_INLINE std::uint64_t wfst_frozen_key(std::uint64_t key) { return key & 0xffffffff00000000u; }

/** Whether a key was offered in the current round (not frozen): its way's arc is wfst_key_arc. */
ASRDEC_HD_INLINE bool wfst_key_is_fresh(std::uint64_t key) { return (key & 0xffffffffu) != 0; }

/** The arc of a fresh key (-1: the start). */
ASRDEC_HD_INLINE std::int64_t wfst_key_arc(std::uint64_t key) {
  return static_cast<std::int64_t>(key & 0xffffffffu) - 1;
}

/** The cost a key orders by (−0 comes back as +0: take a token's cost from its way, not from its key). */
ASRDEC_HD_INLINE float wfst_key_cost(std::uint64_t key) {
  return wfst_cost_of_ordered(static_cast<std::uint32_t>(key >> 32));
}

}  // namespace asrdec::detail

#pragma once
// Internal: a lane's frame tokens by graph state — an open-addressing table of 2C slots for at most C tokens, so the
// lane's memory grows with the tokens a frame holds, not with the graph's states. Inserting is lock-free: the first
// thread to claim a slot for a state (compare-and-swap on the slot's state) numbers the token (an atomic add on the
// count), and every way into the state is recombined by an atomic minimum on the slot's key (wfst_lane_key.hpp); no
// thread waits for another. `Exec` supplies the atomics (a CUDA block, or the host emulation of the tests).

#include <cstdint>

#include "asrdec/detail/hd.hpp"
#include "wfst/lane_step/wfst_lane_key.hpp"

namespace asrdec::detail {

/** One lane's table and its tokens' slots. Slots are empty (state -1, key kWfstNoWay) between frames. */
struct WfstLaneTable {
  std::int32_t* state;    ///< [slots] the state a slot holds, -1: empty
  std::int32_t* token;    ///< [slots] its token number (written by the thread that claimed the slot)
  std::uint64_t* key;     ///< [slots] the best way in so far
  std::int32_t* round;    ///< [slots] the last round whose offers changed the key (-1: none)
  std::int32_t* slot_of;  ///< [capacity] the slot of token i
  std::int32_t* count;    ///< tokens numbered so far (may pass capacity: the frame then does not fit)
  std::int32_t slots;     ///< a power of two, 2 · capacity
  std::int32_t capacity;
};

/** The most tokens of a lane's fast frame (wfst_lane_layout.hpp), whose table is then one of few tokens in the
 *  executor's fast memory. */
constexpr std::int32_t kWfstFastTokens = 512;

/** The first slot to probe for `state` (Fibonacci hashing: graph states come in runs). */
ASRDEC_HD_INLINE std::int32_t wfst_table_home(const WfstLaneTable& t, std::int32_t state) {
  return static_cast<std::int32_t>((static_cast<std::uint32_t>(state) * 2654435769u) &
                                   static_cast<std::uint32_t>(t.slots - 1));
}

/** The slot of `state`, or -1 when the table has none. */
ASRDEC_HD_INLINE std::int32_t wfst_table_find(const WfstLaneTable& t, std::int32_t state) {
  for (std::int32_t i = 0, s = wfst_table_home(t, state); i < t.slots; ++i, s = (s + 1) & (t.slots - 1)) {
    const std::int32_t held = t.state[s];
    if (held == state) return s;
    if (held < 0) return -1;
  }
  return -1;
}

/** What an offer did. */
struct WfstOffer {
  std::int32_t slot;  ///< the state's slot; -1: no room (the frame has more than `capacity` tokens)
  bool improved;      ///< the key went down: this way is now the state's way in
};

/** Offers a way with `key` into `state`: claims a slot (numbering a new token) when the state has none, then keeps
 *  the smaller key. A token numbered past `capacity` gets no slot of its own in slot_of, and the offer returns slot
 *  -1 (the caller gives the frame up). */
template <class Exec>
ASRDEC_HD WfstOffer wfst_table_offer(const WfstLaneTable& t, Exec& exec, std::int32_t state, std::uint64_t key) {
  for (std::int32_t i = 0, s = wfst_table_home(t, state); i < t.slots; ++i, s = (s + 1) & (t.slots - 1)) {
    // A compare-and-swap reads the slot's state as a load would, and claims it when empty: one trip to memory.
    std::int32_t held = exec.atomic_cas(&t.state[s], -1, state);
    if (held < 0) {  // claimed: number the token
      const std::int32_t token = exec.atomic_add(t.count, 1);
      if (token >= t.capacity) return WfstOffer{-1, false};
      t.token[s] = token;
      t.slot_of[token] = s;
      held = state;
    }
    if (held != state) continue;
    const std::uint64_t before = exec.atomic_min(&t.key[s], key);
    return WfstOffer{s, key < before};
  }
  return WfstOffer{-1, false};
}

/** Puts `value` (as the token number) into `state`'s slot of a table that holds each state once (no keys kept). */
template <class Exec>
ASRDEC_HD void wfst_table_put(const WfstLaneTable& t, Exec& exec, std::int32_t state, std::int32_t value) {
  for (std::int32_t i = 0, s = wfst_table_home(t, state); i < t.slots; ++i, s = (s + 1) & (t.slots - 1)) {
    if (exec.atomic_cas(&t.state[s], -1, state) < 0) {
      t.token[s] = value;
      t.slot_of[value] = s;
      return;
    }
  }
}

/** Empties the slot `slot` (as wfst_table_clear does for each token's). */
ASRDEC_HD_INLINE void wfst_table_empty_slot(const WfstLaneTable& t, std::int32_t slot) {
  t.state[slot] = -1;
  t.key[slot] = kWfstNoWay;
  t.round[slot] = -1;
}

/** Empties the slots of the frame's tokens (the table is then as new; every slot when tokens were numbered past
 *  capacity, whose slots slot_of does not list), `count` reset; returns true, after a barrier. Nothing to do, and
 *  no barrier, when the table is empty already (returns false): every thread reads the same count, which changes
 *  only in phases that end with a barrier, and the caller must not change it or the table's view before its next
 *  barrier (until then, a thread may still be reading them here): WfstLaneStep's best-way pass, which may follow at
 *  once, reads neither. */
template <class Exec>
ASRDEC_HD bool wfst_table_clear(const WfstLaneTable& t, Exec& exec) {
  const std::int32_t count = exec.load(t.count);
  if (count == 0) return false;
  const bool all = count > t.capacity;
  exec.for_each(all ? t.slots : count,
                [&](std::int64_t i) { wfst_table_empty_slot(t, all ? static_cast<std::int32_t>(i) : t.slot_of[i]); });
  exec.barrier();
  exec.single([&] { *t.count = 0; });
  exec.barrier();
  return true;
}

}  // namespace asrdec::detail

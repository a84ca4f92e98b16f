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

/** The two tables a lane's frame may use: `full` in the lane's memory, for up to the lane's capacity, and `fast` in the
 *  executor's fast memory (a CUDA block's shared memory), for few tokens (capacity 0: none). A frame whose previous
 *  frame kept few active tokens uses `fast`, where every probe and atomic is a shared-memory access instead of a trip
 *  to L2, and starts again in `full` when it outgrows `fast` (WfstLaneStep::advance): the same tokens either way.
 *  Both are empty between frames, the one not in use always. */
struct WfstLaneTableChoice {
  WfstLaneTable full;
  WfstLaneTable fast;
};

/** The most tokens of a fast table (its storage, wfst_fast_table_bytes, is static in a CUDA block). */
constexpr std::int32_t kWfstFastTokens = 512;

/** Bytes of a fast table of `capacity` tokens: 2 · capacity slots of state, token, key and round, and slot_of. */
ASRDEC_HD_INLINE constexpr std::int64_t wfst_fast_table_bytes(std::int32_t capacity) {
  return static_cast<std::int64_t>(capacity) * (2 * (4 + 4 + 8 + 4) + 4);
}

/** The fast table of `capacity` tokens in `storage` (wfst_fast_table_bytes; every byte 0xff: empty, 8-byte
 *  aligned), counting in `count`; none (capacity 0) without storage. */
ASRDEC_HD_INLINE WfstLaneTable wfst_fast_table(unsigned char* storage, std::int32_t capacity, std::int32_t* count) {
  if (storage == nullptr || capacity == 0)
    return WfstLaneTable{nullptr, nullptr, nullptr, nullptr, nullptr, count, 0, 0};
  const std::int64_t slots = 2 * static_cast<std::int64_t>(capacity);
  auto* key = reinterpret_cast<std::uint64_t*>(storage);  // first: the 8-byte values stay aligned
  auto* state = reinterpret_cast<std::int32_t*>(storage + slots * 8);
  return WfstLaneTable{
      state,   state + slots, key, state + 2 * slots, state + 3 * slots, count, static_cast<std::int32_t>(slots),
      capacity};
}

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
 *  barrier (until then, a thread may still be reading them here). */
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

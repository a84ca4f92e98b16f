#pragma once
// Internal: one lane's memory — every array of the frame step (wfst_lane_step.hpp) and of the history
// (wfst_lane_history.hpp) carved out of one block of bytes, sized by the tokens a frame may hold (`capacity`) and the
// back-pointers an utterance keeps (`history`), never by the graph's states. The CUDA executor allocates lanes × bytes
// and the host emulation of the tests one lane, both through this layout. Every byte 0xff is an empty lane (no state
// in any slot, no way in), which is how a lane is left after each utterance.

#include <cstddef>
#include <cstdint>

#include "asrdec/detail/hd.hpp"
#include "wfst/lane_step/wfst_lane_history.hpp"

namespace asrdec::detail {

/** Default tokens a lane holds per frame (a frame with more goes to the CPU executor, exactly). */
constexpr std::int32_t kWfstLaneTokens = 1 << 14;
/** Default back-pointers a lane keeps per utterance after collection. */
constexpr std::int32_t kWfstLaneHistory = 1 << 16;

/** Byte offsets of one lane's arrays. */
struct WfstLaneLayout {
  std::int32_t capacity = 0;  ///< tokens per frame (a power of two)
  std::int32_t history = 0;   ///< arena entries
  std::int32_t columns = 0;   ///< the frame's columns the graph reads
  std::int32_t width = 0;     ///< threads of a lane (a collection moves this many entries a round)
  /** Tokens of the lane's fast table (WfstLaneTableChoice), whose storage the executor supplies: half the capacity,
   *  up to the fast tokens asked for (0: none). */
  std::int32_t fast_capacity = 0;
  std::int64_t table_state = 0, table_token = 0, table_key = 0, table_round = 0, table_slot_of = 0;
  std::int64_t cost = 0, arc = 0, prev = 0, local = 0, active = 0, snapshot0 = 0, snapshot1 = 0, frontier0 = 0,
               frontier1 = 0, scan = 0;
  std::int64_t way_arc = 0, way_cost = 0;  ///< 2 · capacity kept emitting ways
  std::int64_t kept = 0;
  std::int64_t next_state = 0, next_cost = 0, next_index = 0, by_state_state = 0, by_state_token = 0,
               by_state_slot_of = 0;
  std::int64_t entries = 0, scratch = 0, carry = 0, frame_logp = 0;
  std::int64_t bytes = 0;  ///< of the lane, a multiple of 256
};

/** The layout of a lane of `capacity` tokens (rounded up to a power of two), `history` back-pointers, `columns`,
 *  `width` threads and a fast table of up to `fast_tokens` (a power of two up to kWfstFastTokens, or 0). */
inline WfstLaneLayout wfst_lane_layout(std::int32_t capacity, std::int32_t history, std::int32_t columns,
                                       std::int32_t width, std::int32_t fast_tokens = kWfstFastTokens) {
  WfstLaneLayout l;
  l.capacity = 1;
  while (l.capacity < capacity) l.capacity *= 2;
  l.history = history;
  l.columns = columns;
  l.width = width;
  // At most kWfstFastTokens whatever is asked: the CUDA block's storage holds no more.
  const std::int32_t fast = fast_tokens < kWfstFastTokens ? fast_tokens : kWfstFastTokens;
  l.fast_capacity = l.capacity / 2 < fast ? l.capacity / 2 : fast;
  const std::int64_t c = l.capacity, slots = 2 * c, h = history;
  std::int64_t at = 0;
  const auto take = [&](std::int64_t& offset, std::int64_t bytes) {
    offset = at;
    at += (bytes + 15) / 16 * 16;
  };
  take(l.table_state, slots * 4);
  take(l.table_token, slots * 4);
  take(l.table_key, slots * 8);
  take(l.table_round, slots * 4);
  take(l.table_slot_of, c * 4);
  take(l.cost, c * 4);
  take(l.arc, c * 8);
  take(l.prev, c * 8);
  take(l.local, c * 4);
  take(l.active, c * 4);
  take(l.snapshot0, c * 4);
  take(l.snapshot1, c * 4);
  take(l.frontier0, c * 4);
  take(l.frontier1, c * 4);
  take(l.scan, (c + 1) * 8);
  take(l.way_arc, 2 * c * 4);
  take(l.way_cost, 2 * c * 4);
  take(l.kept, c * 4);
  take(l.next_state, c * 4);
  take(l.next_cost, c * 4);
  take(l.next_index, c * 8);
  take(l.by_state_state, slots * 4);
  take(l.by_state_token, slots * 4);
  take(l.by_state_slot_of, c * 4);
  take(l.entries, h * static_cast<std::int64_t>(sizeof(WfstArenaEntry)));
  take(l.scratch, h * 4);
  take(l.carry, static_cast<std::int64_t>(width) * static_cast<std::int64_t>(sizeof(WfstArenaEntry)));
  take(l.frame_logp, static_cast<std::int64_t>(columns) * 4);
  l.bytes = (at + 255) / 256 * 256;
  return l;
}

/** Whether a frame of `columns` floats fits a lane block's shared memory beside its `static_bytes`, under `limit`
 *  bytes a block (the device's default, without opting in to more); the frame then lies there, not in the lane's
 *  frame_logp. */
inline bool wfst_frame_in_shared(std::size_t static_bytes, std::int32_t columns, std::size_t limit) {
  return columns > 0 && static_bytes <= limit && static_cast<std::size_t>(columns) * 4 <= limit - static_bytes;
}

/** A lane's arrays at `base` (l.bytes bytes), the table's count at `count` and the fast table at `fast` (the
 *  executor's fast memory; wfst_fast_table_bytes(l.fast_capacity) bytes, or null: none). */
struct WfstLaneViews {
  WfstLaneTable table;  ///< the frame's: one of `tables`, the full one between rows
  WfstLaneTableChoice tables;
  WfstLaneTokens tokens;
  WfstStoreArrays store;
  WfstLaneHistory history;
  WfstLaneNext next;
  float* frame_logp;
};

ASRDEC_HD_INLINE WfstLaneViews wfst_lane_views(const WfstLaneLayout& l, unsigned char* base, std::int32_t* count,
                                               unsigned char* fast) {
  const auto at = [&](std::int64_t offset) { return static_cast<void*>(base + offset); };
  WfstLaneViews v{};
  v.table = WfstLaneTable{static_cast<std::int32_t*>(at(l.table_state)),
                          static_cast<std::int32_t*>(at(l.table_token)),
                          static_cast<std::uint64_t*>(at(l.table_key)),
                          static_cast<std::int32_t*>(at(l.table_round)),
                          static_cast<std::int32_t*>(at(l.table_slot_of)),
                          count,
                          2 * l.capacity,
                          l.capacity};
  v.tables = WfstLaneTableChoice{v.table, wfst_fast_table(fast, l.fast_capacity, count)};
  v.tokens = WfstLaneTokens{static_cast<float*>(at(l.cost)),
                            static_cast<std::int64_t*>(at(l.arc)),
                            static_cast<std::int64_t*>(at(l.prev)),
                            static_cast<std::int32_t*>(at(l.local)),
                            static_cast<std::int32_t*>(at(l.active)),
                            {static_cast<float*>(at(l.snapshot0)), static_cast<float*>(at(l.snapshot1))},
                            {static_cast<std::int32_t*>(at(l.frontier0)), static_cast<std::int32_t*>(at(l.frontier1))},
                            static_cast<std::int64_t*>(at(l.scan)),
                            static_cast<std::int32_t*>(at(l.way_arc)),
                            static_cast<float*>(at(l.way_cost)),
                            2 * l.capacity};
  v.store = WfstStoreArrays{static_cast<std::int32_t*>(at(l.kept))};
  v.history = WfstLaneHistory{static_cast<WfstArenaEntry*>(at(l.entries)), static_cast<std::int32_t*>(at(l.scratch)),
                              static_cast<WfstArenaEntry*>(at(l.carry)), l.history, l.width};
  v.next = WfstLaneNext{
      static_cast<std::int32_t*>(at(l.next_state)), static_cast<float*>(at(l.next_cost)),
      static_cast<std::int64_t*>(at(l.next_index)),
      WfstLaneTable{static_cast<std::int32_t*>(at(l.by_state_state)), static_cast<std::int32_t*>(at(l.by_state_token)),
                    nullptr, nullptr, static_cast<std::int32_t*>(at(l.by_state_slot_of)), nullptr, 2 * l.capacity,
                    l.capacity}};
  v.frame_logp = static_cast<float*>(at(l.frame_logp));
  return v;
}

}  // namespace asrdec::detail

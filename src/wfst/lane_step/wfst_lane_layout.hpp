#pragma once
// Internal: one lane's memory — every array of the frame step (wfst_lane_step.hpp) and of the history
// (wfst_lane_history.hpp) carved out of one block of bytes, sized by the tokens a frame may hold (`capacity`) and the
// back-pointers an utterance keeps (`history`), never by the graph's states. The CUDA executor allocates lanes × bytes
// and the host emulation of the tests one lane, both through this layout. Every byte 0xff is an empty lane (no state
// in any slot, no way in), which is how a lane is left after each utterance.
//
// A frame's arrays come twice: the full frame in the lane's memory, and a fast frame of few tokens in the executor's
// fast memory (a CUDA block's shared memory), laid out alike (WfstFrameLayout). A frame that follows one of few active
// tokens runs wholly in the fast frame — its table, its tokens, the store's scratch — and the active tokens the next
// frame expands go to the fast frame's when they fit, so a small frame's chains of dependent loads are shared-memory
// reads, not trips to L2.

#include <cstddef>
#include <cstdint>

#include "asrdec/detail/hd.hpp"
#include "wfst/lane_step/wfst_lane_history.hpp"

namespace asrdec::detail {

/** Default tokens a lane holds per frame (a frame with more goes to the CPU executor, exactly). */
constexpr std::int32_t kWfstLaneTokens = 1 << 14;
/** Default back-pointers a lane keeps per utterance after collection. */
constexpr std::int32_t kWfstLaneHistory = 1 << 16;

/** Byte offsets of a frame's arrays (WfstLaneFrame) and of the active tokens the next frame expands (WfstLaneNext),
 *  for `capacity` tokens, from the start of the memory that holds them: the lane's memory, or a block's fast memory. */
struct WfstFrameLayout {
  std::int32_t capacity = 0;  ///< tokens (0: none, no bytes)
  std::int64_t table_state = 0, table_token = 0, table_key = 0, table_round = 0, table_slot_of = 0;
  std::int64_t cost = 0, arc = 0, prev = 0, local = 0, active = 0, snapshot0 = 0, snapshot1 = 0, frontier0 = 0,
               frontier1 = 0, scan = 0;
  std::int64_t way_arc = 0, way_cost = 0;  ///< 2 · capacity kept emitting ways
  std::int64_t kept = 0;
  std::int64_t next_state = 0, next_cost = 0, next_index = 0, by_state_state = 0, by_state_token = 0,
               by_state_slot_of = 0;
  std::int64_t bytes = 0;  ///< a multiple of 16
  /** Bytes left unused after each array (0; the tests' guards, which a write past an array's end would change). */
  std::int64_t guard = 0;
};

/** `bytes` rounded up to 16: each array of a layout starts 16-byte aligned, so the 8-byte ones stay aligned wherever
 *  the memory starts on 16 bytes. */
ASRDEC_HD_INLINE constexpr std::int64_t wfst_aligned16(std::int64_t bytes) { return (bytes + 15) / 16 * 16; }

/** The frame layout of `capacity` tokens (a power of two, or 0), with `guard` unused bytes (a multiple of 16) after
 *  each array: 0 but in the tests, whose guards show a write past an array's end. */
ASRDEC_HD_INLINE constexpr WfstFrameLayout wfst_frame_layout(std::int32_t capacity, std::int64_t guard = 0) {
  WfstFrameLayout f;
  if (capacity <= 0) return f;
  f.capacity = capacity;
  f.guard = guard;
  const std::int64_t c = capacity, slots = 2 * c;
  std::int64_t at = 0;
  const auto take = [&at, guard](std::int64_t bytes) {
    const std::int64_t offset = at;
    at += wfst_aligned16(bytes) + guard;
    return offset;
  };
  f.table_state = take(slots * 4);
  f.table_token = take(slots * 4);
  f.table_key = take(slots * 8);
  f.table_round = take(slots * 4);
  f.table_slot_of = take(c * 4);
  f.cost = take(c * 4);
  f.arc = take(c * 8);
  f.prev = take(c * 8);
  f.local = take(c * 4);
  f.active = take(c * 4);
  f.snapshot0 = take(c * 4);
  f.snapshot1 = take(c * 4);
  f.frontier0 = take(c * 4);
  f.frontier1 = take(c * 4);
  f.scan = take((c + 1) * 8);
  f.way_arc = take(2 * c * 4);
  f.way_cost = take(2 * c * 4);
  f.kept = take(c * 4);
  f.next_state = take(c * 4);
  f.next_cost = take(c * 4);
  f.next_index = take(c * 8);
  f.by_state_state = take(slots * 4);
  f.by_state_token = take(slots * 4);
  f.by_state_slot_of = take(c * 4);
  f.bytes = at;
  return f;
}

/** Byte offsets of one lane's arrays. */
struct WfstLaneLayout {
  std::int32_t capacity = 0;  ///< tokens per frame (a power of two)
  std::int32_t history = 0;   ///< arena entries
  std::int32_t columns = 0;   ///< the frame's columns the graph reads
  std::int32_t width = 0;     ///< threads of a lane (a collection moves this many entries a round)
  /** Tokens of the lane's fast frame (WfstLaneFrames::fast, WfstLaneNexts::fast), whose memory the executor supplies
   *  (`fast.bytes` of it): half the capacity, up to the fast tokens asked for (0: none). */
  std::int32_t fast_capacity = 0;
  WfstFrameLayout frame;  ///< the full frame, at the start of the lane's memory
  WfstFrameLayout fast;   ///< the fast frame, in the executor's fast memory (no bytes: none)
  std::int64_t entries = 0, scratch = 0, carry = 0, frame_logp = 0;
  std::int64_t bytes = 0;  ///< of the lane, a multiple of 256
  std::int64_t guard = 0;  ///< unused bytes after each array (WfstFrameLayout::guard)
};

/** The layout of a lane of `capacity` tokens (rounded up to a power of two), `history` back-pointers, `columns`,
 *  `width` threads and a fast frame of up to `fast_tokens` (a power of two up to kWfstFastTokens, or 0); `guard`
 *  unused bytes after each array, the fast frame's too (WfstFrameLayout::guard: the tests'). */
inline WfstLaneLayout wfst_lane_layout(std::int32_t capacity, std::int32_t history, std::int32_t columns,
                                       std::int32_t width, std::int32_t fast_tokens = kWfstFastTokens,
                                       std::int64_t guard = 0) {
  WfstLaneLayout l;
  l.capacity = 1;
  while (l.capacity < capacity) l.capacity *= 2;
  l.history = history;
  l.columns = columns;
  l.width = width;
  const std::int32_t fast = fast_tokens < kWfstFastTokens ? fast_tokens : kWfstFastTokens;
  l.fast_capacity = l.capacity / 2 < fast ? l.capacity / 2 : fast;
  if (l.fast_capacity < 2) l.fast_capacity = 0;  // a frame would take it only after a frame of no active token
  l.guard = guard;
  l.frame = wfst_frame_layout(l.capacity, guard);
  l.fast = wfst_frame_layout(l.fast_capacity, guard);
  const std::int64_t h = history;
  std::int64_t at = l.frame.bytes;
  const auto take = [&](std::int64_t& offset, std::int64_t bytes) {
    offset = at;
    at += wfst_aligned16(bytes) + guard;
  };
  take(l.entries, h * static_cast<std::int64_t>(sizeof(WfstArenaEntry)));
  take(l.scratch, h * 4);
  take(l.carry, static_cast<std::int64_t>(width) * static_cast<std::int64_t>(sizeof(WfstArenaEntry)));
  take(l.frame_logp, static_cast<std::int64_t>(columns) * 4);
  l.bytes = (at + 255) / 256 * 256;
  return l;
}

/** The most fast tokens (a power of two, at most `asked`) whose fast frame fits `budget` bytes; 0 when fewer than 2
 *  would (a lane has no fast frame of 1 token, wfst_lane_layout). The fast frame comes first: the frame's values
 *  (wfst_frame_in_shared) take what it leaves. */
inline std::int32_t wfst_fast_tokens_within(std::size_t budget, std::int32_t asked) {
  std::int32_t tokens = 1;
  while (tokens * 2 <= asked) tokens *= 2;
  while (tokens >= 2 && static_cast<std::size_t>(wfst_frame_layout(tokens).bytes) > budget) tokens /= 2;
  return tokens >= 2 && asked >= 2 ? tokens : 0;
}

/** Whether a frame of `columns` floats fits a lane block's fast memory beside its fast frame of `fast_bytes`, within
 *  `budget` bytes (what the block may take without fewer blocks running at once); the frame then lies there, not in
 *  the lane's frame_logp. */
inline bool wfst_frame_in_shared(std::size_t budget, std::int64_t fast_bytes, std::int32_t columns) {
  return columns > 0 && static_cast<std::size_t>(fast_bytes) <= budget &&
         static_cast<std::size_t>(columns) * 4 <= budget - static_cast<std::size_t>(fast_bytes);
}

/** A frame's arrays and the next frame's active tokens at `base` (laid out by `f`; none when f has no tokens), the
 *  frame's table counting in `count`. */
struct WfstFrameViews {
  WfstLaneFrame frame;
  WfstLaneNext next;
};

ASRDEC_HD_INLINE WfstFrameViews wfst_frame_views(const WfstFrameLayout& f, unsigned char* base, std::int32_t* count) {
  WfstFrameViews v{};
  if (base == nullptr || f.capacity == 0) {
    v.frame.table = WfstLaneTable{nullptr, nullptr, nullptr, nullptr, nullptr, count, 0, 0};
    v.next.by_state = WfstLaneTable{nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0, 0};
    return v;
  }
  const auto at = [&](std::int64_t offset) { return static_cast<void*>(base + offset); };
  v.frame.table = WfstLaneTable{static_cast<std::int32_t*>(at(f.table_state)),
                                static_cast<std::int32_t*>(at(f.table_token)),
                                static_cast<std::uint64_t*>(at(f.table_key)),
                                static_cast<std::int32_t*>(at(f.table_round)),
                                static_cast<std::int32_t*>(at(f.table_slot_of)),
                                count,
                                2 * f.capacity,
                                f.capacity};
  v.frame.tokens =
      WfstLaneTokens{static_cast<float*>(at(f.cost)),
                     static_cast<std::int64_t*>(at(f.arc)),
                     static_cast<std::int64_t*>(at(f.prev)),
                     static_cast<std::int32_t*>(at(f.local)),
                     static_cast<std::int32_t*>(at(f.active)),
                     {static_cast<float*>(at(f.snapshot0)), static_cast<float*>(at(f.snapshot1))},
                     {static_cast<std::int32_t*>(at(f.frontier0)), static_cast<std::int32_t*>(at(f.frontier1))},
                     static_cast<std::int64_t*>(at(f.scan)),
                     static_cast<std::int32_t*>(at(f.way_arc)),
                     static_cast<float*>(at(f.way_cost)),
                     2 * f.capacity,
                     static_cast<std::int32_t*>(at(f.kept))};
  v.next = WfstLaneNext{
      static_cast<std::int32_t*>(at(f.next_state)), static_cast<float*>(at(f.next_cost)),
      static_cast<std::int64_t*>(at(f.next_index)),
      WfstLaneTable{static_cast<std::int32_t*>(at(f.by_state_state)), static_cast<std::int32_t*>(at(f.by_state_token)),
                    nullptr, nullptr, static_cast<std::int32_t*>(at(f.by_state_slot_of)), nullptr, 2 * f.capacity,
                    f.capacity}};
  return v;
}

/** A lane's arrays at `base` (l.bytes bytes), the frame tables' count at `count` and the fast frame at `fast` (the
 *  executor's fast memory, 16-byte aligned: l.fast.bytes bytes, or null: none). The frame's arrays are the full
 *  ones. */
struct WfstLaneViews {
  WfstLaneFrame frame;  ///< the frame's: one of `frames`, the full one between rows
  WfstLaneFrames frames;
  WfstLaneNexts next;
  WfstLaneHistory history;
  float* frame_logp;
};

ASRDEC_HD_INLINE WfstLaneViews wfst_lane_views(const WfstLaneLayout& l, unsigned char* base, std::int32_t* count,
                                               unsigned char* fast) {
  const WfstFrameViews full = wfst_frame_views(l.frame, base, count);
  const WfstFrameViews quick = wfst_frame_views(l.fast, fast, count);
  WfstLaneViews v{};
  v.frame = full.frame;
  v.frames = WfstLaneFrames{full.frame, quick.frame};
  v.next = WfstLaneNexts{full.next, quick.next};
  v.history = WfstLaneHistory{reinterpret_cast<WfstArenaEntry*>(base + l.entries),
                              reinterpret_cast<std::int32_t*>(base + l.scratch),
                              reinterpret_cast<WfstArenaEntry*>(base + l.carry), l.history, l.width};
  v.frame_logp = reinterpret_cast<float*>(base + l.frame_logp);
  return v;
}

}  // namespace asrdec::detail

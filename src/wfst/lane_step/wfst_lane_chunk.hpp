#pragma once
// Internal: one chunk of a stream through one lane — the streaming counterpart of wfst_lane_decode.hpp. A stream's
// state between chunks (a channel: its arena of stored tokens, the arena indices of its active tokens, a few counters)
// lives in memory that outlives the lane, so any lane can continue any stream; the lane's own arrays are scratch and
// are left empty after each chunk. The result after a chunk is WfstSearcher::result's: partial (the best active
// token) or, on the last chunk, by the final rule over the last frame — which is why a chunk's last frame stores every
// token, not only the active ones and their ε-ancestors.
//
// A lane that cannot hold a frame (more tokens than the lane, live paths beyond the arena) stops before it; the
// channel is then as after the last frame stored, with `frames` saying how many, so the caller can continue the
// stream elsewhere (the CPU executor) from there, exactly.

#include <cstdint>

#include "asrdec/detail/hd.hpp"
#include "wfst/lane_step/wfst_lane_decode.hpp"
#include "wfst/lane_step/wfst_lane_history.hpp"
#include "wfst/lane_step/wfst_lane_layout.hpp"
#include "wfst/lane_step/wfst_lane_step.hpp"

namespace asrdec::detail {

/** A channel's counters. */
struct WfstChannelScalars {
  std::int32_t used;  ///< arena entries
  std::int32_t last_frame_begin;
  std::int32_t active_count;
  std::int32_t frames;  ///< frames consumed (0: only the start)
  std::int32_t overflow;
  std::int32_t collections;
};

/** A stream's state between chunks; its arena is the `entries` of the WfstLaneHistory the chunk is decoded with. */
struct WfstLaneChannel {
  std::int32_t* active;  ///< [lane capacity] arena indices of the tokens the next frame expands
  WfstChannelScalars* scalars;
};

/** Where a channel's arrays lie in a block of device memory (the CUDA executor keeps one block per open utterance):
 *  its arena of `history` entries, the arena indices of up to `capacity` active tokens, its counters. */
struct WfstChannelLayout {
  std::int32_t capacity = 0;
  std::int32_t history = 0;
  std::int64_t entries = 0, active = 0, scalars = 0;
  std::int64_t bytes = 0;  ///< of a channel, a multiple of 256
};

/** The channel layout for streams decoded on lanes of layout `l` (their token and arena capacities). */
inline WfstChannelLayout wfst_channel_layout(const WfstLaneLayout& l) {
  WfstChannelLayout c;
  c.capacity = l.capacity;
  c.history = l.history;
  c.entries = 0;
  c.active = c.entries + static_cast<std::int64_t>(l.history) * static_cast<std::int64_t>(sizeof(WfstArenaEntry));
  c.scalars = c.active + (static_cast<std::int64_t>(l.capacity) * 4 + 15) / 16 * 16;
  c.bytes = (c.scalars + static_cast<std::int64_t>(sizeof(WfstChannelScalars)) + 255) / 256 * 256;
  return c;
}

/** A channel's arena as a lane's history (the channel's entries, the lane's scratch and carry) and its other arrays. */
struct WfstChannelViews {
  WfstLaneHistory history;
  WfstLaneChannel channel;
};

ASRDEC_HD_INLINE WfstChannelViews wfst_channel_views(const WfstChannelLayout& c, const WfstLaneHistory& lane,
                                                     unsigned char* base) {
  WfstLaneHistory history = lane;
  history.entries = reinterpret_cast<WfstArenaEntry*>(base + c.entries);
  return WfstChannelViews{history, WfstLaneChannel{reinterpret_cast<std::int32_t*>(base + c.active),
                                                   reinterpret_cast<WfstChannelScalars*>(base + c.scalars)}};
}

/** Decodes `length` frames of a stream (`frames` as in wfst_lane_decode) on lane `v`, whose history arrays `history`
 *  hold the channel's arena: a new stream (`fresh`: the start first) or one continued from `channel`; `last`: the
 *  stream ends with this chunk. `out` gets the result's outcome, its path in the lane's history scratch (reversed). */
template <class Exec, class Frames>
ASRDEC_HD void wfst_lane_chunk(Exec& exec, const WfstLaneGraph& g, const WfstLaneConfig& c, const float* final_weight,
                               const float* boost, WfstLaneViews& v, const WfstLaneHistory& history,
                               const WfstLaneChannel& channel, WfstLaneShared& shared, bool fresh, bool last,
                               std::int32_t length, Frames& frames, WfstRowOutcome& out) {
  WfstLaneStep<Exec> step(g, c, v.frame, shared.step, boost, exec, &v.frames);
  WfstLaneHistoryOps<Exec> ops(g, v.frame, history, v.next, shared.history, exec);
  std::int32_t status = 0;
  bool overflow = false;
  std::int32_t frames_before = 0;
  // Each frame's values are filled before a barrier that precedes its step (wfst_lane_decode.hpp).
  const float* logp = nullptr;
  if (fresh) {
    ops.begin();
    step.start();
    status = shared.step.status;
    if (status == 0) {
      overflow = shared.step.closure_cut;
      if (length > 0) logp = frames.frame(exec, 0, v.frame_logp);
      ops.store(step.count(), 0, length == 0 || step.all_active(), step.numbering(), step.ways_cache());
      status = shared.history.status;
    }
  } else {
    if (length > 0) logp = frames.frame(exec, 0, v.frame_logp);
    const WfstChannelScalars before = *channel.scalars;
    ops.resume(before.used, before.last_frame_begin, before.collections, channel.active, before.active_count);
    overflow = before.overflow != 0;
    frames_before = before.frames;
  }
  std::int32_t stored = 0;  // frames of this chunk stored
  for (std::int32_t t = 0; t < length && status == 0; ++t) {
    const bool frame_overflow = step.advance(ops.active(), logp);
    status = shared.step.status;
    if (status != 0) break;
    if (t + 1 < length) logp = frames.frame(exec, t + 1, v.frame_logp);  // frame t's values are read
    ops.store(step.count(), frames_before + t + 1, t + 1 == length || step.all_active(), step.numbering(),
              step.ways_cache());
    status = shared.history.status;
    if (status != 0) break;
    overflow = overflow || frame_overflow;
    stored = t + 1;
  }
  // The channel as after the last frame stored (a start that did not fit leaves nothing to continue).
  const std::int64_t* active_index = ops.active().index;
  exec.for_each(shared.history.active_count,
                [&](std::int64_t a) { channel.active[a] = static_cast<std::int32_t>(active_index[a]); });
  exec.single([&] {
    *channel.scalars = WfstChannelScalars{
        shared.history.used, shared.history.last_frame_begin, shared.history.active_count, frames_before + stored,
        overflow ? 1 : 0,    shared.history.collections};
    out = WfstRowOutcome{status, 0, overflow ? 1 : 0, -1, __builtin_huge_valf(), 0, frames_before + stored, 0};
  });
  exec.barrier();
  if (status == 0) {
    bool reached_final = false;
    const std::int32_t best = ops.best_stored(last, final_weight, reached_final);
    if (best >= 0) {
      ops.trace_from(best);
      if (shared.history.path_length < 0) status = kWfstLanePathFull;
    }
    exec.single([&] {
      out.reached_final = reached_final ? 1 : 0;
      if (best < 0) return;
      const WfstArenaEntry entry = history.entries[best];
      out.last_state = wfst_entry_state(g, entry);
      out.cost = reached_final ? rounded_add(entry.cost, final_weight[out.last_state]) : entry.cost;
      out.path_length = shared.history.path_length;
      out.status = status;
    });
  }
  exec.barrier();
  step.finish();
  ops.clear_next();
}

}  // namespace asrdec::detail

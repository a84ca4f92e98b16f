#pragma once
// Internal (host): a stream a lane gave up on (wfst_lane_chunk.hpp), as the CPU executor's channel — the lane's arena
// of stored tokens becomes the channel's history (each token's state is its arc's next state, or the start), so the
// CPU executor continues the stream from the last frame the lane stored, with the same results as if it had decoded
// the stream from the start.

#include <algorithm>
#include <utility>
#include <vector>

#include "wfst/lane_step/wfst_lane_chunk.hpp"
#include "wfst/wfst_channel.hpp"

namespace asrdec::detail {

/** The channel of a stream whose lane state is `entries` [0, s.used), `active` [0, s.active_count) and `s`; empty
 *  (to be started again) when the lane stored nothing. */
inline WfstChannel wfst_channel_from_lane(const WfstGraph& graph, const WfstArenaEntry* entries,
                                          const WfstChannelScalars& s, const std::int32_t* active,
                                          std::vector<float> boost_by_word) {
  WfstChannel c;
  const WfstGraphArrays& a = graph.arrays();
  c.history.reserve(static_cast<std::size_t>(s.used));
  for (std::int32_t i = 0; i < s.used; ++i) {
    const WfstArenaEntry& e = entries[i];
    const std::int32_t state = e.arc < 0 ? a.start : a.next_state[static_cast<std::size_t>(e.arc)];
    c.history.push_back(WfstToken{state, e.frame, e.prev, e.arc, e.cost});
  }
  c.last_frame_begin = s.last_frame_begin;
  c.active.assign(active, active + s.active_count);
  c.boost_by_word = std::move(boost_by_word);
  c.frames = s.frames;
  c.overflow = s.overflow != 0;
  c.collections = s.collections;
  c.collect_at = std::max<std::int64_t>(kCollectHistoryAbove, 2 * static_cast<std::int64_t>(s.used));
  return c;
}

}  // namespace asrdec::detail

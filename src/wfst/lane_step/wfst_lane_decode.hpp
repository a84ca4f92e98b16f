#pragma once
// Internal: one whole utterance through one lane — the start, every frame (wfst_lane_step.hpp), the history
// (wfst_lane_history.hpp), the best token by the final rule and its path — as WfstSearcher::start, advance and
// result(final = true) compute it, bit for bit. The CUDA executor runs it in one thread block per lane
// (wfst_rows_kernel.cu); the tests run it in a host emulation (tests/wfst/wfst_lane_step_test.cpp).
//
// A lane that cannot hold the utterance (a frame with more tokens than the lane, live back-pointers beyond its arena,
// a path beyond its scratch) says so in the outcome's status, and its caller decodes the utterance elsewhere.

#include <cstdint>

#include "asrdec/detail/hd.hpp"
#include "wfst/lane_step/wfst_lane_history.hpp"
#include "wfst/lane_step/wfst_lane_layout.hpp"
#include "wfst/lane_step/wfst_lane_step.hpp"

namespace asrdec::detail {

/** What a lane found for one utterance; the path (path_length steps, reversed) is in the lane's history scratch. */
struct WfstRowOutcome {
  std::int32_t status;  ///< 0, or the lane status bits that stopped it
  std::int32_t reached_final;
  std::int32_t overflow;
  std::int32_t last_state;  ///< the best token's state
  float cost;               ///< its cost, plus the final weight when reached_final
  std::int32_t path_length;
  std::int32_t frames;       ///< frames consumed
  std::int64_t path_offset;  ///< where the caller put the path
};

/** The lane's scalars (a CUDA block's shared memory, or a host struct). */
struct WfstLaneShared {
  WfstLaneScalars step;
  WfstHistoryScalars history;
  std::int32_t count;  ///< the table's
};

/** Decodes `length` frames; `frames.frame(exec, t, scratch)` returns frame t's log-probabilities (every thread of the
 *  lane calls it, and it may fill `scratch` without a barrier: it is called once the last frame's step is done, before
 *  the barrier that ends the last frame's store, and frame t's step reads the values after that barrier).
 * `final_weight`: null without use_final_probs; `boost`: the row of boosts by word, or null. Leaves the lane empty (its
 * tables cleared). */
template <class Exec, class Frames>
ASRDEC_HD void wfst_lane_decode(Exec& exec, const WfstLaneGraph& g, const WfstLaneConfig& c, const float* final_weight,
                                const float* boost, WfstLaneViews& v, WfstLaneShared& shared, std::int32_t length,
                                Frames& frames, WfstRowOutcome& out) {
  WfstLaneStep<Exec> step(g, c, v.frame, shared.step, boost, exec, &v.frames);
  WfstLaneHistoryOps<Exec> history(g, v.frame, v.history, v.next, shared.history, exec);
  history.begin();
  exec.single([&] { out = WfstRowOutcome{0, 0, 0, 0, 0.0f, 0, length, 0}; });
  exec.barrier();
  std::int32_t status = 0;
  bool overflow = false;
  const float* logp = nullptr;
  step.start();
  status = shared.step.status;
  if (status == 0) {
    overflow = shared.step.closure_cut;
    if (length > 0) logp = frames.frame(exec, 0, v.frame_logp);
    history.store(step.count(), 0, length == 0 || step.all_active(), step.numbering(), step.ways_cache());
    status = shared.history.status;
  }
  for (std::int32_t t = 0; t < length && status == 0; ++t) {
    overflow = step.advance(history.active(), logp) || overflow;
    status = shared.step.status;
    if (status != 0) break;
    if (t + 1 < length) logp = frames.frame(exec, t + 1, v.frame_logp);  // frame t's values are read
    history.store(step.count(), t + 1, t + 1 == length || step.all_active(), step.numbering(), step.ways_cache());
    status = shared.history.status;
  }
  if (status == 0) {
    bool reached_final = false;
    // The last frame is stored whole (all = true above), so the final rule reads it from the arena.
    const std::int32_t best = history.best_stored(true, final_weight, reached_final);
    if (best >= 0) {
      history.trace_from(best);
      if (shared.history.path_length < 0) status = kWfstLanePathFull;
    }
    exec.single([&] {
      out.reached_final = reached_final ? 1 : 0;
      out.overflow = overflow ? 1 : 0;
      if (best < 0) {
        out.cost = __builtin_huge_valf();
        out.last_state = -1;
        out.path_length = 0;
        return;
      }
      const WfstArenaEntry entry = v.history.entries[best];
      out.last_state = wfst_entry_state(g, entry);
      out.cost = reached_final ? rounded_add(entry.cost, final_weight[out.last_state]) : entry.cost;
      out.path_length = shared.history.path_length;
    });
  }
  exec.single([&] { out.status = status; });
  exec.barrier();
  step.finish();
  history.clear_next();
}

}  // namespace asrdec::detail

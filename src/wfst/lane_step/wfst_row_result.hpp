#pragma once
// Internal (host): the result of an utterance a lane decoded (wfst_lane_decode.hpp) — its outcome and path made a
// WfstResult by the CPU executor's own traceback code, so words, word frames and the cost split are the CPU's bits.

#include <limits>
#include <vector>

#include "wfst/lane_step/wfst_lane_decode.hpp"
#include "wfst/wfst_channel.hpp"

namespace asrdec::detail {

/** `o` must have status 0; `steps`: its path in order; `frames`: the utterance's length. */
inline WfstResult wfst_row_result(const WfstSearcher& searcher, const WfstRowOutcome& o,
                                  const std::vector<WfstPathStep>& steps, std::int32_t frames,
                                  const std::vector<float>& boost_by_word, std::int32_t blank_label) {
  WfstResult r;
  r.frames = frames;
  r.overflow = o.overflow != 0;
  r.reached_final = o.reached_final != 0;
  if (o.last_state < 0) {  // no token survived
    r.cost = r.graph_cost = r.acoustic_cost = std::numeric_limits<float>::infinity();
    return r;
  }
  r.cost = o.cost;
  searcher.trace_path(steps, o.last_state, boost_by_word, frames, blank_label, r);
  return r;
}

}  // namespace asrdec::detail

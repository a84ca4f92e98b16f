#pragma once
// Internal: what a lane keeps of an utterance between frames, in its own memory — the back-pointers (an arena of
// (arc, predecessor, frame) entries, the device's WfstChannel::history), the next frame's active tokens, and at the
// end the best token and its path — so that a whole utterance is decoded without the host. Written once for a
// parallel executor (`Exec`, as wfst_lane_step.hpp) and checked against WfstSearcher by the host emulation of
// tests/wfst/wfst_lane_step_test.cpp.
//
// Per frame (after WfstLaneStep::start or advance), wfst_lane_store keeps the active tokens and their ε-ancestors in
// the frame (every token on an utterance's last frame, which the final rule reads), as WfstSearcher keeps the whole
// frame: a token that is neither is never on a path. When the arena has no room, the entries no kept token can reach
// are dropped (WfstSearcher::collect_history) by marking along the back-pointers and compacting in order.

#include <cstdint>

#include "asrdec/detail/hd.hpp"
#include "wfst/lane_step/wfst_lane_step.hpp"

namespace asrdec::detail {

/** Lane status bits beside wfst_lane_step.hpp's. */
constexpr std::int32_t kWfstLaneHistoryFull = 4;  ///< the live back-pointers outgrew the arena
constexpr std::int32_t kWfstLanePathFull = 8;     ///< the output had no room for the path

/** A stored token: the arc into it (-1: the start), the predecessor's arena index (-1: none), the frames consumed and
 *  its cost (WfstToken without its state, which is the arc's next state, or the start). */
struct WfstArenaEntry {
  std::int32_t arc;
  std::int32_t prev;
  std::int32_t frame;
  float cost;
};

/** An empty arena entry (what a collection drops). */
constexpr WfstArenaEntry kWfstNoEntry = {-1, -1, -1, 0.0f};

/** The state of a stored token. */
ASRDEC_HD_INLINE std::int32_t wfst_entry_state(const WfstLaneGraph& g, const WfstArenaEntry& e) {
  return e.arc < 0 ? g.start : g.next_state[e.arc];
}

struct WfstLaneHistory {
  WfstArenaEntry* entries;  ///< [capacity]
  std::int32_t* scratch;    ///< [capacity] a collection's marks, then new indices; the traceback's path (reversed)
  WfstArenaEntry* carry;    ///< [width] a collection's entries in flight
  std::int32_t capacity;
  std::int32_t width;  ///< entries moved per round of a collection
};

/** The next frame's active tokens, as WfstLaneActive reads them (by_state needs no keys). */
struct WfstLaneNext {
  std::int32_t* state;
  float* cost;
  std::int64_t* index;  ///< arena index
  WfstLaneTable by_state;
};

/** The two places the next frame's active tokens may lie: `fast` (in the executor's fast memory, beside the fast
 *  frame: by_state capacity 0 when none) holds them when they fit, `full` (in the lane's memory) otherwise. Where they
 *  lie follows from their count alone, which every thread reads alike. */
struct WfstLaneNexts {
  WfstLaneNext full;
  WfstLaneNext fast;

  /** The arrays that hold `count` active tokens. */
  ASRDEC_HD const WfstLaneNext& of(std::int32_t count) const {
    return count > 0 && count <= fast.by_state.capacity ? fast : full;
  }
};

/** The lane's scalars beside WfstLaneScalars. */
struct WfstHistoryScalars {
  std::int32_t used;              ///< arena entries in use
  std::int32_t last_frame_begin;  ///< the last frame's tokens are entries [last_frame_begin, used)
  std::int32_t active_count;      ///< WfstLaneNext's tokens
  std::int64_t next_ways;         ///< their emitting ways, numbered in the step's ways cache by the store (-1: not)
  std::int32_t status;
  std::int32_t path_length;
  std::int32_t collections;  ///< of the utterance so far
  std::int32_t found;        ///< best_stored: the best token's arena index
  /** Frames stored, and of those the ones whose active tokens went to the fast next (WfstLaneNexts), counted from
   *  the lane's start (read by no phase). */
  std::int32_t stores;
  std::int32_t fast_stores;
  std::uint64_t best;  ///< (ordered total, state) of the best token
};

template <class Exec>
class WfstLaneHistoryOps {
 public:
  /** `frame`: the frame's arrays (WfstLaneStep's, which may change between frames). */
  ASRDEC_HD WfstLaneHistoryOps(const WfstLaneGraph& graph, const WfstLaneFrame& frame, const WfstLaneHistory& history,
                               const WfstLaneNexts& next, WfstHistoryScalars& scalars, Exec& exec)
      : g_(graph), t_(frame.table), k_(frame.tokens), h_(history), next_(next), s_(scalars), exec_(exec) {}

  /** The active tokens the next frame expands. */
  ASRDEC_HD WfstLaneActive active() const {
    const WfstLaneNext& next = next_.of(s_.active_count);
    return WfstLaneActive{next.state, next.cost, next.index, s_.active_count, next.by_state, s_.next_ways};
  }

  /** An empty arena and no active token (a new utterance). */
  ASRDEC_HD void begin() {
    exec_.single([&] {
      s_.used = 0;
      s_.last_frame_begin = 0;
      s_.active_count = 0;
      s_.next_ways = -1;
      s_.status = 0;
      s_.collections = 0;
    });
    exec_.barrier();
  }

  /** Stores the frame's `n` tokens (WfstLaneStep's numbering) as consumed `frame` frames: the kept ones into the
   *  arena, the active ones into `next`; `all`: every token. `numbered`: WfstLaneStep::numbering() (the step's
   *  commit emptied the last frame's `next` from its state table, and numbered the active tokens), taken when `all`
   *  and not -1: the tokens are then stored in order, and the next frame's emitting ways go into `ways` (the step's
   *  ways cache) when the commit numbered them (wfst_numbers_ways). Sets kWfstLaneHistoryFull when they do not fit
   *  (the lane then stays at the last frame stored: `next`'s tokens, the arena and the frame's table as they were;
   *  `next`'s state table is empty, which nothing reads after). Once stored, the tokens leave the frame's table,
   *  which is then empty (the next frame's step has nothing to clear). One barrier a frame when `all` with the step's
   *  numbering (every token kept: the frames that matter for speed), four otherwise. */
  ASRDEC_HD void store(std::int32_t n, std::int32_t frame, bool all, std::int64_t numbered, std::int64_t* ways) {
    // Set after the last store's final barrier, many barriers ago; set again after this call's final barrier.
    std::int32_t base = s_.used;
    if (!all) {  // the active tokens and their ε-ancestors
      exec_.for_each(n, [&](std::int64_t i) { k_.kept[i] = k_.active[i] != 0 ? 1 : 0; });
      exec_.barrier();
      exec_.for_each(n, [&](std::int64_t i) {
        if (k_.active[i] == 0) return;
        for (std::int64_t j = i; k_.local[j] != 0;) {
          const std::int64_t p = k_.prev[j];
          if (exec_.atomic_exch(&k_.kept[p], 1) != 0) break;
          j = p;
        }
      });
      exec_.barrier();
    }
    const auto kept = [&](std::int64_t i) { return all || k_.kept[i] != 0; };
    // The step's numbering: active tokens in the low half (every token stored, at its token number), emitting ways
    // in the high half. Otherwise one scan numbers stored tokens in the low half and active ones in the high half.
    const bool in_order = all && numbered >= 0;
    const std::int64_t total =
        in_order ? numbered : exec_.exclusive_scan_of(k_.scan, static_cast<std::int64_t>(n), [&](std::int64_t i) {
          return kept(i) ? 1 | static_cast<std::int64_t>(k_.active[i] != 0) << 32 : std::int64_t{0};
        });
    const auto stored = in_order ? n : static_cast<std::int32_t>(total & 0xffffffff);
    const auto actives = static_cast<std::int32_t>(in_order ? total & 0xffffffff : total >> 32);
    const std::int64_t next_ways = in_order && wfst_numbers_ways(g_, n) ? total >> 32 : -1;
    const auto stored_at = [&](std::int64_t i) {
      return static_cast<std::int32_t>(in_order ? i : k_.scan[i] & 0xffffffff);
    };
    if (base + stored > h_.capacity) base = collect(n, all);
    if (base + stored > h_.capacity) {
      exec_.single([&] {
        s_.status |= kWfstLaneHistoryFull;
        s_.next_ways = -1;  // the ways cache holds this frame's closure now
      });
      exec_.barrier();
      return;
    }
    const WfstLaneNext& next = next_.of(actives);
    exec_.for_each(n, [&](std::int64_t i) {
      const std::int32_t slot = t_.slot_of[i];
      const std::int32_t state = t_.state[slot];
      wfst_table_empty_slot(t_, slot);  // this thread's token's alone
      if (!kept(i)) return;
      const std::int32_t e = base + stored_at(i);
      const std::int32_t prev = k_.local[i] != 0 ? base + stored_at(k_.prev[i]) : static_cast<std::int32_t>(k_.prev[i]);
      h_.entries[e] = WfstArenaEntry{static_cast<std::int32_t>(k_.arc[i]), prev, frame, k_.cost[i]};
      if (k_.active[i] == 0) return;
      const std::int64_t numbering = k_.scan[i];
      const auto a = static_cast<std::int32_t>(in_order ? numbering & 0xffffffff : numbering >> 32);
      if (next_ways >= 0) ways[a] = numbering >> 32;
      next.state[a] = state;
      next.cost[a] = k_.cost[i];
      next.index[a] = e;
      wfst_table_put(next.by_state, exec_, state, a);
    });
    exec_.single([&] {  // read after the barrier (the next frame's active tokens, its table empty)
      s_.active_count = actives;
      s_.next_ways = next_ways;
      *t_.count = 0;
    });
    exec_.barrier();
    // After the barrier: with the step's numbering no barrier separates this call's read of `used` from its write
    // phase, so a slow thread may read it until then. Nothing reads these before the next frame's barriers.
    exec_.single([&] {
      s_.used = base + stored;
      s_.last_frame_begin = base;
      s_.stores += 1;
      if (&next == &next_.fast) s_.fast_stores += 1;
    });
  }

  /** Empties `next` (the lane is then ready for another utterance). */
  ASRDEC_HD void clear_next() {
    const WfstLaneTable& by_state = next_.of(s_.active_count).by_state;
    exec_.for_each(s_.active_count, [&](std::int64_t i) { by_state.state[by_state.slot_of[i]] = -1; });
    exec_.barrier();
    exec_.single([&] {
      s_.active_count = 0;
      s_.next_ways = -1;
    });
    exec_.barrier();
  }

  /** Continues an utterance kept elsewhere (a stream between chunks): the arena already holds its entries (`used`,
   *  the last frame from `last_frame_begin`, `collections` so far), and `active[0, count)` are the arena indices of
   *  the tokens the next frame expands. */
  ASRDEC_HD void resume(std::int32_t used, std::int32_t last_frame_begin, std::int32_t collections,
                        const std::int32_t* active, std::int32_t count) {
    const WfstLaneNext& next = next_.of(count);
    exec_.for_each(count, [&](std::int64_t a) {
      const std::int32_t e = active[a];
      const WfstArenaEntry entry = h_.entries[e];
      const std::int32_t state = wfst_entry_state(g_, entry);
      next.state[a] = state;
      next.cost[a] = entry.cost;
      next.index[a] = e;
      wfst_table_put(next.by_state, exec_, state, static_cast<std::int32_t>(a));
    });
    exec_.single([&] {
      s_.used = used;
      s_.last_frame_begin = last_frame_begin;
      s_.active_count = count;
      s_.next_ways = -1;
      s_.status = 0;
      s_.collections = collections;
    });
    exec_.barrier();
  }

  /** The best token of the last frame stored, as WfstSearcher::result picks it: with `final` and `final_weight`, the
   *  least cost + final weight over tokens on final states; when none is, or without, the least cost over the active
   *  tokens when `final` is false and some are active, else over the whole last frame; ties to the lower state.
   *  Returns its arena index (-1: no token); `reached_final` says whether the final rule chose it. */
  ASRDEC_HD std::int32_t best_stored(bool final, const float* final_weight, bool& reached_final) {
    exec_.single([&] { s_.best = kWfstNoWay; });
    exec_.barrier();
    const std::int32_t last = s_.last_frame_begin;
    const std::int32_t count = s_.used - last;
    const auto key = [](float total, std::int32_t state) {
      return static_cast<std::uint64_t>(wfst_ordered_cost(total)) << 32 | static_cast<std::uint32_t>(state);
    };
    if (final && final_weight != nullptr) {
      exec_.for_each(count, [&](std::int64_t i) {
        const WfstArenaEntry entry = h_.entries[last + i];
        const std::int32_t state = wfst_entry_state(g_, entry);
        const float f = final_weight[state];
        if (!(f < __builtin_huge_valf())) return;
        const float total = rounded_add(entry.cost, f);
        if (total < __builtin_huge_valf()) exec_.atomic_min(&s_.best, key(total, state));
      });
      exec_.barrier();
    }
    reached_final = s_.best != kWfstNoWay;
    exec_.barrier();  // every thread has read it before the second rule may lower it
    if (!reached_final && !final && s_.active_count > 0) {
      const WfstLaneNext& next = next_.of(s_.active_count);
      exec_.for_each(s_.active_count,
                     [&](std::int64_t a) { exec_.atomic_min(&s_.best, key(next.cost[a], next.state[a])); });
      exec_.barrier();
    } else if (!reached_final) {
      exec_.for_each(count, [&](std::int64_t i) {
        const WfstArenaEntry entry = h_.entries[last + i];
        if (entry.cost < __builtin_huge_valf())
          exec_.atomic_min(&s_.best, key(entry.cost, wfst_entry_state(g_, entry)));
      });
      exec_.barrier();
    }
    const std::uint64_t best = s_.best;
    exec_.barrier();  // every thread has read it before it changes again
    if (best == kWfstNoWay) return -1;
    // The entry with that state in the last frame (one token a state a frame).
    const auto state = static_cast<std::int32_t>(best & 0xffffffffu);
    exec_.for_each(count, [&](std::int64_t i) {
      if (wfst_entry_state(g_, h_.entries[last + i]) == state) s_.found = last + static_cast<std::int32_t>(i);
    });
    exec_.barrier();
    return s_.found;
  }

  /** The path into arena entry `index`, start excluded, reversed, into h_.scratch as (arc, frame) pairs (at most
   *  capacity / 2 steps); s_.path_length its steps, -1 when the scratch had no room. */
  ASRDEC_HD void trace_from(std::int32_t index) {
    exec_.single([&] {
      std::int32_t length = 0;
      std::int32_t steps = 0;
      for (std::int32_t e = index; e >= 0; e = h_.entries[e].prev) {
        if (++steps > s_.used || 2 * (length + 1) > h_.capacity) {  // a cycle cannot happen; never loop on one
          length = -1;
          break;
        }
        const WfstArenaEntry entry = h_.entries[e];
        if (entry.arc < 0) continue;
        h_.scratch[2 * length] = entry.arc;
        h_.scratch[2 * length + 1] = entry.frame;
        ++length;
      }
      s_.path_length = length;
    });
    exec_.barrier();
  }

 private:
  // Drops the entries that no path into the last frame's tokens uses (WfstSearcher::collect_history; the emitting
  // predecessors of the frame being stored are among those tokens): marks from each of them along the back-pointers,
  // numbers the marked entries by a scan, moves them down in order, a chunk at a time (a move never lands on an entry
  // not yet read), and renames the predecessors of the frame being stored and the active tokens. The last frame stays
  // whole and in one piece, so the lane is a consistent channel whatever happens to the frame being stored. The
  // frame's stored tokens are all of them with `all`, else those marked in kept. Returns the entries left (`used`).
  ASRDEC_HD std::int32_t collect(std::int32_t n, bool all) {
    const std::int32_t used = s_.used;
    const std::int32_t last = s_.last_frame_begin;
    exec_.for_each(used, [&](std::int64_t e) { h_.scratch[e] = 0; });
    exec_.barrier();
    exec_.for_each(used - last, [&](std::int64_t i) {
      for (std::int64_t j = last + i; j >= 0; j = h_.entries[j].prev) {
        if (exec_.atomic_exch(&h_.scratch[j], 1) != 0) break;
      }
    });
    exec_.barrier();
    const std::int32_t live = exec_.exclusive_scan_of(h_.scratch, static_cast<std::int64_t>(used),
                                                      [&](std::int64_t e) { return h_.scratch[e]; });
    const auto marked = [&](std::int32_t e) { return (e + 1 < used ? h_.scratch[e + 1] : live) != h_.scratch[e]; };
    for (std::int32_t chunk = 0; chunk < used; chunk += h_.width) {
      const std::int32_t m = used - chunk < h_.width ? used - chunk : h_.width;
      exec_.for_each(m, [&](std::int64_t i) {
        const std::int32_t e = chunk + static_cast<std::int32_t>(i);
        WfstArenaEntry entry = h_.entries[e];
        if (!marked(e)) {
          entry.frame = -1;
        } else if (entry.prev >= 0) {
          entry.prev = h_.scratch[entry.prev];
        }
        h_.carry[i] = entry;
      });
      exec_.barrier();
      exec_.for_each(m, [&](std::int64_t i) {
        if (h_.carry[i].frame >= 0) h_.entries[h_.scratch[chunk + i]] = h_.carry[i];
      });
      exec_.barrier();
    }
    exec_.for_each(n, [&](std::int64_t i) {
      if ((all || k_.kept[i] != 0) && k_.local[i] == 0 && k_.prev[i] >= 0) k_.prev[i] = h_.scratch[k_.prev[i]];
    });
    const WfstLaneNext& next = next_.of(s_.active_count);
    exec_.for_each(s_.active_count, [&](std::int64_t a) { next.index[a] = h_.scratch[next.index[a]]; });
    // What was dropped reads as nothing (an index not renamed would end a path, not follow a stale one).
    exec_.for_each(used - live, [&](std::int64_t i) { h_.entries[live + i] = kWfstNoEntry; });
    exec_.barrier();
    exec_.single([&] {
      s_.used = live;
      s_.last_frame_begin = last < used ? h_.scratch[last] : live;
      s_.collections += 1;
    });
    exec_.barrier();
    return live;
  }

  const WfstLaneGraph& g_;
  const WfstLaneTable& t_;
  const WfstLaneTokens& k_;
  const WfstLaneHistory& h_;
  const WfstLaneNexts& next_;
  WfstHistoryScalars& s_;
  Exec& exec_;
};

}  // namespace asrdec::detail

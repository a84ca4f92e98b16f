#pragma once
// Internal: the WFST frame step of one lane written once for a parallel executor — the CPU executor's rules
// (wfst_channel.cpp) as phases that any number of threads run in any order, separated by barriers, with memory that
// grows with the frame's tokens rather than the graph's states. `Exec` is the lane's executor: a CUDA thread block, or
// the host emulation of the tests, which runs each phase's threads in a chosen order (tests/wfst/wfst_lane_step_test:
// the frames equal WfstSearcher's bit for bit, whatever the order).
//
// Per frame: the best emitting way in (a minimum), then every emitting way below best + beam offered to the table
// (wfst_lane_table.hpp; recombination by wfst_lane_key.hpp), min_active's widened cutoff, the ε-closure in rounds from
// each round's starting values (as WfstSearcher::closure), beam halving when the frame outgrows max_tokens_per_frame,
// then the commit: the active tokens by the cut, the overflow selection and the max_active histogram. Ways are
// numbered over the active tokens' arcs (a prefix sum of their out-degrees), so work spreads evenly over the threads
// whatever the states' degrees.
//
// Exec provides: for_each(n, f) (f(i) for i < n, spread over the threads), for_each_batch(n, load, apply) (as
// for_each of apply(i, load(i)), where load only reads, so several loads may be in flight at once), barrier(),
// single(f) (one thread),
// load(p), atomic_cas/atomic_add/atomic_exch on int32, atomic_add on int64, atomic_min on uint64 and uint32,
// atomic_max on uint32, and exclusive_scan_of(sums, n, value_of) (the exclusive prefix sums of value_of(i) for i < n
// into sums, int32 or int64; value_of reads only, before any sum is written, so sums may be its own array; returns the
// total, and ends with a barrier, after which the sums and the total are every thread's).

#include <algorithm>
#include <cstdint>
#include <vector>

#include "asrdec/detail/hd.hpp"
#include "wfst/lane_step/wfst_lane_key.hpp"
#include "wfst/lane_step/wfst_lane_select.hpp"
#include "wfst/lane_step/wfst_lane_table.hpp"
#include "wfst/wfst_step.hpp"

namespace asrdec::detail {

/** The graph as the lane reads it (host or device arrays of WfstGraphArrays). */
struct WfstLaneGraph {
  const std::int64_t* emitting_begin;  ///< [states + 1]
  const std::int64_t* epsilon_begin;   ///< [states + 1]
  const std::int32_t* ilabel;
  const std::int32_t* olabel;
  const float* weight;
  const std::int32_t* next_state;
  std::int32_t num_states;
  std::int32_t start;
  const std::int32_t* arc_source = nullptr;  ///< [arcs] the state each arc leaves; null: found by binary search
  /** The most emitting arcs out of one state (wfst_max_emitting_degree); the default says it is unknown, and the
   *  commit then never numbers the next frame's emitting ways (wfst_numbers_ways). */
  std::int64_t max_emitting_degree = std::int64_t{1} << 62;
};

/** WfstLaneGraph::max_emitting_degree of a host graph. */
inline std::int64_t wfst_max_emitting_degree(const std::int64_t* emitting_begin, const std::int64_t* epsilon_begin,
                                             std::int32_t num_states) {
  std::int64_t most = 0;
  for (std::int32_t s = 0; s < num_states; ++s) most = std::max(most, epsilon_begin[s] - emitting_begin[s]);
  return most;
}

/** The last i < n with sorted[i] <= value (`sorted` ascending, sorted[0] <= value): binary search. */
ASRDEC_HD_INLINE std::int32_t wfst_last_at_most(const std::int64_t* sorted, std::int32_t n, std::int64_t value) {
  std::int32_t lo = 0, hi = n - 1;
  while (lo < hi) {
    const std::int32_t mid = lo + (hi - lo + 1) / 2;
    if (sorted[mid] <= value) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

/** The state an arc leaves (arcs are stored by source state; a state without arcs shares its begin with the next). */
ASRDEC_HD_INLINE std::int32_t wfst_arc_source(const WfstLaneGraph& g, std::int64_t arc) {
  // One load with the table; the search is ~log2(states) dependent loads, the latency a frame's rebuilds wait on.
  return g.arc_source != nullptr ? g.arc_source[arc] : wfst_last_at_most(g.emitting_begin, g.num_states, arc);
}

/** Tokens whose out-degree prefix sums a phase keeps in the lane's fast memory (WfstLaneScalars::ways); beyond, in
 *  WfstLaneTokens::scan. */
constexpr std::int32_t kWfstWaysCache = 2048;

/** Whether a commit of `n` tokens numbers the next frame's emitting ways (WfstLaneStep::numbering): they fit the
 *  ways cache, and their sum fits the numbering's 31 bits (n · degree < 2^11 · 2^20). The same in every thread. */
ASRDEC_HD_INLINE bool wfst_numbers_ways(const WfstLaneGraph& g, std::int32_t n) {
  return n <= kWfstWaysCache && g.max_emitting_degree < (std::int64_t{1} << 20);
}

/** Default WfstLaneConfig::thread_per_token_degree. */
constexpr std::uint32_t kWfstThreadPerTokenDegree = 8;

/** WfstLaneGraph::arc_source of a host graph: the state each arc leaves. */
inline std::vector<std::int32_t> wfst_arc_sources(const std::vector<std::int64_t>& emitting_begin,
                                                  std::int32_t num_states, std::size_t num_arcs) {
  std::vector<std::int32_t> source(num_arcs);
  for (std::int32_t state = 0; state < num_states; ++state) {
    std::fill(source.begin() + emitting_begin[static_cast<std::size_t>(state)],
              source.begin() + emitting_begin[static_cast<std::size_t>(state) + 1], state);
  }
  return source;
}

struct WfstLaneConfig {
  float beam;
  float acoustic_scale;
  std::int64_t max_active;
  std::int64_t min_active;
  std::int64_t max_tokens;  ///< max_tokens_per_frame
  /** A closure round whose tokens all have fewer ε-arcs than this gives each token one thread; otherwise (and always
   *  with 0) the arcs are numbered over the tokens and spread evenly. The same tokens either way. */
  std::uint32_t thread_per_token_degree = kWfstThreadPerTokenDegree;
};

/** Lane status bits. */
constexpr std::int32_t kWfstLaneFull = 1;    ///< a frame has more tokens than the lane's capacity
constexpr std::int32_t kWfstLaneBroken = 2;  ///< a way in could not be rebuilt from its key (internal error)

/** The previous frame's active tokens, the ones this frame expands. */
struct WfstLaneActive {
  const std::int32_t* state;
  const float* cost;
  const std::int64_t* index;  ///< history index, the emitting ways' back-pointer
  std::int32_t count;
  WfstLaneTable by_state;  ///< state → position in these arrays
  /** The emitting ways of these tokens, when the last frame's store numbered them into the ways cache
   *  (WfstLaneStep::numbering): the frame then starts without a numbering of its own. -1: not numbered. */
  std::int64_t ways_total = -1;
};

/** The frame's tokens, by token number (the table's numbering). */
struct WfstLaneTokens {
  float* cost;
  std::int64_t* arc;
  std::int64_t* prev;  ///< history index (emitting), or the predecessor's token number (ε, `local`)
  std::int32_t* local;
  std::int32_t* active;       ///< commit: the next frame expands it
  float* snapshot[2];         ///< the cost closure round r relaxes from, in snapshot[r & 1]
  std::int32_t* frontier[2];  ///< slots whose way in changed in the last round, in this round
  std::int64_t* scan;         ///< [capacity + 1] out-degrees, then their prefix sums
  /** [way_capacity] the emitting ways that may pass the frame's cutoff, kept by the pass that finds the best one so
   *  that the offers need not compute them again (none kept with way_capacity 0, or when they do not fit). */
  std::int32_t* way_arc = nullptr;
  float* way_cost = nullptr;
  std::int32_t way_capacity = 0;
  std::int32_t* kept = nullptr;  ///< the history's store: 1 when the token is stored (written when not every one is)
};

/** A frame's tokens: its table by state and its arrays by token number. */
struct WfstLaneFrame {
  WfstLaneTable table;
  WfstLaneTokens tokens;
};

/** The two frames a lane may use: `full` in the lane's memory, for up to the lane's capacity, and `fast` in the
 *  executor's fast memory (a CUDA block's shared memory), for few tokens (capacity 0: none). A frame whose previous
 *  frame kept few active tokens uses `fast`, where every probe, atomic and token access is a shared-memory access
 *  instead of a trip to L2, and starts again in `full` when it outgrows `fast` (WfstLaneStep::advance): the same
 *  tokens either way, as offers only depend on the ways. Both tables are empty between frames, the one not in use
 *  always. */
struct WfstLaneFrames {
  WfstLaneFrame full;
  WfstLaneFrame fast;
};

/** One lane's shared scalars (a CUDA block's shared memory, or a host struct). */
struct WfstLaneScalars {
  std::uint32_t best;  ///< ordered cost
  /** The least cost given a token of the frame (ordered): a token's cost only goes down, so it is the least of the
   *  tokens' costs, which the commit needs. */
  std::uint32_t frame_best;
  std::uint32_t worst;  ///< ordered cost
  std::int32_t frontier_count[2];
  std::int32_t below;      ///< tokens under a bound
  std::int32_t kept_ways;  ///< emitting ways the best pass kept (WfstLaneTokens::way_arc; may pass way_capacity)
  std::int32_t status;
  /** A way in of the round-0 or freeze phase could not be rebuilt from its key: kept apart from `status`, which the
   *  next phase's offers may already be setting in a thread that has left the check. */
  std::int32_t broken;
  float cutoff;  ///< the frame's cutoff after its ε-closure (WfstSearcher::cutoff_)
  bool closure_cut;
  std::int64_t total;  ///< work items of a phase
  /** The most ε-arcs of a token of closure round r (up to thread_per_token_degree), in max_degree[r & 1]. */
  std::uint32_t max_degree[2];
  std::int32_t fast_frames;           ///< expansions in the fast frame (WfstLaneFrames), counted from the lane's start
  std::int32_t fast_outgrown;         ///< of those, the ones done again in the full table
  std::int64_t ways[kWfstWaysCache];  ///< a phase's prefix sums of out-degrees, when they fit (fast memory)
  std::int64_t counts[kWfstHistogramBins];
  std::int64_t select_counts[256];
  std::uint64_t select_state[2];
};

template <class Exec>
class WfstLaneStep {
 public:
  /** `frame`: the frame's arrays, which the step may point at either of `frames` (null: they stay as they are); the
   *  full ones when the step begins. */
  ASRDEC_HD WfstLaneStep(const WfstLaneGraph& g, const WfstLaneConfig& c, WfstLaneFrame& frame,
                         WfstLaneScalars& scalars, const float* boost_by_word, Exec& exec,
                         const WfstLaneFrames* frames = nullptr)
      : g_(g),
        c_(c),
        f_(frame),
        t_(frame.table),
        k_(frame.tokens),
        frames_(frames),
        s_(scalars),
        boost_(boost_by_word),
        exec_(exec) {}

  /** The start of an utterance: the start state and its ε-closure, committed (as WfstSearcher::start); status
   *  kWfstLaneFull when the closure does not fit the lane. */
  ASRDEC_HD void start() {
    clear_table_then_wait();  // the start's offer changes the count
    exec_.single([&] {
      s_.status = 0;
      const WfstOffer offer = wfst_table_offer(t_, exec_, g_.start, wfst_way_key(0.0f, -1));
      k_.cost[0] = 0.0f;
      k_.arc[0] = -1;
      k_.prev[0] = -1;
      k_.local[0] = 0;
      k_.frontier[0][0] = offer.slot;
      s_.frontier_count[0] = 1;
      s_.max_degree[0] = s_.max_degree[1] = 0;
      s_.frame_best = wfst_ordered_cost(0.0f);
      s_.broken = 0;
      begin_closure(c_.beam);
      prepare(1, 0, 0, 0.0f, epsilon_degree(g_.start), ways_of(1));
    });
    exec_.barrier();
    closure();
    if (s_.status == 0) commit(c_.beam, s_.closure_cut, nullptr);
  }

  /** One frame of log-probabilities `logp` over the active tokens of the last: as WfstSearcher::advance. Returns the
   *  frame's overflow flag. Afterwards the frame's tokens are numbers 0 … count − 1 of the table (lanes.tokens),
   *  `active` marking the next frame's; the caller takes them (WfstLaneHistoryOps::store, which empties the table),
   *  or the next advance() or finish() clears the table. `logp` is read from the step's first phase on (with
   *  active.ways_total, there is no barrier before it): the caller fills it before a barrier, as wfst_lane_decode
   *  does before the last frame's store; its values are read by the time the commit begins. */
  ASRDEC_HD bool advance(const WfstLaneActive& active, const float* logp) {
    float beam = c_.beam;
    bool fits = false;
    bool fast =
        frames_ != nullptr && frames_->fast.table.capacity > 0 && active.count <= frames_->fast.table.capacity / 2;
    bool numbered = active.ways_total >= 0;  // for the first expansion only: its round 0 takes the ways cache
    for (int i = 0;; ++i) {  // one call site: the step stays in registers (a second one spilled it to the stack)
      fits = expand_in_a_table(active, logp, beam, fast, numbered);  // a frame that outgrew the fast one stays out
      if (fits || i == kWfstBeamTightenings || !retry()) break;
      beam *= 0.5f;
    }
    const bool overflow = !fits || s_.closure_cut;
    if (s_.status == 0) commit(beam, overflow, &active);
    return overflow;
  }

  /** Empties the frame's table and gives the lane its full table back, as the next row's step expects. */
  ASRDEC_HD void finish() {
    wfst_table_clear(t_, exec_);
    use_table(false);
  }

  /** Tokens of the frame (after start() or advance()): read by the commit before its last barrier, so that the
   *  history's store may empty the table (and its count) while a slow thread has yet to ask. */
  ASRDEC_HD std::int32_t count() const { return count_; }
  /** After start() or advance(): the total of the commit's numbering of the frame's tokens in tokens.scan — each
   *  active token counts 1 in the low half and, when wfst_numbers_ways(graph, count()), its emitting arcs in the high
   *  half: the positions and the emitting ways' numbering of the next frame's active tokens, which
   *  WfstLaneHistoryOps::store takes when it keeps every token (each at its token number) — or -1 when the commit's
   *  selections changed `active` after it. */
  ASRDEC_HD std::int64_t numbering() const { return numbering_ < 0 ? -1 : numbering_; }
  /** Where the store puts the next frame's emitting ways (the lane's ways cache). */
  ASRDEC_HD std::int64_t* ways_cache() const { return s_.ways; }
  /** Whether every token of the frame is active (after start() or advance(); then none is only an ε-ancestor). */
  ASRDEC_HD bool all_active() const { return all_active_; }

 private:
  // Empties the frame's table, and waits for every thread when that took no barrier (an empty table), so that the
  // caller may change the table or its count at once.
  ASRDEC_HD void clear_table_then_wait() {
    if (!wfst_table_clear(t_, exec_)) exec_.barrier();
  }

  // Points the frame's arrays at the fast or the full ones; both tables empty (every thread decides alike, from its
  // own using_fast_). The barrier first: a thread may still be reading the table's view in a clear that had nothing
  // to do.
  ASRDEC_HD void use_table(bool fast) {
    if (frames_ == nullptr || fast == using_fast_) return;
    exec_.barrier();
    exec_.single([&] { f_ = fast ? frames_->fast : frames_->full; });
    exec_.barrier();
    using_fast_ = fast;
  }

  // expand() in the fast frame (`fast`: the frame before kept at most half as many active tokens as it holds), and
  // again in the full frame when the frame outgrew it: the same tokens either way, as offers only depend on the ways.
  // `fast` becomes false when the frame outgrows the fast frame.
  ASRDEC_HD bool expand_in_a_table(const WfstLaneActive& active, const float* logp, float beam, bool& fast,
                                   bool& numbered) {
    for (;;) {
      wfst_table_clear(t_, exec_);  // after a full fast table every slot, as its count passed its capacity
      use_table(fast);
      // Counted when the frame's table and tokens are the fast ones indeed (read by no phase).
      if (fast && t_.state == frames_->fast.table.state && k_.cost == frames_->fast.tokens.cost) {
        exec_.single([&] { s_.fast_frames += 1; });
      }
      const bool fits = expand(active, logp, beam, numbered);
      numbered = false;
      if (fits || !fast || s_.status != kWfstLaneFull) return fits;
      exec_.single([&] { s_.fast_outgrown += 1; });
      fast = false;
    }
  }

  // Whether a frame that did not fit may be tried again with a tighter beam: it outgrew max_tokens_per_frame, or the
  // lane's capacity when that is above max_tokens_per_frame (the search's own list would not have fitted either); the
  // lane's status is then cleared. Anything else stops the frame.
  ASRDEC_HD bool retry() {
    const std::int32_t status = s_.status;
    exec_.barrier();  // every thread has read the status before it changes
    if (status == kWfstLaneFull && t_.capacity > c_.max_tokens) {
      exec_.single([&] { s_.status = 0; });
      exec_.barrier();
      return true;
    }
    return status == 0;
  }

  ASRDEC_HD float boost(std::int32_t word) const { return boost_ == nullptr ? 0.0f : boost_[word]; }

  ASRDEC_HD float emitting_way(const WfstLaneActive& active, std::int32_t from, std::int64_t arc,
                               const float* logp) const {
    const float acoustic = wfst_acoustic_cost(c_.acoustic_scale, logp[g_.ilabel[arc] - 1]);
    return wfst_emitting_way(active.cost[from], g_.weight[arc], boost(g_.olabel[arc]), acoustic);
  }

  // Where the prefix sums of `n` tokens' out-degrees go: the lane's fast memory when they fit.
  // The ways cache also carries the next frame's emitting ways from the store's write phase to the next frame's
  // round 0 (WfstLaneActive::ways_total): no phase between may use it.
  ASRDEC_HD std::int64_t* ways_of(std::int32_t n) const { return n <= kWfstWaysCache ? s_.ways : k_.scan; }

  // Work item i of the arcs numbered by ways_of(n) over `n` tokens: the token's position and the arc.
  ASRDEC_HD void item(std::int64_t i, std::int32_t n, std::int32_t& position, std::int64_t& offset) const {
    const std::int64_t* ways = ways_of(n);
    position = wfst_last_at_most(ways, n, i);
    offset = i - ways[position];
  }

  // Numbers the emitting arcs of the active tokens (ways_of) and returns how many there are (after a barrier).
  ASRDEC_HD std::int64_t number_emitting(const WfstLaneActive& active) {
    return exec_.exclusive_scan_of(ways_of(active.count), active.count,
                                   [&](std::int64_t i) { return emitting_degree(active.state[i]); });
  }

  // Offers every emitting way below `bound`; false when the frame does not fit the lane.
  // Emitting way i (numbered over the active tokens' arcs): its arc and cost. Reads only, so an executor may load
  // several ways' before using any (for_each_batch).
  struct EmittingWay {
    std::int64_t arc = 0;
    float cost = 0.0f;
  };
  ASRDEC_HD EmittingWay emitting_item(const WfstLaneActive& active, const float* logp, std::int64_t i) const {
    std::int32_t from = 0;
    std::int64_t offset = 0;
    item(i, active.count, from, offset);
    EmittingWay way;
    way.arc = g_.emitting_begin[active.state[from]] + offset;
    way.cost = emitting_way(active, from, way.arc, logp);
    return way;
  }

  ASRDEC_HD void offer_emitting(const WfstLaneActive& active, const float* logp, std::int64_t total, float bound) {
    exec_.for_each_batch(
        total, [&](std::int64_t i) { return emitting_item(active, logp, i); },
        [&](std::int64_t, const EmittingWay& way) {
          if (!(way.cost < bound)) return;
          if (wfst_table_offer(t_, exec_, g_.next_state[way.arc], wfst_way_key(way.cost, way.arc)).slot < 0) {
            exec_.atomic_or(&s_.status, kWfstLaneFull);
          }
        });
    exec_.barrier();
  }

  // Offers the kept ways (WfstLaneTokens::way_arc) below `bound`: the same offers as offer_emitting when the kept
  // ways are all those that may pass it.
  ASRDEC_HD void offer_kept(float bound) {
    struct Kept {
      std::int32_t arc;
      std::int32_t next;
      float cost;
    };
    exec_.for_each_batch(
        s_.kept_ways,
        [&](std::int64_t i) {
          const float cost = k_.way_cost[i];
          const std::int32_t arc = k_.way_arc[i];
          return Kept{arc, cost < bound ? g_.next_state[arc] : -1, cost};
        },
        [&](std::int64_t, const Kept& way) {
          if (way.next < 0) return;
          if (wfst_table_offer(t_, exec_, way.next, wfst_way_key(way.cost, way.arc)).slot < 0) {
            exec_.atomic_or(&s_.status, kWfstLaneFull);
          }
        });
    exec_.barrier();
  }

  ASRDEC_HD std::int32_t tokens() const { return *t_.count < t_.capacity ? *t_.count : t_.capacity; }

  // Tokens whose way in costs less than `bound` (keys of the table).
  ASRDEC_HD std::int64_t count_below(float bound) {
    exec_.single([&] { s_.below = 0; });
    exec_.barrier();
    const std::uint32_t limit = wfst_ordered_cost(bound);
    exec_.for_each(tokens(), [&](std::int64_t i) {
      if (static_cast<std::uint32_t>(t_.key[t_.slot_of[i]] >> 32) < limit) exec_.atomic_add(&s_.below, 1);
    });
    exec_.barrier();
    return s_.below;
  }

  // min_active (WfstSearcher::widen_to_min_active): `bound` widened to the (min_active + 1)-th cheapest way in when
  // the frame has more than min_active tokens, else to `all`.
  ASRDEC_HD float widen(float bound, float all) {
    const std::int64_t keep = c_.min_active;
    if (keep == 0 || count_below(bound) > keep) return bound;
    if (tokens() <= keep) return bound > all ? bound : all;
    const std::uint64_t ordered = wfst_lane_select(exec_, WfstSelectScratch{s_.select_counts, s_.select_state},
                                                   tokens(), keep, 32, [&](std::int64_t i, std::uint64_t& value) {
                                                     value = t_.key[t_.slot_of[i]] >> 32;
                                                     return true;
                                                   });
    const float nth = wfst_cost_of_ordered(static_cast<std::uint32_t>(ordered));
    return bound > nth ? bound : nth;
  }

  // The scalars a frame starts from but its status (one thread). The commit sets them for the next frame where the
  // status is 0 already, and other threads may still read it.
  ASRDEC_HD void reset_frame_scalars() {
    s_.best = wfst_ordered_cost(__builtin_huge_valf());
    s_.kept_ways = 0;
    s_.max_degree[0] = s_.max_degree[1] = 0;  // before the round-0 phase prepares round 1
    s_.frame_best = wfst_ordered_cost(__builtin_huge_valf());
    s_.broken = 0;
  }

  // Steps 1-3 of a frame with `beam` (WfstSearcher::expand); true when it fits max_tokens_per_frame.
  // The frame's table is empty. `numbered`: the last frame's store numbered the active tokens' emitting ways
  // (active.ways_total) and the last commit set the scalars, both before a barrier.
  ASRDEC_HD bool expand(const WfstLaneActive& active, const float* logp, float beam, bool numbered) {
    std::int64_t total = active.ways_total;
    if (!numbered) {
      // The frame's scalars, every thread having read the last frame's (a barrier ago); the numbering's barrier
      // makes them every thread's.
      exec_.single([&] {
        s_.status = 0;  // nothing reads or sets it before the offers
        reset_frame_scalars();
      });
      total = number_emitting(active);
    }
    // 1. The best way in: every way below it + beam is offered (the CPU's running bound keeps exactly these). The
    // pass keeps the ways below the best so far + beam, a superset of those (rounding is monotone), for the offers.
    exec_.for_each_batch(
        total, [&](std::int64_t i) { return emitting_item(active, logp, i); },
        [&](std::int64_t, const EmittingWay& way) {
          if (!(way.cost < __builtin_huge_valf())) return;
          exec_.atomic_min(&s_.best, wfst_ordered_cost(way.cost));
          if (k_.way_capacity == 0) return;
          if (!(way.cost < rounded_add(wfst_cost_of_ordered(exec_.load(&s_.best)), beam))) return;
          const std::int32_t at = exec_.atomic_add(&s_.kept_ways, 1);
          if (at >= k_.way_capacity) return;
          k_.way_arc[at] = static_cast<std::int32_t>(way.arc);
          k_.way_cost[at] = way.cost;
        });
    exec_.barrier();
    const float best = wfst_cost_of_ordered(s_.best);
    float cutoff = rounded_add(best, beam);
    if (k_.way_capacity > 0 && s_.kept_ways <= k_.way_capacity) {
      offer_kept(cutoff);
    } else {
      offer_emitting(active, logp, total, cutoff);
    }
    if (s_.status != 0) return false;
    // 2. min_active: when the beam holds at most min_active ways in, every finite way is taken and the cutoff widens.
    if (c_.min_active > 0 && tokens() <= c_.min_active) {
      // The beam's offers may have left no token (a beam below the costs' rounding): the offers below must still
      // wait for every thread's read of the count, and of tokens() above.
      clear_table_then_wait();
      offer_emitting(active, logp, total, __builtin_huge_valf());
      if (s_.status != 0) return false;
      exec_.single([&] { s_.worst = 0; });
      exec_.barrier();
      exec_.for_each(tokens(), [&](std::int64_t i) {
        exec_.atomic_max(&s_.worst, static_cast<std::uint32_t>(t_.key[t_.slot_of[i]] >> 32));
      });
      exec_.barrier();
      const float worst = tokens() > 0 ? wfst_cost_of_ordered(s_.worst) : -__builtin_huge_valf();
      cutoff = widen(rounded_add(best, beam), rounded_add(worst, beam));
      clear_table_then_wait();
      offer_emitting(active, logp, total, cutoff);
      if (s_.status != 0) return false;
    }
    // Round 0: the emitting winners, frozen; all of them start the ε-closure, prepared for its round 1.
    std::int64_t* first_ways = ways_of(tokens());
    exec_.for_each(tokens(), [&](std::int64_t i) {
      const std::int32_t slot = t_.slot_of[i];
      const std::int64_t degree = epsilon_degree(t_.state[slot]);
      const std::uint64_t key = t_.key[slot];
      const std::int64_t arc = wfst_key_arc(key);
      const std::int32_t way_in = wfst_table_find(active.by_state, wfst_arc_source(g_, arc));
      if (way_in < 0) {
        exec_.atomic_or(&s_.broken, 1);
        return;
      }
      const std::int32_t from = active.by_state.token[way_in];
      // The key holds the way's cost, but for the sign of a zero: only then is the way computed again.
      float cost = wfst_key_cost(key);
      if (cost == 0.0f) {
        cost = emitting_way(active, from, arc, logp);
        if (wfst_way_key(cost, arc) != key) exec_.atomic_or(&s_.broken, 1);
      }
      k_.cost[i] = cost;
      k_.arc[i] = arc;
      k_.prev[i] = active.index[from];
      k_.local[i] = 0;
      t_.key[slot] = wfst_frozen_key(key);
      k_.frontier[0][i] = slot;
      exec_.atomic_min(&s_.frame_best, wfst_ordered_cost(cost));
      prepare(1, i, static_cast<std::int32_t>(i), cost, degree, first_ways);
    });
    exec_.single([&] {
      s_.frontier_count[0] = tokens();
      begin_closure(cutoff);
    });
    exec_.barrier();
    if (broken()) return false;
    // 3. ε-closure below the cutoff.
    closure();
    return s_.status == 0 && *t_.count <= c_.max_tokens;
  }

  // Whether the last phase found a broken way in (every thread reads the same); the lane's status then says so.
  ASRDEC_HD bool broken() {
    if (s_.broken == 0) return false;
    exec_.single([&] { s_.status |= kWfstLaneBroken; });
    exec_.barrier();
    return true;
  }

  // The scalars of an ε-closure below `cutoff` (one thread; the max_degree of round 1 must have been cleared before
  // the phase that prepares its tokens).
  ASRDEC_HD void begin_closure(float cutoff) {
    s_.cutoff = cutoff;
    s_.closure_cut = false;
    s_.frontier_count[1] = 0;
  }

  // The ε-arcs out of `state`. A phase that prepares a token loads them first: they do not wait for the chain of
  // loads that rebuilds the token's way in, so their latency overlaps it.
  ASRDEC_HD std::int64_t epsilon_degree(std::int32_t state) const {
    return g_.emitting_begin[state + 1] - g_.epsilon_begin[state];
  }

  // The emitting arcs out of `state`: what a token in it adds to the next frame's ways.
  ASRDEC_HD std::int64_t emitting_degree(std::int32_t state) const {
    return g_.epsilon_begin[state] - g_.emitting_begin[state];
  }

  // Frontier item f of closure round `round` (token `token`, of cost `cost` and ε-degree `degree`): the cost the round
  // relaxes from, its ε-degree in `ways` and the round's max_degree.
  ASRDEC_HD void prepare(std::int32_t round, std::int64_t f, std::int32_t token, float cost, std::int64_t degree,
                         std::int64_t* ways) {
    k_.snapshot[round & 1][token] = cost;
    ways[f] = degree;
    const std::uint32_t cap = c_.thread_per_token_degree;
    exec_.atomic_max(&s_.max_degree[round & 1], degree < cap ? static_cast<std::uint32_t>(degree) : cap);
  }

  // The ε-closure (WfstSearcher::closure) below s_.cutoff from frontier 0, whose tokens are prepared for round 1:
  // round r relaxes the ε-arcs of the tokens whose way in changed in round r − 1, from their costs at the round's
  // start (snapshot[r & 1]); its winners are frozen, and prepared for round r + 1 in the same phase (the snapshots
  // alternate, so a winner's new cost never overwrites the one another winner's way is rebuilt from).
  ASRDEC_HD void closure() {
    const float cutoff = s_.cutoff;
    std::int64_t relaxed = 0;
    // The frame's tokens before the round, read where no thread offers (a thread that has left the check may
    // already be claiming tokens in the round's relaxation); round 1 is never cut (nothing relaxed yet).
    std::int32_t before = 0;
    int from = 0;
    for (std::int32_t round = 1; s_.frontier_count[from] > 0; ++round, from ^= 1) {
      const std::int32_t n = s_.frontier_count[from];
      if (wfst_closure_cut(relaxed, before)) {
        exec_.single([&] { s_.closure_cut = true; });
        exec_.barrier();
        break;
      }
      relaxed += n;
      const int to = from ^ 1;
      const std::int32_t* frontier = k_.frontier[from];
      std::int64_t* ways = ways_of(n);
      const float* snapshot = k_.snapshot[round & 1];
      // Offers the way along ε-arc `arc` out of a token of cost `from_cost` (its snapshot).
      const auto relax = [&](float from_cost, std::int64_t arc) {
        const float cost = wfst_epsilon_way(from_cost, g_.weight[arc], boost(g_.olabel[arc]));
        if (!(cost < cutoff)) return;
        const WfstOffer offer = wfst_table_offer(t_, exec_, g_.next_state[arc], wfst_way_key(cost, arc));
        if (offer.slot < 0) {
          exec_.atomic_or(&s_.status, kWfstLaneFull);
          return;
        }
        if (offer.improved && exec_.atomic_exch(&t_.round[offer.slot], round) != round) {
          // More winners than the frontier holds (C): the states claimed after the table's tokens ran out keep their
          // slots, where later offers still improve, so a round may name up to 2C. The frame does not fit anyway.
          const std::int32_t at = exec_.atomic_add(&s_.frontier_count[to], 1);
          if (at < t_.capacity) {
            k_.frontier[to][at] = offer.slot;
          } else {
            exec_.atomic_or(&s_.status, kWfstLaneFull);
          }
        }
      };
      if (s_.max_degree[round & 1] < c_.thread_per_token_degree) {  // few ε-arcs a token: a thread each
        exec_.for_each(n, [&](std::int64_t f) {
          const std::int32_t slot = frontier[f];
          const std::int32_t state = t_.state[slot];
          // Read once: the offers' stores may alias them.
          const float from_cost = snapshot[t_.token[slot]];
          const std::int64_t end = g_.emitting_begin[state + 1];
          for (std::int64_t arc = g_.epsilon_begin[state]; arc < end; ++arc) relax(from_cost, arc);
        });
      } else {  // arcs numbered over the tokens, spread evenly
        const std::int64_t total = exec_.exclusive_scan_of(ways, n, [&](std::int64_t f) { return ways[f]; });
        exec_.for_each(total, [&](std::int64_t i) {
          std::int32_t f = 0;
          std::int64_t offset = 0;
          item(i, n, f, offset);
          const std::int32_t slot = frontier[f];
          relax(snapshot[t_.token[slot]], g_.epsilon_begin[t_.state[slot]] + offset);
        });
      }
      exec_.barrier();
      if (s_.status != 0) return;
      // The round's winners: their way in, rebuilt from the arc their key names; then prepared for the next round.
      const std::int32_t changed = s_.frontier_count[to];
      if (changed == 0) break;  // the closure is complete (the next frame's start sets every scalar left here)
      std::int64_t* next_ways = ways_of(changed);
      exec_.for_each(changed, [&](std::int64_t f) {
        const std::int32_t slot = k_.frontier[to][f];
        const std::int64_t degree = epsilon_degree(t_.state[slot]);
        const std::uint64_t key = t_.key[slot];
        const std::int64_t arc = wfst_key_arc(key);
        const std::int32_t way_in = wfst_table_find(t_, wfst_arc_source(g_, arc));
        if (way_in < 0) {  // cannot happen (a way in leaves a token of the frame); never index with it
          exec_.atomic_or(&s_.broken, 1);
          return;
        }
        const std::int32_t source = t_.token[way_in];
        const float cost = wfst_epsilon_way(snapshot[source], g_.weight[arc], boost(g_.olabel[arc]));
        if (!wfst_key_is_fresh(key) || wfst_way_key(cost, arc) != key) exec_.atomic_or(&s_.broken, 1);
        const std::int32_t token = t_.token[slot];
        k_.cost[token] = cost;
        k_.arc[token] = arc;
        k_.prev[token] = source;
        k_.local[token] = 1;
        t_.key[slot] = wfst_frozen_key(key);
        exec_.atomic_min(&s_.frame_best, wfst_ordered_cost(cost));
        prepare(round + 1, f, token, cost, degree, next_ways);
      });
      exec_.single([&] {  // read by every thread before the relaxation's barrier
        s_.max_degree[round & 1] = 0;
        s_.frontier_count[from] = 0;
      });
      before = tokens();
      exec_.barrier();
      if (broken()) return;
    }
  }

  // Step 4 (WfstSearcher::commit): the tokens the next frame expands, marked in `active` and numbered in one scan
  // (numbering()). `consumed`: the last frame's active tokens (null at the start), whose state table nothing reads
  // after round 0: emptied here, before the scan's barrier, which orders it before the history's puts of the next
  // frame's tokens (they may go to the same table).
  ASRDEC_HD void commit(float beam, bool overflow, const WfstLaneActive* consumed) {
    const std::int32_t n = tokens();
    const float best = wfst_cost_of_ordered(s_.frame_best);
    const float tight = rounded_add(best, beam);
    const float cut = widen(s_.cutoff < tight ? s_.cutoff : tight, s_.cutoff);
    if (consumed != nullptr) {
      const WfstLaneTable& by_state = consumed->by_state;
      exec_.for_each(consumed->count, [&](std::int64_t i) { by_state.state[by_state.slot_of[i]] = -1; });
    }
    // Writes only token i's own flag, which nothing reads before the scan's barrier.
    const bool ways = wfst_numbers_ways(g_, n);
    count_ = n;
    numbering_ = exec_.exclusive_scan_of(k_.scan, static_cast<std::int64_t>(n), [&](std::int64_t i) {
      const bool active = k_.cost[i] < cut;
      k_.active[i] = active ? 1 : 0;
      if (!active) return std::int64_t{0};
      const std::int32_t state = ways ? t_.state[t_.slot_of[i]] : 0;
      return std::int64_t{1} | (ways ? emitting_degree(state) : 0) << 32;
    });
    std::int64_t kept = numbering_ & 0xffffffff;
    all_active_ = kept == n && !(overflow && kept > c_.max_tokens) && kept <= c_.max_active;
    if (overflow && kept > c_.max_tokens) {  // the cheapest max_tokens_per_frame, by (cost, state)
      const auto order = [&](std::int64_t i) {
        return static_cast<std::uint64_t>(wfst_ordered_cost(k_.cost[i])) << 32 |
               static_cast<std::uint32_t>(t_.state[t_.slot_of[i]]);
      };
      const std::uint64_t last = wfst_lane_select(exec_, WfstSelectScratch{s_.select_counts, s_.select_state}, n,
                                                  c_.max_tokens - 1, 64, [&](std::int64_t i, std::uint64_t& value) {
                                                    value = order(i);
                                                    return k_.active[i] != 0;
                                                  });
      exec_.for_each(n, [&](std::int64_t i) {
        if (k_.active[i] != 0 && order(i) > last) k_.active[i] = 0;
      });
      exec_.barrier();
      kept = c_.max_tokens;
      numbering_ |= kNotNumbered;
    }
    if (kept > c_.max_active) {  // the max_active histogram over [best, cut)
      const float range = rounded_sub(cut, best);
      exec_.for_each(kWfstHistogramBins, [&](std::int64_t b) { s_.counts[b] = 0; });
      exec_.barrier();
      exec_.for_each(n, [&](std::int64_t i) {
        if (k_.active[i] != 0) exec_.atomic_add(&s_.counts[wfst_cost_bin(k_.cost[i], best, range)], std::int64_t{1});
      });
      exec_.barrier();
      const std::int32_t last = wfst_last_kept_bin(s_.counts, c_.max_active);
      exec_.for_each(n, [&](std::int64_t i) {
        if (k_.active[i] != 0 && wfst_cost_bin(k_.cost[i], best, range) > last) k_.active[i] = 0;
      });
      exec_.barrier();
      numbering_ |= kNotNumbered;
    }
    // The next frame's scalars, after the last barrier that follows every read of them here: a frame that starts
    // with the ways the store numbers (WfstLaneActive::ways_total) has no barrier before its first phase, and the
    // store's barrier comes before it.
    exec_.single([&] { reset_frame_scalars(); });
  }

  const WfstLaneGraph& g_;
  const WfstLaneConfig& c_;
  WfstLaneFrame& f_;  // the frame's arrays, read by every phase, written by use_table alone
  const WfstLaneTable& t_;
  const WfstLaneTokens& k_;
  const WfstLaneFrames* frames_;
  WfstLaneScalars& s_;
  const float* boost_;
  Exec& exec_;
  bool all_active_ = false;
  bool using_fast_ = false;
  // The commit's numbering total and the frame's tokens, every thread's own copy (numbering() and count());
  // kNotNumbered set when the selections changed `active` after the numbering.
  std::int64_t numbering_ = 0;
  std::int32_t count_ = 0;
  static constexpr std::int64_t kNotNumbered = -0x7fffffffffffffff - 1;  // the sign bit
};

}  // namespace asrdec::detail

// The parallel WFST frame step (src/wfst/lane_step) run by a host emulation of a thread block, whose threads take
// each phase's work items in a chosen order (identity, reversed, shuffled), against WfstSearcher, the CPU executor:
// every frame's tokens (state, cost bits, arc, the predecessor), the active tokens, the overflow flag and the
// final results must be the same, whatever the order. Random graphs in the CUDA tests' four kinds (exact, pruned,
// queue pressure, min_active at a tight beam) with boosts, and the sample TLG under the pressure limits.

#include "wfst/lane_step/wfst_lane_step.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <random>
#include <tuple>

#include "wfst/random_wfst.hpp"
#include "wfst/wfst_channel.hpp"

namespace asrdec {
namespace {

using namespace wfst_testing;
using detail::WfstChannel;
using detail::WfstSearcher;

// One thread block, emulated: a phase's items run one after another in `order`; atomics are plain operations.
class HostLaneExec {
 public:
  enum Order { identity, reversed, shuffled };
  HostLaneExec(Order order, std::uint64_t seed) : order_(order), rng_(seed) {}

  template <class F>
  void for_each(std::int64_t n, F&& f) {
    items_.resize(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)));
    std::iota(items_.begin(), items_.end(), std::int64_t{0});
    if (order_ == reversed) std::reverse(items_.begin(), items_.end());
    if (order_ == shuffled) std::shuffle(items_.begin(), items_.end(), rng_);
    const std::vector<std::int64_t> items = items_;  // f may call for_each's helpers, never for_each itself
    for (const std::int64_t i : items) f(i);
  }
  void barrier() {}
  template <class F>
  void single(F&& f) {
    f();
  }
  template <class T>
  T load(const T* p) {
    return *p;
  }
  std::int32_t atomic_cas(std::int32_t* p, std::int32_t expected, std::int32_t desired) {
    const std::int32_t old = *p;
    if (old == expected) *p = desired;
    return old;
  }
  template <class T>
  T atomic_add(T* p, T v) {
    const T old = *p;
    *p += v;
    return old;
  }
  std::int32_t atomic_exch(std::int32_t* p, std::int32_t v) { return std::exchange(*p, v); }
  std::int32_t atomic_or(std::int32_t* p, std::int32_t v) { return std::exchange(*p, *p | v); }
  template <class T>
  T atomic_min(T* p, T v) {
    const T old = *p;
    if (v < old) *p = v;
    return old;
  }
  template <class T>
  T atomic_max(T* p, T v) {
    const T old = *p;
    if (v > old) *p = v;
    return old;
  }
  std::int64_t exclusive_scan(std::int64_t* values, std::int64_t n) {
    std::int64_t sum = 0;
    for (std::int64_t i = 0; i < n; ++i) sum += std::exchange(values[i], sum);
    return sum;
  }

 private:
  Order order_;
  std::mt19937_64 rng_;
  std::vector<std::int64_t> items_;
};

// A table and its arrays in host memory.
struct HostTable {
  explicit HostTable(std::int32_t capacity)
      : state(2 * static_cast<std::size_t>(capacity), -1),
        token(state.size(), 0),
        round(state.size(), -1),
        key(state.size(), detail::kWfstNoWay),
        slot_of(static_cast<std::size_t>(capacity), 0) {
    view = detail::WfstLaneTable{state.data(),   token.data(), key.data(),   round.data(),
                                 slot_of.data(), &count,       2 * capacity, capacity};
  }
  std::vector<std::int32_t> state, token, round;
  std::vector<std::uint64_t> key;
  std::vector<std::int32_t> slot_of;
  std::int32_t count = 0;
  detail::WfstLaneTable view{};
};

// One utterance decoded by the lane step, its tokens kept as WfstSearcher keeps them (a WfstChannel).
class EmulatedLane {
 public:
  EmulatedLane(const WfstGraph& graph, const WfstDecoderConfig& config, std::int32_t capacity, HostLaneExec& exec)
      : graph_(graph),
        config_{config.beam, config.acoustic_scale, config.max_active, config.min_active, config.max_tokens_per_frame},
        table_(capacity),
        previous_(capacity),
        exec_(exec) {
    const WfstGraphArrays& a = graph.arrays();
    graph_view_ =
        detail::WfstLaneGraph{a.emitting_begin.data(), a.epsilon_begin.data(), a.ilabel.data(), a.olabel.data(),
                              a.weight.data(),         a.next_state.data(),    a.num_states,    a.start};
    const auto n = static_cast<std::size_t>(capacity);
    cost_.resize(n), arc_.resize(n), prev_.resize(n), local_.resize(n), active_.resize(n);
    snapshot_.resize(n), frontier0_.resize(n), frontier1_.resize(n), scan_.resize(n + 1);
    tokens_ = detail::WfstLaneTokens{cost_.data(),
                                     arc_.data(),
                                     prev_.data(),
                                     local_.data(),
                                     active_.data(),
                                     snapshot_.data(),
                                     {frontier0_.data(), frontier1_.data()},
                                     scan_.data()};
  }

  const WfstChannel& channel() const { return channel_; }
  std::int32_t status() const { return status_; }

  // The start frame; false when it did not fit the lane.
  bool start(const WordBoosts& boosts) {
    channel_ = WfstChannel{};
    if (!boosts.empty()) {
      channel_.boost_by_word.assign(static_cast<std::size_t>(graph_.max_output_label()) + 1, 0.0f);
      for (const auto& [word, score] : boosts) channel_.boost_by_word[static_cast<std::size_t>(word)] += score;
    }
    step().start();
    if (scalars_.status != 0) {
      status_ = scalars_.status;
      return false;
    }
    const std::int32_t n = table_.count;
    for (std::int32_t i = 0; i < n; ++i) {
      const auto u = static_cast<std::size_t>(i);
      channel_.history.push_back(detail::WfstToken{table_.state[static_cast<std::size_t>(table_.slot_of[u])], 0,
                                                   local_[u] != 0 ? prev_[u] : -1, arc_[u], cost_[u]});
      if (active_[u] != 0) channel_.active.push_back(i);
    }
    channel_.overflow = scalars_.closure_cut;
    return true;
  }

  // One frame; false when it did not fit the lane (the caller then has nothing to compare).
  bool advance(const detail::WfstSearcher& searcher, const float* logp) {
    // The active tokens of the last frame, and their positions by state.
    std::vector<std::int32_t> states;
    std::vector<float> costs;
    std::vector<std::int64_t> indices;
    for (const std::int64_t index : channel_.active) {
      const detail::WfstToken& t = channel_.history[static_cast<std::size_t>(index)];
      states.push_back(t.state);
      costs.push_back(t.cost);
      indices.push_back(index);
    }
    detail::wfst_table_clear(previous_.view, exec_);
    for (std::size_t i = 0; i < states.size(); ++i) {
      detail::wfst_table_put(previous_.view, exec_, states[i], static_cast<std::int32_t>(i));
    }
    previous_.count = static_cast<std::int32_t>(states.size());
    const detail::WfstLaneActive active{states.data(), costs.data(), indices.data(),
                                        static_cast<std::int32_t>(states.size()), previous_.view};
    const bool overflow = step().advance(active, logp);
    if (scalars_.status != 0) {
      status_ = scalars_.status;
      return false;
    }
    // As the CUDA executor hands frames over: emitting predecessors among the last frame's tokens.
    std::vector<detail::WfstStoredToken> stored;
    for (std::int32_t i = 0; i < table_.count; ++i) {
      const auto u = static_cast<std::size_t>(i);
      const std::int64_t prev = local_[u] != 0 ? prev_[u] : prev_[u] - channel_.last_frame_begin;
      stored.push_back(detail::WfstStoredToken{table_.state[static_cast<std::size_t>(table_.slot_of[u])], cost_[u],
                                               static_cast<std::int32_t>(arc_[u]), static_cast<std::int32_t>(prev),
                                               active_[u]});
    }
    searcher.append_frame(channel_, stored.data(), static_cast<std::int64_t>(stored.size()), overflow);
    return true;
  }

 private:
  detail::WfstLaneStep<HostLaneExec> step() {
    return detail::WfstLaneStep<HostLaneExec>(graph_view_, config_, table_.view, tokens_, scalars_,
                                              channel_.boost_by_word.empty() ? nullptr : channel_.boost_by_word.data(),
                                              exec_);
  }

  const WfstGraph& graph_;
  detail::WfstLaneGraph graph_view_{};
  detail::WfstLaneConfig config_;
  HostTable table_, previous_;
  std::vector<float> cost_, snapshot_;
  std::vector<std::int32_t> local_, active_, frontier0_, frontier1_;
  std::vector<std::int64_t> arc_, prev_, scan_;
  detail::WfstLaneTokens tokens_{};
  detail::WfstLaneScalars scalars_{};
  HostLaneExec& exec_;
  WfstChannel channel_;
  std::int32_t status_ = 0;
};

// A frame's tokens by state: cost bits, arc, and the predecessor's (state, frame).
using FrameTokens = std::map<std::int32_t, std::tuple<std::uint32_t, std::int64_t, std::int32_t, std::int32_t>>;

FrameTokens last_frame(const WfstChannel& c) {
  FrameTokens out;
  for (auto i = static_cast<std::size_t>(c.last_frame_begin); i < c.history.size(); ++i) {
    const detail::WfstToken& t = c.history[i];
    std::uint32_t bits;
    std::memcpy(&bits, &t.cost, 4);
    const bool start = t.prev < 0;
    const detail::WfstToken* from = start ? nullptr : &c.history[static_cast<std::size_t>(t.prev)];
    out[t.state] = {bits, t.arc, start ? -1 : from->state, start ? -1 : from->frame};
  }
  return out;
}

std::vector<std::int32_t> active_states(const WfstChannel& c) {
  std::vector<std::int32_t> states;
  for (const std::int64_t i : c.active) states.push_back(c.history[static_cast<std::size_t>(i)].state);
  std::sort(states.begin(), states.end());
  return states;
}

// Decodes one utterance with both; false when the lane could not hold a frame (then nothing more is compared).
bool expect_lane_equals_searcher(const WfstGraph& graph, const WfstDecoderConfig& config, const WordBoosts& boosts,
                                 const std::vector<float>& frames, std::int32_t length, std::int32_t columns,
                                 std::int32_t capacity, HostLaneExec& exec, const std::string& what) {
  SCOPED_TRACE(what);
  WfstSearcher searcher(graph, config);
  WfstChannel want;
  searcher.start(want, boosts);
  EmulatedLane lane(graph, config, capacity, exec);
  if (!lane.start(boosts)) {
    EXPECT_NE(lane.status() & detail::kWfstLaneBroken, detail::kWfstLaneBroken) << "start";
    return false;
  }
  EXPECT_EQ(last_frame(lane.channel()), last_frame(want)) << "start";
  EXPECT_EQ(active_states(lane.channel()), active_states(want)) << "start";
  for (std::int32_t t = 0; t < length && !::testing::Test::HasFailure(); ++t) {
    const float* logp = frames.data() + static_cast<std::size_t>(t) * static_cast<std::size_t>(columns);
    searcher.advance(want, logp);
    if (!lane.advance(searcher, logp)) {
      EXPECT_NE(lane.status() & detail::kWfstLaneBroken, detail::kWfstLaneBroken) << "frame " << t;
      return false;
    }
    EXPECT_EQ(last_frame(lane.channel()), last_frame(want)) << "frame " << t;
    EXPECT_EQ(active_states(lane.channel()), active_states(want)) << "frame " << t;
    EXPECT_EQ(lane.channel().overflow, want.overflow) << "frame " << t;
  }
  if (::testing::Test::HasFailure()) return true;
  const std::int32_t blank = columns;  // any label: word frames are compared, whatever it is
  expect_same(searcher.result(lane.channel(), true, blank), searcher.result(want, true, blank), "final result");
  EXPECT_EQ(searcher.result(lane.channel(), true, blank).overflow, want.overflow);
  return true;
}

TEST(WfstLaneStep, EqualsTheSearcherOnRandomGraphsInEveryOrder) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t utterances = 0, boosted = 0, rejected = 0, full = 0;
  for (int i = 0; i < 400; ++i) {
    auto [random, graph] = accepted_graph(rng, rejected);
    const int kind = i % 4;
    WfstDecoderConfig config = random_search_config(rng, kind);
    config.acoustic_scale = i % 5 == 0 ? 0.5f + static_cast<float>(rng() % 100) / 50.0f : 1.0f;
    const Batch batch = random_batch(rng, random.columns, 3, 12);
    const auto order = static_cast<HostLaneExec::Order>(i % 3);
    HostLaneExec exec(order, rng());
    // Random graphs have at most 9 states: a lane of 4 tokens is sometimes too small, and must say so.
    const std::int32_t capacity = i % 7 == 6 ? 4 : 16;
    for (std::size_t b = 0; b < batch.lengths.size(); ++b) {
      WordBoosts boosts;
      if (i % 4 == 1 && rng() % 2 == 0) boosts.emplace_back(1 + static_cast<std::int32_t>(rng() % random.words), 0.7f);
      if (!boosts.empty() && boosts[0].first > graph.max_output_label()) boosts.clear();  // no arc carries it
      std::vector<float> row(static_cast<std::size_t>(graph.max_output_label()) + 1, 0.0f);
      for (const auto& [word, score] : boosts) row[static_cast<std::size_t>(word)] += score;
      try {
        graph.check_word_boosts(row);
      } catch (const InvalidArgument&) {
        boosts.clear();  // a boost that makes an ε-cycle free is rejected (tested with the decoder)
      }
      const std::string what = "case " + std::to_string(i) + ", utterance " + std::to_string(b) + ", order " +
                               std::to_string(static_cast<int>(order)) + ", " + config.to_string();
      const bool fitted = expect_lane_equals_searcher(graph, config, boosts, batch.utterances[b], batch.lengths[b],
                                                      random.columns, capacity, exec, what);
      if (::testing::Test::HasFailure()) return;
      full += fitted ? 0 : 1;
      utterances += 1;
      boosted += boosts.empty() ? 0 : 1;
    }
  }
  EXPECT_GT(full, 0) << "no lane ran out of tokens";
  std::printf("%lld utterances (%lld boosted), %lld lanes too small for a frame, %lld rejected graphs\n",
              static_cast<long long>(utterances), static_cast<long long>(boosted), static_cast<long long>(full),
              static_cast<long long>(rejected));
}

// The sample frames through the sample TLG, with limits small enough that the histogram cut, beam tightening and the
// overflow selection all happen.
TEST(WfstLaneStep, SampleTlgEqualsTheSearcherUnderPressure) {
  const SampleFrames sample = sample_frames(6);
  const auto columns = static_cast<std::int32_t>(sample.columns);
  CtcGraphOptions options;
  const WfstGraph graph = detail::wfst_graph_from_fst(sample_ctc_graph(options).tlg, "sample TLG");
  std::mt19937_64 rng(5);
  int case_index = 0;
  for (const auto& [max_active, max_tokens] : sample_pressure_limits()) {
    WfstDecoderConfig config;
    config.acoustic_scale = 2.0f;
    config.max_active = max_active;
    config.max_tokens_per_frame = max_tokens;
    for (std::size_t u = 0; u < sample.utterances.size(); ++u, ++case_index) {
      const std::vector<float>& frames = sample.utterances[u];
      const auto length = static_cast<std::int32_t>(frames.size() / static_cast<std::size_t>(columns));
      HostLaneExec exec(static_cast<HostLaneExec::Order>(case_index % 3), rng());
      const bool fitted = expect_lane_equals_searcher(graph, config, {}, frames, length, columns, 1 << 14, exec,
                                                      config.to_string() + ", utterance " + std::to_string(u));
      EXPECT_TRUE(fitted);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

}  // namespace
}  // namespace asrdec

// The CPU frame step of WFST beam search (wfst_decoder.hpp): emitting arcs, cutoff, ε-closure, active tokens by beam
// and max_active histogram, and the traceback of the best path.

#include "wfst/wfst_channel.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "asrdec/core/error.hpp"
#include "wfst/wfst_step.hpp"

namespace asrdec::detail {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

}  // namespace

WfstSearcher::WfstSearcher(const WfstGraph& graph, const WfstDecoderConfig& config)
    : graph_(&graph), g_(&graph.arrays()), config_(config) {
  for (const std::int32_t column : config.word_start_columns) word_start_labels_.push_back(column + 1);
  std::sort(word_start_labels_.begin(), word_start_labels_.end());
  slot_.assign(static_cast<std::size_t>(g_->num_states), -1);
}

void WfstSearcher::clear_frame() {
  for (const FrameToken& t : list_) slot_[static_cast<std::size_t>(t.state)] = -1;
  list_.clear();
}

bool WfstSearcher::relax(std::int32_t state, const FrameToken& way) {
  std::int32_t& slot = slot_[static_cast<std::size_t>(state)];
  if (slot < 0) {
    slot = static_cast<std::int32_t>(list_.size());
    list_.push_back(way);
    list_.back().state = state;
    return true;
  }
  FrameToken& current = list_[static_cast<std::size_t>(slot)];
  if (!wfst_better(way.cost, way.depth, way.arc, current.cost, current.depth, current.arc)) return false;
  current = way;
  current.state = state;
  return true;
}

// ε-closure of the frame list below `cutoff`, in rounds (Bellman-Ford with the values of each round's start): round
// r + 1 relaxes the ε-arcs of the tokens whose way in changed in round r, from their values at the end of round r;
// round 0 is the frontier the caller set (the list after the emitting step, or the start). Every way of round r has
// ε-depth r, so what a round keeps depends only on the set of ways it offers, never on the order they are tried: an
// executor that relaxes a round's arcs in parallel keeps the same tokens bit for bit, also where float rounding makes
// two ways tie and where the relaxation cap (wfst_closure_cut) stops the closure. ε-cycles cost > 0, so it ends.
void WfstSearcher::closure(float cutoff) {
  closure_cut_ = false;
  std::int64_t relaxed = 0;
  for (std::int32_t round = 1; !frontier_.empty(); ++round) {
    if (wfst_closure_cut(relaxed, static_cast<std::int64_t>(list_.size()))) {
      closure_cut_ = true;
      break;
    }
    relaxed += static_cast<std::int64_t>(frontier_.size());
    snapshot_.clear();
    for (const std::int32_t i : frontier_) snapshot_.push_back(list_[static_cast<std::size_t>(i)]);
    next_frontier_.clear();
    for (std::size_t f = 0; f < frontier_.size(); ++f) {
      const FrameToken& from = snapshot_[f];
      for (std::int64_t a = g_->epsilon_begin[from.state]; a < g_->emitting_begin[from.state + 1]; ++a) {
        const float cost = wfst_epsilon_way(from.cost, g_->weight[a], boost(*boosts_of_, g_->olabel[a]));
        if (!(cost < cutoff)) continue;
        const std::int32_t state = g_->next_state[a];
        if (!relax(state, FrameToken{0, cost, from.depth + 1, frontier_[f], a, true})) continue;
        const auto changed = static_cast<std::size_t>(slot_[static_cast<std::size_t>(state)]);
        if (changed >= changed_in_.size()) changed_in_.resize(list_.size(), -1);
        if (changed_in_[changed] != round) {
          changed_in_[changed] = round;
          next_frontier_.push_back(static_cast<std::int32_t>(changed));
        }
      }
    }
    frontier_.swap(next_frontier_);
  }
  frontier_.clear();
  std::fill_n(changed_in_.begin(), std::min(changed_in_.size(), list_.size()), -1);
}

std::vector<float> WfstSearcher::boost_row(const WordBoosts& boosts) const {
  std::vector<float> row;
  if (boosts.empty()) return row;
  row.assign(static_cast<std::size_t>(graph_->max_output_label()) + 1, 0.0f);
  for (const auto& [word, score] : boosts) {
    ASRDEC_CHECK_ARG(word >= 1 && word <= graph_->max_output_label(), "word boosting: word id ", word,
                     " is not an output label of the graph (1 … ", graph_->max_output_label(), ")");
    ASRDEC_CHECK_ARG(std::isfinite(score), "word boosting: the score of word ", word, " is ", score);
    row[static_cast<std::size_t>(word)] += score;
  }
  graph_->check_word_boosts(row);
  return row;
}

void WfstSearcher::start(WfstChannel& channel, const WordBoosts& boosts) { start_with(channel, boost_row(boosts)); }

void WfstSearcher::start_with(WfstChannel& channel, std::vector<float> boost_by_word) {
  channel = WfstChannel{};
  channel.boost_by_word = std::move(boost_by_word);
  boosts_of_ = &channel;
  clear_frame();
  relax(g_->start, FrameToken{0, 0.0f, 0, -1, -1, false});
  frontier_.assign(1, 0);
  cutoff_ = config_.beam;
  closure(cutoff_);
  commit(channel, config_.beam, closure_cut_);
}

bool WfstSearcher::expand(const WfstChannel& channel, const float* logp, float beam) {
  clear_frame();
  // 1. Emitting arcs of the active tokens; a running bound drops ways that cannot pass the final cutoff.
  float best = kInf;
  const auto emitting = [&](bool bounded) {
    for (const std::int64_t index : channel.active) {
      const WfstToken& from = channel.history[static_cast<std::size_t>(index)];
      for (std::int64_t a = g_->emitting_begin[from.state]; a < g_->epsilon_begin[from.state]; ++a) {
        const float acoustic = wfst_acoustic_cost(config_.acoustic_scale, logp[g_->ilabel[a] - 1]);
        const float cost = wfst_emitting_way(from.cost, g_->weight[a], boost(channel, g_->olabel[a]), acoustic);
        if (!(cost < (bounded ? rounded_add(best, beam) : kInf))) continue;
        best = std::min(best, cost);
        relax(g_->next_state[a], FrameToken{0, cost, 0, index, a, false});
      }
    }
  };
  emitting(true);
  // 2. The cutoff from the best way in; the list keeps only what is below it. With min_active, when the beam holds
  //    at most min_active ways in, every finite way is taken again (the bound dropped) and the cutoff widens.
  float cutoff = rounded_add(best, beam);
  if (config_.min_active > 0 && count_below(cutoff) <= config_.min_active) {
    clear_frame();
    best = kInf;
    emitting(false);
    float worst = -kInf;
    for (const FrameToken& t : list_) worst = std::max(worst, t.cost);
    cutoff = widen_to_min_active(rounded_add(best, beam), rounded_add(worst, beam));
  }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < list_.size(); ++i) {
    const FrameToken t = list_[i];
    if (t.cost < cutoff) {
      list_[kept] = t;
      slot_[static_cast<std::size_t>(t.state)] = static_cast<std::int32_t>(kept);
      ++kept;
    } else {
      slot_[static_cast<std::size_t>(t.state)] = -1;
    }
  }
  list_.resize(kept);
  frontier_.resize(list_.size());
  for (std::size_t i = 0; i < list_.size(); ++i) frontier_[i] = static_cast<std::int32_t>(i);
  // 3. ε-closure below the cutoff.
  cutoff_ = cutoff;
  closure(cutoff);
  return static_cast<std::int64_t>(list_.size()) <= config_.max_tokens_per_frame;
}

void WfstSearcher::advance(WfstChannel& channel, const float* logp) {
  boosts_of_ = &channel;
  float beam = config_.beam;
  bool fits = expand(channel, logp, beam);
  for (int i = 0; i < kWfstBeamTightenings && !fits; ++i) {
    beam *= 0.5f;
    fits = expand(channel, logp, beam);
  }
  channel.frames += 1;
  commit(channel, beam, !fits || closure_cut_);
}

std::int64_t WfstSearcher::count_below(float bound) const {
  std::int64_t n = 0;
  for (const FrameToken& t : list_) n += t.cost < bound ? 1 : 0;
  return n;
}

float WfstSearcher::widen_to_min_active(float bound, float all) {
  const auto keep = static_cast<std::size_t>(config_.min_active);
  if (keep == 0 || count_below(bound) > config_.min_active) return bound;  // the M+1-th cheapest is below it
  if (list_.size() <= keep) return std::max(bound, all);
  costs_.clear();
  for (const FrameToken& t : list_) costs_.push_back(t.cost);
  std::nth_element(costs_.begin(), costs_.begin() + static_cast<std::ptrdiff_t>(keep), costs_.end());
  return std::max(bound, costs_[keep]);
}

// 4. Active tokens; the frame's tokens go to the history.
void WfstSearcher::commit(WfstChannel& channel, float beam, bool overflow) {
  const std::size_t n = list_.size();
  float best = kInf;
  for (const FrameToken& t : list_) best = std::min(best, t.cost);
  const float cut = widen_to_min_active(std::min(cutoff_, rounded_add(best, beam)), cutoff_);
  order_.clear();
  for (std::size_t i = 0; i < n; ++i) {
    if (list_[i].cost < cut) order_.push_back(static_cast<std::int32_t>(i));
  }
  const auto cheaper = [this](std::int32_t x, std::int32_t y) {
    const FrameToken& a = list_[static_cast<std::size_t>(x)];
    const FrameToken& b = list_[static_cast<std::size_t>(y)];
    return a.cost < b.cost || (a.cost == b.cost && a.state < b.state);
  };
  if (overflow && static_cast<std::int64_t>(order_.size()) > config_.max_tokens_per_frame) {
    const auto keep = static_cast<std::ptrdiff_t>(config_.max_tokens_per_frame);
    std::nth_element(order_.begin(), order_.begin() + keep, order_.end(), cheaper);
    order_.resize(static_cast<std::size_t>(keep));
    std::sort(order_.begin(), order_.end());
  }
  if (static_cast<std::int64_t>(order_.size()) > config_.max_active) {
    std::int64_t counts[kWfstHistogramBins] = {};
    const float range = cut - best;
    for (const std::int32_t i : order_) ++counts[wfst_cost_bin(list_[static_cast<std::size_t>(i)].cost, best, range)];
    const std::int32_t last = wfst_last_kept_bin(counts, config_.max_active);
    std::size_t kept = 0;
    for (const std::int32_t i : order_) {
      if (wfst_cost_bin(list_[static_cast<std::size_t>(i)].cost, best, range) <= last) order_[kept++] = i;
    }
    order_.resize(kept);
  }
  // History: every token of the frame (a frame's tokens keep their order, so local back-pointers just shift).
  const auto base = static_cast<std::int64_t>(channel.history.size());
  for (const FrameToken& t : list_) {
    channel.history.push_back(WfstToken{t.state, channel.frames, t.local ? base + t.prev : t.prev, t.arc, t.cost});
  }
  channel.last_frame_begin = base;
  channel.active.clear();
  for (const std::int32_t i : order_) channel.active.push_back(base + i);
  channel.overflow = channel.overflow || overflow;
  clear_frame();
  if (static_cast<std::int64_t>(channel.history.size()) > channel.collect_at) collect_history(channel);
}

// Drops the history no traceback can reach any more: everything but the last frame's tokens and their ancestors.
// Runs when the history has doubled since the last collection, so its cost is amortised and long streams keep
// only their live paths (roughly the last frame's tokens times the frames since the paths merged).
void WfstSearcher::collect_history(WfstChannel& channel) const {
  std::vector<WfstToken>& history = channel.history;
  const auto n = static_cast<std::int64_t>(history.size());
  std::vector<std::int64_t> remap(static_cast<std::size_t>(n), -1);
  for (std::int64_t i = channel.last_frame_begin; i < n; ++i) {
    for (std::int64_t j = i; j >= 0 && remap[static_cast<std::size_t>(j)] < 0;) {
      remap[static_cast<std::size_t>(j)] = 0;  // reachable
      j = history[static_cast<std::size_t>(j)].prev;
    }
  }
  // New indices first: within a frame an ε-predecessor may sit after the token it leads to.
  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if (remap[static_cast<std::size_t>(i)] >= 0) remap[static_cast<std::size_t>(i)] = kept++;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t to = remap[static_cast<std::size_t>(i)];
    if (to < 0) continue;
    WfstToken t = history[static_cast<std::size_t>(i)];
    if (t.prev >= 0) t.prev = remap[static_cast<std::size_t>(t.prev)];
    history[static_cast<std::size_t>(to)] = t;  // to <= i: nothing unread is overwritten
  }
  history.resize(static_cast<std::size_t>(kept));
  channel.last_frame_begin = remap[static_cast<std::size_t>(channel.last_frame_begin)];
  for (std::int64_t& index : channel.active) index = remap[static_cast<std::size_t>(index)];
  channel.collect_at = std::max<std::int64_t>(2 * kept, kCollectHistoryAbove);
  channel.collections += 1;
}

WfstResult WfstSearcher::result(const WfstChannel& channel, bool final, std::int32_t blank_label) const {
  WfstResult r;
  r.frames = channel.frames;
  r.overflow = channel.overflow;
  std::int64_t best = -1;
  float best_total = kInf;
  std::int32_t best_state = 0;
  const auto consider = [&](std::int64_t i, float total) {
    const WfstToken& t = channel.history[static_cast<std::size_t>(i)];
    if (total < best_total || (total == best_total && best >= 0 && t.state < best_state)) {
      best = i;
      best_total = total;
      best_state = t.state;
    }
  };
  const auto end = static_cast<std::int64_t>(channel.history.size());
  if (final && config_.use_final_probs) {
    for (std::int64_t i = channel.last_frame_begin; i < end; ++i) {
      const WfstToken& t = channel.history[static_cast<std::size_t>(i)];
      const float f = g_->final_weight[static_cast<std::size_t>(t.state)];
      if (f < kInf) consider(i, t.cost + f);
    }
    r.reached_final = best >= 0;
  }
  if (best < 0) {
    if (final || channel.active.empty()) {
      for (std::int64_t i = channel.last_frame_begin; i < end; ++i) {
        consider(i, channel.history[static_cast<std::size_t>(i)].cost);
      }
    } else {
      for (const std::int64_t i : channel.active) consider(i, channel.history[static_cast<std::size_t>(i)].cost);
    }
  }
  if (best < 0) {
    r.cost = r.graph_cost = r.acoustic_cost = kInf;
    return r;
  }
  trace(channel, best, best_total, blank_label, r);
  return r;
}

std::vector<WfstResult> WfstSearcher::nbest(const WfstChannel& channel, std::int32_t blank_label,
                                            std::int64_t n) const {
  // The final frame's tokens, by cost + final weight on final states (when use_final_probs and some token is on one),
  // else by cost; the traceback of each, in that order, until n distinct word sequences.
  struct Candidate {
    float total;
    std::int32_t state;
    std::int64_t index;
  };
  std::vector<Candidate> candidates;
  const auto end = static_cast<std::int64_t>(channel.history.size());
  bool reached_final = false;
  if (config_.use_final_probs) {
    for (std::int64_t i = channel.last_frame_begin; i < end; ++i) {
      const WfstToken& t = channel.history[static_cast<std::size_t>(i)];
      const float f = g_->final_weight[static_cast<std::size_t>(t.state)];
      if (f < kInf) candidates.push_back({t.cost + f, t.state, i});
    }
    reached_final = !candidates.empty();
  }
  if (!reached_final) {
    for (std::int64_t i = channel.last_frame_begin; i < end; ++i) {
      const WfstToken& t = channel.history[static_cast<std::size_t>(i)];
      candidates.push_back({t.cost, t.state, i});
    }
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.total < b.total || (a.total == b.total && a.state < b.state);
  });
  std::vector<WfstResult> out;
  std::set<std::vector<std::int32_t>> seen;
  for (const Candidate& c : candidates) {
    if (static_cast<std::int64_t>(out.size()) >= n || !(c.total < kInf)) break;
    WfstResult r;
    r.frames = channel.frames;
    r.overflow = channel.overflow;
    r.reached_final = reached_final;
    trace(channel, c.index, c.total, blank_label, r);
    if (!seen.insert(r.words).second) continue;
    out.push_back(std::move(r));
  }
  return out;
}

void WfstSearcher::trace(const WfstChannel& channel, std::int64_t best, float best_total, std::int32_t blank_label,
                         WfstResult& r) const {
  r.cost = best_total;
  std::vector<WfstPathStep> steps;
  std::size_t walked = 0;
  for (std::int64_t i = best; i >= 0; i = channel.history[static_cast<std::size_t>(i)].prev) {
    // Back-pointers form a tree; a walk longer than the history would mean a cycle (an internal error).
    ASRDEC_EXPECTS(++walked <= channel.history.size() + 1, Error,
                   "WFST traceback: circular back-pointers in the token history (internal error)");
    const WfstToken& t = channel.history[static_cast<std::size_t>(i)];
    if (t.arc >= 0) steps.push_back(WfstPathStep{static_cast<std::int32_t>(t.arc), t.frame});
  }
  std::reverse(steps.begin(), steps.end());
  trace_path(steps, channel.history[static_cast<std::size_t>(best)].state, channel.boost_by_word, channel.frames,
             blank_label, r);
}

void WfstSearcher::trace_path(const std::vector<WfstPathStep>& steps, std::int32_t last_state,
                              const std::vector<float>& boost_by_word, std::int32_t frames, std::int32_t blank_label,
                              WfstResult& r) const {
  r.graph_cost = r.reached_final ? g_->final_weight[static_cast<std::size_t>(last_state)] : 0.0f;
  const std::int32_t last_frame = std::max(frames - 1, 0);
  std::int32_t start = -1, stop = -1, arc_frame = 0;
  const auto close_word = [&]() {
    if (r.words.empty()) return;
    r.word_start_frames.push_back(start >= 0 ? start : arc_frame);
    r.word_end_frames.push_back(start >= 0 ? stop : arc_frame);
  };
  for (const WfstPathStep& step : steps) {
    const auto arc = static_cast<std::size_t>(step.arc);
    const std::int32_t ilabel = g_->ilabel[arc];
    const std::int32_t olabel = g_->olabel[arc];
    r.graph_cost += g_->weight[arc] - boost(boost_by_word, olabel);
    // An emitting arc consumed frame step.frame − 1; an ε-arc lies before the next frame.
    const std::int32_t frame = ilabel != 0 ? step.frame - 1 : std::min(step.frame, last_frame);
    if (olabel != 0) {
      close_word();
      r.words.push_back(olabel);
      start = stop = -1;
      arc_frame = frame;
    }
    if (ilabel != 0 && ilabel != blank_label && !r.words.empty()) {
      if (start < 0) start = frame;
      stop = frame;
    }
  }
  close_word();
  token_word_frames(steps, blank_label, r);
  // The graph part is summed along the path; the acoustic part is the rest (the search keeps one cost per token).
  r.acoustic_cost = r.cost - r.graph_cost;
}

// Word frames from word-starting tokens (wfst_decoder.hpp), replacing the output-arc frames when the path has exactly
// one word-starting token per word.
void WfstSearcher::token_word_frames(const std::vector<WfstPathStep>& steps, std::int32_t blank_label,
                                     WfstResult& r) const {
  if (word_start_labels_.empty() || r.words.empty()) return;
  std::vector<std::int32_t> starts, ends;
  std::int32_t previous = 0;  // input label of the previous frame (0: none yet, or blank)
  for (const WfstPathStep& step : steps) {
    const std::int32_t ilabel = g_->ilabel[static_cast<std::size_t>(step.arc)];
    if (ilabel == 0) continue;
    const std::int32_t frame = step.frame - 1;
    if (ilabel == blank_label) {
      previous = 0;
      continue;
    }
    const bool new_token = ilabel != previous;
    previous = ilabel;
    if (new_token && std::binary_search(word_start_labels_.begin(), word_start_labels_.end(), ilabel)) {
      starts.push_back(frame);
      ends.push_back(frame);
    } else if (!ends.empty()) {
      ends.back() = frame;
    }
  }
  if (starts.size() != r.words.size()) return;
  r.word_start_frames = std::move(starts);
  r.word_end_frames = std::move(ends);
}

}  // namespace asrdec::detail

#include "hyps/beam_channel.hpp"

#include <algorithm>
#include <limits>

#include "asrdec/core/error.hpp"
#include "asrdec/lm/ngram_lm.hpp"
#include "hyps/token_confidences.hpp"

namespace asrdec::detail {
namespace {

constexpr float kDead = -std::numeric_limits<float>::infinity();

}  // namespace

void beam_channel_start(BeamChannel& c, std::int32_t beam, std::int32_t boost_root) {
  const auto K = static_cast<std::size_t>(beam);
  c.score.assign(K, kDead);
  c.score[0] = 0.0f;
  c.lm_total.assign(K, 0.0f);
  c.boost_total.assign(K, 0.0f);
  c.tokens.assign(K, 0);
  c.last_label.assign(K, -1);
  c.lm_state.assign(K, NgramLm::bos_state());
  c.boost_state.assign(K, boost_root);
  c.hash.assign(K, 0);
  c.prefix_hash.assign(K, 0);
  c.on_frame.assign(K, 0);
  c.next_time.assign(K, 0);
  c.tip.assign(K, -1);
  c.predictor.clear();
  c.tail.clear();
  c.duration.clear();
  c.token.clear();
  c.frame.clear();
  c.logprob.clear();
  c.parent.clear();
}

void beam_channel_load(const BeamChannel& c, const BeamHypsRef& h, std::int64_t b, std::int64_t offset,
                       const BeamFusedSlots& fused) {
  for (std::int32_t k = 0; k < h.beam; ++k) {
    const std::int64_t s = beam_slot(h, b, k);
    const auto i = static_cast<std::size_t>(k);
    h.scores[s] = c.score[i];
    h.steps[s] = 0;
    h.tokens[s] = c.tokens[i];
    h.last_label[s] = c.last_label[i];
    h.hash[s] = c.hash[i];
    h.prefix_hash[s] = c.prefix_hash[i];
    h.next_time[s] = h.kind == BeamKind::ctc ? 0 : static_cast<std::int32_t>(c.next_time[i] - offset);
    h.on_frame[s] = c.on_frame[i];
    if (fused.lm_state != nullptr) {
      fused.lm_state[s] = c.lm_state[i];
      fused.lm_total[s] = c.lm_total[i];
    }
    if (fused.boost_state != nullptr) {
      fused.boost_state[s] = c.boost_state[i];
      fused.boost_total[s] = c.boost_total[i];
    }
  }
  h.overflow[b] = 0;
}

void BeamChannelSave::prepare(const BeamHypsRef& h, std::int64_t rows, const std::vector<BeamChannel*>& channels,
                              const std::vector<std::uint8_t>& fresh, const std::vector<std::int32_t>& boost_roots,
                              std::int64_t predictor_width) {
  channels_.assign(channels.begin(), channels.begin() + rows);
  fresh_.assign(fresh.begin(), fresh.begin() + rows);
  started_.resize(static_cast<std::size_t>(rows));
  std::int32_t most_steps = 0;
  for (std::int64_t b = 0; b < rows; ++b) {
    ASRDEC_EXPECTS(!h.overflow[b], Error, "internal error: beam hypothesis capacity exceeded for utterance ", b);
    const auto row = static_cast<std::size_t>(b);
    BeamChannel* c = channels_[row];
    if (fresh_[row]) {
      c = &started_[row];
      beam_channel_start(*c, h.beam, boost_roots[row]);
    }
    // Room for every entry of the lane (an upper bound on the tokens it adds), grown geometrically.
    std::int64_t entries = 0;
    for (std::int32_t k = 0; k < h.beam; ++k) {
      const std::int32_t steps = h.steps[beam_slot(h, b, k)];
      entries += steps;
      most_steps = std::max(most_steps, steps);
    }
    const auto wanted = static_cast<std::size_t>(static_cast<std::int64_t>(c->token.size()) + entries);
    std::size_t capacity =
        std::min({c->token.capacity(), c->frame.capacity(), c->logprob.capacity(), c->parent.capacity()});
    if (h.kind == BeamKind::tdt) capacity = std::min(capacity, c->duration.capacity());
    if (wanted > capacity) {
      const std::size_t room = std::max(wanted, 2 * capacity);
      c->token.reserve(room);
      c->frame.reserve(room);
      c->logprob.reserve(room);
      c->parent.reserve(room);
      if (h.kind == BeamKind::tdt) c->duration.reserve(room);
    }
    if (predictor_width > 0) c->predictor.resize(static_cast<std::size_t>(h.beam * predictor_width));
  }
  tip_.resize(static_cast<std::size_t>(h.beam));
  path_.resize(static_cast<std::size_t>(most_steps));
}

BeamChannel& BeamChannelSave::commit(const BeamHypsRef& h, std::int64_t b, std::int64_t offset,
                                     const BeamFusedSlots& fused) {
  const auto row = static_cast<std::size_t>(b);
  if (fresh_[row]) *channels_[row] = std::move(started_[row]);
  BeamChannel& c = *channels_[row];
  for (std::int32_t k = 0; k < h.beam; ++k) {
    // The slot's entries of this chunk, last to first, and the slot it started the chunk in.
    const std::int32_t steps = h.steps[beam_slot(h, b, k)];
    std::int32_t slot = k;
    for (std::int32_t i = steps - 1; i >= 0; --i) {
      const std::int64_t at = beam_slot(h, b, slot) * h.capacity + i;
      path_[static_cast<std::size_t>(i)] = at;
      slot = h.parents[at];
    }
    // Its tokens, folded as the whole search folds them (beam_emits; CTC: a label that differs from the last label,
    // blank included, which at the chunk's start is the slot's carried one).
    std::int32_t previous = c.last_label[static_cast<std::size_t>(slot)];
    std::int64_t last = c.tip[static_cast<std::size_t>(slot)];
    for (std::int32_t i = 0; i < steps; ++i) {
      const std::int64_t at = path_[static_cast<std::size_t>(i)];
      const std::int32_t label = h.labels[at];
      if (label < 0) continue;
      if (beam_emits(h, label, previous)) {
        c.token.push_back(label);  // within the room prepare() took
        c.frame.push_back(static_cast<std::int32_t>(offset + h.timestamps[at]));
        c.logprob.push_back(h.logprobs[at]);
        if (h.kind == BeamKind::tdt) c.duration.push_back(h.durations[at]);
        c.parent.push_back(last);
        last = static_cast<std::int64_t>(c.token.size()) - 1;
      }
      previous = label;
    }
    tip_[static_cast<std::size_t>(k)] = last;
  }
  std::copy(tip_.begin(), tip_.end(), c.tip.begin());
  for (std::int32_t k = 0; k < h.beam; ++k) {
    const std::int64_t s = beam_slot(h, b, k);
    const auto i = static_cast<std::size_t>(k);
    c.score[i] = h.scores[s];
    c.tokens[i] = h.tokens[s];
    c.last_label[i] = h.last_label[s];
    c.hash[i] = h.hash[s];
    c.prefix_hash[i] = h.prefix_hash[s];
    c.next_time[i] = offset + h.next_time[s];
    c.on_frame[i] = h.on_frame[s];
    if (fused.lm_state != nullptr) {
      c.lm_state[i] = fused.lm_state[s];
      c.lm_total[i] = fused.lm_total[s];
    }
    if (fused.boost_state != nullptr) {
      c.boost_state[i] = fused.boost_state[s];
      c.boost_total[i] = fused.boost_total[s];
    }
  }
  return c;
}

std::vector<Hypothesis> beam_channel_hypotheses(const BeamChannel& c, bool length_normalized, bool lm, bool boost) {
  const auto key = [&](std::int32_t k) {  // beam_ranking_score
    const auto i = static_cast<std::size_t>(k);
    return length_normalized ? c.score[i] / static_cast<float>(c.tokens[i] + 1) : c.score[i];
  };
  std::vector<std::int32_t> order;
  for (std::size_t k = 0; k < c.score.size(); ++k) {
    if (c.score[k] != kDead) order.push_back(static_cast<std::int32_t>(k));
  }
  std::stable_sort(order.begin(), order.end(), [&](std::int32_t x, std::int32_t y) { return key(x) > key(y); });
  std::vector<Hypothesis> out;
  for (const std::int32_t k : order) {
    const auto i = static_cast<std::size_t>(k);
    Hypothesis hyp;
    for (std::int64_t at = c.tip[i]; at >= 0; at = c.parent[static_cast<std::size_t>(at)]) {
      hyp.tokens.push_back(c.token[static_cast<std::size_t>(at)]);
      hyp.timestamps.push_back(c.frame[static_cast<std::size_t>(at)]);
      hyp.token_scores.push_back(c.logprob[static_cast<std::size_t>(at)]);
      if (!c.duration.empty()) hyp.durations.push_back(c.duration[static_cast<std::size_t>(at)]);
    }
    std::reverse(hyp.tokens.begin(), hyp.tokens.end());
    std::reverse(hyp.timestamps.begin(), hyp.timestamps.end());
    std::reverse(hyp.token_scores.begin(), hyp.token_scores.end());
    std::reverse(hyp.durations.begin(), hyp.durations.end());
    detail::confidences_from_scores(hyp);
    hyp.score = c.score[i];
    hyp.ranking_score = key(k);
    hyp.lm_score = lm ? c.lm_total[i] : 0.0f;
    hyp.boost_score = boost ? c.boost_total[i] : 0.0f;
    hyp.am_score = hyp.score - hyp.lm_score - hyp.boost_score;
    out.push_back(std::move(hyp));
  }
  return out;
}

}  // namespace asrdec::detail

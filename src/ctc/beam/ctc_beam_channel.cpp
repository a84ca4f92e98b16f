#include "ctc/beam/ctc_beam_channel.hpp"

#include <algorithm>
#include <limits>

#include "asrdec/core/error.hpp"
#include "asrdec/lm/ngram_lm.hpp"

namespace asrdec::detail {
namespace {

constexpr float kDead = -std::numeric_limits<float>::infinity();

}  // namespace

void ctc_beam_start(CtcBeamChannel& c, std::int32_t beam, std::int32_t boost_root) {
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
  c.tip.assign(K, -1);
  c.token.clear();
  c.frame.clear();
  c.parent.clear();
}

void ctc_beam_load(const CtcBeamChannel& c, const BeamHypsRef& h, std::int64_t b, const CtcBeamFusedSlots& fused) {
  for (std::int32_t k = 0; k < h.beam; ++k) {
    const std::int64_t s = beam_slot(h, b, k);
    const auto i = static_cast<std::size_t>(k);
    h.scores[s] = c.score[i];
    h.steps[s] = 0;
    h.tokens[s] = c.tokens[i];
    h.last_label[s] = c.last_label[i];
    h.hash[s] = c.hash[i];
    h.prefix_hash[s] = c.prefix_hash[i];
    h.next_time[s] = 0;
    h.on_frame[s] = 0;
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

void ctc_beam_save(CtcBeamChannel& c, const BeamHypsRef& h, std::int64_t b, std::int64_t offset,
                   const CtcBeamFusedSlots& fused) {
  ASRDEC_EXPECTS(!h.overflow[b], Error, "internal error: beam hypothesis capacity exceeded for utterance ", b);
  const auto K = static_cast<std::size_t>(h.beam);
  std::vector<std::int64_t> tip(K);
  std::vector<std::int32_t> path;
  for (std::int32_t k = 0; k < h.beam; ++k) {
    // The slot's entries of this chunk, last to first, and the slot it started the chunk in.
    const std::int32_t steps = h.steps[beam_slot(h, b, k)];
    path.assign(static_cast<std::size_t>(steps), -1);
    std::int32_t slot = k;
    for (std::int32_t i = steps - 1; i >= 0; --i) {
      const std::int64_t at = beam_slot(h, b, slot) * h.capacity + i;
      path[static_cast<std::size_t>(i)] = h.labels[at];
      slot = h.parents[at];
    }
    // Its tokens, folded as the whole search folds them: a label emits when it is not blank and differs from the
    // last label (blank included), which at the chunk's start is the slot's carried one.
    std::int32_t previous = c.last_label[static_cast<std::size_t>(slot)];
    std::int64_t last = c.tip[static_cast<std::size_t>(slot)];
    for (std::int32_t i = 0; i < steps; ++i) {
      const std::int32_t label = path[static_cast<std::size_t>(i)];
      if (label < 0) continue;
      if (label != h.blank && label != previous) {
        c.token.push_back(label);
        c.frame.push_back(static_cast<std::int32_t>(offset + i));
        c.parent.push_back(last);
        last = static_cast<std::int64_t>(c.token.size()) - 1;
      }
      previous = label;
    }
    tip[static_cast<std::size_t>(k)] = last;
  }
  c.tip = std::move(tip);
  for (std::int32_t k = 0; k < h.beam; ++k) {
    const std::int64_t s = beam_slot(h, b, k);
    const auto i = static_cast<std::size_t>(k);
    c.score[i] = h.scores[s];
    c.tokens[i] = h.tokens[s];
    c.last_label[i] = h.last_label[s];
    c.hash[i] = h.hash[s];
    c.prefix_hash[i] = h.prefix_hash[s];
    if (fused.lm_state != nullptr) {
      c.lm_state[i] = fused.lm_state[s];
      c.lm_total[i] = fused.lm_total[s];
    }
    if (fused.boost_state != nullptr) {
      c.boost_state[i] = fused.boost_state[s];
      c.boost_total[i] = fused.boost_total[s];
    }
  }
}

std::vector<Hypothesis> ctc_beam_hypotheses(const CtcBeamChannel& c, bool lm, bool boost) {
  std::vector<std::int32_t> order;
  for (std::size_t k = 0; k < c.score.size(); ++k) {
    if (c.score[k] != kDead) order.push_back(static_cast<std::int32_t>(k));
  }
  std::stable_sort(order.begin(), order.end(), [&](std::int32_t x, std::int32_t y) {
    return c.score[static_cast<std::size_t>(x)] > c.score[static_cast<std::size_t>(y)];
  });
  std::vector<Hypothesis> out;
  for (const std::int32_t k : order) {
    const auto i = static_cast<std::size_t>(k);
    Hypothesis hyp;
    for (std::int64_t at = c.tip[i]; at >= 0; at = c.parent[static_cast<std::size_t>(at)]) {
      hyp.tokens.push_back(c.token[static_cast<std::size_t>(at)]);
      hyp.timestamps.push_back(c.frame[static_cast<std::size_t>(at)]);
    }
    std::reverse(hyp.tokens.begin(), hyp.tokens.end());
    std::reverse(hyp.timestamps.begin(), hyp.timestamps.end());
    hyp.score = c.score[i];
    hyp.ranking_score = hyp.score;
    hyp.lm_score = lm ? c.lm_total[i] : 0.0f;
    hyp.boost_score = boost ? c.boost_total[i] : 0.0f;
    hyp.am_score = hyp.score - hyp.lm_score - hyp.boost_score;
    out.push_back(std::move(hyp));
  }
  return out;
}

}  // namespace asrdec::detail

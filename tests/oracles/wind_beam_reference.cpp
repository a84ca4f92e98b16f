// The WIND beam-search oracle: the paper's Algorithm 3 over one utterance, with hypotheses holding their whole
// transcripts in a list: repeatedly expand the hypotheses on the earliest unfinished frame into their K best first
// outputs over the window, merge equal hypotheses (same transcript and frame) and keep at most K per frame.

#include <algorithm>
#include <cmath>
#include <limits>

#include "asrdec/detail/portable_math.hpp"
#include "oracles/beam_reference_model.hpp"

namespace asrdec::detail {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct FirstOutput {
  std::int32_t id;     // position · (V+1) + label
  std::int32_t label;  // token or blank
  std::int32_t jump;   // frames moved: the token's position, or the window for blank
  float acoustic;      // blanks before it and its own log-probability
  float fused;         // the same with fused scores
};

}  // namespace

std::vector<Hypothesis> wind_beam_reference(ReferenceBeamModel& scorer, const TransducerBeamConfig& config,
                                            const TransducerInput& p, std::int64_t b) {
  const std::int32_t length = p.lengths[static_cast<std::size_t>(b)];
  const std::int32_t K = config.beam;
  const std::int32_t blank = scorer.blank();
  const bool early = (config.lm != nullptr || config.boost != nullptr) && config.pruning == FusionPruning::early;
  std::vector<RefHyp> pool{scorer.start(b, p.batch)};

  for (;;) {
    std::int32_t t = length;
    for (const RefHyp& h : pool) t = std::min(t, h.frame);
    if (t >= length) break;
    const std::int32_t n = std::min(config.wind_window, length - t);
    std::vector<std::size_t> group;
    std::vector<std::vector<std::vector<float>>> windows;  // [group member][position][label]
    for (std::size_t i = 0; i < pool.size(); ++i) {
      if (pool[i].frame != t) continue;
      group.push_back(i);
      std::vector<std::vector<float>> window;
      for (std::int32_t j = 0; j < n; ++j) window.push_back(scorer.log_probs(p, b, t + j, pool[i]).first);
      windows.push_back(std::move(window));
    }

    // Prefix search within the group, from the scores before it.
    std::vector<float> scores;
    for (const std::size_t x : group) {
      const RefHyp& hx = pool[x];
      float score = hx.score;
      if (!hx.tokens.empty()) {
        const std::vector<std::int32_t> prefix(hx.tokens.begin(), hx.tokens.end() - 1);
        float extra = kNegInf;
        for (std::size_t g = 0; g < group.size(); ++g) {
          const RefHyp& hy = pool[group[g]];
          if (group[g] == x || hy.tokens != prefix) continue;
          extra = reference_log_add(extra, hy.score + scorer.label_score(hy, windows[g][0], hx.tokens.back()));
        }
        score = reference_log_add(score, extra);
      }
      scores.push_back(score);
    }
    for (std::size_t g = 0; g < group.size(); ++g) pool[group[g]].score = scores[g];

    // The candidates: the hypotheses on later frames as they are, then the group's K best first outputs each.
    std::vector<RefHyp> next;
    for (const RefHyp& h : pool) {
      if (h.frame != t) next.push_back(h);
    }
    for (std::size_t g = 0; g < group.size(); ++g) {
      const RefHyp& h = pool[group[g]];
      const auto& window = windows[g];
      std::vector<FirstOutput> outputs;
      float blanks = 0.0f, acoustic_blanks = 0.0f;
      for (std::int32_t j = 0; j < n; ++j) {
        const std::vector<float>& lp = window[static_cast<std::size_t>(j)];
        if (j > 0 || h.on_frame < config.max_symbols_per_frame) {
          for (std::int32_t v = 0; v < static_cast<std::int32_t>(lp.size()); ++v) {
            if (v == blank) continue;
            outputs.push_back(FirstOutput{j * static_cast<std::int32_t>(lp.size()) + v, v, j,
                                          acoustic_blanks + lp[static_cast<std::size_t>(v)],
                                          blanks + scorer.label_score(h, lp, v)});
          }
        }
        blanks += scorer.label_score(h, lp, blank);
        acoustic_blanks += lp[static_cast<std::size_t>(blank)];
      }
      const auto V1 = static_cast<std::int32_t>(window[0].size());
      outputs.push_back(FirstOutput{(n - 1) * V1 + blank, blank, n, acoustic_blanks, blanks});
      // The K best by fused score, or (early pruning) by acoustic score, keeping that order. Outputs are in id
      // order, so a stable sort breaks ties by id.
      std::stable_sort(outputs.begin(), outputs.end(), [&](const FirstOutput& x, const FirstOutput& y) {
        return early ? x.acoustic > y.acoustic : x.fused > y.fused;
      });
      outputs.resize(std::min<std::size_t>(outputs.size(), static_cast<std::size_t>(K)));
      for (const FirstOutput& o : outputs) {
        RefHyp e = h;
        e.score = h.score + o.fused;
        if (e.score == kNegInf) continue;
        e.frame = t + o.jump;
        e.on_frame = o.jump > 0 ? 0 : h.on_frame;
        if (o.label != blank) {
          e.tokens.push_back(o.label);
          e.timestamps.push_back(e.frame);
          e.on_frame += 1;
          scorer.emit(e, o.label);
        }
        next.push_back(std::move(e));
      }
    }

    // Equal hypotheses (same transcript and frame) merge into the first best of them, with log-sum-exp added in
    // list order; then each frame keeps its K best (score, then list order).
    std::vector<bool> gone(next.size(), false);
    for (std::size_t i = 0; i < next.size(); ++i) {
      if (gone[i]) continue;
      std::vector<std::size_t> same{i};
      for (std::size_t j = i + 1; j < next.size(); ++j) {
        if (!gone[j] && next[j].frame == next[i].frame && next[j].tokens == next[i].tokens) same.push_back(j);
      }
      std::size_t best = same[0];
      for (const std::size_t j : same) {
        if (next[j].score > next[best].score) best = j;
      }
      float sum = 0.0f;  // with the decoders' exp and log
      for (const std::size_t j : same) sum += detail::portable_exp(next[j].score - next[best].score);
      for (const std::size_t j : same) gone[j] = j != best;
      next[best].score = same.size() > 1 ? next[best].score + detail::portable_log(sum) : next[best].score;
    }
    std::vector<RefHyp> kept;
    for (std::size_t i = 0; i < next.size(); ++i) {
      if (gone[i]) continue;
      std::int32_t better = 0;
      for (std::size_t j = 0; j < next.size(); ++j) {
        if (j == i || gone[j] || next[j].frame != next[i].frame) continue;
        if (next[j].score > next[i].score || (next[j].score == next[i].score && j < i)) ++better;
      }
      if (better < K) kept.push_back(next[i]);
    }
    pool = std::move(kept);
  }
  return scorer.ranked(std::move(pool), p, b);
}

}  // namespace asrdec::detail

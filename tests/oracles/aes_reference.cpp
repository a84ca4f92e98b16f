// The AES++ oracle: frame-synchronous adaptive expansion search over one utterance, with each hypothesis holding its
// whole transcript; prefixes and duplicates are found by comparing transcripts.

#include <algorithm>
#include <cmath>
#include <limits>

#include "oracles/beam_reference_model.hpp"

namespace asrdec::detail {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct Candidate {
  std::size_t parent;  // index in the beam
  std::int32_t rank;   // position in the parent's proposal list
  std::int32_t label;  // token, blank, or -1 (done with the frame: keep the hypothesis as it is)
  float score;         // total
};

}  // namespace

std::vector<Hypothesis> aes_reference(ReferenceBeamModel& scorer, const TransducerBeamConfig& config,
                                      const TransducerInput& p, std::int64_t b) {
  const std::int32_t length = p.lengths[static_cast<std::size_t>(b)];
  const std::int32_t K = config.beam;
  const std::int32_t C = K + config.aes_expansion_beta;
  const std::int32_t blank_id = scorer.blank();
  std::vector<RefHyp> beam{scorer.start(b, p.batch)};

  for (std::int32_t t = 0; t < length; ++t) {
    std::vector<std::vector<float>> logp;
    for (const RefHyp& h : beam) logp.push_back(scorer.log_probs(p, b, t, h).first);

    // Prefix search, from the scores at the start of the frame.
    std::vector<float> scores;
    for (const RefHyp& x : beam) {
      float score = x.score;
      if (!x.tokens.empty()) {
        const std::vector<std::int32_t> prefix(x.tokens.begin(), x.tokens.end() - 1);
        float extra = kNegInf;
        for (std::size_t y = 0; y < beam.size(); ++y) {
          if (&beam[y] == &x || beam[y].tokens != prefix) continue;
          extra = reference_log_add(extra, beam[y].score + scorer.label_score(beam[y], logp[y], x.tokens.back()));
        }
        score = reference_log_add(score, extra);
      }
      scores.push_back(score);
    }
    for (std::size_t i = 0; i < beam.size(); ++i) beam[i].score = scores[i];

    std::vector<bool> expanding(beam.size(), true);
    for (std::int32_t step = 0; step < config.aes_num_steps; ++step) {
      if (std::none_of(expanding.begin(), expanding.end(), [](bool e) { return e; })) break;
      std::vector<Candidate> pool;
      for (std::size_t i = 0; i < beam.size(); ++i) {
        const RefHyp& h = beam[i];
        if (!expanding[i]) {
          pool.push_back(Candidate{i, 0, -1, h.score});
          continue;
        }
        // The C best labels: by fused score, or (early pruning with fusion) by acoustic score, re-scored.
        std::vector<std::int32_t> labels(logp[i].size());
        for (std::size_t v = 0; v < labels.size(); ++v) labels[v] = static_cast<std::int32_t>(v);
        const bool early = (config.lm != nullptr || config.boost != nullptr) && config.pruning == FusionPruning::early;
        std::vector<float> key(labels.size());
        for (std::size_t v = 0; v < labels.size(); ++v)
          key[v] = early ? logp[i][v] : scorer.label_score(h, logp[i], static_cast<std::int32_t>(v));
        std::stable_sort(labels.begin(), labels.end(), [&](std::int32_t x, std::int32_t y) { return key[x] > key[y]; });
        labels.resize(std::min<std::size_t>(labels.size(), static_cast<std::size_t>(C)));
        // Gamma: a label within gamma of the hypothesis' best label (its totals share h.score), judged by the
        // same key the labels were chosen by: with early pruning the acoustic score, before the LM is added.
        std::vector<float> added, judged;
        for (const std::int32_t v : labels) {
          added.push_back(scorer.label_score(h, logp[i], v));
          judged.push_back(key[static_cast<std::size_t>(v)]);
        }
        const float best = *std::max_element(judged.begin(), judged.end());
        for (std::size_t j = 0; j < labels.size(); ++j) {
          float total = judged[j] > best - config.aes_expansion_gamma ? h.score + added[j] : kNegInf;
          if (labels[j] != blank_id) {
            std::vector<std::int32_t> extended = h.tokens;
            extended.push_back(labels[j]);
            for (const RefHyp& other : beam) {
              if (other.tokens == extended) total = kNegInf;  // already in the beam
            }
          }
          pool.push_back(Candidate{i, static_cast<std::int32_t>(j), labels[j], total});
        }
      }
      std::stable_sort(pool.begin(), pool.end(), [&](const Candidate& x, const Candidate& y) {
        if (x.score != y.score) return x.score > y.score;
        return x.parent * C + x.rank < y.parent * C + y.rank;
      });
      std::vector<RefHyp> next;
      std::vector<bool> next_expanding;
      for (const Candidate& c : pool) {
        if (static_cast<std::int32_t>(next.size()) == K || c.score == kNegInf) break;
        RefHyp h = beam[c.parent];
        h.score = c.score;
        const bool token = c.label >= 0 && c.label != blank_id;
        if (token) {
          h.tokens.push_back(c.label);
          h.timestamps.push_back(t);
          scorer.emit(h, c.label);
        }
        next.push_back(std::move(h));
        next_expanding.push_back(token);
      }
      beam = std::move(next);
      expanding = std::move(next_expanding);
      logp.assign(beam.size(), {});
      for (std::size_t i = 0; i < beam.size(); ++i) {
        if (expanding[i]) logp[i] = scorer.log_probs(p, b, t, beam[i]).first;
      }
    }
    // Hypotheses still expanding leave the frame with a blank.
    for (std::size_t i = 0; i < beam.size(); ++i) {
      if (expanding[i]) beam[i].score += scorer.label_score(beam[i], logp[i], blank_id);
    }
  }
  return scorer.ranked(std::move(beam), p, b);
}

}  // namespace asrdec::detail

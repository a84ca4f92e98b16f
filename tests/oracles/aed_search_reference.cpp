#include "oracles/aed_search_reference.hpp"

#include <algorithm>
#include <cmath>

namespace asrdec {

namespace {

struct Hyp {
  std::vector<std::int32_t> tokens;
  std::vector<float> token_scores;
  float score = 0.0f;
  double am = 0.0, lm = 0.0, boost = 0.0;
  std::int32_t lm_state = 0, boost_state = 0;
  bool finished = false;
};

float penalty(std::int64_t prompt, const Hyp& h, float alpha) {
  if (alpha == 0.0f) return 1.0f;
  const float n = static_cast<float>(1 + prompt + static_cast<std::int64_t>(h.tokens.size()));
  return std::pow((5.0f + n) / 6.0f, alpha);
}

struct Candidate {
  float key;
  float score;
  std::size_t parent;
  std::int32_t token;  // -1: a finished hypothesis as it is
};

}  // namespace

std::vector<std::vector<Hypothesis>> aed_search_reference(const AedPrefixScorer& scorer,
                                                          const std::vector<std::int64_t>& encoder_lengths,
                                                          const std::vector<std::vector<std::int32_t>>& prompts,
                                                          std::int64_t max_positions, const AedDecoderConfig& c) {
  const std::size_t batch = encoder_lengths.size();
  const std::size_t K = c.search == AedSearch::beam ? static_cast<std::size_t>(c.beam_size) : 1;
  std::vector<std::vector<Hypothesis>> out(batch);
  for (std::size_t b = 0; b < batch; ++b) {
    const auto& prompt = prompts.size() == 1 ? prompts[0] : prompts[b];
    const std::int64_t P = static_cast<std::int64_t>(prompt.size());
    std::int64_t limit = max_positions - P;
    if (c.max_new_tokens > 0) limit = std::min<std::int64_t>(limit, c.max_new_tokens);
    if (c.max_length_delta >= 0) limit = std::min<std::int64_t>(limit, encoder_lengths[b] + c.max_length_delta - P);
    Hyp start;
    if (c.lm) start.lm_state = c.lm->initial_state(true);
    if (c.boost) start.boost_state = c.boost->root_for(static_cast<std::int64_t>(b), static_cast<std::int64_t>(batch));
    start.finished = limit <= 0;
    std::vector<Hyp> beam{start};
    while (std::any_of(beam.begin(), beam.end(), [](const Hyp& h) { return !h.finished; })) {
      std::vector<Candidate> candidates;
      std::vector<std::vector<float>> logprobs(beam.size());
      for (std::size_t k = 0; k < beam.size(); ++k) {
        const Hyp& h = beam[k];
        const float lp = penalty(P, h, c.length_penalty);
        if (h.finished) {
          candidates.push_back({h.score / lp, h.score, k, -1});
          continue;
        }
        logprobs[k] = scorer(static_cast<std::int64_t>(b), prompt, h.tokens);
        for (std::int32_t v = 0; v < static_cast<std::int32_t>(logprobs[k].size()); ++v) {
          float lm = 0.0f, boost = 0.0f;
          if (c.lm)
            lm = c.lm_weight * (v == c.eos_id ? c.lm->final_score(h.lm_state) : c.lm->score(h.lm_state, v).first);
          if (c.boost) {
            boost = c.boost_weight *
                    (v == c.eos_id ? c.boost->final_score(h.boost_state) : c.boost->score(h.boost_state, v).first);
          }
          const float total = h.score + (logprobs[k][static_cast<std::size_t>(v)] + (lm + boost));
          candidates.push_back({total / lp, total, k, v});
        }
      }
      std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& x, const Candidate& y) {
        if (x.key != y.key) return x.key > y.key;
        if (x.parent != y.parent) return x.parent < y.parent;
        return x.token < y.token;
      });
      std::vector<Hyp> next;
      for (std::size_t i = 0; i < candidates.size() && next.size() < K; ++i) {
        const Candidate& cand = candidates[i];
        Hyp h = beam[cand.parent];
        if (cand.token >= 0) {
          const std::int32_t v = cand.token;
          const float am = logprobs[cand.parent][static_cast<std::size_t>(v)];
          h.score = cand.score;
          h.am += am;
          if (c.lm) {
            const float s = v == c.eos_id ? c.lm->final_score(h.lm_state) : c.lm->score(h.lm_state, v).first;
            h.lm += c.lm_weight * s;
            if (v != c.eos_id) h.lm_state = c.lm->score(h.lm_state, v).second;
          }
          if (c.boost) {
            const float s =
                v == c.eos_id ? c.boost->final_score(h.boost_state) : c.boost->score(h.boost_state, v).first;
            h.boost += c.boost_weight * s;
            if (v != c.eos_id) h.boost_state = c.boost->score(h.boost_state, v).second;
          }
          if (v == c.eos_id) {
            h.finished = true;
          } else {
            h.tokens.push_back(v);
            h.token_scores.push_back(am);
            h.finished = static_cast<std::int64_t>(h.tokens.size()) >= limit;
          }
        }
        next.push_back(std::move(h));
      }
      beam = std::move(next);
    }
    std::vector<std::pair<float, std::size_t>> ranked;
    for (std::size_t k = 0; k < beam.size(); ++k)
      ranked.push_back({beam[k].score / penalty(P, beam[k], c.length_penalty), k});
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
    for (const auto& [key, k] : ranked) {
      Hypothesis h;
      h.tokens = beam[k].tokens;
      if (c.search == AedSearch::greedy) h.token_scores = beam[k].token_scores;
      h.score = beam[k].score;
      h.ranking_score = key;
      h.am_score = static_cast<float>(beam[k].am);
      h.lm_score = static_cast<float>(beam[k].lm);
      h.boost_score = static_cast<float>(beam[k].boost);
      out[b].push_back(std::move(h));
    }
  }
  return out;
}

}  // namespace asrdec

// The oracle of CTC beam search: one utterance at a time, each hypothesis holding its transcript, equal
// hypotheses found by comparing transcripts and last labels, the LM and the boosting tree queried one token at a
// time. It shares only input validation and frame reading with the decoder.

#include "oracles/ctc_beam_reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "asrdec/core/error.hpp"
#include "asrdec/detail/portable_math.hpp"
#include "core/ctc_input.hpp"
#include "ctc/beam/ctc_beam_backend.hpp"

namespace asrdec {
namespace {

struct RefHyp {
  std::vector<std::int32_t> tokens, timestamps;
  std::int32_t last = -1;  // the last label, blank included (-1 before the first frame)
  float score = 0.0f;
  float lm_total = 0.0f, boost_total = 0.0f;
  std::int32_t lm_state = 0, boost_state = 0;
};

/** best + ln Σ exp(x − best), summed in the given order (the decoder's recombination rule), with the exp and log that
 *  the decoders use on every executor (glibc's and CUDA's differ in the last bit, which can decide a threshold). */
float log_sum_exp(const std::vector<float>& xs) {
  float best = xs.front();
  for (float x : xs) best = std::max(best, x);
  if (best == -std::numeric_limits<float>::infinity()) return best;
  float sum = 0.0f;
  for (float x : xs) sum += detail::portable_exp(x - best);
  return best + detail::portable_log(sum);
}

struct Extension {
  std::size_t parent;
  std::int32_t label;
  float score;
};

}  // namespace

std::vector<std::vector<Hypothesis>> ctc_beam_reference(const TensorView& logprobs, const TensorView& lengths,
                                                        const CtcBeamConfig& config) {
  config.validate();
  ASRDEC_CHECK_ARG(config.lm == nullptr || config.lm->device().is_cpu(), "the reference decoder needs a CPU LM");
  ASRDEC_CHECK_ARG(config.boost == nullptr || config.boost->device().is_cpu(),
                   "the reference decoder needs a CPU boosting tree");
  const detail::CtcInput p = detail::make_ctc_beam_input(logprobs, lengths, config, Device::cpu());
  const auto C = static_cast<std::int32_t>(p.columns);
  const auto K = static_cast<std::size_t>(config.beam);
  std::vector<float> frame(static_cast<std::size_t>(C));
  std::vector<std::vector<Hypothesis>> out;
  for (std::int64_t b = 0; b < p.batch; ++b) {
    RefHyp start;
    start.lm_state = NgramLm::bos_state();
    start.boost_state = config.boost != nullptr ? config.boost->root_for(b, p.batch) : 0;
    std::vector<RefHyp> beam{start};
    for (std::int32_t t = 0; t < p.host_lengths[static_cast<std::size_t>(b)]; ++t) {
      detail::read_ctc_frame(p, b, t, config.check_values, frame.data());
      // The columns proposed: all, or the frame's beam_size_token most likely (the lower column on ties).
      std::vector<std::int32_t> columns(static_cast<std::size_t>(C));
      for (std::int32_t v = 0; v < C; ++v) columns[static_cast<std::size_t>(v)] = v;
      std::stable_sort(columns.begin(), columns.end(), [&](std::int32_t x, std::int32_t y) {
        return frame[static_cast<std::size_t>(x)] > frame[static_cast<std::size_t>(y)];
      });
      if (config.beam_size_token > 0 && config.beam_size_token < C) {
        columns.resize(static_cast<std::size_t>(config.beam_size_token));
      }
      std::sort(columns.begin(), columns.end());
      std::vector<Extension> pool;
      for (std::size_t k = 0; k < beam.size(); ++k) {
        const RefHyp& h = beam[k];
        for (std::int32_t v : columns) {
          float score = frame[static_cast<std::size_t>(v)];
          if (v != p.blank && v != h.last) {  // a new token: insertion bonus and fusion
            float bonus = 0.0f;
            if (config.lm != nullptr) bonus = config.lm_weight * config.lm->score(h.lm_state, v).first;
            if (config.boost != nullptr) bonus += config.boost_weight * config.boost->score(h.boost_state, v).first;
            score = score + config.beam_beta + bonus;
          }
          pool.push_back(Extension{k, v, h.score + score});
        }
      }
      if (pool.empty()) break;  // every hypothesis died (a frame of -inf log-probabilities)
      // Pool entries are in (parent, label) order; a stable sort by score keeps that order for ties.
      std::stable_sort(pool.begin(), pool.end(),
                       [](const Extension& x, const Extension& y) { return x.score > y.score; });
      const float floor = pool.front().score - config.beam_threshold;
      const auto extend = [&](const Extension& e) {
        RefHyp h = beam[e.parent];
        h.score = e.score;
        if (e.label != p.blank && e.label != h.last) {
          h.tokens.push_back(e.label);
          h.timestamps.push_back(t);
          if (config.lm != nullptr) {
            const auto [score, state] = config.lm->score(h.lm_state, e.label);
            h.lm_total += config.lm_weight * score;
            h.lm_state = state;
          }
          if (config.boost != nullptr) {
            const auto [score, state] = config.boost->score(h.boost_state, e.label);
            h.boost_total += config.boost_weight * score;
            h.boost_state = state;
          }
        }
        h.last = e.label;
        return h;
      };
      const auto same = [](const RefHyp& x, const RefHyp& y) { return x.tokens == y.tokens && x.last == y.last; };
      std::vector<RefHyp> next;
      if (config.merge_before_prune) {
        // flashlight's order: every proposal above the threshold, equal ones merged into the first (best) of them
        // (max, or the running log-add from the best down), then the K best merged ones.
        // Merged hypotheses rank by their merged score, then by their best proposal's (parent, label).
        std::vector<std::pair<RefHyp, std::pair<std::size_t, std::int32_t>>> merged;
        for (const Extension& e : pool) {
          if (!(e.score > floor) || e.score == -std::numeric_limits<float>::infinity()) break;
          RefHyp h = extend(e);
          const auto found =
              std::find_if(merged.begin(), merged.end(), [&](const auto& o) { return same(o.first, h); });
          if (found == merged.end()) {
            merged.push_back({std::move(h), {e.parent, e.label}});
          } else if (config.log_add) {
            const float high = std::max(found->first.score, h.score), low = std::min(found->first.score, h.score);
            found->first.score = high + std::log1p(std::exp(low - high));
          }
        }
        std::stable_sort(merged.begin(), merged.end(), [](const auto& x, const auto& y) {
          return x.first.score != y.first.score ? x.first.score > y.first.score : x.second < y.second;
        });
        for (std::size_t i = 0; i < std::min(K, merged.size()); ++i) next.push_back(std::move(merged[i].first));
      } else {
        // The K best extensions, less those under the threshold; merged ones are not replaced. The first (best)
        // of equal ones survives, with the maximum or (log_add) the log-sum-exp of their scores in slot order.
        std::vector<std::vector<float>> groups;
        for (std::size_t i = 0; i < std::min(K, pool.size()); ++i) {
          const Extension& e = pool[i];
          if (!(e.score > floor) || e.score == -std::numeric_limits<float>::infinity()) break;
          RefHyp h = extend(e);
          const auto found = std::find_if(next.begin(), next.end(), [&](const RefHyp& o) { return same(o, h); });
          if (found == next.end()) {
            next.push_back(std::move(h));
            groups.push_back({next.back().score});
          } else {
            groups[static_cast<std::size_t>(found - next.begin())].push_back(h.score);
          }
        }
        if (config.log_add) {
          for (std::size_t i = 0; i < next.size(); ++i) next[i].score = log_sum_exp(groups[i]);
        }
      }
      beam = std::move(next);
    }
    for (RefHyp& h : beam) {
      if (config.lm == nullptr) continue;
      const float end = config.lm_weight * config.lm->final_score(h.lm_state);
      h.score += end;
      h.lm_total += end;
    }
    if (config.merge_before_prune && !beam.empty()) {
      // flashlight's order: the end is pruned like a frame, before the two ends of a transcript merge.
      float top = beam.front().score;
      for (const RefHyp& h : beam) top = std::max(top, h.score);
      const float floor = top - config.beam_threshold;
      beam.erase(std::remove_if(beam.begin(), beam.end(), [&](const RefHyp& h) { return !(h.score > floor); }),
                 beam.end());
    }
    if (config.log_add) {
      // One transcript, two ends (blank, its last token): one CTC prefix. The group's first best hypothesis survives
      // in its place with the log-sum-exp of the group's scores (in beam order); the others go.
      std::vector<RefHyp> merged;
      for (std::size_t i = 0; i < beam.size(); ++i) {
        std::vector<float> group;
        bool survives = true;
        for (std::size_t j = 0; j < beam.size(); ++j) {
          if (beam[j].tokens != beam[i].tokens) continue;
          group.push_back(beam[j].score);
          if (beam[j].score > beam[i].score || (beam[j].score == beam[i].score && j < i)) survives = false;
        }
        if (!survives) continue;
        merged.push_back(beam[i]);
        merged.back().score = log_sum_exp(group);
      }
      beam = std::move(merged);
    }
    std::stable_sort(beam.begin(), beam.end(), [](const RefHyp& x, const RefHyp& y) { return x.score > y.score; });
    std::vector<Hypothesis> hyps;
    for (const RefHyp& h : beam) {
      // unique_transcripts: a later (worse) hypothesis with the transcript of one already listed is left out.
      const auto same = [&](const Hypothesis& listed) { return listed.tokens == h.tokens; };
      if (config.unique_transcripts && std::any_of(hyps.begin(), hyps.end(), same)) continue;
      Hypothesis hyp;
      hyp.tokens = h.tokens;
      hyp.timestamps = h.timestamps;
      // Token scores: each token's log-probability on the first frame of its run.
      for (std::size_t i = 0; i < h.tokens.size(); ++i) {
        detail::read_ctc_frame(p, b, h.timestamps[i], config.check_values, frame.data());
        hyp.token_scores.push_back(frame[static_cast<std::size_t>(h.tokens[i])]);
        hyp.token_confidences.push_back(std::exp(hyp.token_scores.back()));
      }
      hyp.score = h.score;
      hyp.ranking_score = h.score;
      hyp.lm_score = h.lm_total;
      hyp.boost_score = h.boost_total;
      hyp.am_score = h.score - h.lm_total - h.boost_total;
      hyps.push_back(std::move(hyp));
    }
    out.push_back(std::move(hyps));
  }
  return out;
}

}  // namespace asrdec

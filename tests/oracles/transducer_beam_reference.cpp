// The oracles of transducer beam search, one utterance at a time: ALSD++ here (AES++ and WIND in aes_reference.cpp
// and wind_beam_reference.cpp), with each hypothesis holding its whole transcript and equal hypotheses found by
// comparing transcripts. They share only the primitives (joint evaluation, predictor step, one-token LM and boosting
// queries) with the decoders, not their step functions.

#include "oracles/transducer_beam_reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "asrdec/core/error.hpp"
#include "asrdec/detail/portable_math.hpp"
#include "hyps/beam_search_step.hpp"
#include "oracles/beam_reference_model.hpp"
#include "transducer/beam/beam_backend.hpp"

namespace asrdec {
namespace {

using detail::RefHyp;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct Extension {
  std::size_t parent;  // index in the beam
  std::int32_t rank;   // position in the parent's proposal list
  std::int32_t label;  // token, blank, or -1 (finished: keep the hypothesis as it is)
  std::int32_t jump;   // frames to move (TDT)
  float score;         // total
};

class AlsdReference {
 public:
  AlsdReference(const TransducerModel& model, const TransducerBeamConfig& config, detail::ReferenceBeamModel& scorer)
      : model_(model), config_(config), scorer_(scorer) {}

  std::vector<Hypothesis> decode(const detail::TransducerInput& p, std::int64_t b) {
    const std::int32_t length = p.lengths[static_cast<std::size_t>(b)];
    const std::int32_t K = config_.beam;
    std::vector<RefHyp> beam{scorer_.start(b, p.batch)};

    const auto unfinished = [&](const RefHyp& h) { return h.frame < length; };
    while (std::any_of(beam.begin(), beam.end(), unfinished)) {
      std::vector<Extension> pool;
      for (std::size_t i = 0; i < beam.size(); ++i) {
        const RefHyp& h = beam[i];
        if (!unfinished(h)) {
          pool.push_back(Extension{i, 0, -1, 0, h.score});
          continue;
        }
        const std::vector<Proposal> proposals = propose(p, b, h);
        for (std::size_t j = 0; j < proposals.size(); ++j) {
          pool.push_back(Extension{i, static_cast<std::int32_t>(j), proposals[j].label, proposals[j].jump,
                                   h.score + proposals[j].score});
        }
      }
      // The K best of the pool: by score, then by (parent, rank).
      std::stable_sort(pool.begin(), pool.end(), [&](const Extension& x, const Extension& y) {
        if (x.score != y.score) return x.score > y.score;
        return x.parent * K + x.rank < y.parent * K + y.rank;
      });
      std::vector<RefHyp> next;
      for (const Extension& e : pool) {
        if (static_cast<std::int32_t>(next.size()) == K || e.score == kNegInf) break;
        next.push_back(extend(beam[e.parent], e));
      }
      beam = merge(std::move(next));
    }

    return scorer_.ranked(std::move(beam), p, b);
  }

 private:
  struct Proposal {
    std::int32_t label;
    std::int32_t jump;
    float score;
  };

  bool fused() const { return config_.lm != nullptr || config_.boost != nullptr; }

  std::int32_t jump_of(std::int32_t label, std::size_t d) const {
    const std::int32_t jump = model_.durations()[d];
    return label == model_.blank_id() ? std::max(jump, 1) : jump;
  }

  // What hypothesis h may become at its frame: up to K proposals (score added, label, jump), best first.
  std::vector<Proposal> propose(const detail::TransducerInput& p, std::int64_t b, const RefHyp& h) {
    const std::int64_t V1 = model_.vocab_size() + 1;
    const std::int32_t blank = model_.blank_id();
    const std::size_t D = model_.durations().size();
    const auto K = static_cast<std::size_t>(config_.beam);
    const auto [logp, logp_dur] = scorer_.log_probs(p, b, h.frame, h);

    const auto by_score = [](const std::vector<Proposal>& all, std::size_t keep) {
      std::vector<Proposal> sorted = all;  // in id order, so a stable sort breaks ties by id
      std::stable_sort(sorted.begin(), sorted.end(),
                       [](const Proposal& x, const Proposal& y) { return x.score > y.score; });
      sorted.resize(std::min(keep, sorted.size()));
      return sorted;
    };

    if (h.on_frame >= config_.max_symbols_per_frame) {
      // Forced blank to the next frame; TDT adds the best duration's log-probability.
      float score = scorer_.label_score(h, logp, blank);
      if (D > 0) score += *std::max_element(logp_dur.begin(), logp_dur.end());
      return {Proposal{blank, 1, score}};
    }
    // The candidate labels: all of them (late pruning), or the acoustic top K (early pruning).
    std::vector<std::int32_t> labels;
    if (fused() && config_.pruning == FusionPruning::early) {
      std::vector<Proposal> acoustic;
      for (std::int32_t v = 0; v < V1; ++v) acoustic.push_back(Proposal{v, 0, logp[static_cast<std::size_t>(v)]});
      for (const Proposal& a : by_score(acoustic, K)) labels.push_back(a.label);
    } else {
      for (std::int32_t v = 0; v < V1; ++v) labels.push_back(v);
    }
    std::vector<Proposal> all;
    for (const std::int32_t v : labels) {
      const float score = scorer_.label_score(h, logp, v);
      if (D == 0) {
        all.push_back(Proposal{v, 0, score});
      } else {
        for (std::size_t d = 0; d < D; ++d) all.push_back(Proposal{v, jump_of(v, d), score + logp_dur[d]});
      }
    }
    // Early pruning without durations keeps the acoustic order (the fused scores re-rank only in the global pool).
    if (fused() && config_.pruning == FusionPruning::early && D == 0) return all;
    return by_score(all, K);
  }

  RefHyp extend(const RefHyp& parent, const Extension& e) {
    RefHyp h = parent;
    h.score = e.score;
    if (e.label < 0) return h;
    const std::int32_t blank = model_.blank_id();
    const bool tdt = model_.type() == TransducerType::tdt;
    const std::int32_t jump = tdt ? e.jump : (e.label == blank ? 1 : 0);
    if (e.label != blank) {
      h.tokens.push_back(e.label);
      h.timestamps.push_back(parent.frame);  // the emission frame (for RNN-T jump is 0 here)
      if (tdt) h.durations.push_back(e.jump);
      scorer_.emit(h, e.label);
    }
    h.frame = parent.frame + jump;
    h.on_frame = jump > 0 ? 0 : parent.on_frame + (e.label != blank ? 1 : 0);
    return h;
  }

  // Hypotheses with the same transcript (TDT: and frame) become one: the first of the best keeps log-sum-exp, in
  // its place in the beam.
  std::vector<RefHyp> merge(std::vector<RefHyp> beam) const {
    const bool tdt = model_.type() == TransducerType::tdt;
    std::vector<bool> gone(beam.size(), false);
    std::vector<RefHyp> out;
    for (std::size_t i = 0; i < beam.size(); ++i) {
      if (gone[i]) continue;
      std::vector<std::size_t> group{i};
      for (std::size_t j = i + 1; j < beam.size(); ++j) {
        if (!gone[j] && beam[j].tokens == beam[i].tokens && (!tdt || beam[j].frame == beam[i].frame)) {
          group.push_back(j);
          gone[j] = true;
        }
      }
      std::size_t best = group[0];
      for (const std::size_t j : group) {
        if (beam[j].score > beam[best].score) best = j;
      }
      // In float and in beam order, with the decoders' exp and log, as the decoders add, so that exact ties stay ties.
      float sum = 0.0f;
      for (const std::size_t j : group) sum += detail::portable_exp(beam[j].score - beam[best].score);
      RefHyp merged = beam[best];
      merged.score = beam[best].score + detail::portable_log(sum);
      out.push_back(std::move(merged));
    }
    return out;
  }

  const TransducerModel& model_;
  const TransducerBeamConfig& config_;
  detail::ReferenceBeamModel& scorer_;
};

}  // namespace

std::vector<std::vector<Hypothesis>> transducer_beam_reference(const TransducerModel& model, const TensorView& enc_proj,
                                                               const TensorView& lengths,
                                                               const TransducerBeamConfig& config) {
  config.validate();
  ASRDEC_CHECK_ARG(model.device().is_cpu(), "the reference decoder needs a CPU model, got one on ",
                   model.device().to_string());
  ASRDEC_CHECK_ARG(config.lm == nullptr || config.lm->device().is_cpu(), "the reference decoder needs a CPU LM");
  ASRDEC_CHECK_ARG(config.boost == nullptr || config.boost->device().is_cpu(),
                   "the reference decoder needs a CPU boosting tree");
  detail::check_beam_model(model, config);
  const detail::TransducerInput p = detail::make_transducer_input(model, enc_proj, lengths, nullptr);
  detail::ReferenceBeamModel scorer(model, config, detail::beam_fusion_rule(config).blank_clamp);
  AlsdReference alsd(model, config, scorer);
  std::vector<std::vector<Hypothesis>> out;
  for (std::int64_t b = 0; b < p.batch; ++b) {
    switch (config.algorithm) {
      case TransducerBeamAlgorithm::alsd:
        out.push_back(alsd.decode(p, b));
        break;
      case TransducerBeamAlgorithm::aes:
        out.push_back(detail::aes_reference(scorer, config, p, b));
        break;
      case TransducerBeamAlgorithm::wind:
        out.push_back(detail::wind_beam_reference(scorer, config, p, b));
        break;
    }
  }
  return out;
}

}  // namespace asrdec

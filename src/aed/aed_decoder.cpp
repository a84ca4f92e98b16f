// AedDecoder: the API object and its CPU executor (batched greedy and beam search over an engine's decoder step, with
// n-gram LM and boosting fusion). The rules shared with other executors are in aed_search_rules.hpp.

#include "asrdec/aed/aed_decoder.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <utility>

#include "aed/aed_device_step.hpp"
#include "aed/aed_search_rules.hpp"
#include "asrdec/config.hpp"
#include "asrdec/core/batch_limits.hpp"
#include "asrdec/core/error.hpp"
#include "hyps/token_confidences.hpp"
#include "lm/fusion_checks.hpp"
#include "lm/fusion_step.hpp"

namespace asrdec {

void AedDecoderConfig::validate() const {
  if (search == AedSearch::beam) {
    ASRDEC_CHECK_ARG(beam_size >= 1 && beam_size <= kMaxBeam, "AedDecoderConfig::beam_size must be in [1, ", kMaxBeam,
                     "], got ", beam_size);
  }
  ASRDEC_CHECK_ARG(search == AedSearch::greedy || search == AedSearch::beam, "AedDecoderConfig::search is unknown");
  ASRDEC_CHECK_ARG(eos_id >= 0, "AedDecoderConfig::eos_id must be set (>= 0), got ", eos_id);
  ASRDEC_CHECK_ARG(max_new_tokens >= 0, "AedDecoderConfig::max_new_tokens must be >= 0 (0: no limit), got ",
                   max_new_tokens);
  ASRDEC_CHECK_ARG(max_length_delta >= -1, "AedDecoderConfig::max_length_delta must be >= -1 (-1: off), got ",
                   max_length_delta);
  ASRDEC_CHECK_ARG(std::isfinite(length_penalty), "AedDecoderConfig::length_penalty must be finite, got ",
                   length_penalty);
  ASRDEC_CHECK_ARG(std::isfinite(lm_weight), "AedDecoderConfig::lm_weight must be finite, got ", lm_weight);
  ASRDEC_CHECK_ARG(std::isfinite(boost_weight), "AedDecoderConfig::boost_weight must be finite, got ", boost_weight);
}

std::string AedDecoderConfig::to_string() const {
  std::ostringstream s;
  s << "AedDecoderConfig{search=" << (search == AedSearch::greedy ? "greedy" : "beam");
  if (search == AedSearch::beam) s << ", beam_size=" << beam_size << ", length_penalty=" << length_penalty;
  s << ", eos_id=" << eos_id << ", max_new_tokens=" << max_new_tokens << ", max_length_delta=" << max_length_delta;
  if (lm) s << ", lm=" << lm->describe() << ", lm_weight=" << lm_weight;
  if (boost) s << ", boost=" << boost->describe() << ", boost_weight=" << boost_weight;
  s << "}";
  return s.str();
}

namespace {

/** One hypothesis of a beam (or the one of a greedy row). */
struct AedHyp {
  std::vector<std::int32_t> tokens;
  std::vector<float> token_scores;
  double am = 0.0;  // reported sums, accumulated in double as the other decoders do
  double lm = 0.0;
  double boost = 0.0;
  float score = 0.0f;  // the fused sum the search ranks by, accumulated in fp32 step by step
  std::int32_t lm_state = 0;
  std::int32_t boost_state = 0;
  bool valid = false;
  bool finished = false;
};

/** The fused models' full-vocabulary answers for the live rows of one decision, with end of sentence scored by
 *  each state's final weight (the state stays), as NGPU-LM prescribes for AED models. */
class FusionScratch {
 public:
  void query(const AedDecoderConfig& c, const std::vector<AedHyp*>& rows, std::int64_t vocab) {
    vocab_ = static_cast<std::size_t>(vocab);
    if (c.lm) fill(*c.lm, rows, c.eos_id, true, lm_);
    if (c.boost) fill(*c.boost, rows, c.eos_id, false, boost_);
  }
  /** What fusion adds to token v of live row i: α·LM + β·boost, summed as the other decoders sum them. */
  float bonus(const AedDecoderConfig& c, std::size_t i, std::int32_t v) const {
    detail::FusionSource lm, boost;
    lm.scores = c.lm ? lm_.scores.data() : nullptr;
    lm.weight = c.lm_weight;
    boost.scores = c.boost ? boost_.scores.data() : nullptr;
    boost.weight = c.boost_weight;
    const auto at = static_cast<std::int64_t>(i * vocab_ + static_cast<std::size_t>(v));
    return detail::weighted_or_zero(lm, at) + detail::weighted_or_zero(boost, at);
  }
  float lm_score(std::size_t i, std::int32_t v) const { return lm_.scores[i * vocab_ + static_cast<std::size_t>(v)]; }
  float boost_score(std::size_t i, std::int32_t v) const {
    return boost_.scores[i * vocab_ + static_cast<std::size_t>(v)];
  }
  std::int32_t lm_next(std::size_t i, std::int32_t v) const {
    return lm_.next[i * vocab_ + static_cast<std::size_t>(v)];
  }
  std::int32_t boost_next(std::size_t i, std::int32_t v) const {
    return boost_.next[i * vocab_ + static_cast<std::size_t>(v)];
  }

 private:
  struct Answers {
    std::vector<std::int32_t> states, next;
    std::vector<float> scores;
  };
  template <class Model>
  void fill(const Model& model, const std::vector<AedHyp*>& rows, std::int32_t eos, bool is_lm, Answers& out) {
    const std::size_t n = rows.size();
    out.states.resize(n);
    for (std::size_t i = 0; i < n; ++i) out.states[i] = is_lm ? rows[i]->lm_state : rows[i]->boost_state;
    out.scores.resize(n * vocab_);
    out.next.resize(n * vocab_);
    if (n > 0) model.advance(out.states.data(), static_cast<std::int64_t>(n), out.scores.data(), out.next.data());
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t at = i * vocab_ + static_cast<std::size_t>(eos);
      out.scores[at] = model.final_score(out.states[i]);
      out.next[at] = out.states[i];
    }
  }

  Answers lm_, boost_;
  std::size_t vocab_ = 0;
};

}  // namespace

struct AedDecoder::Impl {
  std::shared_ptr<const AedDecoderStep> step;
  AedDecoderConfig config;
  std::int64_t vocab = 0;
  std::unique_ptr<AedStepSession> session;
  std::int64_t session_rows = 0;
  std::vector<float> scores;  // [rows, V] of the last call, on the host
  FusionScratch fusion;
  std::unique_ptr<detail::AedDeviceStep> device_step;  // a CUDA step: its inputs and scores cross to the host

  void start_step(AedStepSession& s, const TensorView& encoder, const std::int64_t* lengths,
                  const std::vector<std::vector<std::int32_t>>& prompts, StreamHandle stream) {
    if (device_step) {
      device_step->start(s, encoder, lengths, prompts, scores.data(), stream);
    } else {
      s.start(encoder, lengths, prompts, scores.data(), stream);
    }
  }
  void run_step(AedStepSession& s, const std::int32_t* parents, const std::int32_t* tokens,
                const std::int32_t* positions, const std::int32_t* active, std::int64_t rows, StreamHandle stream) {
    if (device_step) {
      device_step->step(s, parents, tokens, positions, active, rows, scores.data(), stream);
    } else {
      s.step(parents, tokens, positions, active, rows, scores.data(), stream);
    }
  }

  AedStepSession& session_for(std::int64_t rows) {
    if (!session || rows > session_rows) {
      // The rows grow with the session that has them: a start that throws leaves the old session and its rows.
      const std::int64_t wanted = std::max(rows, 2 * session_rows);
      std::unique_ptr<AedStepSession> started = step->start_session(wanted);
      session = std::move(started);
      session_rows = wanted;
    }
    return *session;
  }

  void check_scores(const float* row, std::int64_t utterance, std::int64_t generated) const {
    if (!config.check_values) return;
    for (std::int64_t v = 0; v < vocab; ++v) {
      const float s = row[v];
      ASRDEC_CHECK_ARG(!(s != s) && s != std::numeric_limits<float>::infinity(), "AED step scores: token ", v,
                       " of utterance ", utterance, " at generated position ", generated, " is ", s, " (NaN or +inf)");
    }
  }

  std::vector<std::vector<Hypothesis>> run(const TensorView& encoder, const TensorView& encoder_lengths,
                                           const std::vector<std::vector<std::int32_t>>& prompts_in,
                                           StreamHandle stream);
};

AedDecoder::AedDecoder(std::shared_ptr<const AedDecoderStep> step, AedDecoderConfig config)
    : impl_(std::make_unique<Impl>()) {
  ASRDEC_CHECK_ARG(step != nullptr, "AedDecoder: the decoder step is null");
  config.validate();
  if (!step->device().is_cpu()) {
    ASRDEC_EXPECTS(ASRDEC_WITH_CUDA, Unsupported, "AedDecoder: a step on ", step->device().to_string(),
                   " needs a build with CUDA");
#if ASRDEC_WITH_CUDA
    impl_->device_step = detail::make_aed_device_step(step->device(), step->vocab_size());
#endif
  }
  impl_->vocab = step->vocab_size();
  ASRDEC_CHECK_ARG(impl_->vocab >= 1, "AedDecoder: the step's vocabulary is empty");
  ASRDEC_CHECK_ARG(config.eos_id < impl_->vocab, "AedDecoderConfig::eos_id ", config.eos_id, " is outside the step's ",
                   impl_->vocab, " tokens");
  ASRDEC_CHECK_ARG(step->max_positions() >= 2, "AedDecoder: the step feeds ", step->max_positions(),
                   " positions; at least 2 are needed");
  // The search, and so the fused models, run on the CPU whatever the step's device (docs/aed.md).
  detail::check_fusion_device(config.lm.get(), config.boost.get(), Device::cpu(), "AedDecoderConfig", "search");
  detail::check_fusion_vocab(config.lm.get(), config.boost.get(), impl_->vocab,
                             detail::concat("the step has ", impl_->vocab));
  impl_->step = std::move(step);
  impl_->config = std::move(config);
}

AedDecoder::~AedDecoder() = default;
AedDecoder::AedDecoder(AedDecoder&&) noexcept = default;
AedDecoder& AedDecoder::operator=(AedDecoder&&) noexcept = default;
const AedDecoderConfig& AedDecoder::config() const { return impl_->config; }
const AedDecoderStep& AedDecoder::step() const { return *impl_->step; }

std::vector<Hypothesis> AedDecoder::decode(const TensorView& encoder, const TensorView& encoder_lengths,
                                           const std::vector<std::vector<std::int32_t>>& prompts, StreamHandle stream) {
  std::vector<std::vector<Hypothesis>> nbest = impl_->run(encoder, encoder_lengths, prompts, stream);
  std::vector<Hypothesis> best;
  best.reserve(nbest.size());
  for (auto& list : nbest) best.push_back(std::move(list.front()));
  return best;
}

std::vector<std::vector<Hypothesis>> AedDecoder::decode_nbest(const TensorView& encoder,
                                                              const TensorView& encoder_lengths,
                                                              const std::vector<std::vector<std::int32_t>>& prompts,
                                                              StreamHandle stream) {
  return impl_->run(encoder, encoder_lengths, prompts, stream);
}

namespace {

Hypothesis to_hypothesis(const AedHyp& h, float ranking) {
  Hypothesis out;
  out.tokens = h.tokens;
  out.timestamps.resize(h.tokens.size());
  for (std::size_t i = 0; i < h.tokens.size(); ++i) out.timestamps[i] = static_cast<std::int32_t>(i);
  out.token_scores = h.token_scores;
  detail::confidences_from_scores(out);
  out.am_score = static_cast<float>(h.am);
  out.lm_score = static_cast<float>(h.lm);
  out.boost_score = static_cast<float>(h.boost);
  out.score = h.score;
  out.ranking_score = ranking;
  return out;
}

}  // namespace

std::vector<std::vector<Hypothesis>> AedDecoder::Impl::run(const TensorView& encoder, const TensorView& encoder_lengths,
                                                           const std::vector<std::vector<std::int32_t>>& prompts_in,
                                                           StreamHandle stream) {
  const AedDecoderConfig& c = config;
  TensorCheck(encoder, "encoder").ndim(3, "[B, T, D]").device(step->device()).non_negative_strides();
  const std::int64_t batch = encoder.size(0), frames = encoder.size(1);
  ASRDEC_CHECK_ARG(batch <= BatchLimits::kMaxBatch, "encoder: batch of ", batch, " exceeds ", BatchLimits::kMaxBatch);
  TensorCheck(encoder_lengths, "encoder_lengths")
      .ndim(1, "[B]")
      .dtype_one_of({DType::i32, DType::i64})
      .device(Device::cpu())
      .dim(0, batch, "the encoder's batch")
      .not_null();
  std::vector<std::int64_t> lengths(static_cast<std::size_t>(batch));
  for (std::int64_t b = 0; b < batch; ++b) {
    const std::int64_t at = b * encoder_lengths.stride(0);
    lengths[static_cast<std::size_t>(b)] = encoder_lengths.dtype() == DType::i32
                                               ? encoder_lengths.data_as<std::int32_t>()[at]
                                               : encoder_lengths.data_as<std::int64_t>()[at];
    ASRDEC_CHECK_ARG(lengths[static_cast<std::size_t>(b)] >= 0 && lengths[static_cast<std::size_t>(b)] <= frames,
                     "encoder_lengths[", b, "] = ", lengths[static_cast<std::size_t>(b)], " is outside [0, ", frames,
                     "]");
  }
  ASRDEC_CHECK_ARG(prompts_in.size() == 1 || static_cast<std::int64_t>(prompts_in.size()) == batch,
                   "prompts: expected one prompt for all utterances or one per utterance (", batch, "), got ",
                   prompts_in.size());
  std::vector<std::vector<std::int32_t>> prompts;
  prompts.reserve(static_cast<std::size_t>(batch));
  for (std::int64_t b = 0; b < batch; ++b) {
    const auto& p = prompts_in.size() == 1 ? prompts_in[0] : prompts_in[static_cast<std::size_t>(b)];
    const std::int64_t which = prompts_in.size() == 1 ? 0 : b;
    ASRDEC_CHECK_ARG(!p.empty(), "prompts[", which, "] is empty: a prompt holds at least the start token");
    ASRDEC_CHECK_ARG(static_cast<std::int64_t>(p.size()) < step->max_positions(), "prompts[", which, "] has ", p.size(),
                     " tokens; the step feeds ", step->max_positions(), " positions, so a prompt must be shorter");
    for (std::size_t i = 0; i < p.size(); ++i) {
      ASRDEC_CHECK_ARG(p[i] >= 0 && p[i] < vocab, "prompts[", which, "][", i, "] = ", p[i], " is outside [0, ", vocab,
                       ")");
    }
    prompts.push_back(p);
  }
  if (c.boost) c.boost->check_batch(batch);
  std::vector<std::vector<Hypothesis>> results(static_cast<std::size_t>(batch));
  if (batch == 0) return results;

  // Length limits (generated tokens, eos included).
  std::vector<std::int64_t> limit(static_cast<std::size_t>(batch));
  for (std::int64_t b = 0; b < batch; ++b) {
    const std::int64_t prompt = static_cast<std::int64_t>(prompts[static_cast<std::size_t>(b)].size());
    std::int64_t l = step->max_positions() - prompt;
    if (c.max_new_tokens > 0) l = std::min<std::int64_t>(l, c.max_new_tokens);
    if (c.max_length_delta >= 0) l = std::min(l, lengths[static_cast<std::size_t>(b)] + c.max_length_delta - prompt);
    limit[static_cast<std::size_t>(b)] = std::max<std::int64_t>(l, 0);
  }

  const std::int64_t K = c.search == AedSearch::beam ? c.beam_size : 1;
  AedStepSession& s = session_for(batch * K);
  scores.resize(static_cast<std::size_t>(batch * K * vocab));
  start_step(s, encoder, lengths.data(), prompts, stream);

  // The parents of the next decision: after start() one row per utterance (a hypothesis with nothing generated).
  std::vector<AedHyp> rows(static_cast<std::size_t>(batch));
  for (std::int64_t b = 0; b < batch; ++b) {
    AedHyp& h = rows[static_cast<std::size_t>(b)];
    h.valid = true;
    h.lm_state = c.lm ? c.lm->initial_state(true) : 0;
    h.boost_state = c.boost ? c.boost->root_for(b, batch) : 0;
    h.finished = limit[static_cast<std::size_t>(b)] == 0;
  }
  std::int64_t rows_per_utterance = 1;  // rows of the previous call per utterance
  std::vector<std::int32_t> parents, tokens, positions, active;
  std::vector<AedHyp*> live;
  std::vector<std::int32_t> order(static_cast<std::size_t>(vocab));
  std::vector<detail::AedCandidate> candidates;
  std::vector<float> total;

  for (std::int64_t generated = 0;; ++generated) {
    // Fusion queries for the rows that extend.
    live.clear();
    std::vector<std::int64_t> live_index(rows.size(), -1);
    for (std::size_t r = 0; r < rows.size(); ++r) {
      if (rows[r].valid && !rows[r].finished) {
        live_index[r] = static_cast<std::int64_t>(live.size());
        live.push_back(&rows[r]);
      }
    }
    if (live.empty()) break;
    fusion.query(c, live, vocab);

    std::vector<AedHyp> next(static_cast<std::size_t>(batch * K));
    parents.assign(next.size(), 0);
    for (std::int64_t b = 0; b < batch; ++b) {
      const std::int64_t prompt = static_cast<std::int64_t>(prompts[static_cast<std::size_t>(b)].size());
      candidates.clear();
      bool any_live = false;
      for (std::int64_t k = 0; k < rows_per_utterance; ++k) {
        const std::int64_t r = b * rows_per_utterance + k;
        const AedHyp& h = rows[static_cast<std::size_t>(r)];
        if (!h.valid) continue;
        const float lp = detail::aed_length_penalty(
            detail::aed_hypothesis_length(prompt, static_cast<std::int64_t>(h.tokens.size())), c.length_penalty);
        if (h.finished) {
          candidates.push_back({h.score / lp, h.score, static_cast<std::int32_t>(r), -1});
          continue;
        }
        any_live = true;
        const float* row = scores.data() + r * vocab;
        check_scores(row, b, generated);
        const std::size_t i = static_cast<std::size_t>(live_index[static_cast<std::size_t>(r)]);
        // The K best extensions of this parent (more cannot survive the utterance's top K).
        total.resize(static_cast<std::size_t>(vocab));
        for (std::int32_t v = 0; v < vocab; ++v) {
          total[static_cast<std::size_t>(v)] = h.score + (row[v] + fusion.bonus(c, i, v));
          order[static_cast<std::size_t>(v)] = v;
        }
        const std::int64_t keep = std::min(K, vocab);
        std::partial_sort(order.begin(), order.begin() + keep, order.end(), [&](std::int32_t x, std::int32_t y) {
          const float tx = total[static_cast<std::size_t>(x)], ty = total[static_cast<std::size_t>(y)];
          return tx != ty ? tx > ty : x < y;
        });
        for (std::int64_t j = 0; j < keep; ++j) {
          const std::int32_t v = order[static_cast<std::size_t>(j)];
          candidates.push_back({total[static_cast<std::size_t>(v)] / lp, total[static_cast<std::size_t>(v)],
                                static_cast<std::int32_t>(r), v});
        }
      }
      if (!any_live) {
        // Done: its hypotheses stay where they are.
        for (std::int64_t k = 0; k < rows_per_utterance && k < K; ++k) {
          next[static_cast<std::size_t>(b * K + k)] = rows[static_cast<std::size_t>(b * rows_per_utterance + k)];
        }
        continue;
      }
      const std::size_t keep = std::min(candidates.size(), static_cast<std::size_t>(K));
      std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(keep), candidates.end(),
                        detail::aed_candidate_before);
      for (std::size_t k = 0; k < keep; ++k) {
        const detail::AedCandidate& cand = candidates[k];
        const AedHyp& parent = rows[static_cast<std::size_t>(cand.parent)];
        AedHyp& h = next[static_cast<std::size_t>(b * K + static_cast<std::int64_t>(k))];
        parents[static_cast<std::size_t>(b * K + static_cast<std::int64_t>(k))] = cand.parent;
        h = parent;
        if (cand.token < 0) continue;  // a finished hypothesis carried over
        const std::size_t i = static_cast<std::size_t>(live_index[static_cast<std::size_t>(cand.parent)]);
        const float am = scores[static_cast<std::size_t>(cand.parent * vocab + cand.token)];
        h.score = cand.score;
        h.am += am;
        if (c.lm) {
          h.lm += detail::weighted(c.lm_weight, fusion.lm_score(i, cand.token));
          h.lm_state = fusion.lm_next(i, cand.token);
        }
        if (c.boost) {
          h.boost += detail::weighted(c.boost_weight, fusion.boost_score(i, cand.token));
          h.boost_state = fusion.boost_next(i, cand.token);
        }
        if (cand.token == c.eos_id) {
          h.finished = true;
        } else {
          h.tokens.push_back(cand.token);
          if (c.search == AedSearch::greedy) h.token_scores.push_back(am);
          h.finished = static_cast<std::int64_t>(h.tokens.size()) >= limit[static_cast<std::size_t>(b)];
        }
      }
    }
    rows = std::move(next);
    rows_per_utterance = K;

    // The step for the rows that go on.
    const std::int64_t n = batch * K;
    tokens.assign(static_cast<std::size_t>(n), 0);
    positions.assign(static_cast<std::size_t>(n), 0);
    active.assign(static_cast<std::size_t>(n), 0);
    bool any = false;
    for (std::int64_t r = 0; r < n; ++r) {
      const AedHyp& h = rows[static_cast<std::size_t>(r)];
      if (!h.valid || h.finished) continue;
      any = true;
      active[static_cast<std::size_t>(r)] = 1;
      tokens[static_cast<std::size_t>(r)] = h.tokens.back();
      positions[static_cast<std::size_t>(r)] =
          static_cast<std::int32_t>(static_cast<std::int64_t>(prompts[static_cast<std::size_t>(r / K)].size()) +
                                    static_cast<std::int64_t>(h.tokens.size()) - 1);
    }
    if (!any) break;
    run_step(s, parents.data(), tokens.data(), positions.data(), active.data(), n, stream);
  }

  for (std::int64_t b = 0; b < batch; ++b) {
    const std::int64_t prompt = static_cast<std::int64_t>(prompts[static_cast<std::size_t>(b)].size());
    std::vector<std::pair<float, std::int64_t>> ranked;
    for (std::int64_t k = 0; k < rows_per_utterance; ++k) {
      const AedHyp& h = rows[static_cast<std::size_t>(b * rows_per_utterance + k)];
      if (!h.valid) continue;
      const float lp = detail::aed_length_penalty(
          detail::aed_hypothesis_length(prompt, static_cast<std::int64_t>(h.tokens.size())), c.length_penalty);
      ranked.push_back({h.score / lp, k});
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
    for (const auto& [key, k] : ranked) {
      results[static_cast<std::size_t>(b)].push_back(
          to_hypothesis(rows[static_cast<std::size_t>(b * rows_per_utterance + k)], key));
    }
  }
  return results;
}

}  // namespace asrdec

// The CPU executor of ALSD++ (beam_decoder.hpp): the batch's B·K hypothesis slots advance together, one symbol per
// step, through the shared step functions (detail/alsd_step.hpp, detail/beam_hyps_step.hpp). Joint evaluations and
// LM queries are made only for live hypotheses that are still inside their utterance; the predictor steps only
// the slots that emitted a token.

#include <algorithm>
#include <cmath>
#include <limits>

#include "asrdec/core/error.hpp"
#include "asrdec/detail/alsd_step.hpp"
#include "asrdec/hyps/batched_beam_hyps.hpp"
#include "lm/ngram_lm_impl.hpp"
#include "transducer/beam_backend.hpp"

namespace asrdec::detail {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

class AlsdCpu final : public TransducerBeamBackend {
 public:
  AlsdCpu(const TransducerModel& model, const TransducerBeamConfig& config, BatchLimits limits)
      : model_(model),
        config_(config),
        rule_(beam_fusion_rule(config)),
        joint_(model.joint().impl(), model.vocab_size() + 1, model_.durations(), model.blank_id()) {
    reserve(limits.max_batch);
  }

  std::vector<std::vector<Hypothesis>> decode(const GreedyProblem& p) override {
    const std::int64_t B = p.batch;
    const std::int32_t K = config_.beam;
    const std::int64_t slots = B * K;
    reserve(B);
    const bool tdt = model_.type() == TransducerType::tdt;
    const std::int32_t blank = model_.blank_id();
    const std::int64_t capacity =
        std::max<std::int64_t>(1, p.frames * (static_cast<std::int64_t>(config_.max_symbols_per_frame) + 1));
    ASRDEC_CHECK_ARG(capacity <= std::numeric_limits<std::int32_t>::max(), "enc_proj has too many frames (", p.frames,
                     ") for beam search with max_symbols_per_frame ", config_.max_symbols_per_frame);
    hyps_.reserve(B, K, static_cast<std::int32_t>(capacity), tdt ? BeamKind::tdt : BeamKind::rnnt, blank,
                  Device::cpu());
    const BeamHypsRef h = hyps_.ref();
    const std::int64_t S = model_.predictor().state_size();
    const std::int64_t J = model_.joint_hidden();
    const std::int64_t V = model_.vocab_size();
    const std::int64_t outputs = model_.joint().output_size();
    const auto D = static_cast<std::int32_t>(model_.durations().size());

    // Every slot starts after the start symbol; slot 0 of each utterance is its one live hypothesis.
    std::fill(mask_.data(), mask_.data() + slots, 1);
    std::fill(step_label_.data(), step_label_.data() + slots, blank);
    session_->initial_state(state_.data(), slots, nullptr);
    session_->step(step_label_.data(), mask_.data(), state_.data(), dec_.data(), slots, nullptr);
    for (std::int64_t b = 0; b < B; ++b) {
      beam_clear(h, b);
      for (std::int32_t k = 0; k < K; ++k) {
        const std::int64_t s = beam_slot(h, b, k);
        lm_state_[s] = NgramLm::bos_state();
        boost_state_[s] = config_.boost != nullptr ? config_.boost->root_for(b, B) : 0;
        lm_total_[s] = 0.0f;
        boost_total_[s] = 0.0f;
      }
    }
    FusionRef fusion;
    fusion.vocab = static_cast<std::int32_t>(V);
    if (config_.lm != nullptr)
      fusion.lm = FusionSource{lm_scores_.data(), lm_next_.data(), nullptr, nullptr, config_.lm_weight};
    if (config_.boost != nullptr) {
      fusion.boost = FusionSource{boost_scores_.data(), boost_next_.data(), nullptr, nullptr, config_.boost_weight};
    }

    for (;;) {
      // The live hypotheses still inside their utterance, and the utterances that still step.
      rows_.clear();
      row_slots_.clear();
      for (std::int64_t b = 0; b < B; ++b) {
        const std::int32_t length = p.lengths[static_cast<std::size_t>(b)];
        running_[b] = 0;
        for (std::int32_t k = 0; k < K; ++k) {
          const std::int64_t s = beam_slot(h, b, k);
          if (h.scores[s] != kNegInf && h.next_time[s] < length) {
            rows_.push_back(JointRow{b, h.next_time[s]});
            row_slots_.push_back(s);
            running_[b] = 1;
          }
        }
      }
      if (rows_.empty()) break;
      const auto count = static_cast<std::int64_t>(rows_.size());
      row_decs_.resize(rows_.size());
      for (std::int64_t r = 0; r < count; ++r) row_decs_[static_cast<std::size_t>(r)] = dec_.data() + row_slots_[r] * J;
      logits_.resize(static_cast<std::size_t>(count * outputs));
      joint_.logits_rows(p.enc, rows_.data(), row_decs_.data(), count, config_.check_values, logits_.data());

      // Proposals of every slot: extensions for the rows, a no-op for finished hypotheses, nothing for dead ones.
      for (std::int64_t b = 0; b < B; ++b) {
        for (std::int32_t k = 0; k < K; ++k) {
          const std::int64_t s = beam_slot(h, b, k);
          proposals_[s].count = 0;
          if (running_[b] && h.scores[s] != kNegInf) alsd_keep_finished(proposals_[s]);
        }
      }
      for (std::int64_t r = 0; r < count; ++r) {
        const std::int64_t s = row_slots_[r];
        float* logp = logits_.data() + r * outputs;
        log_softmax_in_place(logp, static_cast<std::int32_t>(V + 1));
        if (tdt) log_softmax_in_place(logp + V + 1, D);
        if (config_.lm != nullptr)
          advance_row(config_.lm->ref(), lm_state_[s], lm_scores_.data() + s * V, lm_next_.data() + s * V);
        if (config_.boost != nullptr) {
          advance_row(config_.boost->ref(), boost_state_[s], boost_scores_.data() + s * V, boost_next_.data() + s * V);
        }
        const AlsdRow row{logp,
                          tdt ? logp + V + 1 : nullptr,
                          blank,
                          static_cast<std::int32_t>(V + 1),
                          model_.durations().data(),
                          D,
                          &fusion,
                          s};
        if (h.on_frame[s] >= config_.max_symbols_per_frame) {
          alsd_force_blank(rule_, row, proposals_[s]);
        } else {
          alsd_propose(rule_, row, K, proposals_[s]);
        }
      }

      // Each running utterance keeps its K best proposals; the new slots take over their parents' states.
      for (std::int64_t b = 0; b < B; ++b) {
        if (!running_[b]) continue;
        float best[kMaxBeam];
        std::int32_t ids[kMaxBeam];
        std::int32_t kept = 0;
        for (std::int32_t k = 0; k < K; ++k) {
          const std::int64_t s = beam_slot(h, b, k);
          for (std::int32_t j = 0; j < proposals_[s].count; ++j) {
            topk_insert(best, ids, K, kept, h.scores[s] + proposals_[s].score[j], k * K + j);
          }
        }
        for (std::int32_t i = 0; i < K; ++i) {
          const bool live = i < kept && best[i] != kNegInf;
          const std::int32_t parent = live ? ids[i] / K : 0;
          const AlsdProposals& from = proposals_[beam_slot(h, b, parent)];
          const std::int32_t j = live ? ids[i] % K : 0;
          parent_[beam_slot(h, b, i)] = parent;
          label_[beam_slot(h, b, i)] = live ? from.label[j] : -1;
          beam_stage_result(h, b, i, parent, live ? from.label[j] : -1, live ? best[i] : kNegInf,
                            live ? from.jump[j] : 0);
        }
        for (std::int32_t i = 0; i < K; ++i) beam_commit_result(h, b, i);
        for (std::int32_t i = 0; i < K; ++i) beam_stage_recombination(h, b, i);
        for (std::int32_t i = 0; i < K; ++i) beam_commit_recombination(h, b, i);
        for (std::int32_t i = 0; i < K; ++i) gather(h, b, i, blank, S, J, V);
      }
      // Slots of utterances that did not step keep their states.
      for (std::int64_t b = 0; b < B; ++b) {
        if (running_[b]) continue;
        for (std::int32_t i = 0; i < K; ++i) {
          const std::int64_t s = beam_slot(h, b, i);
          mask_[s] = 0;
          std::copy_n(state_.data() + s * S, S, next_state_.data() + s * S);
          std::copy_n(dec_.data() + s * J, J, next_dec_.data() + s * J);
          next_lm_state_[s] = lm_state_[s];
          next_boost_state_[s] = boost_state_[s];
          next_lm_total_[s] = lm_total_[s];
          next_boost_total_[s] = boost_total_[s];
        }
      }
      std::swap(state_, next_state_);
      std::swap(dec_, next_dec_);
      std::swap(lm_state_, next_lm_state_);
      std::swap(boost_state_, next_boost_state_);
      std::swap(lm_total_, next_lm_total_);
      std::swap(boost_total_, next_boost_total_);
      session_->step(step_label_.data(), mask_.data(), state_.data(), dec_.data(), slots, nullptr);
    }

    std::vector<std::vector<Hypothesis>> out(static_cast<std::size_t>(B));
    for (std::int64_t b = 0; b < B; ++b) {
      ASRDEC_EXPECTS(!h.overflow[b], Error, "internal error: beam hypothesis capacity exceeded for utterance ", b);
      for (const std::int32_t k : beam_ranking(h, b, config_.length_normalized)) {
        Hypothesis hyp = beam_hypothesis(h, b, k);
        const std::int64_t s = beam_slot(h, b, k);
        hyp.lm_score = config_.lm != nullptr ? lm_total_[s] : 0.0f;
        hyp.boost_score = config_.boost != nullptr ? boost_total_[s] : 0.0f;
        hyp.am_score = hyp.score - hyp.lm_score - hyp.boost_score;
        out[static_cast<std::size_t>(b)].push_back(std::move(hyp));
      }
    }
    return out;
  }

 private:
  // New slot i of utterance b takes its parent's predictor, LM and boosting states; a token moves them on.
  void gather(const BeamHypsRef& h, std::int64_t b, std::int32_t i, std::int32_t blank, std::int64_t S, std::int64_t J,
              std::int64_t V) {
    const std::int64_t s = beam_slot(h, b, i);
    const std::int64_t from = beam_slot(h, b, parent_[s]);
    const std::int32_t label = label_[s];
    const bool token = label >= 0 && label != blank && h.scores[s] != kNegInf;
    std::copy_n(state_.data() + from * S, S, next_state_.data() + s * S);
    std::copy_n(dec_.data() + from * J, J, next_dec_.data() + s * J);
    next_lm_state_[s] = lm_state_[from];
    next_boost_state_[s] = boost_state_[from];
    next_lm_total_[s] = lm_total_[from];
    next_boost_total_[s] = boost_total_[from];
    mask_[s] = token ? 1 : 0;
    step_label_[s] = token ? label : blank;
    if (!token) return;
    const std::int64_t at = from * V + label;
    if (config_.lm != nullptr) {
      next_lm_total_[s] += weighted(config_.lm_weight, lm_scores_[at]);
      next_lm_state_[s] = lm_next_[at];
    }
    if (config_.boost != nullptr) {
      next_boost_total_[s] += weighted(config_.boost_weight, boost_scores_[at]);
      next_boost_state_[s] = boost_next_[at];
    }
  }

  void reserve(std::int64_t batch) {
    const std::int64_t slots = std::max<std::int64_t>(batch, 1) * config_.beam;
    if (slots <= max_slots_) return;
    max_slots_ = slots;
    session_ = model_.predictor().start_session(slots);
    const auto n = static_cast<std::size_t>(slots);
    const auto S = static_cast<std::size_t>(model_.predictor().state_size());
    const auto J = static_cast<std::size_t>(model_.joint_hidden());
    const auto V = static_cast<std::size_t>(model_.vocab_size());
    for (auto* buffer : {&state_, &next_state_}) *buffer = HostBuffer<float>(n * S);
    for (auto* buffer : {&dec_, &next_dec_}) *buffer = HostBuffer<float>(n * J);
    for (auto* buffer : {&lm_state_, &next_lm_state_, &boost_state_, &next_boost_state_, &mask_, &step_label_, &parent_,
                         &label_, &running_}) {
      *buffer = HostBuffer<std::int32_t>(n);
    }
    for (auto* buffer : {&lm_total_, &next_lm_total_, &boost_total_, &next_boost_total_})
      *buffer = HostBuffer<float>(n);
    if (config_.lm != nullptr) {
      lm_scores_ = HostBuffer<float>(n * V);
      lm_next_ = HostBuffer<std::int32_t>(n * V);
    }
    if (config_.boost != nullptr) {
      boost_scores_ = HostBuffer<float>(n * V);
      boost_next_ = HostBuffer<std::int32_t>(n * V);
    }
    proposals_.resize(n);
  }

  TransducerModel model_;
  TransducerBeamConfig config_;
  BeamFusionRule rule_;
  JointCpu joint_;
  std::unique_ptr<PredictorSession> session_;
  std::int64_t max_slots_ = 0;
  BatchedBeamHyps<MemoryKind::host> hyps_;
  HostBuffer<float> state_, next_state_, dec_, next_dec_;
  HostBuffer<std::int32_t> lm_state_, next_lm_state_, boost_state_, next_boost_state_;
  HostBuffer<float> lm_total_, next_lm_total_, boost_total_, next_boost_total_;
  HostBuffer<float> lm_scores_, boost_scores_;  // [slots, V] queries of each slot's current states
  HostBuffer<std::int32_t> lm_next_, boost_next_;
  HostBuffer<std::int32_t> mask_, step_label_, parent_, label_, running_;
  std::vector<AlsdProposals> proposals_;
  std::vector<JointRow> rows_;
  std::vector<std::int64_t> row_slots_;
  std::vector<const float*> row_decs_;
  std::vector<float> logits_;
};

}  // namespace

std::unique_ptr<TransducerBeamBackend> make_alsd_cpu(const TransducerModel& model, const TransducerBeamConfig& config,
                                                     BatchLimits limits) {
  return std::make_unique<AlsdCpu>(model, config, limits);
}

}  // namespace asrdec::detail

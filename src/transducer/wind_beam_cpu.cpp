// The CPU executor of WIND beam search (beam_decoder.hpp). Each utterance keeps a pool of hypotheses on different
// frames (at most K per frame, so at most K·(W+1) hypotheses between the frame being expanded and the end of its
// window, plus the K·K new ones of a step: the pool has K·(W+K) slots). Each step, every utterance expands the
// hypotheses on its earliest unfinished frame, through the shared step functions (detail/wind_beam_step.hpp,
// detail/aes_step.hpp for prefix search, detail/beam_hyps_step.hpp).

#include <algorithm>
#include <cmath>
#include <limits>

#include "asrdec/core/error.hpp"
#include "asrdec/detail/aes_step.hpp"
#include "asrdec/detail/wind_beam_step.hpp"
#include "asrdec/hyps/batched_beam_hyps.hpp"
#include "transducer/beam_backend.hpp"
#include "transducer/beam_slot_states.hpp"

namespace asrdec::detail {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

class WindBeamCpu final : public TransducerBeamBackend {
 public:
  WindBeamCpu(const TransducerModel& model, const TransducerBeamConfig& config, BatchLimits limits)
      : model_(model),
        config_(config),
        rule_(beam_fusion_rule(config)),
        pool_(config.beam * (config.wind_window + config.beam)),
        joint_(model.joint().impl(), model.vocab_size() + 1, model_.durations(), model.blank_id()),
        states_(model_, config_) {
    reserve(limits.max_batch);
  }

  std::vector<std::vector<Hypothesis>> decode(const GreedyProblem& p, StreamHandle /*stream*/) override {
    const std::int64_t B = p.batch;
    const std::int32_t K = config_.beam;
    const std::int32_t W = config_.wind_window;
    const std::int32_t P = pool_;
    reserve(B);
    const std::int32_t blank = model_.blank_id();
    const std::int64_t V1 = model_.vocab_size() + 1;
    const std::int64_t capacity =
        std::max<std::int64_t>(1, p.frames * (static_cast<std::int64_t>(config_.max_symbols_per_frame) + 1));
    ASRDEC_CHECK_ARG(capacity <= std::numeric_limits<std::int32_t>::max(), "enc_proj has too many frames (", p.frames,
                     ") for beam search with max_symbols_per_frame ", config_.max_symbols_per_frame);
    hyps_.reserve(B, P, static_cast<std::int32_t>(capacity), BeamKind::windowed, blank, Device::cpu());
    const BeamHypsRef h = hyps_.ref();
    states_.start(B, P);
    for (std::int64_t b = 0; b < B; ++b) beam_clear(h, b);

    for (;;) {
      // Each utterance's earliest unfinished frame, and the group of hypotheses on it (at most K).
      rows_.clear();
      row_decs_.clear();
      bool any = false;
      for (std::int64_t b = 0; b < B; ++b) {
        const std::int32_t length = p.lengths[static_cast<std::size_t>(b)];
        std::int32_t t = length;
        for (std::int32_t k = 0; k < P; ++k) {
          const std::int64_t s = beam_slot(h, b, k);
          if (h.scores[s] != kNegInf) t = std::min(t, h.next_time[s]);
        }
        frame_[b] = t;
        group_size_[b] = 0;
        if (t >= length) continue;
        any = true;
        window_[b] = std::min(W, length - t);
        for (std::int32_t k = 0; k < P; ++k) {
          const std::int64_t s = beam_slot(h, b, k);
          if (h.scores[s] == kNegInf || h.next_time[s] != t) continue;
          ASRDEC_EXPECTS(group_size_[b] < K, Error, "internal error: more than ", K, " hypotheses on frame ", t);
          group_[b * K + group_size_[b]++] = k;
          for (std::int32_t j = 0; j < window_[b]; ++j) {
            rows_.push_back(JointRow{b, t + j});
            row_decs_.push_back(states_.dec(s));
          }
          states_.query(s);
        }
      }
      if (!any) break;
      logits_.resize(rows_.size() * static_cast<std::size_t>(V1));
      joint_.logits_rows(p.enc, rows_.data(), row_decs_.data(), static_cast<std::int64_t>(rows_.size()),
                         config_.check_values, logits_.data());
      std::int64_t row = 0;
      for (std::int64_t b = 0; b < B; ++b) {
        for (std::int32_t g = 0; g < group_size_[b]; ++g) {
          float* logp = window_logp(b, g);
          std::copy_n(logits_.data() + row * V1, window_[b] * V1, logp);
          for (std::int32_t j = 0; j < window_[b]; ++j)
            log_softmax_in_place(logp + j * V1, static_cast<std::int32_t>(V1));
          row += window_[b];
        }
      }
      for (std::int64_t b = 0; b < B; ++b) {
        if (group_size_[b] == 0) {
          for (std::int32_t k = 0; k < P; ++k) states_.keep(beam_slot(h, b, k));
        } else {
          step(h, b);
        }
      }
      states_.advance(B * P);
    }

    return states_.ranked_beams(h, B);
  }

 private:
  float* window_logp(std::int64_t b, std::int32_t g) {
    return logp_.data() + (b * config_.beam + g) * config_.wind_window * (model_.vocab_size() + 1);
  }

  // The group of utterance b: prefix search, proposals; then the pool is rebuilt from the other hypotheses and the
  // proposals, equal hypotheses merge, and each frame keeps its K best.
  void step(const BeamHypsRef& h, std::int64_t b) {
    const std::int32_t K = config_.beam;
    const std::int32_t P = pool_;
    const std::int32_t t = frame_[b];
    const std::int32_t blank = model_.blank_id();
    const auto V1 = static_cast<std::int32_t>(model_.vocab_size() + 1);
    const auto group_rank = [&](std::int32_t k) {
      for (std::int32_t g = 0; g < group_size_[b]; ++g) {
        if (group_[b * K + g] == k) return g;
      }
      return -1;
    };
    const auto token_score = [&](std::int32_t j, std::int32_t label) {
      const float* logp = window_logp(b, group_rank(j));
      const AlsdRow row{logp, nullptr, blank, V1, nullptr, 0, &states_.fusion(), beam_slot(h, b, j)};
      return alsd_label_score(rule_, row, label, beam_token_offset(rule_, logp[blank]));
    };
    for (std::int32_t k = 0; k < P; ++k) beam_stage_prefix_search(h, b, k, t, token_score);
    for (std::int32_t k = 0; k < P; ++k) beam_commit_prefix_search(h, b, k);

    // The new pool: first the hypotheses outside the group (unchanged), then the group's proposals.
    std::int32_t count = 0;
    for (std::int32_t k = 0; k < P; ++k) {
      const std::int64_t s = beam_slot(h, b, k);
      if (h.scores[s] == kNegInf || h.next_time[s] == t) continue;
      candidates_[count++] = Candidate{k, -1, 0, h.scores[s]};
    }
    for (std::int32_t g = 0; g < group_size_[b]; ++g) {
      const std::int32_t k = group_[b * K + g];
      const std::int64_t s = beam_slot(h, b, k);
      const WindowRow row{window_logp(b, g), window_[b], blank, V1, h.on_frame[s] < config_.max_symbols_per_frame,
                          &states_.fusion(), s};
      AlsdProposals proposals;
      wind_propose(rule_, row, K, proposals);
      for (std::int32_t r = 0; r < proposals.count; ++r) {
        const float score = h.scores[s] + proposals.score[r];
        if (score == kNegInf) continue;
        ASRDEC_EXPECTS(count < P, Error, "internal error: WIND beam pool overflow");
        candidates_[count++] = Candidate{k, proposals.label[r], proposals.jump[r], score};
      }
    }
    for (std::int32_t i = 0; i < P; ++i) {
      const Candidate c = i < count ? candidates_[i] : Candidate{0, -1, 0, kNegInf};
      beam_stage_result(h, b, i, c.parent, c.label, c.score, c.jump);
    }
    for (std::int32_t i = 0; i < P; ++i) beam_commit_result(h, b, i);
    for (std::int32_t i = 0; i < P; ++i) beam_stage_recombination(h, b, i);
    for (std::int32_t i = 0; i < P; ++i) beam_commit_recombination(h, b, i);
    for (std::int32_t i = 0; i < P; ++i) wind_stage_frame_cap(h, b, i, K);
    for (std::int32_t i = 0; i < P; ++i) wind_commit_frame_cap(h, b, i);
    for (std::int32_t i = 0; i < P; ++i) {
      const std::int64_t s = beam_slot(h, b, i);
      const Candidate c = i < count ? candidates_[i] : Candidate{0, -1, 0, kNegInf};
      states_.take(s, beam_slot(h, b, c.parent), h.scores[s] != kNegInf ? c.label : -1);
    }
  }

  void reserve(std::int64_t batch) {
    const std::int64_t utterances = std::max<std::int64_t>(batch, 1);
    const std::int64_t slots = utterances * pool_;
    states_.reserve(slots);
    if (utterances <= reserved_) return;
    reserved_ = utterances;
    const auto n = static_cast<std::size_t>(utterances);
    for (auto* buffer : {&frame_, &window_, &group_size_}) *buffer = HostBuffer<std::int32_t>(n);
    group_ = HostBuffer<std::int32_t>(n * static_cast<std::size_t>(config_.beam));
    logp_ =
        HostBuffer<float>(n * static_cast<std::size_t>(config_.beam) * static_cast<std::size_t>(config_.wind_window) *
                          static_cast<std::size_t>(model_.vocab_size() + 1));
    candidates_.resize(static_cast<std::size_t>(pool_));
  }

  struct Candidate {
    std::int32_t parent;  // slot in the pool
    std::int32_t label;   // -1: the hypothesis as it is
    std::int32_t jump;
    float score;
  };

  TransducerModel model_;
  TransducerBeamConfig config_;
  BeamFusionRule rule_;
  std::int32_t pool_;  // slots per utterance
  JointCpu joint_;
  BeamSlotStates states_;
  BatchedBeamHyps<MemoryKind::host> hyps_;
  std::int64_t reserved_ = 0;
  HostBuffer<std::int32_t> frame_, window_, group_size_, group_;  // per utterance; group_: [B, K] pool slots
  HostBuffer<float> logp_;  // [B, K, W, V+1] window log-probabilities of each group member
  std::vector<Candidate> candidates_;
  std::vector<JointRow> rows_;
  std::vector<const float*> row_decs_;
  std::vector<float> logits_;
};

}  // namespace

std::unique_ptr<TransducerBeamBackend> make_wind_beam_cpu(const TransducerModel& model,
                                                          const TransducerBeamConfig& config, BatchLimits limits) {
  return std::make_unique<WindBeamCpu>(model, config, limits);
}

}  // namespace asrdec::detail

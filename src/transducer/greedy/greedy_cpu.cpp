// The CPU executor of greedy transducer decoding: the algorithms of greedy_decoder.hpp as loops over the batch,
// driving the shared step functions (include/asrdec/detail/transducer_step.hpp). Joint evaluations are made
// only for the utterances that need them; the predictor steps only on emitting utterances.

#include <algorithm>

#include "asrdec/core/error.hpp"
#include "lm/fusion_step.hpp"
#include "lm/ngram_lm_impl.hpp"
#include "transducer/greedy/greedy_backend.hpp"

namespace asrdec::detail {
namespace {

struct CpuStream final : TransducerStream::Impl {
  HostBuffer<float> predictor_state;
  HostBuffer<float> dec;  // [B, J] predictor output
  HostBuffer<std::int32_t> time_jump;
  HostBuffer<std::int32_t> last_label;
  HostBuffer<std::int32_t> lm_state;     // LM fusion: each utterance's LM state
  HostBuffer<std::int32_t> boost_state;  // boosting: each utterance's boosting-tree state
};

class GreedyCpu final : public GreedyBackend {
 public:
  GreedyCpu(const TransducerModel& model, const TransducerGreedyConfig& config, BatchLimits limits)
      : model_(model),
        config_(config),
        rules_(rules_of(model, config)),
        limits_(limits),
        session_(model.predictor().start_session(limits.max_batch)),
        joint_(model.joint().impl(), model.vocab_size() + 1, model_.durations(), model.blank_id()) {
    reserve(limits_.max_batch, limits_.max_frames);
  }

  std::unique_ptr<TransducerStream::Impl> start(std::int64_t batch, StreamHandle) override {
    reserve(batch, limits_.max_frames);
    auto state = std::make_unique<CpuStream>();
    state->batch = batch;
    state->frames_decoded.assign(static_cast<std::size_t>(batch), 0);
    const std::int64_t S = model_.predictor().state_size();
    const std::int64_t J = model_.joint_hidden();
    const auto rows = static_cast<std::size_t>(std::max<std::int64_t>(batch, 1));
    state->predictor_state = HostBuffer<float>(rows * static_cast<std::size_t>(S));
    state->dec = HostBuffer<float>(rows * static_cast<std::size_t>(J));
    state->time_jump = HostBuffer<std::int32_t>(rows);
    state->last_label = HostBuffer<std::int32_t>(rows);
    state->lm_state = HostBuffer<std::int32_t>(rows);
    state->boost_state = HostBuffer<std::int32_t>(rows);
    restart(*state, nullptr);
    return state;
  }

  void restart(TransducerStream::Impl& base, StreamHandle) override {
    auto& state = static_cast<CpuStream&>(base);
    const std::int64_t batch = state.batch;
    std::fill(state.frames_decoded.begin(), state.frames_decoded.end(), 0);
    session_->initial_state(state.predictor_state.data(), batch, nullptr);
    std::vector<std::int32_t> mask(static_cast<std::size_t>(std::max<std::int64_t>(batch, 1)), 1);
    for (std::int64_t b = 0; b < batch; ++b) {
      state.last_label[b] = model_.blank_id();  // the start symbol
      state.time_jump[b] = 0;
      state.lm_state[b] = NgramLm::bos_state();
      state.boost_state[b] = config_.boost != nullptr ? config_.boost->root_for(b, batch) : 0;
    }
    session_->step(state.last_label.data(), mask.data(), state.predictor_state.data(), state.dec.data(), batch,
                   nullptr);
  }

  BatchedHypsView decode_chunk(const TransducerInput& p, TransducerStream::Impl& base, StreamHandle) override {
    auto& state = static_cast<CpuStream&>(base);
    // A bad value is found as the frame is read, mid-chunk: the carried state is restored so that the stream is
    // unchanged by a call that throws.
    save(state);
    try {
      return decode_chunk_unsaved(p, state);
    } catch (...) {
      restore(state);
      throw;
    }
  }

  BatchedHypsView decode_chunk_unsaved(const TransducerInput& p, CpuStream& state) {
    reserve(p.batch, p.frames);
    hyps_.reserve(p.batch, p.frames * config_.max_symbols_per_frame + 1, Device::cpu());
    const GreedyStateRef s = state_ref(p);
    const HypsRef h = hyps_.ref();
    for (std::int64_t b = 0; b < p.batch; ++b) {
      hyps_clear(h, b);
    }
    fusion_ = FusionRef{};
    fusion_.vocab = static_cast<std::int32_t>(model_.vocab_size());
    if (config_.lm != nullptr) {
      fusion_.lm =
          FusionSource{lm_scores_.data(), lm_next_.data(), state.lm_state.data(), lm_total_.data(), config_.lm_weight};
    }
    if (config_.boost != nullptr) {
      fusion_.boost = FusionSource{boost_scores_.data(), boost_next_.data(), state.boost_state.data(),
                                   boost_total_.data(), config_.boost_weight};
    }
    if (fusion_.active()) {
      for (std::int64_t b = 0; b < p.batch; ++b) {
        fusion_reset_totals(fusion_, b);
        query_fused(b);
      }
    }
    if (config_.algorithm == TransducerGreedyAlgorithm::frame_looping) {
      frame_looping(p, state, s, h);
    } else {
      label_looping(p, state, s, h);
    }
    for (std::int64_t b = 0; b < p.batch; ++b) {
      // RNN-T never carries time: a chunk ends on a frame boundary. TDT carries the overshoot of the last jump.
      state.time_jump[b] = rules_.tdt ? std::max(0, s.time[b] - p.lengths[static_cast<std::size_t>(b)]) : 0;
      if (h.lengths[b] > 0) {
        state.last_label[b] = h.tokens[b * h.capacity + h.lengths[b] - 1];
      }
      ASRDEC_EXPECTS(!h.overflow[b], Error, "internal error: hypothesis capacity exceeded for utterance ", b);
    }
    return hyps_.view(Device::cpu(), p.batch);
  }

  std::vector<Hypothesis> collect(const BatchedHypsView& view, const std::vector<std::int64_t>& offsets, bool is_final,
                                  StreamHandle) override {
    std::vector<Hypothesis> out = to_hypotheses(view, offsets.data(), rules_.tdt, is_final);
    if (fusion_.active()) {
      for (std::size_t b = 0; b < out.size(); ++b) {
        out[b].lm_score = config_.lm != nullptr ? lm_total_[b] : 0.0f;
        out[b].boost_score = config_.boost != nullptr ? boost_total_[b] : 0.0f;
        out[b].score = out[b].am_score + out[b].lm_score + out[b].boost_score;
        out[b].ranking_score = out[b].score;
      }
    }
    return out;
  }

  void synchronize_and_check(StreamHandle) override {}
  GraphMode graph_mode() const noexcept override { return GraphMode::eager; }

 private:
  void reserve(std::int64_t batch, std::int64_t frames) {
    limits_.max_batch = std::max(limits_.max_batch, batch);
    limits_.max_frames = std::max(limits_.max_frames, frames);
    const auto rows = static_cast<std::size_t>(limits_.max_batch);
    for (auto* buffer : {&time_, &active_, &active_at_start_, &advance_, &label_, &label_time_, &label_duration_,
                         &emit_, &symbols_on_frame_}) {
      buffer->reserve_discard(rows);
    }
    label_score_.reserve_discard(rows);
    label_confidence_.reserve_discard(rows);
    const auto V = static_cast<std::size_t>(model_.vocab_size());
    lm_total_.reserve_discard(rows);
    boost_total_.reserve_discard(rows);
    if (config_.lm != nullptr) {
      lm_scores_.reserve_discard(rows * V);
      lm_next_.reserve_discard(rows * V);
    }
    if (config_.boost != nullptr) {
      boost_scores_.reserve_discard(rows * V);
      boost_next_.reserve_discard(rows * V);
    }
    choices_.resize(rows);
    skipped_logprob_.resize(rows);
  }

  void save(const CpuStream& state) {
    const auto rows = static_cast<std::size_t>(state.batch);
    const auto S = static_cast<std::size_t>(model_.predictor().state_size());
    const auto J = static_cast<std::size_t>(model_.joint_hidden());
    saved_floats_.assign(state.predictor_state.data(), state.predictor_state.data() + rows * S);
    saved_floats_.insert(saved_floats_.end(), state.dec.data(), state.dec.data() + rows * J);
    saved_ints_.clear();
    for (const auto* buffer : {&state.time_jump, &state.last_label, &state.lm_state, &state.boost_state}) {
      saved_ints_.insert(saved_ints_.end(), buffer->data(), buffer->data() + rows);
    }
  }

  void restore(CpuStream& state) const {
    const auto rows = static_cast<std::size_t>(state.batch);
    const auto S = static_cast<std::size_t>(model_.predictor().state_size());
    std::copy(saved_floats_.begin(), saved_floats_.begin() + static_cast<std::ptrdiff_t>(rows * S),
              state.predictor_state.data());
    std::copy(saved_floats_.begin() + static_cast<std::ptrdiff_t>(rows * S), saved_floats_.end(), state.dec.data());
    std::size_t at = 0;
    for (auto* buffer : {&state.time_jump, &state.last_label, &state.lm_state, &state.boost_state}) {
      std::copy_n(saved_ints_.begin() + static_cast<std::ptrdiff_t>(at), rows, buffer->data());
      at += rows;
    }
  }

  GreedyStateRef state_ref(const TransducerInput& p) {
    return GreedyStateRef{p.lengths.data(),         time_.data(),           active_.data(),
                          active_at_start_.data(),  advance_.data(),        label_.data(),
                          label_time_.data(),       label_duration_.data(), label_score_.data(),
                          label_confidence_.data(), emit_.data(),           symbols_on_frame_.data()};
  }

  // The full-vocabulary LM and boosting queries of utterance b's current states.
  void query_fused(std::int64_t b) {
    const std::int64_t V = fusion_.vocab;
    if (config_.lm != nullptr) {
      advance_row(config_.lm->ref(), fusion_.lm.state[b], lm_scores_.data() + b * V, lm_next_.data() + b * V);
    }
    if (config_.boost != nullptr) {
      advance_row(config_.boost->ref(), fusion_.boost.state[b], boost_scores_.data() + b * V,
                  boost_next_.data() + b * V);
    }
  }

  // Emitting utterances add their label's weighted scores and move their fusion states on.
  void fuse_emitted(std::int64_t batch) {
    if (!fusion_.active()) return;
    for (std::int64_t b = 0; b < batch; ++b) {
      if (emit_[b]) {
        fusion_emit(fusion_, b, label_[b]);
        query_fused(b);
      }
    }
  }

  static bool any(const HostBuffer<std::int32_t>& flags, std::int64_t batch) {
    return std::any_of(flags.data(), flags.data() + batch, [](std::int32_t f) { return f != 0; });
  }

  // Joint choices for every utterance with mask[b] != 0 at its current frame, into choices_[b]. WIND evaluates
  // window position w only for the utterances that found nothing but blanks before it: the same choice as
  // evaluating the whole window.
  void choose(const TransducerInput& p, const CpuStream& state, const HostBuffer<std::int32_t>& mask) {
    const std::int32_t window = config_.algorithm == TransducerGreedyAlgorithm::wind ? config_.window : 1;
    pending_.clear();
    for (std::int64_t b = 0; b < p.batch; ++b) {
      if (mask[b]) pending_.push_back(b);
    }
    for (std::int32_t w = 0; w < window && !pending_.empty(); ++w) {
      rows_.clear();
      in_utterance_.clear();
      for (std::int64_t b : pending_) {
        const std::int32_t length = p.lengths[static_cast<std::size_t>(b)];
        const std::int32_t last = length > 0 ? length - 1 : 0;
        rows_.push_back(JointRow{b, std::min(safe_frame(time_[b], length) + w, last)});
        in_utterance_.push_back(time_[b] + w < length);
        if (w == 0) skipped_logprob_[b] = 0.0f;
      }
      results_.resize(rows_.size());
      joint_.evaluate_rows(p.enc, rows_.data(), static_cast<std::int64_t>(rows_.size()), state.dec.data(),
                           model_.joint_hidden(), config_.check_values, fusion_, results_.data());
      std::size_t kept = 0;
      for (std::size_t r = 0; r < rows_.size(); ++r) {
        const std::int64_t b = pending_[r];
        // WIND: the blanks of the window positions before the choice are part of its path.
        const float row_logprob = in_utterance_[r] ? results_[r].step_logprob : 0.0f;
        choices_[b] = results_[r];
        choices_[b].offset = w;
        choices_[b].step_logprob = skipped_logprob_[b] + row_logprob;
        if (results_[r].label == rules_.blank) {
          skipped_logprob_[b] += row_logprob;
          pending_[kept++] = b;
        }
      }
      pending_.resize(kept);
    }
  }

  void label_looping(const TransducerInput& p, CpuStream& state, const GreedyStateRef& s, const HypsRef& h) {
    const std::int64_t B = p.batch;
    for (std::int64_t b = 0; b < B; ++b) {
      label_looping_begin(s, b, state.time_jump[b]);
    }
    while (any(active_, B)) {
      choose(p, state, active_);
      for (std::int64_t b = 0; b < B; ++b) {
        label_looping_first(s, rules_, h, b, active_[b] ? choices_[b] : JointChoice{});
      }
      while (any(advance_, B)) {
        choose(p, state, advance_);
        for (std::int64_t b = 0; b < B; ++b) {
          if (advance_[b]) {
            label_looping_inner(s, rules_, h, b, choices_[b]);
          }
        }
      }
      for (std::int64_t b = 0; b < B; ++b) {
        label_looping_store(s, rules_, h, b);
      }
      fuse_emitted(B);
      session_->step(label_.data(), emit_.data(), state.predictor_state.data(), state.dec.data(), B, nullptr);
      for (std::int64_t b = 0; b < B; ++b) {
        label_looping_finish(s, rules_, h, b);
      }
    }
  }

  void frame_looping(const TransducerInput& p, CpuStream& state, const GreedyStateRef& s, const HypsRef& h) {
    const std::int64_t B = p.batch;
    for (std::int64_t b = 0; b < B; ++b) {
      frame_looping_begin(s, b, state.time_jump[b]);
    }
    for (std::int32_t frame = 0; any(active_, B); ++frame) {
      for (std::int64_t b = 0; b < B; ++b) {
        frame_looping_enter(s, b, frame);
      }
      while (any(advance_, B)) {
        choose(p, state, advance_);  // frame looping has no window: the joint at time_[b]
        for (std::int64_t b = 0; b < B; ++b) {
          frame_looping_step(s, rules_, h, b, advance_[b] ? choices_[b] : JointChoice{});
        }
        fuse_emitted(B);
        session_->step(label_.data(), emit_.data(), state.predictor_state.data(), state.dec.data(), B, nullptr);
      }
    }
  }

  TransducerModel model_;
  TransducerGreedyConfig config_;
  GreedyRules rules_;
  BatchLimits limits_;
  std::unique_ptr<PredictorSession> session_;
  JointCpu joint_;
  BatchedHyps<MemoryKind::host> hyps_;
  HostBuffer<std::int32_t> time_, active_, active_at_start_, advance_, label_, label_time_, label_duration_, emit_,
      symbols_on_frame_;
  HostBuffer<float> label_score_, label_confidence_;
  // Fusion: [max_batch, V] query of each state, [max_batch] totals, for the LM and the boosting tree.
  HostBuffer<float> lm_scores_, lm_total_, boost_scores_, boost_total_;
  HostBuffer<std::int32_t> lm_next_, boost_next_;  // [max_batch, V]
  FusionRef fusion_{};                             // set for the chunk being decoded; inactive without an LM or a tree
  std::vector<JointChoice> choices_;               // [max_batch] this phase's joint choice per utterance
  std::vector<float> skipped_logprob_;             // [max_batch] WIND: blanks of the window rows before the choice
  std::vector<char> in_utterance_;                 // per joint row: its window position is a frame of the utterance
  std::vector<std::int64_t> pending_;
  std::vector<JointRow> rows_;
  std::vector<JointChoice> results_;
  std::vector<float> saved_floats_;  // the carried state before the chunk being decoded (save / restore)
  std::vector<std::int32_t> saved_ints_;
};

}  // namespace

std::unique_ptr<GreedyBackend> make_greedy_cpu(const TransducerModel& model, const TransducerGreedyConfig& config,
                                               BatchLimits limits) {
  return std::make_unique<GreedyCpu>(model, config, limits);
}

}  // namespace asrdec::detail

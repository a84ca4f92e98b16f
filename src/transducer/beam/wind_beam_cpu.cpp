// The CPU executor of WIND beam search (beam_decoder.hpp). Each utterance keeps a pool of hypotheses on different
// frames (at most K per frame, so at most K·(W+1) hypotheses between the frame being expanded and the end of its
// window, plus the K·K new ones of a step: the pool has K·(W+K) slots). Each step, every utterance expands the
// hypotheses on its earliest unfinished frame through the step functions it shares with the CUDA executor
// (transducer/beam/wind_beam_step.hpp: wind_group, wind_propose, wind_step). Streaming stops an utterance before a
// step whose window reaches past the frames brought so far (decode_chunks).

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "asrdec/core/error.hpp"
#include "asrdec/hyps/batched_beam_hyps.hpp"
#include "transducer/beam/beam_backend.hpp"
#include "transducer/beam/beam_lanes.hpp"
#include "transducer/beam/beam_slot_states.hpp"
#include "transducer/beam/wind_beam_step.hpp"

namespace asrdec::detail {
namespace {

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

  std::vector<std::vector<Hypothesis>> decode(const TransducerInput& p, const std::vector<std::int32_t>& boost_roots,
                                              StreamHandle /*stream*/) override {
    const BeamHypsRef h = begin(p);
    states_.start(p.batch, pool_, boost_roots);
    for (std::int64_t b = 0; b < p.batch; ++b) beam_clear(h, b);
    return states_.ranked_beams(search(p, nullptr), p.batch);
  }

  // Streaming. A window is W frames, fewer only at the utterance's end, so an utterance that is not ending stops
  // before the first step whose window reaches past its frames, and keeps the frames from its earliest live
  // hypothesis on for the next call (BeamLanes). The steps it takes are the whole search's steps.
  void search_chunks(const TransducerInput& p, const ChunkPlan& plan, const std::vector<ChunkRow>& rows,
                     const std::vector<std::int32_t>& boost_roots, std::vector<BeamChannel*>& lanes,
                     StreamHandle /*stream*/) override {
    chunks_.emplace(p, plan, rows, boost_roots, lanes, model_.joint_hidden(), /*waits=*/true, config_.check_values);
    const BeamHypsRef h = begin(chunks_->input());
    states_.start(p.batch, pool_, boost_roots);
    chunks_->load(h, states_.arrays());
    searched_ = search(chunks_->input(), &rows);  // throws for a bad value before any channel changes
    chunks_->prepare_save(searched_, states_.arrays());
  }

  void save_chunks() override {
    chunks_->save(searched_, states_.arrays());  // does not allocate
    chunks_.reset();
  }

  BeamLoopCounts loop_counts() const noexcept override { return with_joint_passes(counts_, config_.algorithm); }

 private:
  // Sizes the buffers and the pools for the request; the slots are set up by the caller.
  BeamHypsRef begin(const TransducerInput& p) {
    reserve(p.batch);
    hyps_.reserve(p.batch, pool_, beam_history_start(p.frames, beam_worst_history(config_, p.frames)),
                  BeamKind::windowed, model_.blank_id(), Device::cpu());
    return hyps_.ref();
  }

  // Steps every utterance's pool from the slots' current states until every live hypothesis is past its
  // utterance's end — or, streaming (`rows`), for a row that is not its utterance's last, until the first step
  // whose window reaches past the row's frames. Returns the hypotheses' final view.
  BeamHypsRef search(const TransducerInput& p, const std::vector<ChunkRow>* rows) {
    const std::int64_t B = p.batch;
    const std::int32_t K = config_.beam;
    const std::int32_t W = config_.wind_window;
    const std::int32_t P = pool_;
    const std::int64_t V1 = model_.vocab_size() + 1;
    const std::int32_t worst = beam_worst_history(config_, p.frames);
    BeamHypsRef h = hyps_.ref();
    counts_ = BeamLoopCounts{};

    for (;;) {
      h = hyps_.make_room_for_step(B, worst);
      // Each utterance's earliest unfinished frame, and the group of hypotheses on it (at most K).
      rows_.clear();
      row_decs_.clear();
      bool any = false;
      for (std::int64_t b = 0; b < B; ++b) {
        const std::int32_t length = p.lengths[static_cast<std::size_t>(b)];
        const std::int32_t count = wind_group(h, b, length, K, frame_[b], group_.data() + b * K);
        ASRDEC_EXPECTS(count <= K, Error, "internal error: ", count, " hypotheses on frame ", frame_[b],
                       ", more than the beam ", K);
        group_size_[b] = count;
        if (count == 0) continue;
        if (rows != nullptr && !(*rows)[static_cast<std::size_t>(b)].last &&
            wind_waits_for_frames(frame_[b], W, length)) {
          group_size_[b] = 0;  // the window would reach past the frames brought so far: wait for the next chunk
          continue;
        }
        any = true;
        window_[b] = std::min(W, length - frame_[b]);
        for (std::int32_t g = 0; g < count; ++g) {
          const std::int64_t s = beam_slot(h, b, group_[b * K + g]);
          for (std::int32_t j = 0; j < window_[b]; ++j) {
            rows_.push_back(JointRow{b, frame_[b] + j});
            row_decs_.push_back(states_.dec(s));
          }
          states_.query(s);
        }
      }
      if (!any) break;
      ++counts_.outer;
      logits_.resize(rows_.size() * static_cast<std::size_t>(V1));
      joint_.logits_rows(p.enc, rows_.data(), row_decs_.data(), static_cast<std::int64_t>(rows_.size()),
                         config_.check_values, logits_.data());
      std::int64_t row = 0;
      for (std::int64_t b = 0; b < B; ++b) {
        for (std::int32_t g = 0; g < group_size_[b]; ++g) {
          float* logp = logp_.data() + ((b * K + g) * W) * V1;
          std::copy_n(logits_.data() + row * V1, window_[b] * V1, logp);
          for (std::int32_t j = 0; j < window_[b]; ++j)
            log_softmax_in_place(logp + j * V1, static_cast<std::int32_t>(V1));
          row += window_[b];
        }
      }
      for (std::int64_t b = 0; b < B; ++b) {
        if (group_size_[b] == 0) {
          for (std::int32_t k = 0; k < P; ++k) states_.keep(beam_slot(h, b, k));
          continue;
        }
        const WindWindows windows = windows_of(b);
        const std::int32_t* group = group_.data() + b * K;
        for (std::int32_t g = 0; g < group_size_[b]; ++g) {
          const std::int64_t s = beam_slot(h, b, group[g]);
          wind_propose(rule_, wind_member_row(windows, h, s, g, window_[b], config_.max_symbols_per_frame), K,
                       proposals_[static_cast<std::size_t>(g)]);
        }
        const bool fits = wind_step(rule_, h, b, frame_[b], group, group_size_[b], windows, proposals_.data(), K,
                                    candidates_.data(), take_from_.data(), take_label_.data());
        ASRDEC_EXPECTS(fits, Error, "internal error: WIND beam pool overflow");
        for (std::int32_t i = 0; i < P; ++i) {
          const std::int64_t s = beam_slot(h, b, i);
          states_.take(s, take_from_[s], take_label_[s]);
        }
      }
      states_.advance(B * P);
    }
    return h;
  }

  // Utterance b's group windows in logp_ ([B, K, W, V+1]).
  WindWindows windows_of(std::int64_t b) const {
    const std::int64_t V1 = model_.vocab_size() + 1;
    return WindWindows{logp_.data() + b * config_.beam * config_.wind_window * V1, config_.wind_window,
                       model_.blank_id(), static_cast<std::int32_t>(V1), &states_.fusion()};
  }

  void reserve(std::int64_t batch) {
    const std::int64_t utterances = std::max<std::int64_t>(batch, 1);
    const std::int64_t slots = utterances * pool_;
    states_.reserve(slots);
    if (utterances <= reserved_) return;
    const auto n = static_cast<std::size_t>(utterances);
    for (auto* buffer : {&frame_, &window_, &group_size_}) *buffer = HostBuffer<std::int32_t>(n);
    group_ = HostBuffer<std::int32_t>(n * static_cast<std::size_t>(config_.beam));
    logp_ =
        HostBuffer<float>(n * static_cast<std::size_t>(config_.beam) * static_cast<std::size_t>(config_.wind_window) *
                          static_cast<std::size_t>(model_.vocab_size() + 1));
    candidates_.resize(static_cast<std::size_t>(pool_));
    proposals_.resize(static_cast<std::size_t>(config_.beam));
    take_from_ = HostBuffer<std::int64_t>(n * static_cast<std::size_t>(pool_));
    take_label_ = HostBuffer<std::int32_t>(n * static_cast<std::size_t>(pool_));
    reserved_ = utterances;  // last: a reservation that throws is tried again by the next call
  }

  TransducerModel model_;
  TransducerBeamConfig config_;
  BeamFusionRule rule_;
  std::int32_t pool_;  // slots per utterance
  JointCpu joint_;
  BeamSlotStates states_;
  std::optional<BeamLanes> chunks_;  // streaming: the call between search_chunks() and save_chunks()
  BeamHypsRef searched_{};
  BatchedBeamHyps<MemoryKind::host> hyps_;
  std::int64_t reserved_ = 0;
  HostBuffer<std::int32_t> frame_, window_, group_size_, group_;  // per utterance; group_: [B, K] pool slots
  HostBuffer<float> logp_;                 // [B, K, W, V+1] window log-probabilities of each group member
  std::vector<WindCandidate> candidates_;  // [P] scratch of wind_step
  std::vector<AlsdProposals> proposals_;   // [K] of the group being stepped
  HostBuffer<std::int64_t> take_from_;     // [B, P] where each new slot's state comes from
  HostBuffer<std::int32_t> take_label_;    // [B, P] and the label it took
  std::vector<JointRow> rows_;
  std::vector<const float*> row_decs_;
  std::vector<float> logits_;
  BeamLoopCounts counts_;  // of the last search
};

}  // namespace

std::unique_ptr<TransducerBeamBackend> make_wind_beam_cpu(const TransducerModel& model,
                                                          const TransducerBeamConfig& config, BatchLimits limits) {
  return std::make_unique<WindBeamCpu>(model, config, limits);
}

}  // namespace asrdec::detail

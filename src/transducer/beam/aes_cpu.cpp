// The CPU executor of AES++ (beam_decoder.hpp): frame by frame, the batch's B·K hypothesis slots run prefix search
// and then up to num_steps expansion steps through the shared step functions (transducer/beam/aes_step.hpp,
// detail/beam_hyps_step.hpp). Joint evaluations and LM queries are made only for hypotheses that still expand on
// the frame; utterances with nothing left to expand skip the step. Streaming loads each row's slots from its
// channel (hyps/beam_channel.hpp) and saves them back: the search is frame-synchronous, so a chunk continues exactly
// where the previous one stopped.

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "asrdec/core/error.hpp"
#include "asrdec/hyps/batched_beam_hyps.hpp"
#include "transducer/beam/aes_step.hpp"
#include "transducer/beam/beam_backend.hpp"
#include "transducer/beam/beam_lanes.hpp"
#include "transducer/beam/beam_slot_states.hpp"

namespace asrdec::detail {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

class AesCpu final : public TransducerBeamBackend {
 public:
  AesCpu(const TransducerModel& model, const TransducerBeamConfig& config, BatchLimits limits)
      : model_(model),
        config_(config),
        rule_(beam_fusion_rule(config)),
        joint_(model.joint().impl(), model.vocab_size() + 1, model_.durations(), model.blank_id()),
        states_(model_, config_) {
    reserve(limits.max_batch);
  }

  std::vector<std::vector<Hypothesis>> decode(const TransducerInput& p, const std::vector<std::int32_t>& boost_roots,
                                              StreamHandle /*stream*/) override {
    const BeamHypsRef h = begin(p);
    states_.start(p.batch, config_.beam, boost_roots);
    for (std::int64_t b = 0; b < p.batch; ++b) beam_clear(h, b);
    return states_.ranked_beams(search(p), p.batch);
  }

  void search_chunks(const TransducerInput& p, const ChunkPlan& plan, const std::vector<ChunkRow>& rows,
                     const std::vector<std::int32_t>& boost_roots, std::vector<BeamChannel*>& lanes,
                     StreamHandle /*stream*/) override {
    chunks_.emplace(p, plan, rows, boost_roots, lanes, model_.joint_hidden(), /*waits=*/false, config_.check_values);
    const BeamHypsRef h = begin(chunks_->input());
    states_.start(p.batch, config_.beam, boost_roots);
    chunks_->load(h, states_.arrays());
    searched_ = search(chunks_->input());  // throws for a bad value before any channel changes
    chunks_->prepare_save(searched_, states_.arrays());
  }

  void save_chunks() override {
    chunks_->save(searched_, states_.arrays());  // does not allocate
    chunks_.reset();
  }

  BeamLoopCounts loop_counts() const noexcept override { return with_joint_passes(counts_, config_.algorithm); }

 private:
  // Sizes the buffers and the hypotheses for the request; the slots are set up by the caller.
  BeamHypsRef begin(const TransducerInput& p) {
    reserve(p.batch);
    hyps_.reserve(p.batch, config_.beam, beam_history_start(p.frames, beam_worst_history(config_, p.frames)),
                  BeamKind::rnnt, model_.blank_id(), Device::cpu());
    return hyps_.ref();
  }

  // Frames [0, lengths[b]) of every row through its beam, from the slots' current states; returns the hypotheses'
  // final view (the history may have been widened on the way).
  BeamHypsRef search(const TransducerInput& p) {
    const std::int64_t B = p.batch;
    const std::int32_t K = config_.beam;
    const std::int32_t C = K + config_.aes_expansion_beta;  // proposals per hypothesis
    const std::int32_t worst = beam_worst_history(config_, p.frames);
    BeamHypsRef h = hyps_.ref();
    const std::int64_t V1 = model_.vocab_size() + 1;
    const AesFrame frame{logp_.data(), static_cast<std::int32_t>(V1), model_.blank_id(), &states_.fusion()};
    counts_ = BeamLoopCounts{};

    for (std::int32_t t = 0; t < p.frames; ++t) {
      bool any_active = false;
      for (std::int64_t b = 0; b < B; ++b) {
        active_[b] = t < p.lengths[static_cast<std::size_t>(b)] ? 1 : 0;
        any_active = any_active || active_[b];
        for (std::int32_t k = 0; k < K; ++k) {
          const std::int64_t s = beam_slot(h, b, k);
          expanding_[s] = active_[b] && h.scores[s] != kNegInf ? 1 : 0;
        }
      }
      if (!any_active) break;
      ++counts_.outer;
      evaluate(p, t, B * K, /*query=*/true);

      // Prefix search: every hypothesis gains the paths through its one-token-shorter prefix on this frame.
      for (std::int64_t b = 0; b < B; ++b) {
        if (active_[b]) aes_prefix_search(rule_, h, b, t, frame);
      }

      for (std::int32_t step = 0; step < config_.aes_num_steps; ++step) {
        h = hyps_.make_room_for_step(B, worst);
        ++counts_.inner;
        for (std::int64_t b = 0; b < B; ++b) {
          if (!active_[b] || !aes_any_expanding(h, b, expanding_.data())) {
            for (std::int32_t i = 0; i < K; ++i) states_.keep(beam_slot(h, b, i));
            continue;
          }
          aes_expand(rule_, h, b, C, config_.aes_expansion_gamma, frame, proposals_.data(), expanding_.data(),
                     take_from_.data(), take_label_.data());
          for (std::int32_t i = 0; i < K; ++i) {
            const std::int64_t s = beam_slot(h, b, i);
            states_.take(s, take_from_[s], take_label_[s]);
          }
        }
        states_.advance(B * K);
        if (!evaluate(p, t, B * K, /*query=*/step + 1 < config_.aes_num_steps)) break;
      }

      // Hypotheses still expanding after num_steps leave the frame with a blank.
      h = hyps_.make_room_for_step(B, worst);
      for (std::int64_t b = 0; b < B; ++b) {
        if (active_[b]) aes_end_frame(rule_, h, b, expanding_.data(), frame);
      }
    }
    return h;
  }

  // Log-probabilities on frame t (and, with `query`, LM/boosting queries) of every expanding slot of [0, slots).
  // Returns whether any slot is expanding.
  bool evaluate(const TransducerInput& p, std::int32_t t, std::int64_t slots, bool query) {
    const std::int64_t V1 = model_.vocab_size() + 1;
    rows_.clear();
    row_slots_.clear();
    row_decs_.clear();
    for (std::int64_t s = 0; s < slots; ++s) {
      if (!expanding_[s]) continue;
      rows_.push_back(JointRow{s / config_.beam, t});
      row_slots_.push_back(s);
      row_decs_.push_back(states_.dec(s));
    }
    if (rows_.empty()) return false;
    const auto count = static_cast<std::int64_t>(rows_.size());
    logits_.resize(static_cast<std::size_t>(count * V1));
    joint_.logits_rows(p.enc, rows_.data(), row_decs_.data(), count, config_.check_values, logits_.data());
    for (std::int64_t r = 0; r < count; ++r) {
      const std::int64_t s = row_slots_[static_cast<std::size_t>(r)];
      float* logp = logp_.data() + s * V1;
      std::copy_n(logits_.data() + r * V1, V1, logp);
      log_softmax_in_place(logp, static_cast<std::int32_t>(V1));
      if (query) states_.query(s);
    }
    return true;
  }

  void reserve(std::int64_t batch) {
    const std::int64_t slots = std::max<std::int64_t>(batch, 1) * config_.beam;
    states_.reserve(slots);
    if (static_cast<std::size_t>(slots) <= proposals_.size()) return;
    active_ = HostBuffer<std::int32_t>(static_cast<std::size_t>(std::max<std::int64_t>(batch, 1)));
    expanding_ = HostBuffer<std::int32_t>(static_cast<std::size_t>(slots));
    logp_ = HostBuffer<float>(static_cast<std::size_t>(slots * (model_.vocab_size() + 1)));
    take_from_.resize(static_cast<std::size_t>(slots));
    take_label_.resize(static_cast<std::size_t>(slots));
    proposals_.resize(static_cast<std::size_t>(slots));  // last: its size is the check above
  }

  TransducerModel model_;
  TransducerBeamConfig config_;
  BeamFusionRule rule_;
  JointCpu joint_;
  BeamSlotStates states_;
  std::optional<BeamLanes> chunks_;  // streaming: the call between search_chunks() and save_chunks()
  BeamHypsRef searched_{};
  BatchedBeamHyps<MemoryKind::host> hyps_;
  HostBuffer<std::int32_t> active_, expanding_;
  HostBuffer<float> logp_;  // [slots, V+1] log-softmax of each slot on the current frame
  std::vector<AesProposals> proposals_;
  std::vector<std::int64_t> take_from_;  // per slot: where its next state comes from (aes_expand)
  std::vector<std::int32_t> take_label_;
  std::vector<JointRow> rows_;
  std::vector<std::int64_t> row_slots_;
  std::vector<const float*> row_decs_;
  std::vector<float> logits_;
  BeamLoopCounts counts_;  // of the last search
};

}  // namespace

std::unique_ptr<TransducerBeamBackend> make_aes_cpu(const TransducerModel& model, const TransducerBeamConfig& config,
                                                    BatchLimits limits) {
  return std::make_unique<AesCpu>(model, config, limits);
}

}  // namespace asrdec::detail

// The CPU executor of ALSD++ (beam_decoder.hpp): the batch's B·K hypothesis slots advance together, one symbol per
// step, through the shared step functions (transducer/beam/alsd_step.hpp, detail/beam_hyps_step.hpp). Joint evaluations
// and LM queries are made only for live hypotheses that are still inside their utterance; the predictor steps only the
// slots that emitted a token (BeamSlotStates). Streaming stops each utterance's beam before a step that needs frames
// the chunk does not have (decode_chunks).

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "asrdec/core/error.hpp"
#include "asrdec/hyps/batched_beam_hyps.hpp"
#include "transducer/beam/alsd_step.hpp"
#include "transducer/beam/beam_backend.hpp"
#include "transducer/beam/beam_lanes.hpp"
#include "transducer/beam/beam_slot_states.hpp"

namespace asrdec::detail {
namespace {

class AlsdCpu final : public TransducerBeamBackend {
 public:
  AlsdCpu(const TransducerModel& model, const TransducerBeamConfig& config, BatchLimits limits)
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
    // Every slot starts after the start symbol; slot 0 of each utterance is its one live hypothesis.
    states_.start(p.batch, config_.beam, boost_roots);
    for (std::int64_t b = 0; b < p.batch; ++b) beam_clear(h, b);
    return states_.ranked_beams(search(p, nullptr), p.batch);
  }

  // Streaming. Hypotheses of one beam stand on different frames, so the whole search's step may need a frame past
  // the chunk for one hypothesis while another is still behind: each utterance that is not ending stops before the
  // first step in which some live hypothesis stands past its frames, and keeps the frames from its earliest live
  // hypothesis on for the next call (BeamLanes). The steps it takes are the whole search's steps.
  void search_chunks(const TransducerInput& p, const ChunkPlan& plan, const std::vector<ChunkRow>& rows,
                     const std::vector<std::int32_t>& boost_roots, std::vector<BeamChannel*>& lanes,
                     StreamHandle /*stream*/) override {
    chunks_.emplace(p, plan, rows, boost_roots, lanes, model_.joint_hidden(), /*waits=*/true, config_.check_values);
    const BeamHypsRef h = begin(chunks_->input());
    states_.start(p.batch, config_.beam, boost_roots);
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
  // Sizes the buffers and the hypotheses for the request; the slots are set up by the caller.
  BeamHypsRef begin(const TransducerInput& p) {
    reserve(p.batch);
    hyps_.reserve(p.batch, config_.beam, beam_history_start(p.frames, beam_worst_history(config_, p.frames)),
                  model_.type() == TransducerType::tdt ? BeamKind::tdt : BeamKind::rnnt, model_.blank_id(),
                  Device::cpu());
    return hyps_.ref();
  }

  // Steps every utterance's beam from the slots' current states until every live hypothesis is past its
  // utterance's end — or, streaming (`rows`), for a row that is not its utterance's last, until the first step in
  // which a live hypothesis stands past the row's frames. Returns the hypotheses' final view.
  BeamHypsRef search(const TransducerInput& p, const std::vector<ChunkRow>* rows) {
    const std::int64_t B = p.batch;
    const std::int32_t K = config_.beam;
    const bool tdt = model_.type() == TransducerType::tdt;
    const std::int32_t blank = model_.blank_id();
    const std::int32_t worst = beam_worst_history(config_, p.frames);
    BeamHypsRef h = hyps_.ref();
    const std::int64_t V = model_.vocab_size();
    const std::int64_t outputs = model_.joint().output_size();
    const auto D = static_cast<std::int32_t>(model_.durations().size());
    counts_ = BeamLoopCounts{};

    for (;;) {
      h = hyps_.make_room_for_step(B, worst);
      // The live hypotheses still inside their utterance, and the utterances that still step.
      rows_.clear();
      row_slots_.clear();
      for (std::int64_t b = 0; b < B; ++b) {
        const std::int32_t length = p.lengths[static_cast<std::size_t>(b)];
        running_[b] = 0;
        if (rows != nullptr && !(*rows)[static_cast<std::size_t>(b)].last && alsd_waits_for_frames(h, b, length))
          continue;
        for (std::int32_t k = 0; k < K; ++k) {
          const std::int64_t s = beam_slot(h, b, k);
          if (alsd_row_active(h, s, length)) {
            rows_.push_back(JointRow{b, h.next_time[s]});
            row_slots_.push_back(s);
            running_[b] = 1;
          }
        }
      }
      if (rows_.empty()) break;
      ++counts_.outer;
      const auto count = static_cast<std::int64_t>(rows_.size());
      row_decs_.resize(rows_.size());
      for (std::int64_t r = 0; r < count; ++r) row_decs_[static_cast<std::size_t>(r)] = states_.dec(row_slots_[r]);
      logits_.resize(static_cast<std::size_t>(count * outputs));
      joint_.logits_rows(p.enc, rows_.data(), row_decs_.data(), count, config_.check_values, logits_.data());

      // Proposals of every slot: extensions for the rows, a no-op for finished hypotheses, nothing for dead ones.
      for (std::int64_t b = 0; b < B; ++b) {
        for (std::int32_t k = 0; k < K; ++k) {
          const std::int64_t s = beam_slot(h, b, k);
          alsd_idle_proposals(running_[b] != 0, h.scores[s], proposals_[s]);
        }
      }
      for (std::int64_t r = 0; r < count; ++r) {
        const std::int64_t s = row_slots_[r];
        float* logp = logits_.data() + r * outputs;
        log_softmax_in_place(logp, static_cast<std::int32_t>(V + 1));
        if (tdt) log_softmax_in_place(logp + V + 1, D);
        states_.query(s);
        const AlsdRow row{logp,
                          tdt ? logp + V + 1 : nullptr,
                          blank,
                          static_cast<std::int32_t>(V + 1),
                          model_.durations().data(),
                          D,
                          &states_.fusion(),
                          s};
        if (h.on_frame[s] >= config_.max_symbols_per_frame) {
          alsd_force_blank(rule_, row, proposals_[s]);
        } else {
          alsd_propose(rule_, row, K, proposals_[s]);
        }
      }

      // Each running utterance keeps its K best proposals; the new slots take over their parents' states.
      for (std::int64_t b = 0; b < B; ++b) {
        if (!running_[b]) {
          for (std::int32_t i = 0; i < K; ++i) states_.keep(beam_slot(h, b, i));
          continue;
        }
        alsd_select(h, b, proposals_.data(), take_from_.data(), take_label_.data());
        for (std::int32_t i = 0; i < K; ++i) {
          const std::int64_t s = beam_slot(h, b, i);
          states_.take(s, take_from_[s], take_label_[s]);
        }
      }
      states_.advance(B * K);
    }
    return h;
  }

  void reserve(std::int64_t batch) {
    const std::int64_t slots = std::max<std::int64_t>(batch, 1) * config_.beam;
    states_.reserve(slots);
    if (static_cast<std::size_t>(slots) <= proposals_.size()) return;
    running_ = HostBuffer<std::int32_t>(static_cast<std::size_t>(std::max<std::int64_t>(batch, 1)));
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
  HostBuffer<std::int32_t> running_;
  std::vector<AlsdProposals> proposals_;
  std::vector<std::int64_t> take_from_;  // per slot: where its next state comes from (alsd_select)
  std::vector<std::int32_t> take_label_;
  std::vector<JointRow> rows_;
  std::vector<std::int64_t> row_slots_;
  std::vector<const float*> row_decs_;
  std::vector<float> logits_;
  BeamLoopCounts counts_;  // of the last search
};

}  // namespace

std::unique_ptr<TransducerBeamBackend> make_alsd_cpu(const TransducerModel& model, const TransducerBeamConfig& config,
                                                     BatchLimits limits) {
  return std::make_unique<AlsdCpu>(model, config, limits);
}

}  // namespace asrdec::detail

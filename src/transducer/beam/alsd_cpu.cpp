// The CPU executor of ALSD++ (beam_decoder.hpp): the batch's B·K hypothesis slots advance together, one symbol per
// step, through the shared step functions (transducer/beam/alsd_step.hpp, detail/beam_hyps_step.hpp). Joint evaluations
// and LM queries are made only for live hypotheses that are still inside their utterance; the predictor steps only the
// slots that emitted a token (BeamSlotStates). Streaming stops each utterance's beam before a step that needs frames
// the chunk does not have (decode_chunks).

#include <algorithm>
#include <cmath>
#include <limits>

#include "asrdec/core/error.hpp"
#include "asrdec/detail/float16.hpp"
#include "asrdec/hyps/batched_beam_hyps.hpp"
#include "hyps/beam_channel.hpp"
#include "transducer/beam/alsd_step.hpp"
#include "transducer/beam/beam_backend.hpp"
#include "transducer/beam/beam_slot_states.hpp"
#include "transducer/model/bad_enc_value.hpp"

namespace asrdec::detail {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

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

  std::vector<std::vector<Hypothesis>> decode(const TransducerInput& p, StreamHandle /*stream*/) override {
    const BeamHypsRef h = begin(p);
    // Every slot starts after the start symbol; slot 0 of each utterance is its one live hypothesis.
    states_.start(p.batch, config_.beam);
    for (std::int64_t b = 0; b < p.batch; ++b) beam_clear(h, b);
    return states_.ranked_beams(search(p, nullptr), p.batch);
  }

  // Streaming. Hypotheses of one beam stand on different frames, so the whole search's step may need a frame past
  // the chunk for one hypothesis while another is still behind: each utterance that is not ending stops before the
  // first step in which some live hypothesis stands past its frames, and keeps the frames from its earliest live
  // hypothesis on (BeamChannel::tail) for the next call. The steps it takes are the whole search's steps.
  void decode_chunks(const TransducerInput& p, const ChunkPlan& plan, const std::vector<ChunkRow>& rows,
                     const std::vector<std::int32_t>& boost_roots, std::vector<BeamChannel*>& lanes,
                     StreamHandle /*stream*/) override {
    const std::int64_t B = p.batch;
    const std::int32_t K = config_.beam;
    const std::int64_t J = model_.joint_hidden();
    // Each lane holds its utterance's tail, then the chunk (float32: the joint reads every dtype as float).
    std::vector<std::int32_t> tail(static_cast<std::size_t>(B), 0);
    TransducerInput lane;
    lane.batch = B;
    lane.lengths.resize(static_cast<std::size_t>(B));
    for (std::int64_t b = 0; b < B; ++b) {
      const auto row = static_cast<std::size_t>(b);
      tail[row] =
          plan.fresh[row] ? 0 : static_cast<std::int32_t>(lanes[row]->tail.size() / static_cast<std::size_t>(J));
      lane.lengths[row] = tail[row] + p.lengths[row];
      lane.frames = std::max<std::int64_t>(lane.frames, lane.lengths[row]);
    }
    lane_enc_.assign(static_cast<std::size_t>(B * lane.frames * J), 0.0f);
    for (std::int64_t b = 0; b < B; ++b) {
      const auto row = static_cast<std::size_t>(b);
      float* to = lane_enc_.data() + b * lane.frames * J;
      if (tail[row] > 0) std::copy(lanes[row]->tail.begin(), lanes[row]->tail.end(), to);
      // The chunk's frames are checked as they arrive: a bad value is reported in this call's coordinates.
      copy_chunk_frames(p, b, to + tail[row] * J);
    }
    lane.enc = EncodedView{lane_enc_.data(), DType::f32, lane.frames * J, J, 1};

    const BeamHypsRef h = begin(lane);
    states_.start(B, K, boost_roots);
    for (std::int64_t b = 0; b < B; ++b) {
      const auto row = static_cast<std::size_t>(b);
      if (plan.fresh[row]) {
        beam_clear(h, b);
        continue;
      }
      beam_channel_load(*lanes[row], h, b, plan.offset[row] - tail[row], states_.fused_slots());
      for (std::int32_t k = 0; k < K; ++k) states_.load(beam_slot(h, b, k), *lanes[row], k);
    }
    const BeamHypsRef done = search(lane, &rows);  // throws for a bad value before any channel changes
    for (std::int64_t b = 0; b < B; ++b) {
      const auto row = static_cast<std::size_t>(b);
      BeamChannel& channel = *lanes[row];
      const std::int64_t offset = plan.offset[row] - tail[row];  // the utterance's frame of the lane's frame 0
      // The frames a live hypothesis may still read: from the earliest one's frame to the lane's end.
      std::int32_t keep_from = lane.lengths[row];
      for (std::int32_t k = 0; k < K && !rows[row].last; ++k) {
        const std::int64_t s = beam_slot(done, b, k);
        if (done.scores[s] != kNegInf) keep_from = std::min(keep_from, done.next_time[s]);
      }
      if (plan.fresh[row]) beam_channel_start(channel, K, boost_roots[row]);
      beam_channel_save(channel, done, b, offset, states_.fused_slots());
      channel.predictor.resize(static_cast<std::size_t>(K * states_.predictor_width()));
      for (std::int32_t k = 0; k < K; ++k) states_.save(beam_slot(done, b, k), channel, k);
      const float* frames = lane_enc_.data() + b * lane.frames * J;
      channel.tail.assign(frames + std::int64_t{keep_from} * J, frames + std::int64_t{lane.lengths[row]} * J);
    }
  }

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

    for (;;) {
      h = hyps_.make_room_for_step(B, worst);
      // The live hypotheses still inside their utterance, and the utterances that still step.
      rows_.clear();
      row_slots_.clear();
      for (std::int64_t b = 0; b < B; ++b) {
        const std::int32_t length = p.lengths[static_cast<std::size_t>(b)];
        running_[b] = 0;
        if (rows != nullptr && !(*rows)[static_cast<std::size_t>(b)].last && waits_for_frames(h, b, length)) continue;
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

  // Whether some live hypothesis of utterance b stands on or past frame `length`.
  static bool waits_for_frames(const BeamHypsRef& h, std::int64_t b, std::int32_t length) {
    for (std::int32_t k = 0; k < h.beam; ++k) {
      const std::int64_t s = beam_slot(h, b, k);
      if (h.scores[s] != kNegInf && h.next_time[s] >= length) return true;
    }
    return false;
  }

  // Row b's chunk frames into `to` ([lengths[b], J] float32), checked for NaN and infinities with check_values.
  void copy_chunk_frames(const TransducerInput& p, std::int64_t b, float* to) const {
    const std::int64_t J = model_.joint_hidden();
    const std::size_t element = dtype_size(p.enc.dtype);
    const auto* data = static_cast<const std::byte*>(p.enc.data);
    for (std::int32_t t = 0; t < p.lengths[static_cast<std::size_t>(b)]; ++t) {
      for (std::int64_t j = 0; j < J; ++j) {
        const std::byte* at = data + (b * p.enc.stride_b + t * p.enc.stride_t + j * p.enc.stride_j) * element;
        float x = 0.0f;
        if (p.enc.dtype == DType::f16) {
          x = to_float(*reinterpret_cast<const half_t*>(at));
        } else if (p.enc.dtype == DType::bf16) {
          x = to_float(*reinterpret_cast<const bfloat16_t*>(at));
        } else {
          x = *reinterpret_cast<const float*>(at);
        }
        if (config_.check_values && !std::isfinite(x)) throw bad_enc_value_error(b, t, j, x != x);
        to[t * J + j] = x;
      }
    }
  }

  void reserve(std::int64_t batch) {
    const std::int64_t slots = std::max<std::int64_t>(batch, 1) * config_.beam;
    states_.reserve(slots);
    if (static_cast<std::size_t>(slots) <= proposals_.size()) return;
    running_ = HostBuffer<std::int32_t>(static_cast<std::size_t>(std::max<std::int64_t>(batch, 1)));
    proposals_.resize(static_cast<std::size_t>(slots));
    take_from_.resize(static_cast<std::size_t>(slots));
    take_label_.resize(static_cast<std::size_t>(slots));
  }

  TransducerModel model_;
  TransducerBeamConfig config_;
  BeamFusionRule rule_;
  JointCpu joint_;
  BeamSlotStates states_;
  BatchedBeamHyps<MemoryKind::host> hyps_;
  HostBuffer<std::int32_t> running_;
  std::vector<AlsdProposals> proposals_;
  std::vector<std::int64_t> take_from_;  // per slot: where its next state comes from (alsd_select)
  std::vector<std::int32_t> take_label_;
  std::vector<JointRow> rows_;
  std::vector<std::int64_t> row_slots_;
  std::vector<const float*> row_decs_;
  std::vector<float> logits_;
  std::vector<float> lane_enc_;  // streaming: each row's tail and chunk, [B, frames, J]
};

}  // namespace

std::unique_ptr<TransducerBeamBackend> make_alsd_cpu(const TransducerModel& model, const TransducerBeamConfig& config,
                                                     BatchLimits limits) {
  return std::make_unique<AlsdCpu>(model, config, limits);
}

}  // namespace asrdec::detail

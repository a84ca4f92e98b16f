// The CPU executor of greedy transducer decoding: the algorithms of greedy_decoder.hpp as loops over the batch,
// driving the shared step functions (include/asrdec/detail/transducer_step.hpp). Joint evaluations are made
// only for the utterances that need them; the predictor steps only on emitting utterances. The rows of a call are cut
// into slices decoded on a thread pool (TransducerGreedyConfig::threads), each slice by one thread's GreedySlice; an
// utterance's computation never looks at another row, so results do not depend on the number of threads.

#include <algorithm>
#include <utility>

#include "asrdec/core/error.hpp"
#include "core/thread_pool.hpp"
#include "lm/fusion_step.hpp"
#include "lm/ngram_lm_impl.hpp"
#include "transducer/greedy/greedy_backend.hpp"

namespace asrdec::detail {
namespace {

// The state an utterance carries from chunk to chunk, as rows: the lanes' (the rows of the call being decoded) and
// the channels' (every open utterance, when streaming) have the same layout.
struct CarriedRows {
  HostBuffer<float> predictor_state;  // [rows, S]
  HostBuffer<float> dec;              // [rows, J] predictor output
  HostBuffer<std::int32_t> time_jump, last_label, lm_state, boost_state;
  HostBuffer<float> am_total, lm_total, boost_total;  // the path's scores so far

  void reserve(std::size_t rows, std::size_t S, std::size_t J) {
    predictor_state.reserve_discard(rows * S);
    dec.reserve_discard(rows * J);
    for (auto* buffer : {&time_jump, &last_label, &lm_state, &boost_state}) buffer->reserve_discard(rows);
    for (auto* buffer : {&am_total, &lm_total, &boost_total}) buffer->reserve_discard(rows);
  }

  // Pointers to the rows from `first` on: a slice's lanes.
  struct View {
    float* predictor_state;
    float* dec;
    std::int32_t *time_jump, *last_label, *lm_state, *boost_state;
    float *am_total, *lm_total, *boost_total;
  };
  View rows_from(std::size_t first, std::size_t S, std::size_t J) {
    return View{predictor_state.data() + first * S,
                dec.data() + first * J,
                time_jump.data() + first,
                last_label.data() + first,
                lm_state.data() + first,
                boost_state.data() + first,
                am_total.data() + first,
                lm_total.data() + first,
                boost_total.data() + first};
  }

  // Row `to` of this from row `from` of `source`.
  void copy_row(std::size_t to, const CarriedRows& source, std::size_t from, std::size_t S, std::size_t J) {
    std::copy_n(source.predictor_state.data() + from * S, S, predictor_state.data() + to * S);
    std::copy_n(source.dec.data() + from * J, J, dec.data() + to * J);
    time_jump[to] = source.time_jump[from];
    last_label[to] = source.last_label[from];
    lm_state[to] = source.lm_state[from];
    boost_state[to] = source.boost_state[from];
    am_total[to] = source.am_total[from];
    lm_total[to] = source.lm_total[from];
    boost_total[to] = source.boost_total[from];
  }
};

// The hypotheses of rows [first, ...) of `h`, as a view of their own (a slice's).
HypsRef hyps_rows_from(const HypsRef& h, std::int64_t first) {
  const std::int64_t cells = first * h.capacity;
  return HypsRef{h.tokens + cells,
                 h.timestamps + cells,
                 h.durations + cells,
                 h.scores + cells,
                 h.confidences + cells,
                 h.lengths + first,
                 h.total_scores + first,
                 h.last_timestamp + first,
                 h.same_timestamp_count + first,
                 h.overflow + first,
                 h.capacity};
}

// Decodes a slice of a call's rows on one thread: their carried state (lanes) and hypotheses are views into the
// call's, from the slice's first row; everything else is this slice's own scratch.
class GreedySlice {
 public:
  GreedySlice(const TransducerModel& model, const TransducerGreedyConfig& config, const GreedyRules& rules,
              std::int64_t rows)
      : model_(model),
        config_(config),
        rules_(rules),
        session_(model.predictor().start_session(rows)),
        session_rows_(rows),
        joint_(model.joint().impl(), model.vocab_size() + 1, model_.durations(), model.blank_id()) {
    joint_.set_confidence(config.confidence);
  }

  PredictorSession& session() { return *session_; }
  /** The loop counts of the slice's last decode (TransducerGreedyDecoder::loop_counts). */
  const GreedyLoopCounts& counts() const { return counts_; }

  void decode(const TransducerInput& p, const CarriedRows::View& lanes, const HypsRef& h) {
    reserve(p.batch);
    counts_ = GreedyLoopCounts{};
    lanes_ = lanes;
    h_ = h;
    const GreedyStateRef s = state_ref(p);
    for (std::int64_t b = 0; b < p.batch; ++b) {
      hyps_clear(h, b);
      h.total_scores[b] = lanes_.am_total[b];  // the path goes on from its score so far
    }
    fusion_ = FusionRef{};
    fusion_.vocab = static_cast<std::int32_t>(model_.vocab_size());
    fusion_.blank = model_.blank_id();
    if (config_.lm != nullptr) {
      fusion_.lm =
          FusionSource{lm_scores_.data(), lm_next_.data(), lanes_.lm_state, lanes_.lm_total, config_.lm_weight};
    }
    if (config_.boost != nullptr) {
      fusion_.boost = FusionSource{boost_scores_.data(), boost_next_.data(), lanes_.boost_state, lanes_.boost_total,
                                   config_.boost_weight};
    }
    if (fusion_.active()) {
      for (std::int64_t b = 0; b < p.batch; ++b) query_fused(b);
    }
    if (config_.algorithm == TransducerGreedyAlgorithm::frame_looping) {
      frame_looping(p, s, h);
    } else {
      label_looping(p, s, h);
    }
    for (std::int64_t b = 0; b < p.batch; ++b) {
      // RNN-T never carries time: a chunk ends on a frame boundary. TDT carries the overshoot of the last jump.
      lanes_.time_jump[b] = rules_.tdt ? std::max(0, s.time[b] - p.lengths[static_cast<std::size_t>(b)]) : 0;
      if (h.lengths[b] > 0) {
        lanes_.last_label[b] = h.tokens[b * h.capacity + h.lengths[b] - 1];
      }
      lanes_.am_total[b] = h.total_scores[b];
      ASRDEC_EXPECTS(!h.overflow[b], Error, "internal error: hypothesis capacity exceeded for utterance ",
                     p.enc.first_row + b);
    }
  }

 private:
  void reserve(std::int64_t batch) {
    if (batch > session_rows_) {  // a predictor session steps at most the rows it was started for
      session_ = model_.predictor().start_session(batch);
      session_rows_ = batch;
    }
    const auto rows = static_cast<std::size_t>(std::max<std::int64_t>(batch, 1));
    for (auto* buffer : {&time_, &active_, &active_at_start_, &advance_, &label_, &label_time_, &label_duration_,
                         &emit_, &symbols_on_frame_}) {
      buffer->reserve_discard(rows);
    }
    label_score_.reserve_discard(rows);
    label_confidence_.reserve_discard(rows);
    const auto V = static_cast<std::size_t>(model_.vocab_size());
    if (config_.lm != nullptr) {
      lm_scores_.reserve_discard(rows * V);
      lm_next_.reserve_discard(rows * V);
    }
    if (config_.boost != nullptr) {
      boost_scores_.reserve_discard(rows * V);
      boost_next_.reserve_discard(rows * V);
    }
    choices_.resize(rows);
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

  // One pass of a loop over the batch (`outer` or `inner` of counts_): it evaluates the rows with mask[b] != 0.
  void count_pass(std::int64_t& passes, const HostBuffer<std::int32_t>& mask, std::int64_t batch) {
    ++passes;
    counts_.choices += std::count_if(mask.data(), mask.data() + batch, [](std::int32_t f) { return f != 0; });
  }

  // Joint choices for every utterance with mask[b] != 0 at its current frame, into choices_[b]. WIND evaluates
  // window position w only for the utterances that found nothing but blanks before it: the same choice as
  // evaluating the whole window.
  void choose(const TransducerInput& p, const HostBuffer<std::int32_t>& mask) {
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
      }
      results_.resize(rows_.size());
      joint_.evaluate_rows(p.enc, rows_.data(), static_cast<std::int64_t>(rows_.size()), lanes_.dec,
                           model_.joint_hidden(), config_.check_values, fusion_, results_.data());
      std::size_t kept = 0;
      for (std::size_t r = 0; r < rows_.size(); ++r) {
        const std::int64_t b = pending_[r];
        const float row_logprob = in_utterance_[r] ? results_[r].step_logprob : 0.0f;
        choices_[b] = results_[r];
        choices_[b].offset = w;
        choices_[b].step_logprob = row_logprob;
        if (results_[r].label == rules_.blank && w + 1 < window) {
          // WIND: a blank window position before the choice is part of its path. Each frame's log-probability is
          // added on its own, in frame order, so the sum does not depend on where windows or chunks begin.
          if (in_utterance_[r]) h_.total_scores[b] += row_logprob;
          pending_[kept++] = b;
        }
      }
      pending_.resize(kept);
    }
  }

  void label_looping(const TransducerInput& p, const GreedyStateRef& s, const HypsRef& h) {
    const std::int64_t B = p.batch;
    for (std::int64_t b = 0; b < B; ++b) {
      label_looping_begin(s, b, lanes_.time_jump[b]);
    }
    while (any(active_, B)) {
      count_pass(counts_.outer, active_, B);
      choose(p, active_);
      for (std::int64_t b = 0; b < B; ++b) {
        label_looping_first(s, rules_, h, b, active_[b] ? choices_[b] : JointChoice{});
      }
      cut_stragglers(s, B);
      while (any(advance_, B)) {
        count_pass(counts_.inner, advance_, B);
        choose(p, advance_);
        for (std::int64_t b = 0; b < B; ++b) {
          if (advance_[b]) {
            label_looping_inner(s, rules_, h, b, choices_[b]);
          }
        }
        cut_stragglers(s, B);
      }
      for (std::int64_t b = 0; b < B; ++b) {
        label_looping_store(s, rules_, h, b);
      }
      fuse_emitted(B);
      session_->step(label_.data(), emit_.data(), lanes_.predictor_state, lanes_.dec, B, nullptr);
      for (std::int64_t b = 0; b < B; ++b) {
        label_looping_finish(s, rules_, h, b);
      }
    }
  }

  // The CUDA executor's schedule (label_looping_cut_stragglers), so that both count the same passes.
  void cut_stragglers(const GreedyStateRef& s, std::int64_t B) {
    std::int64_t advancing = 0, active_at_start = 0;
    for (std::int64_t b = 0; b < B; ++b) {
      advancing += advance_[b] ? 1 : 0;
      active_at_start += s.active_at_start[b] ? 1 : 0;
    }
    if (!label_looping_cut_stragglers(rules_, advancing, active_at_start)) return;
    for (std::int64_t b = 0; b < B; ++b) {
      if (advance_[b]) label_looping_pause(s, b);
    }
  }

  void frame_looping(const TransducerInput& p, const GreedyStateRef& s, const HypsRef& h) {
    const std::int64_t B = p.batch;
    for (std::int64_t b = 0; b < B; ++b) {
      frame_looping_begin(s, b, lanes_.time_jump[b]);
    }
    for (std::int32_t frame = 0; any(active_, B); ++frame) {
      ++counts_.outer;
      for (std::int64_t b = 0; b < B; ++b) {
        frame_looping_enter(s, b, frame);
      }
      while (any(advance_, B)) {
        count_pass(counts_.inner, advance_, B);
        choose(p, advance_);  // frame looping has no window: the joint at time_[b]
        for (std::int64_t b = 0; b < B; ++b) {
          frame_looping_step(s, rules_, h, b, advance_[b] ? choices_[b] : JointChoice{});
        }
        fuse_emitted(B);
        session_->step(label_.data(), emit_.data(), lanes_.predictor_state, lanes_.dec, B, nullptr);
      }
    }
  }

  TransducerModel model_;
  TransducerGreedyConfig config_;
  GreedyRules rules_;
  std::unique_ptr<PredictorSession> session_;
  std::int64_t session_rows_;
  JointCpu joint_;
  CarriedRows::View lanes_{};  // the slice's carried state (decode's views)
  HypsRef h_{};                // the slice's hypotheses
  HostBuffer<std::int32_t> time_, active_, active_at_start_, advance_, label_, label_time_, label_duration_, emit_,
      symbols_on_frame_;
  HostBuffer<float> label_score_, label_confidence_;
  // Fusion: [rows, V] query of each state, for the LM and the boosting tree.
  HostBuffer<float> lm_scores_, boost_scores_;
  HostBuffer<std::int32_t> lm_next_, boost_next_;  // [rows, V]
  FusionRef fusion_{};                             // set for the chunk being decoded; inactive without an LM or a tree
  GreedyLoopCounts counts_;                        // of the last decode
  std::vector<JointChoice> choices_;               // [rows] this phase's joint choice per utterance
  std::vector<char> in_utterance_;                 // per joint row: its window position is a frame of the utterance
  std::vector<std::int64_t> pending_;
  std::vector<JointRow> rows_;
  std::vector<JointChoice> results_;
};

class GreedyCpu final : public GreedyBackend {
 public:
  GreedyCpu(const TransducerModel& model, const TransducerGreedyConfig& config, BatchLimits limits)
      : model_(model), config_(config), rules_(rules_of(model, config)), limits_(limits) {
    const int threads = resolve_threads(config.threads);
    pool_ = std::make_unique<ThreadPool>(threads);
    for (int t = 0; t < threads; ++t) {
      slices_.push_back(std::make_unique<GreedySlice>(model_, config_, rules_, limits_.max_batch));
    }
    // Every utterance starts from the predictor state after the start symbol (blank), the same for all of them.
    start_.reserve(1, state_size(), hidden());
    slices_[0]->session().initial_state(start_.predictor_state.data(), 1, nullptr);
    const std::int32_t blank = model_.blank_id(), on = 1;
    slices_[0]->session().step(&blank, &on, start_.predictor_state.data(), start_.dec.data(), 1, nullptr);
    start_.time_jump[0] = 0;
    start_.last_label[0] = blank;
    start_.lm_state[0] = NgramLm::bos_state();
    start_.boost_state[0] = 0;
    start_.am_total[0] = start_.lm_total[0] = start_.boost_total[0] = 0.0f;
  }

  BatchedHypsView decode(const TransducerInput& p, const ChunkPlan* plan, const std::vector<std::int32_t>& boost_roots,
                         StreamHandle) override {
    // The limits grow once the lanes have them, and the channels come whole (all their arrays, or none): a call
    // that cannot allocate throws and leaves both as they were.
    BatchLimits grown = limits_;
    grown.max_batch = std::max(limits_.max_batch, p.batch);
    grown.max_frames = std::max(limits_.max_frames, p.frames);
    lanes_.reserve(static_cast<std::size_t>(grown.max_batch), state_size(), hidden());
    limits_ = grown;
    hyps_.reserve(p.batch, p.frames * config_.max_symbols_per_frame + 1, Device::cpu());
    if (plan != nullptr && channels_.predictor_state.size() == 0) {
      CarriedRows channels;
      channels.reserve(static_cast<std::size_t>(limits_.max_open_utterances), state_size(), hidden());
      channels_ = std::move(channels);
    }
    // The lanes start from the start state or their channels; the channels change only after the decode succeeded
    // (a bad value is found as its frame is read, mid-decode, and throws).
    for (std::int64_t b = 0; b < p.batch; ++b) {
      const auto lane = static_cast<std::size_t>(b);
      if (plan == nullptr || plan->fresh[lane]) {
        lanes_.copy_row(lane, start_, 0, state_size(), hidden());
        lanes_.boost_state[lane] = boost_roots[lane];
      } else {
        lanes_.copy_row(lane, channels_, static_cast<std::size_t>(plan->slot[lane]), state_size(), hidden());
      }
    }
    // Contiguous slices, a few per thread (utterances differ in length), each decoded whole by one thread. When
    // several slices meet bad values, the lowest slice's error is the one thrown.
    const std::int64_t count = pool_->size() == 1 ? 1 : std::min<std::int64_t>(p.batch, 2 * pool_->size());
    const HypsRef h = hyps_.ref();
    counts_ = GreedyLoopCounts{};  // a call that throws leaves zeros, not the previous call's counts
    slice_counts_.assign(static_cast<std::size_t>(count), GreedyLoopCounts{});
    pool_->parallel_for(count, [&](std::int64_t slice, int worker) {
      const std::int64_t first = slice * p.batch / count, end = (slice + 1) * p.batch / count;
      TransducerInput rows;
      rows.enc = p.enc.rows_from(first);
      rows.batch = end - first;
      rows.frames = p.frames;
      rows.lengths.assign(p.lengths.begin() + first, p.lengths.begin() + end);
      GreedySlice& decoder = *slices_[static_cast<std::size_t>(worker)];
      decoder.decode(rows, lanes_.rows_from(static_cast<std::size_t>(first), state_size(), hidden()),
                     hyps_rows_from(h, first));
      slice_counts_[static_cast<std::size_t>(slice)] = decoder.counts();
    });
    // Each slice looped on its own: the call's passes are the longest slice's, its choices all of theirs.
    for (const GreedyLoopCounts& slice : slice_counts_) {
      const GreedyLoopCounts c = with_joint_passes(slice, config_.algorithm);
      counts_.outer = std::max(counts_.outer, c.outer);
      counts_.inner = std::max(counts_.inner, c.inner);
      counts_.joint_passes = std::max(counts_.joint_passes, c.joint_passes);
      counts_.choices += c.choices;
    }
    if (plan != nullptr) {
      for (std::int64_t b = 0; b < p.batch; ++b) {
        const auto lane = static_cast<std::size_t>(b);
        channels_.copy_row(static_cast<std::size_t>(plan->slot[lane]), lanes_, lane, state_size(), hidden());
      }
    }
    return hyps_.view(Device::cpu(), p.batch);
  }

  std::vector<Hypothesis> collect(const BatchedHypsView& view, const std::vector<std::int64_t>& offsets, bool is_final,
                                  StreamHandle) override {
    std::vector<Hypothesis> out = to_hypotheses(view, offsets.data(), rules_.tdt, is_final);
    if (config_.lm != nullptr || config_.boost != nullptr) {
      for (std::size_t b = 0; b < out.size(); ++b) {
        out[b].lm_score = config_.lm != nullptr ? lanes_.lm_total[b] : 0.0f;
        out[b].boost_score = config_.boost != nullptr ? lanes_.boost_total[b] : 0.0f;
        out[b].score = out[b].am_score + out[b].lm_score + out[b].boost_score;
        out[b].ranking_score = out[b].score;
      }
    }
    return out;
  }

  void synchronize_and_check(StreamHandle) override {}
  GraphMode graph_mode() const noexcept override { return GraphMode::eager; }
  GreedyLoopCounts loop_counts() const noexcept override { return counts_; }

 private:
  std::size_t state_size() const { return static_cast<std::size_t>(model_.predictor().state_size()); }
  std::size_t hidden() const { return static_cast<std::size_t>(model_.joint_hidden()); }

  TransducerModel model_;
  TransducerGreedyConfig config_;
  GreedyRules rules_;
  BatchLimits limits_;
  std::unique_ptr<ThreadPool> pool_;
  std::vector<std::unique_ptr<GreedySlice>> slices_;  // one per thread of pool_
  BatchedHyps<MemoryKind::host> hyps_;
  CarriedRows start_;                           // one row: where every utterance starts
  CarriedRows lanes_;                           // [max_batch] the rows being decoded
  CarriedRows channels_;                        // [max_open_utterances] the open utterances, once streaming started
  std::vector<GreedyLoopCounts> slice_counts_;  // of the last decode, per slice
  GreedyLoopCounts counts_;                     // of the last decode
};

}  // namespace

std::unique_ptr<GreedyBackend> make_greedy_cpu(const TransducerModel& model, const TransducerGreedyConfig& config,
                                               BatchLimits limits) {
  return std::make_unique<GreedyCpu>(model, config, limits);
}

}  // namespace asrdec::detail

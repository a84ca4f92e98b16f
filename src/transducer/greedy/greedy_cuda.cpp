// The CUDA executor of greedy transducer decoding. The decode of one chunk is a StreamProgram (see
// docs/transducer-greedy.md for its shape) run by a GraphExecutor: with conditional graphs the whole chunk is
// one graph launch. The program works on fixed working buffers sized from the limits (the lanes); a call gathers
// each row's carried state into them (from the start state, or from the row's channel when streaming), replays the
// graph, and, streaming, scatters the new state back to the channels (core/cuda/lane_copies.hpp).

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "asrdec/core/error.hpp"
#include "asrdec/core/log.hpp"
#include "core/bad_value.hpp"
#include "core/cuda/check.hpp"
#include "core/cuda/executor_lifecycle.hpp"
#include "core/cuda/gemm.hpp"
#include "core/cuda/lane_copies.hpp"
#include "core/cuda/stream_fork.hpp"
#include "core/grid_barrier_status.hpp"
#include "core/phase_times.hpp"
#include "lm/ngram_kernels.hpp"
#include "transducer/greedy/greedy_backend.hpp"
#include "transducer/greedy/greedy_kernels.hpp"
#include "transducer/greedy/persistent_greedy_shape.hpp"
#include "transducer/model/bad_enc_value.hpp"
#include "transducer/model/device_durations.hpp"
#include "transducer/model/joint_gemv_shape.hpp"

namespace asrdec::detail {
namespace {

class GreedyCuda final : public GreedyBackend {
 public:
  GreedyCuda(const TransducerModel& model, const TransducerGreedyConfig& config, BatchLimits limits)
      : model_(model),
        config_(config),
        rules_(rules_of(model, config)),
        limits_(limits),
        device_(model.device()),
        lifecycle_(device_, config.graph_mode, config.max_device_bytes),
        fork_(device_),
        queries_beside_(fused_queries_beside_enabled()),
        args_(1, device_),
        flags_(4, device_),
        bad_value_(1, device_),
        loop_counts_(3, device_),
        persistent_words_(3, device_) {
    DeviceGuard guard(device_);
    joint_gemv_shared_bytes_ = preload_greedy_kernels();
    if (persistent_greedy_enabled()) persistent_shared_bytes_ = preload_persistent_greedy_kernels();
    preload_lane_copy_kernels();
    window_ = config_.algorithm == TransducerGreedyAlgorithm::wind ? config_.window : 1;
    int multiprocessors = 0;
    ASRDEC_CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device_.index()));
    multiprocessors_ = std::max(multiprocessors, 1);
    durations_ = device_durations(model_);
    lifecycle_.grow(limits_, limits_, [this] { allocate(); });
  }

  BatchedHypsView decode(const TransducerInput& p, const ChunkPlan* plan, const std::vector<std::int32_t>& boost_roots,
                         StreamHandle user_stream) override {
    DeviceGuard guard(device_);
    const ExecutorLifecycle::Call call(lifecycle_, user_stream);
    const cudaStream_t stream = call.stream();
    for (std::int64_t extent : {p.batch, p.frames, model_.joint_hidden()}) {
      ASRDEC_CHECK_ARG(extent < kBadValueFieldLimit, "enc_proj: dimensions above ", kBadValueFieldLimit - 1,
                       " are not supported on CUDA, got ", p.enc_proj.shape_string());
    }
    if (plan != nullptr && !streaming_) {
      // The channels are allocated (and the graphs captured again) by the first streaming call.
      // When the allocation with channels fails, grow() allocates the old size again: without them.
      bool with_channels = true;
      lifecycle_.grow(limits_, limits_, [this, &with_channels] {
        streaming_ = std::exchange(with_channels, false);
        allocate();
      });
    }
    grow(p.batch, p.frames);
    if (p.enc_proj.numel() > 0) {
      check_device_readable(p.enc_proj.data(), device_, "enc_proj");
    }
    const auto rows = static_cast<std::size_t>(p.batch);
    if (rows > 0) {
      copy_bytes_async(lengths_.data(), device_, p.lengths.data(), Device::cpu(), rows * 4, stream);
      // Each lane's channel, start flag and boosting root, as three [max_batch] rows.
      const auto lanes = static_cast<std::size_t>(limits_.max_batch);
      lane_host_.assign(3 * lanes, 0);
      for (std::size_t b = 0; b < rows; ++b) {
        lane_host_[b] = plan != nullptr ? plan->slot[b] : 0;
        lane_host_[lanes + b] = plan == nullptr || plan->fresh[b] ? 1 : 0;
        lane_host_[2 * lanes + b] = boost_roots[b];
      }
      copy_bytes_async(lane_args_.data(), device_, lane_host_.data(), Device::cpu(), lane_host_.size() * 4, stream);
      launch_gather_lanes(lane_copies(false), static_cast<std::int32_t>(rows), plan == nullptr, stream);
    }
    JointEncArgs args{};
    args.enc = p.enc_proj.data();
    args.stride_b = p.enc.stride_b;
    args.stride_t = p.enc.stride_t;
    args.stride_j = p.enc.stride_j;
    args.batch = static_cast<std::int32_t>(p.batch);
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(args_.data(), &args, sizeof args, cudaMemcpyHostToDevice, stream));
    fill_bytes_async(bad_value_.data(), device_, 0xff, sizeof(unsigned long long), stream);
    GraphExecutor& program = executor(p.enc_proj.dtype());
    last_call_persistent_ = persistent_executor_[static_cast<std::size_t>(p.enc_proj.dtype())];
    lifecycle_.run(program, stream);
    // Streaming: the lanes' new states go to the channels in collect(), once the call is known to have succeeded.
    pending_scatter_ = plan != nullptr ? p.batch : 0;
    last_batch_ = p.batch;
    return hyps_.view(device_, p.batch);
  }

  std::vector<Hypothesis> collect(const BatchedHypsView& view, const std::vector<std::int64_t>& offsets, bool is_final,
                                  StreamHandle user_stream) override {
    DeviceGuard guard(device_);
    const ExecutorLifecycle::Call call(lifecycle_, user_stream);
    const cudaStream_t stream = call.stream();
    const std::int64_t scatter = std::exchange(pending_scatter_, 0);
    synchronize_and_check(stream);  // throws for a bad value, a hypothesis overflow or a loop at its cap
    if (scatter > 0) {
      // Only now do the channels take the call's new states, so a call that throws changes no utterance. Enqueued
      // before the results are copied back, on the same stream, ahead of any later call's gather.
      launch_scatter_lanes(lane_copies(true), static_cast<std::int32_t>(scatter), stream);
    }
    const auto rows = static_cast<std::size_t>(view.batch);
    if (rows == 0) {
      return {};
    }
    BatchedHypsView host = host_hyps_.view(Device::cpu(), view.batch);
    std::int32_t* lengths = const_cast<std::int32_t*>(host.lengths);
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(lengths, view.lengths, rows * 4, cudaMemcpyDeviceToHost, stream));
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(const_cast<float*>(host.total_scores), view.total_scores, rows * 4,
                                      cudaMemcpyDeviceToHost, stream));
    // Only the fused models' totals are written by the decode; an absent model scores 0.
    const bool fused = config_.lm != nullptr || config_.boost != nullptr;
    std::vector<float> lm_totals(fused ? rows : 0, 0.0f), boost_totals(fused ? rows : 0, 0.0f);
    if (config_.lm != nullptr) {
      ASRDEC_CUDA_CHECK(cudaMemcpyAsync(lm_totals.data(), lm_total_.data(), rows * 4, cudaMemcpyDeviceToHost, stream));
    }
    if (config_.boost != nullptr) {
      ASRDEC_CUDA_CHECK(
          cudaMemcpyAsync(boost_totals.data(), boost_total_.data(), rows * 4, cudaMemcpyDeviceToHost, stream));
    }
    ASRDEC_CUDA_CHECK(cudaStreamSynchronize(stream));
    // Copy only the filled part of each row.
    const std::size_t width = static_cast<std::size_t>(*std::max_element(lengths, lengths + rows));
    if (width > 0) {
      const std::size_t pitch = static_cast<std::size_t>(view.capacity) * 4;
      const auto copy = [&](const void* source, const void* target) {
        ASRDEC_CUDA_CHECK(cudaMemcpy2DAsync(const_cast<void*>(target), pitch, source, pitch, width * 4, rows,
                                            cudaMemcpyDeviceToHost, stream));
      };
      copy(view.tokens, host.tokens);
      copy(view.timestamps, host.timestamps);
      copy(view.durations, host.durations);
      copy(view.scores, host.scores);
      copy(view.confidences, host.confidences);
      ASRDEC_CUDA_CHECK(cudaStreamSynchronize(stream));
    }
    std::vector<Hypothesis> out = to_hypotheses(host, offsets.data(), rules_.tdt, is_final);
    for (std::size_t b = 0; b < lm_totals.size(); ++b) {
      out[b].lm_score = lm_totals[b];
      out[b].boost_score = boost_totals[b];
      out[b].score = out[b].am_score + out[b].lm_score + out[b].boost_score;
      out[b].ranking_score = out[b].score;
    }
    return out;
  }

  void synchronize_and_check(StreamHandle user_stream) override {
    DeviceGuard guard(device_);
    const ExecutorLifecycle::Call call(lifecycle_, user_stream);
    const cudaStream_t stream = call.stream();
    unsigned long long bad = 0;
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(&bad, bad_value_.data(), sizeof bad, cudaMemcpyDeviceToHost, stream));
    unsigned long long counts[3] = {0, 0, 0};
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(counts, loop_counts_.data(), sizeof counts, cudaMemcpyDeviceToHost, stream));
    std::int32_t persistent_status[3] = {0, 0, 0};  // barrier arrivals, generation, status (PersistentGreedy)
    if (last_call_persistent_) {  // only a call that launched the kernel: an earlier call's status stays put
      ASRDEC_CUDA_CHECK(cudaMemcpyAsync(persistent_status, persistent_words_.data(), sizeof persistent_status,
                                        cudaMemcpyDeviceToHost, stream));
    }
    std::vector<std::uint64_t> phase_ns(kPersistentGreedyPhases, 0);
    const bool timed = last_call_persistent_ && persistent_phase_ns_.size() > 0;
    if (timed) {
      ASRDEC_CUDA_CHECK(cudaMemcpyAsync(phase_ns.data(), persistent_phase_ns_.data(), persistent_phase_ns_.bytes(),
                                        cudaMemcpyDeviceToHost, stream));
    }
    std::vector<std::int32_t> overflow(static_cast<std::size_t>(std::max<std::int64_t>(last_batch_, 1)));
    if (last_batch_ > 0) {
      ASRDEC_CUDA_CHECK(cudaMemcpyAsync(overflow.data(), hyps_.overflow(), static_cast<std::size_t>(last_batch_) * 4,
                                        cudaMemcpyDeviceToHost, stream));
    }
    ASRDEC_CUDA_CHECK(cudaStreamSynchronize(stream));
    counts_ = GreedyLoopCounts{};
    if (last_batch_ > 0) {
      counts_.outer = static_cast<std::int64_t>(counts[0]);
      counts_.inner = static_cast<std::int64_t>(counts[1]);
      counts_.choices = static_cast<std::int64_t>(counts[2]);
      counts_ = with_joint_passes(counts_, config_.algorithm);
    }
    if (timed) {
      // ASRDEC_PHASE_TIMES (core/phase_times.hpp): a step is an outer iteration, the inner passes' times summed in it.
      static const std::vector<std::string> names = {"first joint pass", "inner joint passes", "predictor layers",
                                                     "projection, queries and finish"};
      log(LogLevel::info, concat(format_phase_times("persistent greedy kernel", names, phase_ns, counts_.outer), " (",
                                 counts_.inner, " inner passes)"));
    }
    lifecycle_.check_loops();
    check_persistent_status(persistent_status[2]);
    if (bad != kNoBadValue) {
      const BadValue at = unpack_bad_value(bad);
      throw bad_enc_value_error(at.b, at.t, at.v, at.is_nan);
    }
    for (std::int64_t b = 0; b < last_batch_; ++b) {
      ASRDEC_EXPECTS(!overflow[static_cast<std::size_t>(b)], Error,
                     "internal error: hypothesis capacity exceeded for utterance ", b);
    }
  }

  GraphMode graph_mode() const noexcept override { return lifecycle_.mode(); }
  std::int64_t device_bytes() const noexcept override { return lifecycle_.device_bytes(); }
  GreedyLoopCounts loop_counts() const noexcept override { return counts_; }

 private:
  std::int64_t state_size() const { return model_.predictor().state_size(); }
  // No loop of a chunk's program runs more often than a row can take steps: a label or a frame advance each.
  std::int64_t loop_cap() const { return limits_.max_frames * (std::int64_t{config_.max_symbols_per_frame} + 1) + 2; }

  // What an utterance carries between chunks, lanes against channels (asrdec/core/streaming.hpp): predictor state and
  // output, TDT overshoot, last label, fusion states, and the path's scores so far. The path's score is gathered
  // into am_start_ (the begin phase starts each hypothesis from it) and scattered from the hypotheses' totals.
  LaneCopies lane_copies(bool scatter) {
    const std::size_t lanes = static_cast<std::size_t>(limits_.max_batch);
    LaneCopies c;
    const auto words = [](std::int64_t n) { return static_cast<std::int32_t>(n); };
    c.add(work_state_.data(), ch_state_.data(), start_state_.data(), words(state_size()));
    c.add(work_dec_.data(), ch_dec_.data(), start_dec_.data(), words(model_.joint_hidden()));
    c.add(time_jump_.data(), ch_time_jump_.data(), constants_.data(), 1);
    c.add(last_label_.data(), ch_last_label_.data(), constants_.data() + 1, 1);
    c.add(lm_state_.data(), ch_lm_state_.data(), constants_.data() + 2, 1);
    c.add(boost_state_.data(), ch_boost_state_.data(), lane_args_.data() + 2 * lanes, 1, true);
    c.add(scatter ? static_cast<void*>(hyps_.ref().total_scores) : am_start_.data(), ch_am_total_.data(),
          constants_.data(), 1);
    c.add(lm_total_.data(), ch_lm_total_.data(), constants_.data(), 1);
    c.add(boost_total_.data(), ch_boost_total_.data(), constants_.data(), 1);
    c.slot = lane_args_.data();
    c.fresh = lane_args_.data() + lanes;
    c.bad_value = scatter ? bad_value_.data() : nullptr;
    return c;
  }

  // Grows the working buffers (outside any loop) when a call exceeds the limits; graphs are then captured again.
  void grow(std::int64_t batch, std::int64_t frames) {
    if (lifecycle_.usable() && batch <= limits_.max_batch && frames <= limits_.max_frames) {
      return;
    }
    BatchLimits wanted = limits_;
    wanted.max_batch = std::max(limits_.max_batch, batch);
    wanted.max_frames = std::max(limits_.max_frames, frames);
    lifecycle_.grow(limits_, wanted, [this] { allocate(); });
  }

  void allocate() {
    for (auto& slot : executors_) slot.reset();
    const std::int64_t B = limits_.max_batch;
    const std::int64_t J = model_.joint_hidden();
    const std::int64_t O = model_.joint().output_size();
    const auto rows = static_cast<std::size_t>(B);
    const auto joint_rows = static_cast<std::size_t>(B * window_);
    session_ = model_.predictor().start_session(B);
    fused_joint_ = fused_kernels_enabled() && joint_gemv_fits(B * window_, J, joint_gemv_shared_bytes_);
    // cuBLAS (a handle and its 32 MiB workspace) and the hidden buffer only for the path that uses them.
    gemm_ = fused_joint_ ? nullptr : std::make_unique<Gemm>(device_);
    lengths_ = DeviceBuffer<std::int32_t>(rows, device_);
    time_jump_ = DeviceBuffer<std::int32_t>(rows, device_);
    last_label_ = DeviceBuffer<std::int32_t>(rows, device_);
    emit_mask_ = DeviceBuffer<std::int32_t>(rows, device_);
    blanks_ = DeviceBuffer<std::int32_t>(rows, device_);
    ones_ = DeviceBuffer<std::int32_t>(rows, device_);
    work_state_ = DeviceBuffer<float>(rows * static_cast<std::size_t>(state_size()), device_);
    work_dec_ = DeviceBuffer<float>(rows * static_cast<std::size_t>(J), device_);
    for (auto* buffer : {&time_, &active_, &active_at_start_, &advance_, &label_, &label_time_, &label_duration_,
                         &symbols_on_frame_}) {
      *buffer = DeviceBuffer<std::int32_t>(rows, device_);
    }
    label_score_ = DeviceBuffer<float>(rows, device_);
    label_confidence_ = DeviceBuffer<float>(rows, device_);
    hidden_ = DeviceBuffer<std::byte>(
        fused_joint_ ? 1 : joint_rows * static_cast<std::size_t>(J) * dtype_size(model_.joint().weight_dtype()),
        device_);
    logits_ = DeviceBuffer<float>(joint_rows * static_cast<std::size_t>(O), device_);
    choice_label_ = DeviceBuffer<std::int32_t>(joint_rows, device_);
    choice_duration_ = DeviceBuffer<std::int32_t>(joint_rows, device_);
    choice_token_logprob_ = DeviceBuffer<float>(joint_rows, device_);
    choice_step_logprob_ = DeviceBuffer<float>(joint_rows, device_);
    choice_confidence_ = DeviceBuffer<float>(joint_rows, device_);
    row_bad_ = DeviceBuffer<unsigned long long>(joint_rows, device_);
    plan_persistent(B, J, O);
    std::size_t sums_bytes = fused_joint_ ? joint_step_sums_bytes(B * window_, O) : 1;
    if (persistent_) {
      sums_bytes = std::max(sums_bytes, persistent_greedy_sums_bytes(persistent_max_blocks_, B * window_));
    }
    joint_step_sums_ = DeviceBuffer<std::byte>(sums_bytes, device_);
    const auto lm_cells = config_.lm != nullptr ? rows * static_cast<std::size_t>(model_.vocab_size()) : 1;
    const auto boost_cells = config_.boost != nullptr ? rows * static_cast<std::size_t>(model_.vocab_size()) : 1;
    lm_state_ = DeviceBuffer<std::int32_t>(rows, device_);
    lm_total_ = DeviceBuffer<float>(rows, device_);
    lm_scores_ = DeviceBuffer<float>(lm_cells, device_);
    lm_next_ = DeviceBuffer<std::int32_t>(lm_cells, device_);
    boost_state_ = DeviceBuffer<std::int32_t>(rows, device_);
    boost_total_ = DeviceBuffer<float>(rows, device_);
    boost_scores_ = DeviceBuffer<float>(boost_cells, device_);
    boost_next_ = DeviceBuffer<std::int32_t>(boost_cells, device_);
    am_start_ = DeviceBuffer<float>(rows, device_);
    lane_args_ = DeviceBuffer<std::int32_t>(3 * rows, device_);
    start_state_ = DeviceBuffer<float>(static_cast<std::size_t>(state_size()), device_);
    start_dec_ = DeviceBuffer<float>(static_cast<std::size_t>(J), device_);
    constants_ = DeviceBuffer<std::int32_t>(3, device_);
    if (streaming_) {
      const auto channels = static_cast<std::size_t>(limits_.max_open_utterances);
      reallocate_channels(ch_state_, channels * static_cast<std::size_t>(state_size()), device_);
      reallocate_channels(ch_dec_, channels * static_cast<std::size_t>(J), device_);
      for (auto* buffer : {&ch_time_jump_, &ch_last_label_, &ch_lm_state_, &ch_boost_state_}) {
        reallocate_channels(*buffer, channels, device_);
      }
      for (auto* buffer : {&ch_am_total_, &ch_lm_total_, &ch_boost_total_})
        reallocate_channels(*buffer, channels, device_);
    }
    const std::int64_t capacity = limits_.max_frames * config_.max_symbols_per_frame + 1;
    hyps_ = BatchedHyps<MemoryKind::device>();
    hyps_.reserve(B, capacity, device_);
    host_hyps_ = BatchedHyps<MemoryKind::pinned>();
    host_hyps_.reserve(B, capacity, Device::cpu());
    // Masks must read as "off" for rows no call has written yet (the predictor step covers all rows).
    Stream stream(device_);
    fill_bytes_async(emit_mask_.data(), device_, 0, rows * 4, stream.handle());
    fill_bytes_async(work_state_.data(), device_, 0, work_state_.bytes(), stream.handle());
    fill_bytes_async(work_dec_.data(), device_, 0, work_dec_.bytes(), stream.handle());
    fill_bytes_async(label_.data(), device_, 0, rows * 4, stream.handle());
    fill_bytes_async(flags_.data(), device_, 0, flags_.bytes(), stream.handle());  // blocks_done starts at 0
    const std::vector<std::int32_t> blanks(rows, model_.blank_id());
    const std::vector<std::int32_t> ones(rows, 1);
    copy_bytes_async(blanks_.data(), device_, blanks.data(), Device::cpu(), rows * 4, stream.handle());
    copy_bytes_async(ones_.data(), device_, ones.data(), Device::cpu(), rows * 4, stream.handle());
    // LM and boosting states of rows no call has written must be valid states: the first query covers every row.
    const std::vector<std::int32_t> bos(rows, NgramLm::bos_state());
    copy_bytes_async(lm_state_.data(), device_, bos.data(), Device::cpu(), rows * 4, stream.handle());
    const std::vector<std::int32_t> roots(rows, config_.boost != nullptr ? config_.boost->root_state(0) : 0);
    copy_bytes_async(boost_state_.data(), device_, roots.data(), Device::cpu(), rows * 4, stream.handle());
    // Where a starting utterance's scalars come from: 0 (TDT overshoot, scores), the start symbol, <s>.
    const std::int32_t constants[3] = {0, model_.blank_id(), NgramLm::bos_state()};
    copy_bytes_async(constants_.data(), device_, constants, Device::cpu(), sizeof constants, stream.handle());
    // Warm-up outside any capture: the first GEMM of each shape (cuBLAS heuristics, lazy module loading) and a
    // predictor step, all on our own zeroed buffers with every row masked off.
    if (gemm_) {
      fill_bytes_async(hidden_.data(), device_, 0, hidden_.bytes(), stream.handle());
      gemm_->rows_times_weight_t(model_.joint().impl().device_weight.data(), model_.joint().weight_dtype(), O, J,
                                 hidden_.data(), J, B * window_, logits_.data(), O, stream.handle());
    }
    session_->step(label_.data(), emit_mask_.data(), work_state_.data(), work_dec_.data(), B, stream.handle());
    // Every utterance starts from the predictor state after the start symbol (blank), the same for all: stepped once
    // here for every row, row 0 kept.
    session_->initial_state(work_state_.data(), B, stream.handle());
    session_->step(blanks_.data(), ones_.data(), work_state_.data(), work_dec_.data(), B, stream.handle());
    copy_bytes_async(start_state_.data(), device_, work_state_.data(), device_, start_state_.bytes(), stream.handle());
    copy_bytes_async(start_dec_.data(), device_, work_dec_.data(), device_, start_dec_.bytes(), stream.handle());
    stream.synchronize();
  }

  GreedyDeviceState device_state(DType enc_dtype) {
    GreedyDeviceState g{};
    g.args = args_.data();
    g.state = GreedyStateRef{lengths_.data(),          time_.data(),           active_.data(),
                             active_at_start_.data(),  advance_.data(),        label_.data(),
                             label_time_.data(),       label_duration_.data(), label_score_.data(),
                             label_confidence_.data(), emit_mask_.data(),      symbols_on_frame_.data()};
    g.hyps = hyps_.ref();
    g.time_jump = time_jump_.data();
    g.last_label = last_label_.data();
    g.any_active = flags_.data();
    g.any_advance = flags_.data() + 1;
    g.frame = flags_.data() + 2;
    g.blocks_done = flags_.data() + 3;
    g.dec = work_dec_.data();
    g.am_start = am_start_.data();
    g.hidden = hidden_.data();
    g.logits = logits_.data();
    g.bias = model_.joint().impl().device_bias.data();
    g.weight = model_.joint().impl().device_weight.data();
    g.joint_step_sums = joint_step_sums_.data();
    g.choice_label = choice_label_.data();
    g.choice_duration = choice_duration_.data();
    g.choice_token_logprob = choice_token_logprob_.data();
    g.choice_step_logprob = choice_step_logprob_.data();
    g.choice_confidence = choice_confidence_.data();
    g.durations = durations_.data();
    g.num_durations = static_cast<std::int32_t>(model_.durations().size());
    g.bad_value = bad_value_.data();
    g.row_bad = row_bad_.data();
    g.max_batch = limits_.max_batch;
    g.rows = limits_.max_batch * window_;
    g.hidden_size = model_.joint_hidden();
    g.outputs = model_.joint().output_size();
    g.token_columns = model_.vocab_size() + 1;
    g.window = window_;
    g.rules = rules_;
    g.activation = model_.joint().activation();
    g.enc_dtype = enc_dtype;
    g.weight_dtype = model_.joint().weight_dtype();
    g.check_values = config_.check_values ? 1 : 0;
    g.confidence = config_.confidence;
    g.loop_counts = loop_counts_.data();
    g.fusion.vocab = static_cast<std::int32_t>(model_.vocab_size());
    g.fusion.blank = model_.blank_id();
    if (config_.lm != nullptr) {
      g.fusion.lm =
          FusionSource{lm_scores_.data(), lm_next_.data(), lm_state_.data(), lm_total_.data(), config_.lm_weight};
    }
    if (config_.boost != nullptr) {
      g.fusion.boost = FusionSource{boost_scores_.data(), boost_next_.data(), boost_state_.data(), boost_total_.data(),
                                    config_.boost_weight};
    }
    return g;
  }

  // Joint of every row (hidden, GEMM, argmax epilogue), then the phase that uses it, in the epilogue's kernel; for a
  // few rows all of it in one kernel.
  void joint_then(GreedyPhase phase, const GreedyDeviceState& g, cudaStream_t stream) {
    if (fused_joint_) {
      launch_joint_step(phase, g, stream);
      return;
    }
    launch_joint_hidden(g, stream);
    gemm_->rows_times_weight_t(g.weight, g.weight_dtype, g.outputs, g.hidden_size, g.hidden, g.hidden_size, g.rows,
                               g.logits, g.outputs, stream);
    launch_joint_epilogue_then_phase(phase, g, stream);
  }

  void predictor_step(const GreedyDeviceState& g, cudaStream_t stream) {
    session_->step(g.state.label, g.state.emit, work_state_.data(), work_dec_.data(), g.max_batch, stream);
  }

  // Fusion: the full-vocabulary queries of every row's states (mask == nullptr), or of the rows that emitted.
  void query_fused(const GreedyDeviceState& g, const std::int32_t* mask, cudaStream_t stream) {
    launch_fused_queries(config_.lm.get(), config_.boost.get(), g.fusion, g.max_batch, multiprocessors_, stream, mask);
  }

  // After the labels: the predictor steps the rows that emitted, and the fused models query their new states. The
  // two touch different arrays (the predictor's state and output; the models' scores and next states), so the
  // queries run beside the predictor step (fused_queries_beside_enabled) and their latency hides behind it.
  void predictor_step_and_queries(const GreedyDeviceState& g, cudaStream_t stream) {
    if (!g.fusion.active() || !queries_beside_) {
      predictor_step(g, stream);
      query_fused(g, g.state.emit, stream);
      return;
    }
    fork_.run(
        stream, [&](cudaStream_t side) { query_fused(g, g.state.emit, side); },
        [&](cudaStream_t along) { predictor_step(g, along); });
  }

  StreamProgram label_looping_program(const GreedyDeviceState g) {
    StreamProgram inner;
    inner.then([this, g](StreamHandle s) { joint_then(GreedyPhase::label_looping_inner, g, s); });
    StreamProgram outer;
    outer.then([this, g](StreamHandle s) { joint_then(GreedyPhase::label_looping_first, g, s); })
        .loop_while(g.any_advance, inner, loop_cap())
        .then([this, g](StreamHandle s) {
          predictor_step_and_queries(g, s);
          launch_greedy_phase(GreedyPhase::label_looping_finish, g, s);
        });
    StreamProgram program;
    program
        .then([this, g](StreamHandle s) {
          launch_greedy_phase(GreedyPhase::label_looping_begin, g, s);
          query_fused(g, nullptr, s);
        })
        .loop_while(g.any_active, outer, loop_cap())
        .then([g](StreamHandle s) { launch_greedy_phase(GreedyPhase::end_of_chunk, g, s); });
    return program;
  }

  StreamProgram frame_looping_program(const GreedyDeviceState g) {
    StreamProgram symbols;
    symbols.then([this, g](StreamHandle s) {
      joint_then(GreedyPhase::frame_looping_step, g, s);
      predictor_step_and_queries(g, s);
    });
    StreamProgram frames;
    frames.then([g](StreamHandle s) { launch_greedy_phase(GreedyPhase::frame_looping_enter, g, s); })
        .loop_while(g.any_advance, symbols, loop_cap())
        .then([g](StreamHandle s) { launch_greedy_phase(GreedyPhase::frame_looping_next_frame, g, s); });
    StreamProgram program;
    program
        .then([this, g](StreamHandle s) {
          launch_greedy_phase(GreedyPhase::frame_looping_begin, g, s);
          query_fused(g, nullptr, s);
        })
        .loop_while(g.any_active, frames, loop_cap())
        .then([g](StreamHandle s) { launch_greedy_phase(GreedyPhase::end_of_chunk, g, s); });
    return program;
  }

  // Whether this decoder's label looping runs as the persistent kernel (persistent_greedy_shape.hpp): decided when
  // the buffers are sized, since the predictor's fused step is built over them. Logs once why not, when asked for.
  void plan_persistent(std::int64_t B, std::int64_t J, std::int64_t O) {
    persistent_.reset();
    persistent_hidden_ = DeviceBuffer<float>();
    persistent_phase_ns_ = DeviceBuffer<unsigned long long>();
    if (!persistent_greedy_enabled()) return;
    PersistentGreedyShape shape;
    LstmFusedStep step{};
    shape.label_looping = config_.algorithm != TransducerGreedyAlgorithm::frame_looping;  // WIND is label looping too
    const std::int64_t rows = B * window_;                                                // joint rows
    shape.lstm_fused_step = shape.label_looping && lstm_fused_step_of(*session_, label_.data(), emit_mask_.data(),
                                                                      work_state_.data(), work_dec_.data(), B, &step);
    shape.same_dtype = step.projection.dtype == model_.joint().weight_dtype();
    shape.rows = rows;
    shape.joint_hidden = J;
    shape.predictor_shared_floats = step.shared_floats;
    shape.device_shared_bytes = persistent_shared_bytes_;
    const std::string refusal = persistent_greedy_refusal(shape);
    if (!refusal.empty()) {
      warn_once(concat("persistent-greedy:", refusal),
                concat("ASRDEC_PERSISTENT_GREEDY=1: greedy decoding keeps its graph program (", refusal, ")"));
      return;
    }
    PersistentGreedy p{};
    p.predictor = step;
    p.barrier = reinterpret_cast<unsigned int*>(persistent_words_.data());
    p.status = persistent_words_.data() + 2;
    p.loop_cap = loop_cap();
    const auto vocab = static_cast<std::int32_t>(model_.vocab_size());
    if (config_.lm != nullptr) p.lm = config_.lm->ref();
    if (config_.boost != nullptr) p.boost = config_.boost->ref();
    p.lm_slice = p.boost_slice = ngram_advance_slice_size(vocab, B, multiprocessors_);
    p.shared_bytes = static_cast<std::size_t>(persistent_greedy_shared_bytes(rows, J, step.shared_floats));
    persistent_max_blocks_ = persistent_greedy_blocks(O, step.projection.width, J, std::int64_t{1} << 30);
    persistent_hidden_ = persistent_greedy_shares_hidden(rows, J, kJointGemvThreads)
                             ? DeviceBuffer<float>(static_cast<std::size_t>(rows * J), device_)
                             : DeviceBuffer<float>();
    p.hidden_rows = persistent_hidden_.size() > 0 ? persistent_hidden_.data() : nullptr;
    if (phase_times_enabled()) {
      persistent_phase_ns_ = DeviceBuffer<unsigned long long>(kPersistentGreedyPhases, device_);
      p.phase_ns = persistent_phase_ns_.data();
    }
    persistent_ = p;
    // The generation word only grows; every launch clears the arrivals and the status itself.
    Stream stream(device_);
    fill_bytes_async(persistent_words_.data(), device_, 0, persistent_words_.bytes(), stream.handle());
    stream.synchronize();
  }

  // The persistent kernel's launch for encoder values of `enc_dtype`: its grid, as many blocks as run at once (up to
  // what its widest step uses); none if the device runs none.
  std::optional<PersistentGreedy> persistent_launch(DType enc_dtype) {
    if (!persistent_) return std::nullopt;
    PersistentGreedy p = *persistent_;
    const int resident = persistent_greedy_resident_blocks(enc_dtype, model_.joint().weight_dtype(), p.shared_bytes);
    p.blocks = std::min(persistent_max_blocks_, resident);
    if (p.blocks < 1) {
      warn_once("persistent-greedy:resident",
                "ASRDEC_PERSISTENT_GREEDY=1: greedy decoding keeps its graph program (the device runs no block of "
                "the persistent kernel with its shared memory)");
      return std::nullopt;
    }
    return p;
  }

  StreamProgram persistent_program(const GreedyDeviceState g, const PersistentGreedy p) {
    StreamProgram program;
    program.then([g, p](StreamHandle s) { launch_label_looping_persistent(g, p, s); });
    return program;
  }

  // The persistent kernel's error word, read back with the call's other checks.
  static void check_persistent_status(std::int32_t status) {
    ASRDEC_EXPECTS(status != kGridBarrierTimedOut, Error,
                   "the persistent greedy kernel stopped: a block waited more than ",
                   kGridBarrierTimeoutNs / 1000000000,
                   " s at a grid barrier (other work kept the device's places; unset ASRDEC_PERSISTENT_GREEDY)");
    ASRDEC_EXPECTS(status != kGridBarrierLoopCap, Error,
                   "internal error: a decode loop of the persistent greedy kernel reached its iteration cap and was "
                   "stopped");
    ASRDEC_EXPECTS(status == kGridBarrierOk, Error, "internal error: the persistent greedy kernel stopped with status ",
                   status);
  }

  GraphExecutor& executor(DType enc_dtype) {
    auto& slot = executors_[static_cast<std::size_t>(enc_dtype)];
    if (!slot) {
      const GreedyDeviceState g = device_state(enc_dtype);
      std::optional<PersistentGreedy> persistent = persistent_launch(enc_dtype);
      persistent_executor_[static_cast<std::size_t>(enc_dtype)] = persistent.has_value();
      slot.emplace(device_, lifecycle_.mode(),
                   persistent                                                      ? persistent_program(g, *persistent)
                   : config_.algorithm == TransducerGreedyAlgorithm::frame_looping ? frame_looping_program(g)
                                                                                   : label_looping_program(g));
    }
    return *slot;
  }

  TransducerModel model_;
  TransducerGreedyConfig config_;
  GreedyRules rules_;
  BatchLimits limits_;
  Device device_;
  ExecutorLifecycle lifecycle_;
  StreamFork fork_;             // the fused queries' side stream (predictor_step_and_queries)
  bool queries_beside_ = true;  // fused_queries_beside_enabled, read once
  std::int32_t window_ = 1;
  std::unique_ptr<PredictorSession> session_;
  std::unique_ptr<Gemm> gemm_;
  std::int64_t joint_gemv_shared_bytes_ = 0;    // what the fused joint kernel may use on this device
  bool fused_joint_ = false;                    // the joint step in one kernel (joint_gemv_shape.hpp), else cuBLAS
  std::int64_t persistent_shared_bytes_ = 0;    // what the persistent kernels may use on this device (0: switch off)
  std::optional<PersistentGreedy> persistent_;  // label looping as one kernel (plan_persistent), its grid left open
  int persistent_max_blocks_ = 0;               // the most blocks its widest step uses
  DeviceBuffer<float> persistent_hidden_;       // [joint rows, J] its shared hidden layer (hidden_rows)
  std::array<bool, 3> persistent_executor_{};   // by encoder dtype: whether executors_ holds the persistent kernel
  bool last_call_persistent_ = false;           // whether the last decode launched it (its status is then read)
  DeviceBuffer<JointEncArgs> args_;
  DeviceBuffer<std::int32_t> flags_;
  DeviceBuffer<unsigned long long> bad_value_;
  DeviceBuffer<unsigned long long> loop_counts_;  // [3] the last call's GreedyLoopCounts, counted on the device
  GreedyLoopCounts counts_;                       // their copy, taken with the call's error checks
  DeviceBuffer<std::int32_t> persistent_words_;   // [3] the persistent kernel's barrier (arrivals, generation), status
  DeviceBuffer<unsigned long long> persistent_phase_ns_;  // ASRDEC_PHASE_TIMES: PersistentGreedy::phase_ns
  DeviceBuffer<std::int32_t> durations_;
  DeviceBuffer<std::int32_t> lengths_, time_jump_, last_label_, emit_mask_;
  DeviceBuffer<std::int32_t> blanks_, ones_;  // [max_batch] constants for the start symbol
  DeviceBuffer<float> work_state_, work_dec_;
  DeviceBuffer<std::int32_t> time_, active_, active_at_start_, advance_, label_, label_time_, label_duration_,
      symbols_on_frame_;
  DeviceBuffer<float> label_score_, label_confidence_;
  DeviceBuffer<std::byte> hidden_;
  DeviceBuffer<float> logits_;
  DeviceBuffer<std::int32_t> choice_label_, choice_duration_;
  DeviceBuffer<float> choice_token_logprob_, choice_step_logprob_, choice_confidence_;
  DeviceBuffer<unsigned long long> row_bad_;
  DeviceBuffer<std::byte> joint_step_sums_;              // launch_joint_step's per-block sums
  DeviceBuffer<std::int32_t> lm_state_, lm_next_;        // LM fusion: [max_batch], [max_batch, V]
  DeviceBuffer<float> lm_total_, lm_scores_;             // [max_batch], [max_batch, V]
  DeviceBuffer<std::int32_t> boost_state_, boost_next_;  // boosting: [max_batch], [max_batch, V]
  DeviceBuffer<float> boost_total_, boost_scores_;       // [max_batch], [max_batch, V]
  DeviceBuffer<float> am_start_;                         // [max_batch] each path's score before the call
  DeviceBuffer<std::int32_t> lane_args_;                 // [3, max_batch]: channel, start flag, boosting root
  DeviceBuffer<float> start_state_, start_dec_;          // [S], [J]: the predictor after the start symbol
  DeviceBuffer<std::int32_t> constants_;                 // 0, blank, <s>
  // Streaming: the open utterances' carried state, [max_open_utterances] rows (lane_copies()).
  DeviceBuffer<float> ch_state_, ch_dec_;
  DeviceBuffer<std::int32_t> ch_time_jump_, ch_last_label_, ch_lm_state_, ch_boost_state_;
  DeviceBuffer<float> ch_am_total_, ch_lm_total_, ch_boost_total_;
  std::vector<std::int32_t> lane_host_;
  bool streaming_ = false;
  std::int64_t pending_scatter_ = 0;  // lanes of the last streaming call, scattered by collect()
  int multiprocessors_ = 1;
  BatchedHyps<MemoryKind::device> hyps_;
  BatchedHyps<MemoryKind::pinned> host_hyps_;
  std::array<std::optional<GraphExecutor>, 3> executors_;
  std::int64_t last_batch_ = 0;
};

}  // namespace

std::unique_ptr<GreedyBackend> make_greedy_cuda(const TransducerModel& model, const TransducerGreedyConfig& config,
                                                BatchLimits limits) {
  return std::make_unique<GreedyCuda>(model, config, limits);
}

}  // namespace asrdec::detail

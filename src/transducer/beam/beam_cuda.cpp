// The CUDA executor of ALSD++, AES++ and WIND beam search (beam_decoder.hpp). The decode is a StreamProgram run by a
// GraphExecutor (with conditional graphs the whole decode is one graph launch):
// - ALSD++: a begin step, then "while any hypothesis is on a frame of its utterance { one ALSD++ step }";
// - AES++: a begin step, then "while some utterance has frame t { evaluate; prefix search; while a hypothesis
//   expands and steps are left { one expansion step }; end of frame }" (nested conditional loops);
// - WIND: a begin step, then "while some utterance has a group { evaluate the group's windows; propose; step }".
// Every buffer is sized for the limits' largest batch × pool × frames (the pool is the beam, or WIND's K·(W+K)
// slots), so the loop allocates nothing; a larger call grows them first and captures the graphs again. The step
// kernels (beam_kernels.cu) apply the same shared rules as the CPU executors.
//
// Streaming (search_chunks) runs the same programs on lanes seeded from the utterances' channels (host memory,
// hyps/beam_channel.hpp, shared with the CPU executors through BeamLanes): the executor loads each lane's slots on the
// host, copies them to the device, and the begin kernels keep them; the per-row `last` flags let ALSD++ and WIND beam
// search stop a row before a step that needs frames not brought yet, as on the CPU. Their lanes — the frames kept from
// earlier chunks, then the chunk — are built on the host (the chunk is copied there, checked and converted to float32)
// and copied to the device; AES++ is frame-synchronous and reads the chunk where it is. After the run the slots, their
// predictor and fused states come back to the host, where the channels take them in two phases.

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "asrdec/core/error.hpp"
#include "asrdec/core/graph.hpp"
#include "asrdec/core/log.hpp"
#include "asrdec/hyps/batched_beam_hyps.hpp"
#include "core/bad_value.hpp"
#include "core/cuda/check.hpp"
#include "core/cuda/executor_lifecycle.hpp"
#include "core/cuda/gemm.hpp"
#include "core/cuda/stream_fork.hpp"
#include "core/grid_barrier_status.hpp"
#include "core/phase_times.hpp"
#include "hyps/beam_hyps_copy.hpp"
#include "hyps/ranked_beams.hpp"
#include "lm/ngram_kernels.hpp"
#include "lm/ngram_lm_impl.hpp"
#include "transducer/beam/beam_backend.hpp"
#include "transducer/beam/beam_kernels.hpp"
#include "transducer/beam/beam_lanes.hpp"
#include "transducer/beam/persistent_beam_shape.hpp"
#include "transducer/model/bad_enc_value.hpp"
#include "transducer/model/device_durations.hpp"
#include "transducer/model/joint_gemv_shape.hpp"
#include "transducer/model/joint_impl.hpp"

namespace asrdec::detail {
namespace {

class TransducerBeamCuda final : public TransducerBeamBackend {
 public:
  TransducerBeamCuda(const TransducerModel& model, const TransducerBeamConfig& config, BatchLimits limits)
      : model_(model),
        config_(config),
        capacity_{limits, beam_history_start(limits.max_frames, beam_worst_history(config, limits.max_frames))},
        pool_(wind() ? config.beam * (config.wind_window + config.beam) : config.beam),
        device_(model.device()),
        lifecycle_(device_, config.graph_mode, config.max_device_bytes),
        fork_(device_),
        queries_beside_(fused_queries_beside_enabled()),
        persistent_words_(3, device_),
        args_(1, device_),
        flags_(7, device_),
        bad_value_(1, device_),
        loop_counts_(2, device_) {
    DeviceGuard guard(device_);
    joint_gemv_shared_bytes_ = preload_beam_kernels();
    int multiprocessors = 0;
    ASRDEC_CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device_.index()));
    multiprocessors_ = std::max(multiprocessors, 1);
    durations_ = device_durations(model_);
    lifecycle_.grow(capacity_, capacity_, [this] { allocate(); });
  }

  std::vector<std::vector<Hypothesis>> decode(const TransducerInput& p, const std::vector<std::int32_t>& boost_roots,
                                              StreamHandle user_stream) override {
    DeviceGuard guard(device_);
    counts_ = BeamLoopCounts{};
    if (p.batch == 0) return {};
    const ExecutorLifecycle::Call call(lifecycle_, user_stream);
    const cudaStream_t stream = call.stream();
    for (std::int64_t extent : {p.batch, p.frames, model_.joint_hidden()}) {
      ASRDEC_CHECK_ARG(extent < kBadValueFieldLimit, "enc_proj: dimensions above ", kBadValueFieldLimit - 1,
                       " are not supported on CUDA, got ", p.enc_proj.shape_string());
    }
    grow(p.batch, p.frames);
    if (p.enc_proj.numel() > 0) check_device_readable(p.enc_proj.data(), device_, "enc_proj");
    // History starts at beam_history_start entries a slot; a decode that fills it is run again with twice as many
    // (the loop cannot grow buffers it has captured), up to the algorithm's bound, so results stay exact.
    for (;;) {
      start(p, boost_roots, /*seeded=*/false, stream);
      copy_bytes_async(row_last_.data(), device_, ones_.data(), device_, row_last_.bytes(), stream);  // all end
      lifecycle_.run(executor(p.enc_proj.dtype()), stream);
      std::optional<std::vector<std::vector<Hypothesis>>> beams = collect(p.batch, stream);
      if (beams) return *std::move(beams);
      widen_history(beam_worst_history(config_, p.frames));
    }
  }

  // Streaming, phase 1: the lanes' search, and every check and allocation of the save (a bad value, a lack of memory
  // or a full history throws here and changes no channel).
  void search_chunks(const TransducerInput& p, const ChunkPlan& plan, const std::vector<ChunkRow>& rows,
                     const std::vector<std::int32_t>& boost_roots, std::vector<BeamChannel*>& lanes,
                     StreamHandle user_stream) override {
    DeviceGuard guard(device_);
    chunks_.reset();
    counts_ = BeamLoopCounts{};
    if (p.batch == 0) return;  // nothing to search or save
    const ExecutorLifecycle::Call call(lifecycle_, user_stream);
    const cudaStream_t stream = call.stream();
    for (std::int64_t extent : {p.batch, p.frames, model_.joint_hidden()}) {
      ASRDEC_CHECK_ARG(extent < kBadValueFieldLimit, "enc_proj: dimensions above ", kBadValueFieldLimit - 1,
                       " are not supported on CUDA, got ", p.enc_proj.shape_string());
    }
    if (p.enc_proj.numel() > 0) check_device_readable(p.enc_proj.data(), device_, "enc_proj");
    const bool waits = !aes();
    if (waits) bring_chunk_to_host(p, stream);
    const TransducerInput& chunk = waits ? static_cast<const TransducerInput&>(host_chunk_) : p;
    chunks_.emplace(chunk, plan, rows, boost_roots, lanes, model_.joint_hidden(), waits, config_.check_values);
    const TransducerInput& lanes_in = chunks_->input();  // host frames when waiting, else the chunk on the device
    ASRDEC_CHECK_ARG(lanes_in.frames < kBadValueFieldLimit, "decode_chunks: a lane of ", lanes_in.frames,
                     " frames (the frames kept from earlier chunks and the chunk) is above the CUDA limit of ",
                     kBadValueFieldLimit - 1);
    grow(lanes_in.batch, lanes_in.frames, /*streamed=*/true, waits ? lanes_in.batch * lanes_in.frames : 0);
    last_.assign(static_cast<std::size_t>(capacity_.limits.max_batch), 1);
    for (std::size_t b = 0; b < rows.size(); ++b) last_[b] = rows[b].last ? 1 : 0;
    for (;;) {
      const TransducerInput device_in = waits ? lanes_on_device(lanes_in, stream) : p;
      start(device_in, boost_roots, /*seeded=*/true, stream);
      seed(device_in.batch, boost_roots, stream);
      lifecycle_.run(executor(device_in.enc_proj.dtype()), stream);
      if (collect_slots(device_in.batch, stream)) break;
      widen_history(beam_worst_history(config_, device_in.frames));
    }
    searched_ = host_hyps_.ref();
    searched_.batch = p.batch;
    chunks_->prepare_save(searched_, host_slots());
  }

  void save_chunks() override {
    if (!chunks_) return;                    // a call of no rows
    chunks_->save(searched_, host_slots());  // does not allocate
    chunks_.reset();
  }

  GraphMode graph_mode() const noexcept override { return lifecycle_.mode(); }
  std::int64_t device_bytes() const noexcept override { return lifecycle_.device_bytes(); }
  BeamLoopCounts loop_counts() const noexcept override { return counts_; }

 private:
  struct Capacity {
    BatchLimits limits;
    std::int32_t history;          // entries of each slot's history
    bool streamed = false;         // a call has streamed: host staging of the slots' states
    std::int64_t lane_frames = 0;  // ALSD++ / WIND streaming: device room for the lanes' frames (rows × frames)
  };

  // The chunk, copied to host memory (the span its strides cover) and seen there by host_chunk_.
  void bring_chunk_to_host(const TransducerInput& p, cudaStream_t stream) {
    host_chunk_ = p;
    std::int64_t span = 0;
    if (p.enc_proj.numel() > 0) {
      span = (p.batch - 1) * p.enc.stride_b + (p.frames - 1) * p.enc.stride_t +
             (model_.joint_hidden() - 1) * p.enc.stride_j + 1;
    }
    const auto bytes = static_cast<std::size_t>(span) * dtype_size(p.enc.dtype);
    if (host_chunk_bytes_.bytes() < bytes) host_chunk_bytes_ = PinnedBuffer<std::byte>(bytes, Device::cpu());
    if (bytes > 0) {  // device, managed or pinned memory (check_device_readable): the copy finds the kind
      copy_bytes_async(host_chunk_bytes_.data(), Device::cpu(), p.enc.data, device_, bytes, stream);
      ASRDEC_CUDA_CHECK(cudaStreamSynchronize(stream));
    }
    host_chunk_.enc.data = host_chunk_bytes_.data();
    host_chunk_.enc_proj = TensorView();  // BeamLanes reads `enc`
  }

  // The lanes' frames (float32 [B, frames, J] on the host) copied to the device, as the request the program reads.
  TransducerInput lanes_on_device(const TransducerInput& lanes, cudaStream_t stream) {
    const std::int64_t J = model_.joint_hidden();
    const auto count = static_cast<std::size_t>(lanes.batch * lanes.frames * J);
    if (count > 0) {
      copy_bytes_async(lane_frames_.data(), device_, lanes.enc.data, Device::cpu(), count * sizeof(float), stream);
    }
    TransducerInput in = lanes;
    in.enc_proj = TensorView(lane_frames_.data(), DType::f32, {lanes.batch, lanes.frames, J}, device_);
    in.enc = EncodedView{lane_frames_.data(), DType::f32, lanes.frames * J, J, 1};
    return in;
  }

  // The slots' predictor and fused states in host memory (the staging copies BeamLanes loads and saves).
  BeamSlotArrays host_slots() {
    return BeamSlotArrays{
        host_state_.data(), host_dec_.data(), model_.predictor().state_size(), model_.joint_hidden(),
        BeamFusedSlots{config_.lm != nullptr ? host_lm_state_.data() : nullptr, host_lm_total_.data(),
                       config_.boost != nullptr ? host_boost_state_.data() : nullptr, host_boost_total_.data()}};
  }

  // Streaming, after start(): the lanes' slots from their channels (a starting lane's beam cleared), loaded on the
  // host and copied over the started ones; the begin kernels then keep them.
  void seed(std::int64_t batch, const std::vector<std::int32_t>& boost_roots, cudaStream_t stream) {
    const std::int64_t slots = batch * pool_;
    const auto n = static_cast<std::size_t>(slots);
    const std::int64_t S = model_.predictor().state_size();
    const std::int64_t J = model_.joint_hidden();
    const BeamSlotArrays host = host_slots();
    for (std::int64_t s = 0; s < slots; ++s) {  // what start() gives every slot; loaded lanes overwrite theirs
      if (host.fused.lm_state != nullptr) {
        host.fused.lm_state[s] = NgramLm::bos_state();
        host.fused.lm_total[s] = 0.0f;
      }
      if (host.fused.boost_state != nullptr) {
        host.fused.boost_state[s] = boost_roots[static_cast<std::size_t>(s / pool_)];
        host.fused.boost_total[s] = 0.0f;
      }
    }
    const BeamHypsRef h = host_hyps_.ref();
    chunks_->load(h, host);
    copy_beam_slots_to_device(h, hyps_.ref(), batch, stream);
    const auto up = [&](void* to, const void* from, std::size_t bytes) {
      if (bytes > 0) copy_bytes_async(to, device_, from, Device::cpu(), bytes, stream);
    };
    if (config_.lm != nullptr) {
      up(lm_state_.data(), host_lm_state_.data(), n * 4);
      up(lm_total_.data(), host_lm_total_.data(), n * 4);
    }
    if (config_.boost != nullptr) {
      up(boost_state_.data(), host_boost_state_.data(), n * 4);
      up(boost_total_.data(), host_boost_total_.data(), n * 4);
    }
    const std::vector<std::uint8_t>& fresh = chunks_->plan().fresh;
    for (std::int64_t b = 0; b < batch; ++b) {
      if (fresh[static_cast<std::size_t>(b)]) continue;  // start() gave its slots the start state
      const std::int64_t first = b * pool_;
      up(state_.data() + first * S, host_state_.data() + first * S, static_cast<std::size_t>(pool_ * S) * 4);
      up(dec_.data() + first * J, host_dec_.data() + first * J, static_cast<std::size_t>(pool_ * J) * 4);
    }
    up(row_last_.data(), last_.data(), last_.size() * 4);
  }

  // Streaming, after the run: the lanes' slots, predictor and fused states back on the host; throws for a bad value
  // or an internal error, and returns false when a lane ran out of history entries (the caller widens it and runs
  // the call again from the channels, which have not changed).
  bool collect_slots(std::int64_t batch, cudaStream_t stream) {
    const auto n = static_cast<std::size_t>(batch * pool_);
    const auto copy_back = [&](auto* target, const auto* source, std::size_t count) {
      if (count == 0) return;
      ASRDEC_CUDA_CHECK(cudaMemcpyAsync(target, source, count * sizeof(*source), cudaMemcpyDeviceToHost, stream));
    };
    unsigned long long bad = 0;
    copy_back(&bad, bad_value_.data(), 1);
    std::int32_t internal_error = 0;
    copy_back(&internal_error, flags_.data() + 4, 1);
    unsigned long long counts[2] = {0, 0};
    copy_back(counts, loop_counts_.data(), 2);
    std::int32_t persistent_status = kGridBarrierOk;
    if (last_call_persistent_) copy_back(&persistent_status, persistent_words_.data() + 2, 1);
    std::vector<std::uint64_t> phase_ns(kPersistentBeamPhases, 0);
    const bool timed = last_call_persistent_ && persistent_phase_ns_.size() > 0;
    if (timed) copy_back(phase_ns.data(), persistent_phase_ns_.data(), phase_ns.size());
    if (config_.lm != nullptr) {
      copy_back(host_lm_state_.data(), lm_state_.data(), n);
      copy_back(host_lm_total_.data(), lm_total_.data(), n);
    }
    if (config_.boost != nullptr) {
      copy_back(host_boost_state_.data(), boost_state_.data(), n);
      copy_back(host_boost_total_.data(), boost_total_.data(), n);
    }
    copy_back(host_state_.data(), state_.data(), n * static_cast<std::size_t>(model_.predictor().state_size()));
    copy_back(host_dec_.data(), dec_.data(), n * static_cast<std::size_t>(model_.joint_hidden()));
    copy_beams_to_host(hyps_.ref(), host_hyps_.ref(), batch, stream);  // synchronises the stream
    take_counts(counts);
    if (timed) log_phase_times(phase_ns);
    lifecycle_.check_loops();
    check_outcome(bad, persistent_status, internal_error);
    const BeamHypsRef h = host_hyps_.ref();
    return std::none_of(h.overflow, h.overflow + batch, [](std::int32_t full) { return full != 0; });
  }

  // ASRDEC_PHASE_TIMES: the persistent kernel's time a step by phase in this call (core/phase_times.hpp).
  void log_phase_times(const std::vector<std::uint64_t>& phase_ns) const {
    static const std::vector<std::string> names = {
        "joint and queries", "proposals and selection", "take-over", "predictor layers", "projection", "commit"};
    log(LogLevel::info, format_phase_times(concat("persistent beam kernel, ", to_string(config_.algorithm)), names,
                                           phase_ns, counts_.outer));
  }

  // The run's loop counts, as the device counted them (outer, inner), once they are on the host.
  void take_counts(const unsigned long long (&counts)[2]) {
    BeamLoopCounts c;
    c.outer = static_cast<std::int64_t>(counts[0]);
    c.inner = static_cast<std::int64_t>(counts[1]);
    counts_ = with_joint_passes(c, config_.algorithm);
  }

  // Bad input first: a decode that read one may also have broken the search's invariants. Then the persistent
  // kernel's stop (its results are incomplete), then the search's own checks.
  static void check_outcome(unsigned long long bad, std::int32_t persistent_status, std::int32_t internal_error) {
    if (bad != kNoBadValue) {
      const BadValue at = unpack_bad_value(bad);
      throw bad_enc_value_error(at.b, at.t, at.v, at.is_nan);
    }
    ASRDEC_EXPECTS(persistent_status != kGridBarrierTimedOut, Error,
                   "the persistent beam search kernel stopped: a block waited more than ",
                   kGridBarrierTimeoutNs / 1000000000,
                   " s at a grid barrier (other work kept the device's places; unset ASRDEC_PERSISTENT_BEAM)");
    ASRDEC_EXPECTS(persistent_status != kGridBarrierLoopCap, Error,
                   "internal error: the persistent beam search kernel reached its step cap and was stopped");
    ASRDEC_EXPECTS(persistent_status == kGridBarrierOk, Error,
                   "internal error: the persistent beam search kernel stopped with status ", persistent_status);
    ASRDEC_EXPECTS((internal_error & 4) == 0, Error,
                   "internal error: a step of the persistent beam search kernel took more tokens than its predictor "
                   "rows");
    ASRDEC_EXPECTS(
        internal_error == 0, Error, "internal error: WIND beam search ",
        (internal_error & 1) != 0 ? "found more than the beam's hypotheses on a frame" : "ran out of pool slots");
  }

  void start(const TransducerInput& p, const std::vector<std::int32_t>& boost_roots, bool seeded, cudaStream_t stream) {
    // Per-call inputs and the start of every slot: predictor after the start symbol, LM at <s>, boosting at the
    // root of its utterance's list, totals 0. Outside the graph: these depend on the call, not on the loop.
    const std::int64_t slots = capacity_.limits.max_batch * pool_;
    const auto n = static_cast<std::size_t>(slots);
    JointEncArgs args{};
    args.enc = p.enc_proj.data();
    args.stride_b = p.enc.stride_b;
    args.stride_t = p.enc.stride_t;
    args.stride_j = p.enc.stride_j;
    args.batch = static_cast<std::int32_t>(p.batch);
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(args_.data(), &args, sizeof args, cudaMemcpyHostToDevice, stream));
    copy_bytes_async(lengths_.data(), device_, p.lengths.data(), Device::cpu(), p.lengths.size() * 4, stream);
    fill_bytes_async(bad_value_.data(), device_, 0xff, sizeof(unsigned long long), stream);
    fill_bytes_async(loop_counts_.data(), device_, 0, 2 * sizeof(unsigned long long), stream);
    fill_bytes_async(flags_.data() + 4, device_, 0, sizeof(std::int32_t), stream);
    fill_bytes_async(flags_.data() + 6, device_, 0, sizeof(std::int32_t), stream);  // blocks_done
    const std::int32_t seed_flag = seeded ? 1 : 0;  // copied from pageable memory before the call returns
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(flags_.data() + 5, &seed_flag, sizeof seed_flag, cudaMemcpyHostToDevice, stream));
    session_->initial_state(state_.data(), slots, stream);
    session_->step(blanks_.data(), ones_.data(), state_.data(), dec_.data(), slots, stream);
    if (config_.lm != nullptr) {
      copy_bytes_async(lm_state_.data(), device_, bos_states_.data(), device_, n * 4, stream);
      fill_bytes_async(lm_total_.data(), device_, 0, n * 4, stream);
    }
    if (config_.boost != nullptr) {
      for (std::int64_t s = 0; s < slots; ++s) {
        const std::int64_t b = s / pool_;
        boost_roots_[static_cast<std::size_t>(s)] = boost_roots[static_cast<std::size_t>(b < p.batch ? b : 0)];
      }
      copy_bytes_async(boost_state_.data(), device_, boost_roots_.data(), Device::cpu(), n * 4, stream);
      fill_bytes_async(boost_total_.data(), device_, 0, n * 4, stream);
    }
  }

  // Grows the buffers (outside any loop) when a call exceeds the limits; graphs are then captured again. A failed
  // allocation restores the old size (ExecutorLifecycle::grow).
  void grow(std::int64_t batch, std::int64_t frames, bool streamed = false, std::int64_t lane_frames = 0) {
    const std::int32_t history = beam_history_start(frames, beam_worst_history(config_, frames));  // throws first
    const BatchLimits& limits = capacity_.limits;
    if (lifecycle_.usable() && batch <= limits.max_batch && frames <= limits.max_frames &&
        history <= capacity_.history && (!streamed || capacity_.streamed) && lane_frames <= capacity_.lane_frames) {
      return;
    }
    Capacity wanted = capacity_;
    wanted.limits.max_batch = std::max(limits.max_batch, batch);
    wanted.limits.max_frames = std::max(limits.max_frames, frames);
    wanted.history = std::max(capacity_.history, history);
    wanted.streamed = capacity_.streamed || streamed;
    // Lanes vary from call to call: their room at least doubles, so that few calls capture the graphs again.
    if (lane_frames > capacity_.lane_frames) wanted.lane_frames = std::max(lane_frames, 2 * capacity_.lane_frames);
    lifecycle_.grow(capacity_, wanted, [this] { allocate(); });
  }

  // A decode found a slot's history full: twice the entries (at most `worst`, which no decode can fill).
  void widen_history(std::int32_t worst) {
    ASRDEC_EXPECTS(capacity_.history < worst, Error, "internal error: beam history of ", worst,
                   " entries a slot ran out");
    Capacity wanted = capacity_;
    wanted.history = beam_history_next(capacity_.history, worst);
    lifecycle_.grow(capacity_, wanted, [this] { allocate(); });
  }

  // No loop runs more often than a hypothesis slot can take entries (one per step).
  std::int64_t loop_cap() const { return std::int64_t{beam_worst_history(config_, capacity_.limits.max_frames)} + 2; }

  bool aes() const { return config_.algorithm == TransducerBeamAlgorithm::aes; }
  bool wind() const { return config_.algorithm == TransducerBeamAlgorithm::wind; }

  // Rows of the joint per step: a slot each, or WIND's window rows of each utterance's (at most K) group members.
  std::int64_t joint_rows() const {
    return capacity_.limits.max_batch * (wind() ? std::int64_t{config_.beam} * config_.wind_window : pool_);
  }

  void allocate() {
    for (auto& slot : executors_) slot.reset();
    const std::int64_t B = capacity_.limits.max_batch;
    const std::int32_t K = config_.beam;
    const std::int64_t slots = B * pool_;
    const auto n = static_cast<std::size_t>(slots);
    const auto rows = static_cast<std::size_t>(joint_rows());
    const auto S = static_cast<std::size_t>(model_.predictor().state_size());
    const auto J = static_cast<std::size_t>(model_.joint_hidden());
    const auto O = static_cast<std::size_t>(model_.joint().output_size());
    const auto V = static_cast<std::size_t>(model_.vocab_size());
    const BeamKind kind =
        wind() ? BeamKind::windowed : (model_.type() == TransducerType::tdt ? BeamKind::tdt : BeamKind::rnnt);
    hyps_ = BatchedBeamHyps<MemoryKind::device>();  // reallocated whole, so the meter sees every buffer
    host_hyps_ = BatchedBeamHyps<MemoryKind::pinned>();
    hyps_.reserve(B, pool_, capacity_.history, kind, model_.blank_id(), device_);
    host_hyps_.reserve(B, pool_, capacity_.history, kind, model_.blank_id(), Device::cpu());
    session_ = model_.predictor().start_session(slots);
    fused_joint_ =
        fused_kernels_enabled() && joint_gemv_fits(joint_rows(), model_.joint_hidden(), joint_gemv_shared_bytes_);
    // cuBLAS (a handle and its 32 MiB workspace) and the hidden buffer only for the path that uses them.
    gemm_ = fused_joint_ ? nullptr : std::make_unique<Gemm>(device_);
    lengths_ = DeviceBuffer<std::int32_t>(static_cast<std::size_t>(B), device_);
    row_last_ = DeviceBuffer<std::int32_t>(static_cast<std::size_t>(B), device_);
    lane_frames_ =
        DeviceBuffer<float>(static_cast<std::size_t>(std::max<std::int64_t>(capacity_.lane_frames, 1)) * J, device_);
    running_ = DeviceBuffer<std::int32_t>(static_cast<std::size_t>(B), device_);
    for (auto* buffer : {&state_, &next_state_}) *buffer = DeviceBuffer<float>(n * S, device_);
    for (auto* buffer : {&dec_, &next_dec_}) *buffer = DeviceBuffer<float>(n * J, device_);
    for (auto* buffer : {&step_label_, &step_mask_, &take_label_, &row_active_, &blanks_, &ones_}) {
      *buffer = DeviceBuffer<std::int32_t>(n, device_);
    }
    take_from_ = DeviceBuffer<std::int64_t>(n, device_);
    proposals_ = DeviceBuffer<AlsdProposals>(aes() ? 1 : (wind() ? static_cast<std::size_t>(B * K) : n), device_);
    for (auto* buffer : {&wind_frame_, &wind_width_, &group_size_}) {
      *buffer = DeviceBuffer<std::int32_t>(wind() ? static_cast<std::size_t>(B) : 1, device_);
    }
    group_ = DeviceBuffer<std::int32_t>(wind() ? static_cast<std::size_t>(B * K) : 1, device_);
    wind_candidates_ = DeviceBuffer<WindCandidate>(wind() ? n : 1, device_);
    aes_proposals_ = DeviceBuffer<AesProposals>(aes() ? n : 1, device_);
    expanding_ = DeviceBuffer<std::int32_t>(n, device_);
    querying_ = DeviceBuffer<std::int32_t>(aes() ? n : 1, device_);
    hidden_ = DeviceBuffer<std::byte>(fused_joint_ ? 1 : rows * J * dtype_size(model_.joint().weight_dtype()), device_);
    logits_ = DeviceBuffer<float>(rows * O, device_);
    const std::size_t lm_slots = config_.lm != nullptr ? n : 1;
    const std::size_t boost_slots = config_.boost != nullptr ? n : 1;
    for (auto* buffer : {&lm_state_, &next_lm_state_, &bos_states_})
      *buffer = DeviceBuffer<std::int32_t>(lm_slots, device_);
    for (auto* buffer : {&lm_total_, &next_lm_total_}) *buffer = DeviceBuffer<float>(lm_slots, device_);
    lm_scores_ = DeviceBuffer<float>(lm_slots * (config_.lm != nullptr ? V : 1), device_);
    lm_next_ = DeviceBuffer<std::int32_t>(lm_slots * (config_.lm != nullptr ? V : 1), device_);
    for (auto* buffer : {&boost_state_, &next_boost_state_}) *buffer = DeviceBuffer<std::int32_t>(boost_slots, device_);
    for (auto* buffer : {&boost_total_, &next_boost_total_}) *buffer = DeviceBuffer<float>(boost_slots, device_);
    boost_scores_ = DeviceBuffer<float>(boost_slots * (config_.boost != nullptr ? V : 1), device_);
    boost_next_ = DeviceBuffer<std::int32_t>(boost_slots * (config_.boost != nullptr ? V : 1), device_);
    boost_roots_.assign(boost_slots, 0);
    host_lm_total_ = PinnedBuffer<float>(lm_slots, Device::cpu());
    host_boost_total_ = PinnedBuffer<float>(boost_slots, Device::cpu());
    host_lm_state_ = PinnedBuffer<std::int32_t>(lm_slots, Device::cpu());
    host_boost_state_ = PinnedBuffer<std::int32_t>(boost_slots, Device::cpu());
    // Streaming's staging of the slots' predictor states and outputs (pinned only once a call streams).
    host_state_ = PinnedBuffer<float>(capacity_.streamed ? n * S : 1, Device::cpu());
    host_dec_ = PinnedBuffer<float>(capacity_.streamed ? n * J : 1, Device::cpu());

    Stream stream(device_);
    const std::vector<std::int32_t> blanks(n, model_.blank_id()), ones(n, 1);
    copy_bytes_async(blanks_.data(), device_, blanks.data(), Device::cpu(), n * 4, stream.handle());
    copy_bytes_async(ones_.data(), device_, ones.data(), Device::cpu(), n * 4, stream.handle());
    const std::vector<std::int32_t> bos(lm_slots, NgramLm::bos_state());
    copy_bytes_async(bos_states_.data(), device_, bos.data(), Device::cpu(), lm_slots * 4, stream.handle());
    copy_bytes_async(lm_state_.data(), device_, bos.data(), Device::cpu(), lm_slots * 4, stream.handle());
    // Boosting states of slots no call has written must be valid states too (the queries are masked, but the
    // buffers are read whole by the take kernel's gathers only where a slot is live).
    fill_bytes_async(boost_state_.data(), device_, 0, boost_slots * 4, stream.handle());
    // Warm-up outside any capture: the first GEMM of the joint's shape (cuBLAS heuristics, lazy module loading)
    // and a predictor step, on zeroed buffers.
    fill_bytes_async(state_.data(), device_, 0, state_.bytes(), stream.handle());
    if (gemm_) {
      fill_bytes_async(hidden_.data(), device_, 0, hidden_.bytes(), stream.handle());
      gemm_->rows_times_weight_t(model_.joint().impl().device_weight.data(), model_.joint().weight_dtype(),
                                 model_.joint().output_size(), model_.joint_hidden(), hidden_.data(),
                                 model_.joint_hidden(), joint_rows(), logits_.data(), model_.joint().output_size(),
                                 stream.handle());
    }
    session_->step(blanks_.data(), ones_.data(), state_.data(), dec_.data(), slots, stream.handle());
    stream.synchronize();
    plan_persistent();
  }

  // Whether this decoder's step loop runs as the persistent kernel (persistent_beam_shape.hpp), and its buffers:
  // decided when the buffers are sized, since the predictor's fused step is built over them. Logs once why not.
  void plan_persistent() {
    persistent_.reset();
    for (auto* buffer : {&persistent_hidden_, &step_rows_state_, &step_rows_dec_}) *buffer = DeviceBuffer<float>();
    persistent_phase_ns_ = DeviceBuffer<unsigned long long>();
    for (auto* buffer : {&row_of_slot_, &step_rows_label_, &step_rows_mask_}) *buffer = DeviceBuffer<std::int32_t>();
    if (!persistent_beam_enabled()) return;
    // Loads the kernels too (outside any capture), so that the first call does not.
    if (persistent_shared_bytes_ == 0) persistent_shared_bytes_ = preload_persistent_beam_kernels();
    const std::int64_t B = capacity_.limits.max_batch;
    const std::int64_t slots = B * pool_;
    const std::int64_t S = model_.predictor().state_size();
    const std::int64_t J = model_.joint_hidden();
    const std::int64_t rows = persistent_beam_step_rows(wind(), B, config_.beam, pool_);
    PersistentBeamShape shape;
    shape.step_loop = !aes();
    shape.joint_rows = joint_rows();
    shape.step_rows = rows;
    shape.joint_hidden = J;
    shape.slot_cache_bytes = static_cast<std::int64_t>(beam_slot_cache_bytes(wind() ? pool_ : slots));
    shape.device_shared_bytes = persistent_shared_bytes_;
    LstmFusedStep step{};
    if (shape.step_loop && shape.step_rows <= kJointGemvMaxRows) {  // else refused below, with nothing built
      row_of_slot_ = DeviceBuffer<std::int32_t>(static_cast<std::size_t>(slots), device_);
      step_rows_label_ = DeviceBuffer<std::int32_t>(static_cast<std::size_t>(rows), device_);
      step_rows_mask_ = DeviceBuffer<std::int32_t>(static_cast<std::size_t>(rows), device_);
      step_rows_state_ = DeviceBuffer<float>(static_cast<std::size_t>(rows * S), device_);
      step_rows_dec_ = DeviceBuffer<float>(static_cast<std::size_t>(rows * J), device_);
      shape.lstm_fused_step = lstm_fused_step_of(*session_, step_rows_label_.data(), step_rows_mask_.data(),
                                                 step_rows_state_.data(), step_rows_dec_.data(), rows, &step);
      shape.same_dtype = step.projection.dtype == model_.joint().weight_dtype();
      shape.predictor_shared_floats = step.shared_floats;
    }
    const std::string refusal = persistent_beam_refusal(shape);
    if (!refusal.empty()) {
      warn_once(concat("persistent-beam:", refusal),
                concat("ASRDEC_PERSISTENT_BEAM=1: beam search keeps its graph program (", refusal, ")"));
      for (auto* buffer : {&step_rows_state_, &step_rows_dec_}) *buffer = DeviceBuffer<float>();
      for (auto* buffer : {&row_of_slot_, &step_rows_label_, &step_rows_mask_}) {
        *buffer = DeviceBuffer<std::int32_t>();
      }
      return;
    }
    PersistentBeam p{};
    p.predictor = step;
    if (config_.lm != nullptr) p.lm = config_.lm->ref();
    if (config_.boost != nullptr) p.boost = config_.boost->ref();
    p.lm_slice = p.boost_slice =
        ngram_advance_slice_size(static_cast<std::int32_t>(model_.vocab_size()), slots, multiprocessors_);
    p.barrier = reinterpret_cast<unsigned int*>(persistent_words_.data());
    p.status = persistent_words_.data() + 2;
    p.loop_cap = loop_cap();
    if (persistent_greedy_shares_hidden(shape.joint_rows, J, kJointGemvThreads)) {
      persistent_hidden_ = DeviceBuffer<float>(static_cast<std::size_t>(shape.joint_rows * J), device_);
      p.hidden_rows = persistent_hidden_.data();
    }
    p.row_of_slot = row_of_slot_.data();
    p.step_label = step_rows_label_.data();
    p.step_mask = step_rows_mask_.data();
    p.step_state = step_rows_state_.data();
    p.step_dec = step_rows_dec_.data();
    p.step_rows = rows;
    p.internal_error = flags_.data() + 4;
    p.shared_bytes = static_cast<std::size_t>(persistent_beam_shared_bytes(shape));
    p.cache_bytes = static_cast<std::size_t>(shape.slot_cache_bytes);
    if (phase_times_enabled()) {
      persistent_phase_ns_ = DeviceBuffer<unsigned long long>(kPersistentBeamPhases, device_);
      p.phase_ns = persistent_phase_ns_.data();
    }
    persistent_max_blocks_ =
        persistent_greedy_blocks(model_.joint().output_size(), step.projection.width, J, std::int64_t{1} << 30);
    persistent_ = p;
    // Rows past a step's tokens are read (and masked) by the predictor: zeros rather than whatever memory held. The
    // generation word only grows; every launch clears the arrivals and the status itself.
    Stream stream(device_);
    fill_bytes_async(step_rows_state_.data(), device_, 0, step_rows_state_.bytes(), stream.handle());
    fill_bytes_async(persistent_words_.data(), device_, 0, persistent_words_.bytes(), stream.handle());
    stream.synchronize();
  }

  // The persistent kernel's launch for encoder values of `enc_dtype`: its grid, as many blocks as run at once (up to
  // what its widest phase uses); none if the device runs none.
  std::optional<PersistentBeam> persistent_launch(DType enc_dtype) {
    if (!persistent_) return std::nullopt;
    PersistentBeam p = *persistent_;
    const int resident = persistent_beam_resident_blocks(enc_dtype, model_.joint().weight_dtype(), p.shared_bytes);
    p.blocks = std::min(persistent_max_blocks_, resident);
    if (p.blocks < 1) {
      warn_once("persistent-beam:resident",
                "ASRDEC_PERSISTENT_BEAM=1: beam search keeps its graph program (the device runs no block of the "
                "persistent kernel with its shared memory)");
      return std::nullopt;
    }
    return p;
  }

  BeamDeviceState device_state(DType enc_dtype) {
    BeamDeviceState g{};
    g.args = args_.data();
    g.lengths = lengths_.data();
    g.seeded = flags_.data() + 5;
    g.row_last = row_last_.data();
    g.hyps = hyps_.ref();
    g.max_batch = capacity_.limits.max_batch;
    g.slots = capacity_.limits.max_batch * pool_;
    g.beam = config_.beam;
    g.joint_rows = joint_rows();
    g.state = state_.data();
    g.next_state = next_state_.data();
    g.dec = dec_.data();
    g.next_dec = next_dec_.data();
    g.state_size = model_.predictor().state_size();
    g.fusion.vocab = static_cast<std::int32_t>(model_.vocab_size());
    g.fusion.blank = model_.blank_id();
    if (config_.lm != nullptr) {
      g.fusion.lm =
          FusionSource{lm_scores_.data(), lm_next_.data(), lm_state_.data(), lm_total_.data(), config_.lm_weight};
      g.next_lm_state = next_lm_state_.data();
      g.next_lm_total = next_lm_total_.data();
    }
    if (config_.boost != nullptr) {
      g.fusion.boost = FusionSource{boost_scores_.data(), boost_next_.data(), boost_state_.data(), boost_total_.data(),
                                    config_.boost_weight};
      g.next_boost_state = next_boost_state_.data();
      g.next_boost_total = next_boost_total_.data();
    }
    g.step_label = step_label_.data();
    g.step_mask = step_mask_.data();
    g.take_from = take_from_.data();
    g.take_label = take_label_.data();
    g.row_active = row_active_.data();
    g.running = running_.data();
    g.any_running = flags_.data();
    g.blocks_done = flags_.data() + 6;
    if (aes()) {
      g.aes.frame = flags_.data() + 1;
      g.aes.step = flags_.data() + 2;
      g.aes.any_expanding = flags_.data() + 3;
      g.aes.expanding = expanding_.data();
      g.aes.querying = querying_.data();
      g.aes.proposals = aes_proposals_.data();
      g.aes.steps = config_.aes_num_steps;
      g.aes.per_hypothesis = config_.beam + config_.aes_expansion_beta;
      g.aes.gamma = config_.aes_expansion_gamma;
    }
    if (wind()) {
      g.wind.window = config_.wind_window;
      g.wind.frame = wind_frame_.data();
      g.wind.width = wind_width_.data();
      g.wind.group_size = group_size_.data();
      g.wind.group = group_.data();
      g.wind.candidates = wind_candidates_.data();
      g.wind.internal_error = flags_.data() + 4;
    }
    g.hidden = hidden_.data();
    g.logits = logits_.data();
    g.bias = model_.joint().impl().device_bias.data();
    g.weight = model_.joint().impl().device_weight.data();
    g.durations = durations_.data();
    g.num_durations = static_cast<std::int32_t>(model_.durations().size());
    g.hidden_size = model_.joint_hidden();
    g.outputs = model_.joint().output_size();
    g.token_columns = model_.vocab_size() + 1;
    g.blank = model_.blank_id();
    g.proposals = proposals_.data();
    g.rule = beam_fusion_rule(config_);
    g.max_symbols = config_.max_symbols_per_frame;
    g.activation = model_.joint().activation();
    g.enc_dtype = enc_dtype;
    g.weight_dtype = model_.joint().weight_dtype();
    g.check_values = config_.check_values ? 1 : 0;
    g.bad_value = bad_value_.data();
    g.loop_counts = loop_counts_.data();
    return g;
  }

  // Joint and fused queries of the slots in row_active: logits (without bias) for every joint row (zeros where
  // the row is idle), queries for those slots. The two touch different arrays (the joint's hidden rows and logits;
  // the models' scores and next states), so the queries run beside the joint (fused_queries_beside_enabled) and
  // their latency hides behind it.
  void joint_and_queries(const BeamDeviceState& g, cudaStream_t stream) {
    const auto joint = [&](cudaStream_t s) {
      if (fused_joint_) {
        launch_beam_joint_gemv(g, s);
      } else {
        launch_beam_joint_hidden(g, s);
        gemm_->rows_times_weight_t(g.weight, g.weight_dtype, g.outputs, g.hidden_size, g.hidden, g.hidden_size,
                                   g.joint_rows, g.logits, g.outputs, s);
      }
    };
    // AES++ skips the queries of the evaluation after a frame's last expansion step (AesDeviceState::querying).
    const auto queries = [&](cudaStream_t s) {
      launch_fused_queries(config_.lm.get(), config_.boost.get(), g.fusion, g.slots, multiprocessors_, s,
                           aes() ? g.aes.querying : g.row_active);
    };
    if (!g.fusion.active() || !queries_beside_) {
      joint(stream);
      queries(stream);
      return;
    }
    fork_.run(stream, queries, joint);
  }

  // Every slot takes over the states of take_from with take_label (into the next_* buffers), the predictor steps the
  // tokens there, and the commit makes them current, then runs `then` in its last block.
  void take_over(const BeamDeviceState& g, BeamPhase then, cudaStream_t stream) {
    launch_beam_take(g, stream);
    session_->step(g.step_label, g.step_mask, g.next_state, g.next_dec, g.slots, stream);
    launch_beam_commit_then(then, g, stream);
  }

  // ALSD++ and WIND share the loop "begin; while a slot is active { joint and fused queries; propose; select (WIND:
  // the per-utterance step); take over states; activity (WIND: the next groups) }"; only the launchers differ.
  StreamProgram step_program(const BeamDeviceState g) {
    const bool windowed = wind();
    StreamProgram body;
    body.then([this, g, windowed](StreamHandle s) {
      joint_and_queries(g, s);
      if (windowed) {
        launch_wind_propose(g, s);
        launch_wind_step(g, s);
      } else {
        launch_alsd_propose(g, s);  // and the selection
      }
      take_over(g, windowed ? BeamPhase::wind_groups : BeamPhase::alsd_activity, s);
    });
    StreamProgram program;
    program
        .then([g, windowed](StreamHandle s) {
          if (windowed) {
            launch_wind_begin(g, s);
          } else {
            launch_alsd_begin(g, s);
          }
        })
        .loop_while(g.any_running, body, loop_cap());
    return program;
  }

  StreamProgram aes_program(const BeamDeviceState g) {
    const auto evaluate = [this, g](StreamHandle s) {
      joint_and_queries(g, s);
      launch_beam_log_softmax(g, s);
    };
    StreamProgram steps;
    steps.then([this, g, evaluate](StreamHandle s) {
      launch_aes_propose(g, s);
      launch_aes_expand(g, s);
      take_over(g, BeamPhase::aes_mark_rows, s);
      evaluate(s);  // also after the last step: the end of the frame scores the blank of those still expanding
    });
    StreamProgram frames;
    frames
        .then([g, evaluate](StreamHandle s) {
          evaluate(s);
          launch_aes_prefix_search(g, s);
        })
        .loop_while(g.aes.any_expanding, steps, loop_cap())
        .then([g](StreamHandle s) {
          launch_aes_end_frame(g, s);
          launch_aes_next_frame(g, s);
        });
    StreamProgram program;
    program.then([g](StreamHandle s) { launch_aes_begin(g, s); }).loop_while(g.any_running, frames, loop_cap());
    return program;
  }

  // The program of a run for encoder values of `enc_dtype` (built once per capacity); notes whether it is the
  // persistent kernel, whose status the run's checks then read.
  GraphExecutor& executor(DType enc_dtype) {
    const auto index = static_cast<std::size_t>(enc_dtype);
    auto& slot = executors_[index];
    if (!slot) {
      const BeamDeviceState g = device_state(enc_dtype);
      const std::optional<PersistentBeam> persistent = persistent_launch(enc_dtype);
      persistent_executor_[index] = persistent.has_value();
      StreamProgram program;
      if (persistent) {
        // Said at debug level, so that a test (or an engine's log) can tell which program runs.
        log(LogLevel::debug,
            concat("beam search: ", to_string(config_.algorithm), "'s step loop runs as one persistent kernel (",
                   persistent->blocks, " blocks, ", persistent->step_rows, " predictor rows)"));
        program.then([g, p = *persistent](StreamHandle s) { launch_beam_persistent(g, p, s); });
      } else {
        program = aes() ? aes_program(g) : step_program(g);
      }
      slot.emplace(device_, lifecycle_.mode(), std::move(program));
    }
    last_call_persistent_ = persistent_executor_[index];
    return *slot;
  }

  // The beams of the first `batch` utterances, copied back (only the filled entries) and ranked on the host;
  // nothing when an utterance ran out of history entries.
  std::optional<std::vector<std::vector<Hypothesis>>> collect(std::int64_t batch, cudaStream_t stream) {
    const BeamHypsRef d = hyps_.ref();
    const BeamHypsRef h = host_hyps_.ref();
    const auto n = static_cast<std::size_t>(batch * pool_);
    const auto copy_back = [&](auto* target, const auto* source, std::size_t count) {
      ASRDEC_CUDA_CHECK(cudaMemcpyAsync(target, source, count * sizeof(*source), cudaMemcpyDeviceToHost, stream));
    };
    unsigned long long bad = 0;
    copy_back(&bad, bad_value_.data(), 1);
    std::int32_t internal_error = 0;
    copy_back(&internal_error, flags_.data() + 4, 1);
    unsigned long long counts[2] = {0, 0};
    copy_back(counts, loop_counts_.data(), 2);
    std::int32_t persistent_status = kGridBarrierOk;
    if (last_call_persistent_) copy_back(&persistent_status, persistent_words_.data() + 2, 1);
    std::vector<std::uint64_t> phase_ns(kPersistentBeamPhases, 0);
    const bool timed = last_call_persistent_ && persistent_phase_ns_.size() > 0;
    if (timed) copy_back(phase_ns.data(), persistent_phase_ns_.data(), phase_ns.size());
    if (config_.lm != nullptr) copy_back(host_lm_total_.data(), lm_total_.data(), n);
    if (config_.boost != nullptr) copy_back(host_boost_total_.data(), boost_total_.data(), n);
    copy_beams_to_host(d, h, batch, stream);  // synchronises the stream
    take_counts(counts);
    if (timed) log_phase_times(phase_ns);
    lifecycle_.check_loops();
    check_outcome(bad, persistent_status, internal_error);
    if (std::any_of(h.overflow, h.overflow + batch, [](std::int32_t full) { return full != 0; })) return std::nullopt;
    BeamHypsRef view = h;
    view.batch = batch;
    return ranked_beams_of(view, batch, config_.length_normalized,
                           config_.lm != nullptr ? host_lm_total_.data() : nullptr,
                           config_.boost != nullptr ? host_boost_total_.data() : nullptr);
  }

  TransducerModel model_;
  TransducerBeamConfig config_;
  Capacity capacity_;
  std::int32_t pool_;  // hypothesis slots per utterance
  Device device_;
  ExecutorLifecycle lifecycle_;
  StreamFork fork_;             // the fused queries' side stream (joint_and_queries)
  bool queries_beside_ = true;  // fused_queries_beside_enabled, read once
  int multiprocessors_ = 1;
  std::unique_ptr<PredictorSession> session_;
  std::unique_ptr<Gemm> gemm_;
  std::int64_t joint_gemv_shared_bytes_ = 0;  // what the fused joint kernel may use on this device
  bool fused_joint_ = false;                  // joint rows through joint_gemv (joint_gemv_shape.hpp), else cuBLAS
  // The persistent kernel (plan_persistent): what it may use on this device (0: switch off), its launch with the
  // grid left open, the most blocks its widest phase uses, its words (barrier arrivals, generation, status), the
  // joint's shared hidden layer, and the step rows the predictor steps (PersistentBeam).
  std::int64_t persistent_shared_bytes_ = 0;
  std::optional<PersistentBeam> persistent_;
  int persistent_max_blocks_ = 0;
  DeviceBuffer<std::int32_t> persistent_words_;
  DeviceBuffer<float> persistent_hidden_;
  DeviceBuffer<std::int32_t> row_of_slot_, step_rows_label_, step_rows_mask_;
  DeviceBuffer<float> step_rows_state_, step_rows_dec_;
  DeviceBuffer<unsigned long long> persistent_phase_ns_;  // ASRDEC_PHASE_TIMES: PersistentBeam::phase_ns
  std::array<bool, 3> persistent_executor_{};  // by encoder dtype: whether executors_ holds the persistent kernel
  bool last_call_persistent_ = false;          // whether the last run launched it (its status is then read)
  DeviceBuffer<JointEncArgs> args_;
  // Outer loop flag; AES++: frame, step, inner loop flag; WIND internal error; streaming: seeded.
  DeviceBuffer<std::int32_t> flags_;
  DeviceBuffer<unsigned long long> bad_value_;
  DeviceBuffer<unsigned long long> loop_counts_;  // [2] the run's outer and inner passes, counted on the device
  BeamLoopCounts counts_;                         // of the last call
  DeviceBuffer<std::int32_t> durations_, lengths_, running_;
  DeviceBuffer<std::int32_t> row_last_;  // [max_batch] BeamDeviceState::row_last
  BatchedBeamHyps<MemoryKind::device> hyps_;
  BatchedBeamHyps<MemoryKind::pinned> host_hyps_;
  DeviceBuffer<float> state_, next_state_, dec_, next_dec_;
  DeviceBuffer<std::int32_t> step_label_, step_mask_, take_label_, row_active_;
  DeviceBuffer<std::int32_t> blanks_, ones_;  // [slots] constants for the start symbol
  DeviceBuffer<std::int64_t> take_from_;
  DeviceBuffer<AlsdProposals> proposals_;
  DeviceBuffer<AesProposals> aes_proposals_;
  DeviceBuffer<std::int32_t> expanding_, querying_;
  DeviceBuffer<std::int32_t> wind_frame_, wind_width_, group_size_, group_;
  DeviceBuffer<WindCandidate> wind_candidates_;
  DeviceBuffer<std::byte> hidden_;
  DeviceBuffer<float> logits_;
  DeviceBuffer<std::int32_t> lm_state_, next_lm_state_, bos_states_, lm_next_;
  DeviceBuffer<float> lm_total_, next_lm_total_, lm_scores_;
  DeviceBuffer<std::int32_t> boost_state_, next_boost_state_, boost_next_;
  DeviceBuffer<float> boost_total_, next_boost_total_, boost_scores_;
  std::vector<std::int32_t> boost_roots_;  // [slots] host staging of each slot's starting boosting state
  PinnedBuffer<float> host_lm_total_, host_boost_total_;
  PinnedBuffer<std::int32_t> host_lm_state_, host_boost_state_;
  // Streaming: the call between search_chunks() and save_chunks().
  std::optional<BeamLanes> chunks_;
  TransducerInput host_chunk_;  // ALSD++ / WIND: the chunk, seen in host memory
  PinnedBuffer<std::byte> host_chunk_bytes_;
  DeviceBuffer<float> lane_frames_;            // ALSD++ / WIND: the lanes' frames [B, frames, J]
  PinnedBuffer<float> host_state_, host_dec_;  // staging of the slots' predictor states and outputs
  std::vector<std::int32_t> last_;             // [max_batch] per row: ends its utterance
  BeamHypsRef searched_{};
  std::array<std::optional<GraphExecutor>, 3> executors_;
};

}  // namespace

std::unique_ptr<TransducerBeamBackend> make_transducer_beam_cuda(const TransducerModel& model,
                                                                 const TransducerBeamConfig& config,
                                                                 BatchLimits limits) {
  return std::make_unique<TransducerBeamCuda>(model, config, limits);
}

}  // namespace asrdec::detail

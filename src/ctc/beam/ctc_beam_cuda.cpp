// The CUDA executor of CTC beam search (ctc_beam.hpp). The decode is a StreamProgram — a begin step, then "while
// some utterance has frame t { fused queries; one frame; t += 1 }" — run by a GraphExecutor (one graph launch with
// conditional graphs). Buffers are sized for the limits' batch × beam × frames; a larger call grows them first and
// the graphs are captured again. The LM's end-of-sentence term is added on the host, from device queries, after
// the loop. Streaming keeps each utterance's slots on the host (hyps/beam_channel.hpp); a call seeds its lanes from
// them, decodes the chunk, and takes the beams back.

#include <algorithm>
#include <array>
#include <limits>
#include <optional>

#include "asrdec/core/error.hpp"
#include "asrdec/core/graph.hpp"
#include "asrdec/hyps/batched_beam_hyps.hpp"
#include "core/bad_value.hpp"
#include "core/cuda/check.hpp"
#include "core/cuda/executor_lifecycle.hpp"
#include "ctc/beam/ctc_beam_backend.hpp"
#include "ctc/beam/ctc_beam_kernels.hpp"
#include "hyps/beam_hyps_copy.hpp"
#include "hyps/ranked_beams.hpp"
#include "lm/ngram_kernels.hpp"

namespace asrdec::detail {
namespace {

class CtcBeamCuda final : public CtcBeamBackend {
 public:
  CtcBeamCuda(Device device, const CtcBeamConfig& config, BatchLimits limits)
      : device_(device),
        config_(config),
        limits_(limits),
        lifecycle_(device, config.graph_mode, config.max_device_bytes),
        args_(1, device),
        flags_(2, device),
        bad_value_(1, device) {
    DeviceGuard guard(device_);
    preload_ctc_beam_kernels();
    int multiprocessors = 0;
    ASRDEC_CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device_.index()));
    multiprocessors_ = std::max(multiprocessors, 1);
  }

  std::vector<std::vector<Hypothesis>> decode(const CtcInput& p, StreamHandle user_stream) override {
    DeviceGuard guard(device_);
    if (p.batch == 0) return {};
    const ExecutorLifecycle::Call call(lifecycle_, user_stream);
    const cudaStream_t stream = call.stream();
    prepare(p, stream);
    // Every slot starts with the LM at <s>, boosting at the root of its utterance's list, totals 0.
    const auto n = static_cast<std::size_t>(limits_.max_batch * config_.beam);
    std::vector<std::int32_t> roots(n, 0);
    for (std::size_t s = 0; s < n; ++s) {
      const auto b = static_cast<std::int64_t>(s) / config_.beam;
      if (config_.boost != nullptr) roots[s] = config_.boost->root_for(b < p.batch ? b : 0, p.batch);
    }
    const std::vector<std::int32_t> bos(n, NgramLm::bos_state());
    const std::vector<float> zeros(n, 0.0f);
    upload_fused(bos.data(), zeros.data(), roots.data(), zeros.data(), stream);
    run(p, false, stream);
    const BeamHypsRef h = fetch(p.batch, stream);
    for (std::int64_t b = 0; b < p.batch; ++b) end_of_sentence(h, b);
    return ranked_beams_of(h, p.batch, /*length_normalized=*/false,
                           config_.lm != nullptr ? host_lm_total_.data() : nullptr,
                           config_.boost != nullptr ? host_boost_total_.data() : nullptr);
  }

  void decode_chunks(const CtcInput& p, const ChunkPlan& plan, const std::vector<ChunkRow>& rows,
                     const std::vector<std::int32_t>& boost_roots, std::vector<BeamChannel*>& lanes,
                     StreamHandle user_stream) override {
    DeviceGuard guard(device_);
    if (p.batch == 0) return;
    const ExecutorLifecycle::Call call(lifecycle_, user_stream);
    const cudaStream_t stream = call.stream();
    prepare(p, stream);
    // The lanes' slots from their channels, through a host staging area: starting lanes are cleared on the device.
    const std::int32_t K = config_.beam;
    const auto n = static_cast<std::size_t>(limits_.max_batch * K);
    std::vector<float> score(n, 0.0f), lm_total(n, 0.0f), boost_total(n, 0.0f);
    std::vector<std::int32_t> tokens(n, 0), last(n, -1), lm_state(n, NgramLm::bos_state()), boost_state(n, 0);
    std::vector<std::uint64_t> hash(n, 0), prefix(n, 0);
    std::vector<std::int32_t> fresh(static_cast<std::size_t>(limits_.max_batch), 1);
    for (std::int64_t b = 0; b < p.batch; ++b) {
      const auto row = static_cast<std::size_t>(b);
      fresh[row] = plan.fresh[row];
      for (std::int32_t k = 0; k < K; ++k) {
        const auto s = static_cast<std::size_t>(b * K + k);
        const auto i = static_cast<std::size_t>(k);
        if (plan.fresh[row]) {
          boost_state[s] = boost_roots[row];
          continue;
        }
        const BeamChannel& c = *lanes[row];
        score[s] = c.score[i];
        tokens[s] = c.tokens[i];
        last[s] = c.last_label[i];
        hash[s] = c.hash[i];
        prefix[s] = c.prefix_hash[i];
        lm_state[s] = c.lm_state[i];
        lm_total[s] = c.lm_total[i];
        boost_state[s] = c.boost_state[i];
        boost_total[s] = c.boost_total[i];
      }
    }
    const auto up = [&](void* to, const void* from, std::size_t bytes) {
      copy_bytes_async(to, device_, from, Device::cpu(), bytes, stream);
    };
    up(seed_score_.data(), score.data(), n * 4);
    up(seed_tokens_.data(), tokens.data(), n * 4);
    up(seed_last_label_.data(), last.data(), n * 4);
    up(seed_hash_.data(), hash.data(), n * 8);
    up(seed_prefix_hash_.data(), prefix.data(), n * 8);
    up(seed_fresh_.data(), fresh.data(), fresh.size() * 4);
    upload_fused(lm_state.data(), lm_total.data(), boost_state.data(), boost_total.data(), stream);
    run(p, true, stream);
    const BeamHypsRef h = fetch(p.batch, stream);  // throws for a bad value before any channel changes
    const BeamFusedSlots fused{config_.lm != nullptr ? host_lm_state_.data() : nullptr, host_lm_total_.data(),
                               config_.boost != nullptr ? host_boost_state_.data() : nullptr, host_boost_total_.data()};
    for (std::int64_t b = 0; b < p.batch; ++b) {
      if (rows[static_cast<std::size_t>(b)].last) end_of_sentence(h, b);
    }
    BeamChannelSave save;
    save.prepare(h, p.batch, lanes, plan.fresh, boost_roots);  // may throw; changes no channel
    for (std::int64_t b = 0; b < p.batch; ++b) save.commit(h, b, plan.offset[static_cast<std::size_t>(b)], fused);
  }

  GraphMode graph_mode() const noexcept override { return lifecycle_.mode(); }
  std::int64_t device_bytes() const noexcept override { return lifecycle_.device_bytes(); }

 private:
  // What the buffers are sized for: the limits and the logits' columns (V + 1).
  struct Capacity {
    BatchLimits limits;
    std::int64_t columns = 0;
  };

  // Grows the buffers (outside any loop) when a call exceeds the limits or the vocabulary changes; a failed
  // allocation restores the old size (ExecutorLifecycle::grow).
  void grow(std::int64_t batch, std::int64_t frames, std::int64_t columns) {
    if (lifecycle_.usable() && batch <= limits_.max_batch && frames <= limits_.max_frames && columns == columns_) {
      return;
    }
    Capacity current{limits_, columns_};
    Capacity wanted = current;
    wanted.limits.max_batch = std::max(limits_.max_batch, batch);
    wanted.limits.max_frames = std::max(limits_.max_frames, frames);
    wanted.columns = columns;
    lifecycle_.grow(current, wanted, [&] {
      limits_ = current.limits;
      columns_ = current.columns;
      allocate();
    });
  }

  void allocate() {
    for (auto& slot : executors_) slot.reset();
    executor_key_ = {};
    const std::int64_t B = limits_.max_batch;
    const std::int64_t slots = B * config_.beam;
    const auto n = static_cast<std::size_t>(slots);
    const auto V = static_cast<std::size_t>(std::max<std::int64_t>(columns_ - 1, 1));
    const auto capacity = static_cast<std::int32_t>(std::max<std::int64_t>(limits_.max_frames, 1));
    hyps_ = BatchedBeamHyps<MemoryKind::device>();  // reallocated whole, so the meter sees every buffer
    host_hyps_ = BatchedBeamHyps<MemoryKind::pinned>();
    hyps_.reserve(B, config_.beam, capacity, BeamKind::ctc, 0, device_);
    host_hyps_.reserve(B, config_.beam, capacity, BeamKind::ctc, 0, Device::cpu());
    lengths_ = DeviceBuffer<std::int32_t>(static_cast<std::size_t>(B), device_);
    query_mask_ = DeviceBuffer<std::int32_t>(n, device_);
    const std::size_t lm_slots = config_.lm != nullptr ? n : 1;
    const std::size_t boost_slots = config_.boost != nullptr ? n : 1;
    for (auto* buffer : {&lm_state_, &next_lm_state_}) *buffer = DeviceBuffer<std::int32_t>(lm_slots, device_);
    for (auto* buffer : {&lm_total_, &next_lm_total_, &final_scores_}) {
      *buffer = DeviceBuffer<float>(lm_slots, device_);
    }
    lm_scores_ = DeviceBuffer<float>(config_.lm != nullptr ? n * V : 1, device_);
    lm_next_ = DeviceBuffer<std::int32_t>(config_.lm != nullptr ? n * V : 1, device_);
    for (auto* buffer : {&boost_state_, &next_boost_state_}) {
      *buffer = DeviceBuffer<std::int32_t>(boost_slots, device_);
    }
    for (auto* buffer : {&boost_total_, &next_boost_total_}) *buffer = DeviceBuffer<float>(boost_slots, device_);
    boost_scores_ = DeviceBuffer<float>(config_.boost != nullptr ? n * V : 1, device_);
    boost_next_ = DeviceBuffer<std::int32_t>(config_.boost != nullptr ? n * V : 1, device_);
    host_lm_total_ = PinnedBuffer<float>(lm_slots, Device::cpu());
    host_boost_total_ = PinnedBuffer<float>(boost_slots, Device::cpu());
    host_final_ = PinnedBuffer<float>(lm_slots, Device::cpu());
    host_lm_state_ = PinnedBuffer<std::int32_t>(lm_slots, Device::cpu());
    host_boost_state_ = PinnedBuffer<std::int32_t>(boost_slots, Device::cpu());
    seed_score_ = DeviceBuffer<float>(n, device_);
    for (auto* buffer : {&seed_tokens_, &seed_last_label_}) *buffer = DeviceBuffer<std::int32_t>(n, device_);
    for (auto* buffer : {&seed_hash_, &seed_prefix_hash_}) *buffer = DeviceBuffer<std::uint64_t>(n, device_);
    seed_fresh_ = DeviceBuffer<std::int32_t>(static_cast<std::size_t>(B), device_);
  }

  CtcBeamDeviceState device_state(DType dtype, std::int32_t blank, std::int32_t columns) {
    CtcBeamDeviceState g{};
    g.args = args_.data();
    g.lengths = lengths_.data();
    hyps_.reserve(limits_.max_batch, config_.beam, hyps_.capacity(), BeamKind::ctc, blank, device_);
    g.hyps = hyps_.ref();
    g.max_batch = limits_.max_batch;
    g.slots = limits_.max_batch * config_.beam;
    g.columns = columns;
    g.states.fusion.vocab = columns - 1;
    g.states.fusion.blank = blank;
    if (config_.lm != nullptr) {
      g.states.fusion.lm =
          FusionSource{lm_scores_.data(), lm_next_.data(), lm_state_.data(), lm_total_.data(), config_.lm_weight};
      g.states.next_lm_state = next_lm_state_.data();
      g.states.next_lm_total = next_lm_total_.data();
    }
    if (config_.boost != nullptr) {
      g.states.fusion.boost = FusionSource{boost_scores_.data(), boost_next_.data(), boost_state_.data(),
                                           boost_total_.data(), config_.boost_weight};
      g.states.next_boost_state = next_boost_state_.data();
      g.states.next_boost_total = next_boost_total_.data();
    }
    g.rule = CtcBeamRule{blank, config_.beam_beta, config_.log_add};
    g.threshold = config_.beam_threshold;
    g.frame = flags_.data();
    g.any_frame = flags_.data() + 1;
    g.query_mask = query_mask_.data();
    g.dtype = dtype;
    g.check_values = config_.check_values ? 1 : 0;
    g.bad_value = bad_value_.data();
    g.seed = CtcBeamSeed{seed_score_.data(), seed_tokens_.data(),      seed_last_label_.data(),
                         seed_hash_.data(),  seed_prefix_hash_.data(), seed_fresh_.data()};
    return g;
  }

  // The program for one input dtype and blank column (the blank is baked into the captured kernels' arguments).
  GraphExecutor& executor(DType dtype, std::int32_t blank, std::int32_t columns) {
    auto& slot = executors_[static_cast<std::size_t>(dtype)];
    if (slot && executor_key_[static_cast<std::size_t>(dtype)] != blank) slot.reset();
    if (!slot) {
      const CtcBeamDeviceState g = device_state(dtype, blank, columns);
      StreamProgram body;
      body.then([this, g](StreamHandle s) {
        launch_fused_queries(config_.lm.get(), config_.boost.get(), g.states.fusion, g.slots, multiprocessors_, s,
                             g.query_mask);
        launch_ctc_beam_frame(g, s);
        launch_ctc_beam_next_frame(g, s);
      });
      StreamProgram program;
      program.then([g](StreamHandle s) { launch_ctc_beam_begin(g, s); })
          .loop_while(g.any_frame, body, limits_.max_frames + 2);
      slot.emplace(device_, lifecycle_.mode(), program);
      executor_key_[static_cast<std::size_t>(dtype)] = blank;
    }
    return *slot;
  }

  // Checks, sizes and the per-call arguments of a decode of `p`.
  void prepare(const CtcInput& p, cudaStream_t stream) {
    for (std::int64_t extent : {p.batch, p.frames, p.columns}) {
      ASRDEC_CHECK_ARG(extent < kBadValueFieldLimit, "logprobs: dimensions above ", kBadValueFieldLimit - 1,
                       " are not supported on CUDA, got ", p.logprobs.shape_string());
    }
    if (p.logprobs.numel() > 0) check_device_readable(p.logprobs.data(), device_, "logprobs");
    grow(p.batch, p.frames, p.columns);
    copy_bytes_async(lengths_.data(), device_, p.host_lengths.data(), Device::cpu(), p.host_lengths.size() * 4, stream);
    fill_bytes_async(bad_value_.data(), device_, 0xff, sizeof(unsigned long long), stream);
  }

  // Every slot's fused states and totals, [max_batch × K] each (a model that is not fused is skipped).
  void upload_fused(const std::int32_t* lm_state, const float* lm_total, const std::int32_t* boost_state,
                    const float* boost_total, cudaStream_t stream) {
    const auto bytes = static_cast<std::size_t>(limits_.max_batch * config_.beam) * 4;
    if (config_.lm != nullptr) {
      copy_bytes_async(lm_state_.data(), device_, lm_state, Device::cpu(), bytes, stream);
      copy_bytes_async(lm_total_.data(), device_, lm_total, Device::cpu(), bytes, stream);
    }
    if (config_.boost != nullptr) {
      copy_bytes_async(boost_state_.data(), device_, boost_state, Device::cpu(), bytes, stream);
      copy_bytes_async(boost_total_.data(), device_, boost_total, Device::cpu(), bytes, stream);
    }
  }

  // The frame loop over the batch, from cleared beams or (seeded) the lanes' channels.
  void run(const CtcInput& p, bool seeded, cudaStream_t stream) {
    CtcBeamArgs args{};
    args.logprobs = p.logprobs.data();
    args.stride_b = p.logprobs.stride(0);
    args.stride_t = p.logprobs.stride(1);
    args.stride_v = p.logprobs.stride(2);
    args.batch = static_cast<std::int32_t>(p.batch);
    args.seeded = seeded ? 1 : 0;
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(args_.data(), &args, sizeof args, cudaMemcpyHostToDevice, stream));
    lifecycle_.run(executor(p.logprobs.dtype(), p.blank, static_cast<std::int32_t>(p.columns)), stream);
    if (config_.lm != nullptr) {
      launch_ngram_final_scores(config_.lm->ref(), lm_state_.data(), limits_.max_batch * config_.beam,
                                final_scores_.data(), stream);
    }
  }

  // The beams of the first `batch` utterances and their fused states, copied back (only the filled entries of the
  // tree); throws InvalidArgument for a NaN or +inf that was read.
  BeamHypsRef fetch(std::int64_t batch, cudaStream_t stream) {
    const BeamHypsRef d = hyps_.ref();
    const BeamHypsRef h = host_hyps_.ref();
    const auto n = static_cast<std::size_t>(batch * config_.beam);
    const auto copy_back = [&](auto* target, const auto* source, std::size_t count) {
      ASRDEC_CUDA_CHECK(cudaMemcpyAsync(target, source, count * sizeof(*source), cudaMemcpyDeviceToHost, stream));
    };
    unsigned long long bad = 0;
    copy_back(&bad, bad_value_.data(), 1);
    if (config_.lm != nullptr) {
      copy_back(host_lm_state_.data(), lm_state_.data(), n);
      copy_back(host_lm_total_.data(), lm_total_.data(), n);
      copy_back(host_final_.data(), final_scores_.data(), n);
    }
    if (config_.boost != nullptr) {
      copy_back(host_boost_state_.data(), boost_state_.data(), n);
      copy_back(host_boost_total_.data(), boost_total_.data(), n);
    }
    copy_beams_to_host(d, h, batch, stream);  // synchronises the stream
    lifecycle_.check_loops();
    if (bad != kNoBadValue) {
      const BadValue at = unpack_bad_value(bad);
      throw InvalidArgument(concat("logprobs[", at.b, ", ", at.t, ", ", at.v, "] is ", at.is_nan ? "NaN" : "+inf",
                                   "; log-probabilities must be finite or -inf"));
    }
    BeamHypsRef view = h;
    view.batch = batch;
    view.blank = d.blank;
    return view;
  }

  // The end of utterance b (host copy): each live hypothesis adds α·ln p_LM(</s> | its LM state); with log-add
  // merging, equal transcripts then merge (as on the CPU).
  void end_of_sentence(const BeamHypsRef& h, std::int64_t b) {
    if (config_.log_add) {
      add_end_scores(h, b);
      ctc_merge_equal_transcripts(h, b);
    } else {
      add_end_scores(h, b);
    }
  }

  void add_end_scores(const BeamHypsRef& h, std::int64_t b) {
    if (config_.lm == nullptr) return;
    for (std::int32_t k = 0; k < config_.beam; ++k) {
      const std::int64_t s = beam_slot(h, b, k);
      if (h.scores[s] == -std::numeric_limits<float>::infinity()) continue;
      const float end = weighted(config_.lm_weight, host_final_[static_cast<std::size_t>(s)]);
      h.scores[s] += end;
      host_lm_total_[static_cast<std::size_t>(s)] += end;
    }
  }

  Device device_;
  CtcBeamConfig config_;
  BatchLimits limits_;
  std::int64_t columns_ = 0;
  ExecutorLifecycle lifecycle_;
  int multiprocessors_ = 1;
  DeviceBuffer<CtcBeamArgs> args_;
  DeviceBuffer<std::int32_t> flags_;  // t, loop flag
  DeviceBuffer<unsigned long long> bad_value_;
  DeviceBuffer<std::int32_t> lengths_, query_mask_;
  BatchedBeamHyps<MemoryKind::device> hyps_;
  BatchedBeamHyps<MemoryKind::pinned> host_hyps_;
  DeviceBuffer<std::int32_t> lm_state_, next_lm_state_, lm_next_;
  DeviceBuffer<float> lm_total_, next_lm_total_, lm_scores_, final_scores_;
  DeviceBuffer<std::int32_t> boost_state_, next_boost_state_, boost_next_;
  DeviceBuffer<float> boost_total_, next_boost_total_, boost_scores_;
  PinnedBuffer<float> host_lm_total_, host_boost_total_, host_final_;
  PinnedBuffer<std::int32_t> host_lm_state_, host_boost_state_;
  // Streaming: the slots lanes continue from (CtcBeamSeed).
  DeviceBuffer<float> seed_score_;
  DeviceBuffer<std::int32_t> seed_tokens_, seed_last_label_, seed_fresh_;
  DeviceBuffer<std::uint64_t> seed_hash_, seed_prefix_hash_;
  std::array<std::optional<GraphExecutor>, 3> executors_;
  std::array<std::int32_t, 3> executor_key_{};
};

}  // namespace

std::unique_ptr<CtcBeamBackend> make_ctc_beam_cuda(Device device, const CtcBeamConfig& config, BatchLimits limits) {
  // One block per utterance keeps each thread's K best in shared memory and merges them in registers, after the
  // prune: the options that merge first, prune tokens per frame or need more than 64 slots run on the CPU.
  ASRDEC_EXPECTS(config.beam <= CtcBeamConfig::kMaxBeamCuda, Unsupported, "CtcBeamConfig.beam ", config.beam,
                 ": CTC beam search on CUDA keeps at most ", CtcBeamConfig::kMaxBeamCuda, " hypotheses (up to ",
                 CtcBeamConfig::kMaxBeam, " on the CPU)");
  ASRDEC_EXPECTS(!config.merge_before_prune, Unsupported,
                 "CtcBeamConfig.merge_before_prune runs on the CPU only in this version");
  ASRDEC_EXPECTS(config.beam_size_token == 0, Unsupported,
                 "CtcBeamConfig.beam_size_token (per-frame token pruning) runs on the CPU only in this version");
  return std::make_unique<CtcBeamCuda>(device, config, limits);
}

}  // namespace asrdec::detail

#pragma once
// Internal: the executor interface behind CtcGreedyDecoder (CPU: ctc_greedy_cpu.cpp, CUDA: ctc_greedy_cuda.cpp).

#include <cstdint>
#include <memory>
#include <vector>

#include "asrdec/config.hpp"
#include "asrdec/core/buffer.hpp"
#include "asrdec/ctc/ctc_greedy.hpp"
#include "core/ctc_input.hpp"
#include "core/utterance_channels.hpp"

namespace asrdec::detail {

/** Builds host hypotheses from a result in host memory (row b holds lengths[b] entries). */
std::vector<Hypothesis> unpack_ctc_greedy(const CtcGreedyBatchResult& result);

/** The per-utterance result arrays of a batch, in one kind of memory: [max_batch, max_frames] rows of tokens,
 *  timestamps and token log-probabilities, and [max_batch] token counts and scores. */
template <MemoryKind Kind>
struct CtcGreedyOutputs {
  Buffer<std::int32_t, Kind> tokens;
  Buffer<std::int32_t, Kind> timestamps;
  Buffer<float, Kind> token_logprobs;
  Buffer<std::int32_t, Kind> counts;
  Buffer<float, Kind> scores;
  Buffer<float, Kind> lm_scores, boost_scores;
  bool with_lm = false, with_boost = false;

  void allocate(const BatchLimits& limits, Device device) {
    const auto cells = static_cast<std::size_t>(limits.max_batch * limits.max_frames);
    const auto rows = static_cast<std::size_t>(limits.max_batch);
    tokens = Buffer<std::int32_t, Kind>(cells, device);
    timestamps = Buffer<std::int32_t, Kind>(cells, device);
    token_logprobs = Buffer<float, Kind>(cells, device);
    counts = Buffer<std::int32_t, Kind>(rows, device);
    scores = Buffer<float, Kind>(rows, device);
    lm_scores = Buffer<float, Kind>(rows, device);
    boost_scores = Buffer<float, Kind>(rows, device);
  }

  CtcGreedyBatchResult view(Device device, std::int64_t batch, std::int64_t row_stride) const {
    CtcGreedyBatchResult result;
    result.device = device;
    result.batch = batch;
    result.row_stride = row_stride;
    result.tokens = tokens.data();
    result.timestamps = timestamps.data();
    result.token_logprobs = token_logprobs.data();
    result.lengths = counts.data();
    result.scores = scores.data();
    result.lm_scores = with_lm ? lm_scores.data() : nullptr;
    result.boost_scores = with_boost ? boost_scores.data() : nullptr;
    return result;
  }
};

/** Row b of `result` as the chunk part of a streaming result: timestamps shifted by the utterance's frames decoded
 *  before the chunk (plan.offset[b]). */
std::vector<Hypothesis> unpack_ctc_greedy_chunks(const CtcGreedyBatchResult& result, const ChunkPlan& plan);

class CtcGreedyBackend {
 public:
  virtual ~CtcGreedyBackend() = default;
  virtual CtcGreedyBatchResult decode_async(const CtcInput& problem, StreamHandle stream) = 0;
  virtual std::vector<Hypothesis> decode(const CtcInput& problem, StreamHandle stream) = 0;
  /** Streaming (host lengths): row b's frames continue channel plan.slot[b], or start one when plan.fresh[b] (at
   *  boosting root boost_roots[b] with a tree). Returns each row's chunk labels (timestamps absolute) with the
   *  scores of its path so far. The channels change only when the call succeeds. */
  virtual std::vector<Hypothesis> decode_chunks(const CtcInput& problem, const ChunkPlan& plan,
                                                const std::vector<std::int32_t>& boost_roots, StreamHandle stream) = 0;
  virtual void synchronize_and_check(StreamHandle stream) = 0;
  virtual GraphMode graph_mode() const noexcept = 0;
  /** Device bytes of the executor's sized buffers (ExecutorLifecycle::device_bytes); 0 on the CPU. */
  virtual std::int64_t device_bytes() const noexcept { return 0; }
};

std::unique_ptr<CtcGreedyBackend> make_ctc_greedy_cpu(const CtcGreedyConfig& config, BatchLimits limits);
#if ASRDEC_WITH_CUDA
std::unique_ptr<CtcGreedyBackend> make_ctc_greedy_cuda(Device device, const CtcGreedyConfig& config,
                                                       BatchLimits limits);
#endif

}  // namespace asrdec::detail

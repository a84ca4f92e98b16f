#pragma once
// Internal: the executor interface behind TransducerGreedyDecoder (CPU: greedy_cpu.cpp, CUDA: greedy_cuda.cpp).

#include <memory>
#include <vector>

#include "asrdec/config.hpp"
#include "asrdec/transducer/greedy_decoder.hpp"
#include "transducer/model/joint_cpu.hpp"
#include "transducer/transducer_input.hpp"

namespace asrdec {

/** Executor-specific carried state; the host keeps the frame offsets for absolute timestamps. */
struct TransducerStream::Impl {
  virtual ~Impl() = default;
  std::int64_t batch = 0;
  std::vector<std::int64_t> frames_decoded;
  std::uint64_t decoder_id = 0;  // the decoder that started the stream; only it may continue it
};

namespace detail {

GreedyRules rules_of(const TransducerModel& model, const TransducerGreedyConfig& config);

class GreedyBackend {
 public:
  virtual ~GreedyBackend() = default;
  /** A fresh stream: predictor state after the start symbol, no frames decoded. */
  virtual std::unique_ptr<TransducerStream::Impl> start(std::int64_t batch, StreamHandle stream) = 0;
  /** Puts an existing stream back to its start, reusing its memory (no allocation, no synchronisation). */
  virtual void restart(TransducerStream::Impl& state, StreamHandle stream) = 0;
  /** Decodes the chunk and carries the stream state forward (frames_decoded is advanced by the caller). The new
   *  state is committed only when the chunk decodes without error: a call that throws here, or whose collect()
   *  reports bad values, leaves the stream as it was. */
  virtual BatchedHypsView decode_chunk(const TransducerInput& problem, TransducerStream::Impl& state,
                                       StreamHandle stream) = 0;
  /** Host hypotheses of the last decode_chunk, timestamps shifted by `offsets`. */
  virtual std::vector<Hypothesis> collect(const BatchedHypsView& view, const std::vector<std::int64_t>& offsets,
                                          bool is_final, StreamHandle stream) = 0;
  virtual void synchronize_and_check(StreamHandle stream) = 0;
  virtual GraphMode graph_mode() const noexcept = 0;
  /** Device bytes of the executor's sized buffers (ExecutorLifecycle::device_bytes); 0 on the CPU. */
  virtual std::int64_t device_bytes() const noexcept { return 0; }
};

std::unique_ptr<GreedyBackend> make_greedy_cpu(const TransducerModel& model, const TransducerGreedyConfig& config,
                                               BatchLimits limits);
#if ASRDEC_WITH_CUDA
std::unique_ptr<GreedyBackend> make_greedy_cuda(const TransducerModel& model, const TransducerGreedyConfig& config,
                                                BatchLimits limits);
#endif

}  // namespace detail
}  // namespace asrdec

#pragma once
// Internal: the executor interface behind CtcGreedyDecoder and the validated form of one decode request.

#include <cstdint>
#include <memory>
#include <vector>

#include "asrdec/config.hpp"
#include "asrdec/ctc/ctc_greedy.hpp"

namespace asrdec::detail {

/** A decode request after validation: shapes agree, blank resolved, host lengths checked and copied. */
struct CtcGreedyProblem {
  TensorView logprobs;
  TensorView lengths;
  std::int64_t batch = 0;
  std::int64_t frames = 0;
  std::int64_t columns = 0;
  std::int32_t blank = 0;
  bool lengths_on_host = true;
  std::vector<std::int32_t> host_lengths;  ///< filled when lengths_on_host
};

CtcGreedyProblem make_ctc_greedy_problem(const TensorView& logprobs, const TensorView& lengths, Device device,
                                         const CtcGreedyConfig& config);

/** Builds host hypotheses from row-major result arrays (row b holds counts[b] entries). */
std::vector<Hypothesis> unpack_ctc_greedy(std::int64_t batch, std::int64_t row_stride, const std::int32_t* tokens,
                                          const std::int32_t* timestamps, const float* token_logprobs,
                                          const std::int32_t* counts, const float* scores);

class CtcGreedyBackend {
 public:
  virtual ~CtcGreedyBackend() = default;
  virtual CtcGreedyBatchResult decode_async(const CtcGreedyProblem& problem, StreamHandle stream) = 0;
  virtual std::vector<Hypothesis> decode(const CtcGreedyProblem& problem, StreamHandle stream) = 0;
  virtual void synchronize_and_check(StreamHandle stream) = 0;
  virtual GraphMode graph_mode() const noexcept = 0;
};

std::unique_ptr<CtcGreedyBackend> make_ctc_greedy_cpu(const CtcGreedyConfig& config, BatchLimits limits);
#if ASRDEC_WITH_CUDA
std::unique_ptr<CtcGreedyBackend> make_ctc_greedy_cuda(Device device, const CtcGreedyConfig& config,
                                                       BatchLimits limits);
#endif

}  // namespace asrdec::detail

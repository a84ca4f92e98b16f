#pragma once
// Internal: the executor interface behind TransducerGreedyDecoder (CPU: greedy_cpu.cpp, CUDA: greedy_cuda.cpp).

#include <memory>
#include <vector>

#include "asrdec/config.hpp"
#include "asrdec/transducer/greedy_decoder.hpp"
#include "core/utterance_channels.hpp"
#include "transducer/model/joint_cpu.hpp"
#include "transducer/transducer_input.hpp"

namespace asrdec {

namespace detail {

GreedyRules rules_of(const TransducerModel& model, const TransducerGreedyConfig& config);

/** `counts` with joint_passes filled in from its passes: frame looping evaluates the joint in its inner (symbol)
 *  passes only, label looping and WIND in every pass. */
inline GreedyLoopCounts with_joint_passes(GreedyLoopCounts counts, TransducerGreedyAlgorithm algorithm) {
  counts.joint_passes =
      algorithm == TransducerGreedyAlgorithm::frame_looping ? counts.inner : counts.outer + counts.inner;
  return counts;
}

class GreedyBackend {
 public:
  virtual ~GreedyBackend() = default;
  /** Decodes every row of `problem`: from the start symbol (plan == nullptr: whole utterances, or plan->fresh[b]),
   *  with boosting root boost_roots[b]; else (streaming) from channel plan->slot[b], where the row's new state
   *  (predictor state and output, last label, TDT overshoot, fusion states, the path's scores so far) is kept when
   *  the call succeeds: a call that throws here, or whose collect() reports bad values, changes no channel. */
  virtual BatchedHypsView decode(const TransducerInput& problem, const ChunkPlan* plan,
                                 const std::vector<std::int32_t>& boost_roots, StreamHandle stream) = 0;
  /** Host hypotheses of the last decode, timestamps shifted by `offsets`; scores are the paths' so far. */
  virtual std::vector<Hypothesis> collect(const BatchedHypsView& view, const std::vector<std::int64_t>& offsets,
                                          bool is_final, StreamHandle stream) = 0;
  virtual void synchronize_and_check(StreamHandle stream) = 0;
  virtual GraphMode graph_mode() const noexcept = 0;
  /** Device bytes of the executor's sized buffers (ExecutorLifecycle::device_bytes); 0 on the CPU. */
  virtual std::int64_t device_bytes() const noexcept { return 0; }
  /** The loop counts of the last decode (TransducerGreedyDecoder::loop_counts). */
  virtual GreedyLoopCounts loop_counts() const noexcept = 0;
};

std::unique_ptr<GreedyBackend> make_greedy_cpu(const TransducerModel& model, const TransducerGreedyConfig& config,
                                               BatchLimits limits);
#if ASRDEC_WITH_CUDA
std::unique_ptr<GreedyBackend> make_greedy_cuda(const TransducerModel& model, const TransducerGreedyConfig& config,
                                                BatchLimits limits);
#endif

}  // namespace detail
}  // namespace asrdec

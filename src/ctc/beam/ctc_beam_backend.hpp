#pragma once
// Internal: the validated request of CtcBeamDecoder and its CUDA executor (the CPU executor lives in ctc_beam.cpp).

#include <memory>
#include <vector>

#include "asrdec/config.hpp"
#include "asrdec/ctc/ctc_beam.hpp"
#include "core/ctc_input.hpp"
#include "core/utterance_channels.hpp"
#include "hyps/beam_channel.hpp"

namespace asrdec::detail {

/** make_ctc_input with the beam search's rules: the greedy ones, and lengths in host memory. */
CtcInput make_ctc_beam_input(const TensorView& logprobs, const TensorView& lengths, const CtcBeamConfig& config,
                             Device device);

class CtcBeamBackend {
 public:
  virtual ~CtcBeamBackend() = default;
  /** The final beam of each utterance of a validated request, best first; returns after synchronising `stream`
   *  (nullptr: the legacy default stream). */
  virtual std::vector<std::vector<Hypothesis>> decode(const CtcInput& problem, StreamHandle stream) = 0;
  /** Streaming: row b continues channel lanes[b] (or starts it: plan.fresh[b], at boosting root boost_roots[b]);
   *  last rows add the end-of-sentence term. The channels take the rows' new states only when the call succeeds. */
  virtual void decode_chunks(const CtcInput& problem, const ChunkPlan& plan, const std::vector<ChunkRow>& rows,
                             const std::vector<std::int32_t>& boost_roots, std::vector<BeamChannel*>& lanes,
                             StreamHandle stream) = 0;
  virtual GraphMode graph_mode() const noexcept = 0;
  /** Device bytes of the executor's sized buffers (ExecutorLifecycle::device_bytes); 0 on the CPU. */
  virtual std::int64_t device_bytes() const noexcept { return 0; }
};

#if ASRDEC_WITH_CUDA
std::unique_ptr<CtcBeamBackend> make_ctc_beam_cuda(Device device, const CtcBeamConfig& config, BatchLimits limits);
#endif

}  // namespace asrdec::detail

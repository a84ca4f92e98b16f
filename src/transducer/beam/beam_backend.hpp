#pragma once
// Internal: the executor interface behind TransducerBeamDecoder.

#include <memory>
#include <vector>

#include "asrdec/config.hpp"
#include "asrdec/core/error.hpp"
#include "asrdec/transducer/beam_decoder.hpp"
#include "core/utterance_channels.hpp"
#include "hyps/beam_channel.hpp"
#include "hyps/beam_search_step.hpp"
#include "transducer/transducer_input.hpp"

namespace asrdec::detail {

class TransducerBeamBackend {
 public:
  virtual ~TransducerBeamBackend() = default;
  /** The final beam of each utterance of a validated request, best first; utterance b's boosting starts at
   *  boost_roots[b]. CUDA executors work on `stream` (nullptr: the legacy default stream) and return after
   *  synchronising it. */
  virtual std::vector<std::vector<Hypothesis>> decode(const TransducerInput& problem,
                                                      const std::vector<std::int32_t>& boost_roots,
                                                      StreamHandle stream) = 0;
  /** Streaming, phase 1: row b continues channel lanes[b], or starts it (plan.fresh[b]) with
   *  boosting at boost_roots[b]; rows[b].last ends it. Searches the rows' frames and takes every allocation the
   *  save needs without changing any channel (a bad value or a lack of memory throws here); the arguments must
   *  live until save_chunks(). An executor without streaming says so. */
  virtual void search_chunks(const TransducerInput& /*problem*/, const ChunkPlan& /*plan*/,
                             const std::vector<ChunkRow>& /*rows*/, const std::vector<std::int32_t>& /*boost_roots*/,
                             std::vector<BeamChannel*>& /*lanes*/, StreamHandle /*stream*/) {
    throw Unsupported("TransducerBeamDecoder::decode_chunks: this executor does not stream");
  }
  /** Streaming, phase 2: the channels of the last search_chunks() take their rows' new states (no allocation, so
   *  it does not fail halfway). */
  virtual void save_chunks() {}
  virtual GraphMode graph_mode() const noexcept { return GraphMode::eager; }
  /** Device bytes of the executor's sized buffers (ExecutorLifecycle::device_bytes); 0 on the CPU. */
  virtual std::int64_t device_bytes() const noexcept { return 0; }
  /** The loop counts of the executor's last decode or search_chunks (TransducerBeamDecoder::loop_counts). */
  virtual BeamLoopCounts loop_counts() const noexcept = 0;
};

/** `counts` with joint_passes filled in from outer and inner, as BeamLoopCounts defines it for `algorithm`. */
inline BeamLoopCounts with_joint_passes(BeamLoopCounts counts, TransducerBeamAlgorithm algorithm) {
  counts.joint_passes = counts.outer + (algorithm == TransducerBeamAlgorithm::aes ? counts.inner : 0);
  return counts;
}

/** The fusion rule of a config: λ = the weights of the models present; eps = 1e-2 (ALSD++) or 1e-6 (AES++). */
BeamFusionRule beam_fusion_rule(const TransducerBeamConfig& config);

/** The most entries a hypothesis slot's history can need for `frames` frames: every step writes one, and a frame
 *  takes at most max_symbols_per_frame tokens (ALSD++, WIND) or aes_num_steps expansion steps (AES++), and one
 *  more entry. Throws InvalidArgument when that does not fit 32 bits. */
std::int32_t beam_worst_history(const TransducerBeamConfig& config, std::int64_t frames);

/** Throws InvalidArgument when the algorithm, LM or tree of `config` does not fit `model`. */
void check_beam_model(const TransducerModel& model, const TransducerBeamConfig& config);

#if ASRDEC_WITH_CUDA
std::unique_ptr<TransducerBeamBackend> make_transducer_beam_cuda(const TransducerModel& model,
                                                                 const TransducerBeamConfig& config,
                                                                 BatchLimits limits);
#endif
std::unique_ptr<TransducerBeamBackend> make_alsd_cpu(const TransducerModel& model, const TransducerBeamConfig& config,
                                                     BatchLimits limits);
std::unique_ptr<TransducerBeamBackend> make_wind_beam_cpu(const TransducerModel& model,
                                                          const TransducerBeamConfig& config, BatchLimits limits);
std::unique_ptr<TransducerBeamBackend> make_aes_cpu(const TransducerModel& model, const TransducerBeamConfig& config,
                                                    BatchLimits limits);

}  // namespace asrdec::detail

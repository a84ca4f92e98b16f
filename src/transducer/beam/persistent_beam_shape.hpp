#pragma once
// Internal: which beam searches run their step loop as one persistent CUDA kernel (beam_kernels.hpp, PersistentBeam),
// with how many predictor rows and how much shared memory. Host-only arithmetic, tested on the CPU; the CUDA executor
// calls it when it sizes its buffers.
//
// Why: at batch 1 a step of ALSD++ or WIND beam search is a chain of about ten dependent graph nodes (the joint, the
// proposals, the selection, the take-over of states, the predictor's kernels, the commit), each costing microseconds
// of launch latency; WIND beam search takes about four times greedy's passes (docs/beam-search.md, "Loop counts"), so
// its target of 3x greedy's time needs a step cheaper than a greedy pass. In one kernel, the blocks meet at grid
// barriers (about a microsecond each) instead, as greedy decoding's persistent kernel does.

#include <cstdint>
#include <string>

#include "core/environment_switch.hpp"
#include "transducer/greedy/persistent_greedy_shape.hpp"  // the grid and the shared hidden layer, sized alike
#include "transducer/model/joint_gemv_shape.hpp"

namespace asrdec::detail {

/** Whether a beam decoder may run the persistent kernel: only where the environment sets ASRDEC_PERSISTENT_BEAM=1,
 *  until a GPU measures it faster than the graph program. Read when a CUDA decoder sizes its buffers. */
inline bool persistent_beam_enabled() { return environment_switch("ASRDEC_PERSISTENT_BEAM", false); }

/** Predictor rows one step of the persistent kernel may need: the slots that took a token in the step, compacted.
 *  ALSD++ keeps K hypotheses an utterance, each extended by at most one token; a WIND step extends its group (at most
 *  K hypotheses on the earliest frame) by at most K proposals each, so at most K·K tokens, and never more than the
 *  pool's slots. */
constexpr std::int64_t persistent_beam_step_rows(bool wind, std::int64_t batch, std::int64_t beam, std::int64_t pool) {
  const std::int64_t per_utterance = wind ? (beam * beam < pool ? beam * beam : pool) : beam;
  return batch * per_utterance;
}

/** What decides whether one beam decoder's program can be the persistent kernel. */
struct PersistentBeamShape {
  bool step_loop = false;         ///< ALSD++ or WIND beam search (AES++'s nested loops keep the graph program)
  bool lstm_fused_step = false;   ///< the predictor is the built-in LSTM on CUDA and its fused step fits step_rows
  bool same_dtype = false;        ///< the predictor's weights have the joint's dtype (the kernel is built for one)
  std::int64_t joint_rows = 0;    ///< rows of the joint a step evaluates (slots; WIND: batch · K · window)
  std::int64_t step_rows = 0;     ///< persistent_beam_step_rows: the predictor's rows
  std::int64_t joint_hidden = 0;  ///< J
  std::int64_t predictor_shared_floats = 0;  ///< LstmFusedStep::shared_floats of the step rows
  std::int64_t slot_cache_bytes = 0;         ///< the selection's or WIND step's shared-memory copy of the slots
  std::int64_t device_shared_bytes = 0;      ///< what the kernel may opt in to on the device
};

/** The dynamic shared memory of the persistent kernel: the largest of its phases' (the joint's hidden rows, the
 *  predictor's rows, the slots' cache); the phases are separated by barriers, so they share it. */
constexpr std::int64_t persistent_beam_shared_bytes(const PersistentBeamShape& shape) {
  std::int64_t bytes = joint_gemv_shared_bytes(shape.joint_rows, shape.joint_hidden);
  if (shape.predictor_shared_floats * 4 > bytes) bytes = shape.predictor_shared_floats * 4;
  if (shape.slot_cache_bytes > bytes) bytes = shape.slot_cache_bytes;
  return bytes;
}

/** Why `shape` cannot run the persistent kernel, or an empty string when it can. */
inline std::string persistent_beam_refusal(const PersistentBeamShape& shape) {
  if (!shape.step_loop) return "AES++ keeps its graph program";
  if (shape.step_rows < 1 || shape.step_rows > kJointGemvMaxRows) {
    return "a step's predictor rows (ALSD++: batch x beam; WIND: batch x beam x beam) are more than " +
           std::to_string(kJointGemvMaxRows);
  }
  if (!shape.lstm_fused_step) return "the predictor is not the built-in LSTM, or its fused step does not fit the rows";
  if (!shape.same_dtype) return "the predictor's weights and the joint's differ in dtype";
  if (!joint_gemv_fits(shape.joint_rows, shape.joint_hidden, shape.device_shared_bytes)) {
    return "the joint rows do not fit the fused joint step";
  }
  if (persistent_beam_shared_bytes(shape) > shape.device_shared_bytes) {
    return "the predictor's rows or the slots do not fit a block's shared memory";
  }
  return {};
}

}  // namespace asrdec::detail

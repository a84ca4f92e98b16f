#pragma once
// Internal: the kernels of CTC beam search on CUDA. Everything a kernel needs is in CtcBeamDeviceState (fixed device
// pointers, captured into graphs once) plus the per-call CtcBeamArgs block in device memory (rewritten before each
// replay). The per-utterance rules are the shared step functions of ctc/beam/ctc_beam_step.hpp and beam_hyps_step.hpp,
// so the CPU and CUDA executors make the same choices.

#include <cuda_runtime.h>

#include <cstdint>

#include "asrdec/core/dtype.hpp"
#include "asrdec/hyps/beam_hyps_ref.hpp"
#include "ctc/beam/ctc_beam_step.hpp"
#include "hyps/beam_search_step.hpp"

namespace asrdec::detail {

// CTC beam search, frame-synchronous: "while some utterance has frame t { LM/boosting queries of its live slots →
// launch_ctc_beam_frame → launch_ctc_beam_next_frame }". The per-utterance rules are ctc_beam_extension and
// ctc_beam_keep (ctc/beam/ctc_beam_step.hpp).

struct CtcBeamArgs {
  const void* logprobs;  ///< [B, T, C] in `dtype`
  std::int64_t stride_b;
  std::int64_t stride_t;
  std::int64_t stride_v;
  std::int32_t batch;
  /** Streaming: lanes that are not starting take their slots from CtcBeamDeviceState::seed (their channels). */
  std::int32_t seeded;
};

/** Streaming: the slots lanes continue from, [max_batch × K] each (fresh: [max_batch]). */
struct CtcBeamSeed {
  const float* score;
  const std::int32_t* tokens;
  const std::int32_t* last_label;
  const std::uint64_t* hash;
  const std::uint64_t* prefix_hash;
  const std::int32_t* fresh;  ///< per lane: 1 when its utterance starts (the lane is cleared)
};

struct CtcBeamDeviceState {
  const CtcBeamArgs* args;
  const std::int32_t* lengths;  ///< [max_batch] device copy of the lengths
  BeamHypsRef hyps;             ///< max_batch × K slots, kind ctc
  std::int64_t max_batch;
  std::int64_t slots;
  std::int32_t columns;  ///< C = V + 1
  CtcBeamStates states;  ///< per-slot fused states and queries
  CtcBeamRule rule;
  float threshold;
  std::int32_t* frame;       ///< t, the frame being decoded
  std::int32_t* query_mask;  ///< [slots] live slots of utterances with frame t
  std::int32_t* any_frame;   ///< loop flag: some utterance has frame t
  DType dtype;
  std::int32_t check_values;
  unsigned long long* bad_value;  ///< first NaN/+inf read, packed (b, t, v, kind)
  CtcBeamSeed seed;               ///< streaming (args.seeded)
};

/** Clears every beam (streaming: loads the seeded ones), t = 0, the query mask and the loop flag. */
void launch_ctc_beam_begin(const CtcBeamDeviceState& g, cudaStream_t stream);
/** One block per utterance with frame t: the K best proposals of its K·C (slot, column) pairs, then ctc_beam_keep. */
void launch_ctc_beam_frame(const CtcBeamDeviceState& g, cudaStream_t stream);
/** t += 1, then the query mask and the loop flag for the new frame. */
void launch_ctc_beam_next_frame(const CtcBeamDeviceState& g, cudaStream_t stream);

/** Loads every CTC beam kernel, so that the first capture does not. */
void preload_ctc_beam_kernels();

}  // namespace asrdec::detail

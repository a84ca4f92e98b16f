#pragma once
// Internal: bringing the beams of a CUDA beam search back to the host, which every CUDA beam executor does once
// per decode.

#include <cuda_runtime.h>

#include <cstdint>

#include "asrdec/hyps/beam_hyps_ref.hpp"

namespace asrdec::detail {

/** Copies the first `batch` utterances of the device beams `device` into `host` (pinned memory of the same beam and
 *  capacity) on `stream` and synchronises it: the per-slot state that beam_hypothesis and beam_ranking read, then
 *  only the filled entries of the back-pointer tree (TDT durations included). Copies the caller enqueued on
 *  `stream` before are complete on return too. */
void copy_beams_to_host(const BeamHypsRef& device, const BeamHypsRef& host, std::int64_t batch, cudaStream_t stream);

}  // namespace asrdec::detail

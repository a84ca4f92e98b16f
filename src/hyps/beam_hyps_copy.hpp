#pragma once
// Internal: bringing the beams of a CUDA beam search back to the host, which every CUDA beam executor does once
// per decode.

#include <cuda_runtime.h>

#include <cstdint>

#include "asrdec/hyps/beam_hyps_ref.hpp"

namespace asrdec::detail {

/** Copies the first `batch` utterances of the device beams `device` into `host` (pinned memory of the same beam and
 *  capacity) on `stream` and synchronises it: every slot's state (what beam_hypothesis and beam_ranking read, and
 *  what a streaming channel keeps: hashes, frames), then only the filled entries of the back-pointer tree (TDT
 * durations included). Copies the caller enqueued on `stream` before are complete on return too. */
void copy_beams_to_host(const BeamHypsRef& device, const BeamHypsRef& host, std::int64_t batch, cudaStream_t stream);

/** Streaming: the slot states of the first `batch` utterances of `host` (pinned, the same beam and capacity) go to
 *  `device` on `stream` (asynchronously; `host` must stay unchanged until the stream has run the copies). Entries are
 *  not copied: a loaded slot has none (steps 0). */
void copy_beam_slots_to_device(const BeamHypsRef& host, const BeamHypsRef& device, std::int64_t batch,
                               cudaStream_t stream);

}  // namespace asrdec::detail

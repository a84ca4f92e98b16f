#pragma once
// Internal: how the CPU search of AedDecoder drives a decoder step that lives on a CUDA device: each call's row
// arrays go to the device, the step runs on the caller's stream, and its scores come back to the host, where the
// search and the fused models run. One copy of [rows, V] floats per step; the search itself is not captured.

#include <cstdint>
#include <memory>
#include <vector>

#include "asrdec/aed/aed_step.hpp"

namespace asrdec::detail {

class AedDeviceStep {
 public:
  virtual ~AedDeviceStep() = default;
  /** session.start() on the device; its scores [batch, V] into `host_scores`. Synchronises `stream`. */
  virtual void start(AedStepSession& session, const TensorView& encoder, const std::int64_t* encoder_lengths,
                     const std::vector<std::vector<std::int32_t>>& prompts, float* host_scores,
                     StreamHandle stream) = 0;
  /** session.step() on the device with the host arrays copied there; its scores [rows, V] into `host_scores`.
   *  Synchronises `stream`. */
  virtual void step(AedStepSession& session, const std::int32_t* parents, const std::int32_t* tokens,
                    const std::int32_t* positions, const std::int32_t* active, std::int64_t rows, float* host_scores,
                    StreamHandle stream) = 0;
};

/** For a step on `device` (CUDA) with `vocab` tokens. Throws Unsupported in a build without CUDA. */
std::unique_ptr<AedDeviceStep> make_aed_device_step(Device device, std::int64_t vocab);

}  // namespace asrdec::detail

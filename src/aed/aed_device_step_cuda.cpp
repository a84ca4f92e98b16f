// AedDeviceStep for CUDA steps (aed_device_step.hpp): device buffers for the step's row arrays and scores, pinned
// staging on the host, copies ordered on the caller's stream.

#include <cuda_runtime_api.h>

#include <cstring>
#include <utility>

#include "aed/aed_device_step.hpp"
#include "asrdec/core/buffer.hpp"
#include "core/cuda/check.hpp"

namespace asrdec::detail {
namespace {

class CudaAedDeviceStep final : public AedDeviceStep {
 public:
  CudaAedDeviceStep(Device device, std::int64_t vocab) : device_(device), vocab_(vocab) {}

  void start(AedStepSession& session, const TensorView& encoder, const std::int64_t* encoder_lengths,
             const std::vector<std::vector<std::int32_t>>& prompts, float* host_scores, StreamHandle stream) override {
    const DeviceGuard guard(device_);
    const auto rows = static_cast<std::int64_t>(prompts.size());
    reserve(rows);
    session.start(encoder, encoder_lengths, prompts, scores_.data(), stream);
    fetch(rows, host_scores, stream);
  }

  void step(AedStepSession& session, const std::int32_t* parents, const std::int32_t* tokens,
            const std::int32_t* positions, const std::int32_t* active, std::int64_t rows, float* host_scores,
            StreamHandle stream) override {
    const DeviceGuard guard(device_);
    reserve(rows);
    const auto n = static_cast<std::size_t>(rows);
    // One H2D copy of the four arrays, staged side by side in pinned memory.
    std::memcpy(staged_.data(), parents, n * 4);
    std::memcpy(staged_.data() + n, tokens, n * 4);
    std::memcpy(staged_.data() + 2 * n, positions, n * 4);
    std::memcpy(staged_.data() + 3 * n, active, n * 4);
    copy_bytes_async(inputs_.data(), device_, staged_.data(), Device::cpu(), 4 * n * 4, stream);
    const std::int32_t* d = inputs_.data();
    session.step(d, d + n, d + 2 * n, d + 3 * n, rows, scores_.data(), stream);
    fetch(rows, host_scores, stream);
  }

 private:
  // Each pair (device, pinned) is allocated whole before it replaces the old one, so a pair that cannot be leaves
  // both halves as they were, of one size.
  void reserve(std::int64_t rows) {
    const auto n = static_cast<std::size_t>(rows);
    const std::size_t cells = n * static_cast<std::size_t>(vocab_);
    if (scores_.size() < cells || host_scores_.size() < cells) {
      DeviceBuffer<float> scores(cells, device_);
      PinnedBuffer<float> host_scores(cells, device_);
      scores_ = std::move(scores);
      host_scores_ = std::move(host_scores);
    }
    if (inputs_.size() < 4 * n || staged_.size() < 4 * n) {
      DeviceBuffer<std::int32_t> inputs(4 * n, device_);
      PinnedBuffer<std::int32_t> staged(4 * n, device_);
      inputs_ = std::move(inputs);
      staged_ = std::move(staged);
    }
  }

  // The scores back to the host (through pinned memory, so the copy is a real asynchronous DMA), then the wait.
  void fetch(std::int64_t rows, float* host_scores, StreamHandle stream) {
    const auto count = static_cast<std::size_t>(rows * vocab_);
    copy_bytes_async(host_scores_.data(), Device::cpu(), scores_.data(), device_, count * 4, stream);
    ASRDEC_CUDA_CHECK(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(stream)));
    std::memcpy(host_scores, host_scores_.data(), count * 4);
  }

  Device device_;
  std::int64_t vocab_;
  DeviceBuffer<float> scores_;
  PinnedBuffer<float> host_scores_;
  DeviceBuffer<std::int32_t> inputs_;
  PinnedBuffer<std::int32_t> staged_;
};

}  // namespace

std::unique_ptr<AedDeviceStep> make_aed_device_step(Device device, std::int64_t vocab) {
  return std::make_unique<CudaAedDeviceStep>(device, vocab);
}

}  // namespace asrdec::detail

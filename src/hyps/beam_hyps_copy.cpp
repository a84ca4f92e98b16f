#include "hyps/beam_hyps_copy.hpp"

#include <algorithm>
#include <utility>

#include "core/cuda/check.hpp"

namespace asrdec::detail {

void copy_beams_to_host(const BeamHypsRef& device, const BeamHypsRef& host, std::int64_t batch, cudaStream_t stream) {
  const auto n = static_cast<std::size_t>(batch * device.beam);
  const auto copy_back = [&](auto* target, const auto* source, std::size_t count) {
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(target, source, count * sizeof(*source), cudaMemcpyDeviceToHost, stream));
  };
  copy_back(host.steps, device.steps, n);
  copy_back(host.scores, device.scores, n);
  copy_back(host.tokens, device.tokens, n);
  copy_back(host.last_label, device.last_label, n);
  copy_back(host.hash, device.hash, n);
  copy_back(host.prefix_hash, device.prefix_hash, n);
  copy_back(host.next_time, device.next_time, n);
  copy_back(host.on_frame, device.on_frame, n);
  copy_back(host.overflow, device.overflow, static_cast<std::size_t>(batch));
  ASRDEC_CUDA_CHECK(cudaStreamSynchronize(stream));
  // Every slot of an utterance has the same number of entries; copy the columns up to the longest.
  const std::int32_t width = n > 0 ? *std::max_element(host.steps, host.steps + n) : 0;
  if (width == 0) return;
  const std::size_t pitch = static_cast<std::size_t>(device.capacity) * 4;
  const auto copy_cells = [&](std::int32_t* target, const std::int32_t* source) {
    ASRDEC_CUDA_CHECK(cudaMemcpy2DAsync(target, pitch, source, pitch, static_cast<std::size_t>(width) * 4, n,
                                        cudaMemcpyDeviceToHost, stream));
  };
  copy_cells(host.labels, device.labels);
  copy_cells(host.parents, device.parents);
  copy_cells(host.timestamps, device.timestamps);
  if (device.kind == BeamKind::tdt) copy_cells(host.durations, device.durations);
  ASRDEC_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void copy_beam_slots_to_device(const BeamHypsRef& host, const BeamHypsRef& device, std::int64_t batch,
                               cudaStream_t stream) {
  const auto n = static_cast<std::size_t>(batch * device.beam);
  const auto up = [&](auto* target, const auto* source, std::size_t count) {
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(target, source, count * sizeof(*source), cudaMemcpyHostToDevice, stream));
  };
  up(device.steps, host.steps, n);
  up(device.scores, host.scores, n);
  up(device.tokens, host.tokens, n);
  up(device.last_label, host.last_label, n);
  up(device.hash, host.hash, n);
  up(device.prefix_hash, host.prefix_hash, n);
  up(device.next_time, host.next_time, n);
  up(device.on_frame, host.on_frame, n);
  up(device.overflow, host.overflow, static_cast<std::size_t>(batch));
}

}  // namespace asrdec::detail

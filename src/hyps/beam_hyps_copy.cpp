#include "hyps/beam_hyps_copy.hpp"

#include <algorithm>
#include <utility>

#include "core/cuda/check.hpp"

namespace asrdec::detail {

namespace {

// Every slot's state (not its entries) and the utterances' overflow flags of the first `batch` utterances, from one
// view to the other, enqueued on `stream`.
void copy_slot_states(const BeamHypsRef& to, const BeamHypsRef& from, std::int64_t batch, cudaMemcpyKind kind,
                      cudaStream_t stream) {
  const auto n = static_cast<std::size_t>(batch * from.beam);
  const auto copy = [&](auto* target, const auto* source, std::size_t count) {
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(target, source, count * sizeof(*source), kind, stream));
  };
  copy(to.steps, from.steps, n);
  copy(to.scores, from.scores, n);
  copy(to.tokens, from.tokens, n);
  copy(to.last_label, from.last_label, n);
  copy(to.hash, from.hash, n);
  copy(to.prefix_hash, from.prefix_hash, n);
  copy(to.next_time, from.next_time, n);
  copy(to.on_frame, from.on_frame, n);
  copy(to.overflow, from.overflow, static_cast<std::size_t>(batch));
}

}  // namespace

void copy_beams_to_host(const BeamHypsRef& device, const BeamHypsRef& host, std::int64_t batch, cudaStream_t stream) {
  const auto n = static_cast<std::size_t>(batch * device.beam);
  copy_slot_states(host, device, batch, cudaMemcpyDeviceToHost, stream);
  ASRDEC_CUDA_CHECK(cudaStreamSynchronize(stream));
  // Every slot of an utterance has the same number of entries; copy the columns up to the longest.
  const std::int32_t width = n > 0 ? *std::max_element(host.steps, host.steps + n) : 0;
  if (width == 0) return;
  const std::size_t pitch = static_cast<std::size_t>(device.capacity) * 4;
  const auto copy_cells = [&](auto* target, const auto* source) {
    static_assert(sizeof(*source) == 4, "entries are 4-byte cells");
    ASRDEC_CUDA_CHECK(cudaMemcpy2DAsync(target, pitch, source, pitch, static_cast<std::size_t>(width) * 4, n,
                                        cudaMemcpyDeviceToHost, stream));
  };
  copy_cells(host.labels, device.labels);
  copy_cells(host.parents, device.parents);
  copy_cells(host.timestamps, device.timestamps);
  copy_cells(host.logprobs, device.logprobs);
  if (device.kind == BeamKind::tdt) copy_cells(host.durations, device.durations);
  ASRDEC_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void copy_beam_slots_to_device(const BeamHypsRef& host, const BeamHypsRef& device, std::int64_t batch,
                               cudaStream_t stream) {
  copy_slot_states(device, host, batch, cudaMemcpyHostToDevice, stream);
}

}  // namespace asrdec::detail

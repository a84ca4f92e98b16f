#include "core/bad_value.hpp"
#include "core/cuda/check.hpp"
#include "core/cuda/lane_copies.hpp"

namespace asrdec::detail {
namespace {

constexpr int kThreads = 256;

// One block per (lane, array) pair in a grid-stride loop; the block's threads copy the row's words.
__global__ void __launch_bounds__(kThreads) gather_lanes_kernel(LaneCopies c, std::int32_t lanes, int all_fresh) {
  const std::int64_t pairs = static_cast<std::int64_t>(lanes) * c.count;
  for (std::int64_t pair = blockIdx.x; pair < pairs; pair += gridDim.x) {
    const auto lane = static_cast<std::int32_t>(pair / c.count);
    const LaneArray& a = c.arrays[pair % c.count];
    const bool fresh = all_fresh || c.fresh[lane] != 0;
    const auto* from = static_cast<const std::uint32_t*>(fresh ? a.start : a.channels);
    const std::int64_t row = fresh ? (a.per_lane_start ? lane : 0) : c.slot[lane];
    auto* to = static_cast<std::uint32_t*>(a.lanes) + static_cast<std::int64_t>(lane) * a.words;
    for (std::int32_t w = threadIdx.x; w < a.words; w += blockDim.x) to[w] = from[row * a.words + w];
  }
}

__global__ void __launch_bounds__(kThreads) scatter_lanes_kernel(LaneCopies c, std::int32_t lanes) {
  if (c.bad_value != nullptr && *c.bad_value != kNoBadValue) return;
  const std::int64_t pairs = static_cast<std::int64_t>(lanes) * c.count;
  for (std::int64_t pair = blockIdx.x; pair < pairs; pair += gridDim.x) {
    const auto lane = static_cast<std::int32_t>(pair / c.count);
    const LaneArray& a = c.arrays[pair % c.count];
    const auto* from = static_cast<const std::uint32_t*>(a.lanes) + static_cast<std::int64_t>(lane) * a.words;
    auto* to = static_cast<std::uint32_t*>(a.channels) + static_cast<std::int64_t>(c.slot[lane]) * a.words;
    for (std::int32_t w = threadIdx.x; w < a.words; w += blockDim.x) to[w] = from[w];
  }
}

int blocks_for(std::int64_t pairs) { return static_cast<int>(pairs < 1 ? 1 : (pairs > 4096 ? 4096 : pairs)); }

}  // namespace

void launch_gather_lanes(const LaneCopies& copies, std::int32_t lanes, bool all_fresh, cudaStream_t stream) {
  if (lanes == 0 || copies.count == 0) return;
  gather_lanes_kernel<<<blocks_for(static_cast<std::int64_t>(lanes) * copies.count), kThreads, 0, stream>>>(
      copies, lanes, all_fresh ? 1 : 0);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "gather_lanes_kernel");
}

void launch_scatter_lanes(const LaneCopies& copies, std::int32_t lanes, cudaStream_t stream) {
  if (lanes == 0 || copies.count == 0) return;
  scatter_lanes_kernel<<<blocks_for(static_cast<std::int64_t>(lanes) * copies.count), kThreads, 0, stream>>>(copies,
                                                                                                             lanes);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "scatter_lanes_kernel");
}

void preload_lane_copy_kernels() {
  cudaFuncAttributes attributes{};
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, gather_lanes_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, scatter_lanes_kernel));
}

}  // namespace asrdec::detail

#pragma once
// Internal (CUDA host code): the launch of a persistent kernel, whose blocks wait for each other at grid barriers
// (core/cuda/grid_barrier.cuh), and the grid it may have: greedy decoding's and beam search's share them.

#include <cuda_runtime.h>

#include <cstddef>

#include "core/cuda/check.hpp"

namespace asrdec::detail {

/** Blocks of `kernel` that the current device runs at once with `threads` threads and `shared_bytes` of dynamic
 *  shared memory a block (0 when it cannot run one): the most a grid barrier may wait for. */
template <class Kernel>
int resident_blocks(Kernel kernel, int threads, std::size_t shared_bytes) {
  int device = 0;
  int multiprocessors = 0;
  ASRDEC_CUDA_CHECK(cudaGetDevice(&device));
  ASRDEC_CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  int per_multiprocessor = 0;
  ASRDEC_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, kernel, threads, shared_bytes));
  return per_multiprocessor * multiprocessors;
}

/** Enqueues `kernel(args...)` on `blocks` blocks, cooperatively: the driver starts every block at once or refuses
 *  the launch, where a plain one could leave blocks waiting at a barrier for places held by other work (the
 *  barrier's timeout still guards). Valid in CUDA graphs. First clears the barrier's arrival count (a launch that
 *  stopped early may have left arrivals counted) and the kernel's status word. */
template <class... Params, class... Args>
void launch_persistent(void (*kernel)(Params...), unsigned int* arrivals, int* status, int blocks, int threads,
                       std::size_t shared_bytes, cudaStream_t stream, Args&&... args) {
  ASRDEC_CUDA_CHECK(cudaMemsetAsync(arrivals, 0, sizeof(unsigned int), stream));
  ASRDEC_CUDA_CHECK(cudaMemsetAsync(status, 0, sizeof(int), stream));
  cudaLaunchAttribute cooperative{};
  cooperative.id = cudaLaunchAttributeCooperative;
  cooperative.val.cooperative = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned int>(blocks));
  config.blockDim = dim3(static_cast<unsigned int>(threads));
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = &cooperative;
  config.numAttrs = 1;
  ASRDEC_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, static_cast<Args&&>(args)...));
}

}  // namespace asrdec::detail

#pragma once
// Internal (CUDA): "the last block to finish does the rest". A kernel whose blocks each produce part of the data
// that a single block must then read (every row's choice, every slot's proposals) calls last_block_done() at its
// end and lets the block that returns true go on with the rest, instead of ending and launching a one-block kernel
// after it: one dependent graph node less.

#include <cuda_runtime.h>

namespace asrdec::detail {

/** Every thread of every block calls it once per launch, after writing its block's part. Each block publishes its
 *  writes (a fence) before counting itself done in *count, so the block that counts last, which alone gets true,
 *  sees every block's writes; it sets *count back to 0 for the next launch. *count must be 0 before the first. */
__device__ inline bool last_block_done(int* count) {
  __shared__ bool last;
  // A one-block launch (greedy's epilogue at batch 1) is its own last block: a barrier makes its threads' writes
  // visible to each other, without the two fences and the atomic round trip on the step's critical path.
  if (gridDim.x == 1) {  // grid-uniform
    __syncthreads();
    return true;
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(count, 1) == static_cast<int>(gridDim.x) - 1;
  __syncthreads();
  if (!last) return false;  // block-uniform
  __threadfence();
  if (threadIdx.x == 0) *count = 0;
  return true;
}

}  // namespace asrdec::detail

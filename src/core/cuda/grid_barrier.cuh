#pragma once
// Internal (CUDA): a barrier across every block of one launch, for persistent kernels (a whole decode loop in one
// kernel whose phases depend on each other's results across blocks). Every block must be running at once: launch
// cooperatively (cudaLaunchAttributeCooperative, valid in CUDA graphs too) with no more blocks than the device runs
// at once. As a guard against a hang all the same, a block that waits too long gives up: the barrier records
// kGridBarrierTimedOut in *status and every block returns false from then on, so the kernel ends and the host reports
// the error. Unlike cooperative_groups' grid.sync, it needs no -rdc build and carries that timeout.

#include <cuda_runtime.h>

#include <cstdint>

#include "core/grid_barrier_status.hpp"

namespace asrdec::detail {

/** Device words of one barrier: zero before the first launch that uses them (arrived returns to 0 after each
 *  barrier; generation only grows). status is the kernel's error word, shared with other error kinds. */
struct GridBarrier {
  unsigned int* arrived;
  unsigned int* generation;
  int* status;
};

__device__ inline unsigned long long grid_barrier_now_ns() {
  unsigned long long now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

/** Every thread of every block calls it at the same point of the program. Returns true when every block has arrived
 *  (each block's writes before the call are then visible to every thread after it: fences around the count), false
 *  when the kernel must stop (*status is not kGridBarrierOk: a timeout here, or an error another block recorded). The
 *  result is the same in every thread of a block. */
__device__ inline bool grid_barrier_wait(const GridBarrier& barrier) {
  __shared__ int stop;
  __syncthreads();  // the block's writes are done
  if (threadIdx.x == 0) {
    volatile unsigned int* generation = barrier.generation;
    volatile int* status = barrier.status;
    // Read before arriving: the generation cannot move on until this block has arrived.
    const unsigned int mine = *generation;
    __threadfence();  // publish this block's writes before counting it in
    if (atomicAdd(barrier.arrived, 1u) == gridDim.x - 1) {
      // Reset before the new generation: no block arrives at the next barrier until it has seen the new generation.
      atomicExch(barrier.arrived, 0u);
      __threadfence();
      atomicAdd(barrier.generation, 1u);
    } else {
      const unsigned long long start = grid_barrier_now_ns();
      while (*generation == mine) {
        if (*status != kGridBarrierOk) break;  // an error elsewhere: the others will not all come
        if (grid_barrier_now_ns() - start > kGridBarrierTimeoutNs) {
          atomicCAS(barrier.status, kGridBarrierOk, kGridBarrierTimedOut);
          break;
        }
#if __CUDA_ARCH__ >= 700
        __nanosleep(32);
#endif
      }
    }
    __threadfence();  // the other blocks' writes, published before they arrived, are read after this
    stop = *status != kGridBarrierOk;
  }
  __syncthreads();
  return !stop;
}

}  // namespace asrdec::detail

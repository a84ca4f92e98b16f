#pragma once
// Internal (CUDA): a barrier across every block of one launch, for persistent kernels (a whole decode loop in one
// kernel whose phases depend on each other's results across blocks). Every block must be running at once: launch
// cooperatively (cudaLaunchAttributeCooperative, valid in CUDA graphs too) with no more blocks than the device runs
// at once. As a guard against a hang all the same, a block that waits too long gives up: the barrier records
// kGridBarrierTimedOut in *status and every block returns false from then on, so the kernel ends and the host reports
// the error. Unlike cooperative_groups' grid.sync, it needs no -rdc build, carries that timeout, and lets the last
// block to arrive run a serial section before it releases the others (grid_barrier_arrive_block). The protocol itself
// is core/grid_barrier_protocol.hpp, which the CPU tests run on threads.

#include <cuda_runtime.h>

#include <cstdint>

#include "core/grid_barrier_protocol.hpp"

namespace asrdec::detail {

/** The protocol's memory operations in a CUDA block's thread. */
struct DeviceGridBarrierOps {
  template <class T>
  __device__ static T load(const T* word) {
    return *static_cast<const volatile T*>(word);  // past this multiprocessor's L1
  }
  __device__ static void store(unsigned int* word, unsigned int value) { atomicExch(word, value); }
  __device__ static unsigned int fetch_add(unsigned int* word, unsigned int value) { return atomicAdd(word, value); }
  __device__ static void fence() { __threadfence(); }
  __device__ static void compare_exchange(int* word, int expected, int desired) { atomicCAS(word, expected, desired); }
  __device__ static std::uint64_t now_ns() {
    unsigned long long now = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    return now;
  }
  __device__ static void pause() {
#if __CUDA_ARCH__ >= 700
    __nanosleep(32);
#endif
  }
};

/** A block at a barrier whose last block runs a serial section. */
struct GridBarrierArrival {
  bool last;   ///< this block arrived last: it runs the serial section (if go_on), then grid_barrier_release_block
  bool go_on;  ///< false when the kernel must stop (*status is not kGridBarrierOk)
};

/** Every thread of every block calls it at the same point of the program; the result is the same in every thread of
 *  a block. Every block but the last returns once the last has released it (or the kernel must stop): each block's
 *  writes before the call, and the last block's serial section's, are then visible to every thread after it. The
 *  last block returns at once, and every block's writes before the call are visible to its threads; it must run its
 *  serial section (only if go_on) and then call grid_barrier_release_block, with all its threads. Written as two
 *  calls rather than one that takes the section as a function: a lambda over a kernel's by-value parameters makes
 *  ptxas copy them into local memory (the persistent greedy kernel's stack frame doubled). */
__device__ inline GridBarrierArrival grid_barrier_arrive_block(const GridBarrier& barrier) {
  using Ops = DeviceGridBarrierOps;
  __shared__ bool last;
  __shared__ bool stop;
  __syncthreads();  // the block's writes are done
  if (threadIdx.x == 0) {
    unsigned int seen = 0;
    last = grid_barrier_arrive<Ops>(barrier, gridDim.x, seen);
    if (!last) grid_barrier_await<Ops>(barrier, seen, kGridBarrierTimeoutNs);
    stop = !grid_barrier_passed<Ops>(barrier);
  }
  __syncthreads();
  // Read here, before thread 0 can write them again at the next barrier (after its first __syncthreads).
  return GridBarrierArrival{last, !stop};
}

/** The last block, after its serial section: lets the others go on. */
__device__ inline void grid_barrier_release_block(const GridBarrier& barrier) {
  __syncthreads();  // the serial section's writes are done
  if (threadIdx.x == 0) grid_barrier_release<DeviceGridBarrierOps>(barrier);
}

/** A plain barrier: every thread of every block calls it at the same point of the program. Returns true when every
 *  block has arrived (each block's writes before the call are then visible to every thread after it), false when the
 *  kernel must stop. The result is the same in every thread of a block. */
__device__ inline bool grid_barrier_wait(const GridBarrier& barrier) {
  using Ops = DeviceGridBarrierOps;
  __shared__ bool stop;
  __syncthreads();  // the block's writes are done
  if (threadIdx.x == 0) {
    unsigned int seen = 0;
    if (grid_barrier_arrive<Ops>(barrier, gridDim.x, seen)) {
      grid_barrier_release<Ops>(barrier);  // the last to arrive lets the others go on at once
    } else {
      grid_barrier_await<Ops>(barrier, seen, kGridBarrierTimeoutNs);
    }
    stop = !grid_barrier_passed<Ops>(barrier);
  }
  __syncthreads();
  return !stop;
}

}  // namespace asrdec::detail

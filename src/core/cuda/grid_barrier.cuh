#pragma once
// Internal (CUDA): a barrier across every block of one launch, for persistent kernels (a whole decode loop in one
// kernel whose phases depend on each other's results across blocks). Every block must be running at once: launch
// cooperatively (cudaLaunchAttributeCooperative, valid in CUDA graphs too) with no more blocks than the device runs
// at once. As a guard against a hang all the same, a block that waits too long gives up: the barrier records
// kGridBarrierTimedOut in *status and every block returns false from then on, so the kernel ends and the host reports
// the error. Unlike cooperative_groups' grid.sync, it needs no -rdc build, carries that timeout, and lets the last
// block to arrive run a serial section before it releases the others (grid_barrier_wait_then). The protocol itself is
// core/grid_barrier_protocol.hpp, which the CPU tests run on threads.

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

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

/** grid_barrier_wait's serial section: none, so the last block releases the others at once. */
struct NoSerialSection {
  __device__ void operator()() const {}
};

/** Every thread of every block calls it at the same point of the program. The block that arrives last runs
 *  `serial()` with all its threads (only while no error is recorded), then releases the others. Returns true when the
 *  kernel goes on: each block's writes before the call, and the serial section's, are then visible to every thread
 *  after it. Returns false when the kernel must stop (*status is not kGridBarrierOk: a timeout here, or an error
 *  another block recorded). The result is the same in every thread of a block. */
template <class Serial>
__device__ inline bool grid_barrier_wait_then(const GridBarrier& barrier, const Serial& serial) {
  using Ops = DeviceGridBarrierOps;
  constexpr bool plain = std::is_same<Serial, NoSerialSection>::value;
  __shared__ bool last;
  __shared__ bool stop;
  __syncthreads();  // the block's writes are done
  if (threadIdx.x == 0) {
    unsigned int seen = 0;
    last = grid_barrier_arrive<Ops>(barrier, gridDim.x, seen);
    if (!last) {
      grid_barrier_await<Ops>(barrier, seen, kGridBarrierTimeoutNs);
    } else if (plain) {
      grid_barrier_release<Ops>(barrier);
    }
    stop = !grid_barrier_passed<Ops>(barrier);
  }
  __syncthreads();
  const bool go_on = !stop;  // read before thread 0 can write it again at the next barrier
  if (!plain && last) {      // block-uniform
    if (go_on) serial();
    __syncthreads();  // the serial section's writes are done
    if (threadIdx.x == 0) grid_barrier_release<Ops>(barrier);
  }
  return go_on;
}

/** A plain barrier: grid_barrier_wait_then without a serial section. */
__device__ inline bool grid_barrier_wait(const GridBarrier& barrier) {
  return grid_barrier_wait_then(barrier, NoSerialSection{});
}

}  // namespace asrdec::detail

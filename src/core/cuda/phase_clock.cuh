#pragma once
// Internal (CUDA): a persistent kernel's time by phase (core/phase_times.hpp says why and how it is reported). Block
// 0's thread 0 reads the global timer as it leaves each grid barrier and adds the time since it left the previous one
// to that phase's total: a phase as the grid lives it (its slowest block, then the barrier). One thread of one block
// writes the totals, so plain adds suffice; a null `totals` (the default) turns every mark into a test of a
// parameter.

#include <cuda_runtime.h>

#include "core/cuda/grid_barrier.cuh"

namespace asrdec::detail {

/** The global timer, in nanoseconds (the grid barrier's clock). */
__device__ inline unsigned long long phase_clock_now() { return DeviceGridBarrierOps::now_ns(); }

/** Every thread may call it; only block 0's thread 0 counts, into totals[phase] (nanoseconds since `last`, which
 *  becomes now). `last` starts at phase_clock_now() after the kernel's first barrier. */
__device__ inline void phase_clock_mark(unsigned long long* totals, int phase, unsigned long long& last) {
  if (totals == nullptr || blockIdx.x != 0 || threadIdx.x != 0) return;
  const unsigned long long now = phase_clock_now();
  totals[phase] += now - last;
  last = now;
}

}  // namespace asrdec::detail

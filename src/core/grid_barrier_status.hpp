#pragma once
// Internal: the error word of a persistent CUDA kernel (core/cuda/grid_barrier.cuh), as the host reads it back after
// the kernel: 0 when the kernel ran to its end. Host-only constants, so the host code that reports them needs no CUDA.

#include <cstdint>

namespace asrdec::detail {

constexpr int kGridBarrierOk = 0;
/** A block waited at a grid barrier longer than kGridBarrierTimeoutNs: some block never started (the device was
 *  kept busy by other work for that long) or the kernel is broken; every block stopped. */
constexpr int kGridBarrierTimedOut = 1;
/** A loop of the kernel reached its iteration cap (the kernel's own code; the value is the kernel's). */
constexpr int kGridBarrierLoopCap = 2;

/** How long a block waits at one barrier before the kernel gives up: far beyond any phase of a decode step (µs), short
 *  enough that a user sees an error rather than a hung process. */
constexpr std::uint64_t kGridBarrierTimeoutNs = 10'000'000'000ull;

}  // namespace asrdec::detail

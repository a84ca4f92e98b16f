#pragma once
// Internal: the counting barrier that persistent CUDA kernels put between dependent phases
// (core/cuda/grid_barrier.cuh), written once over the memory operations of an executor (`Ops`), so that the CPU tests
// run the same protocol with threads in the place of blocks.
//
// A barrier is three words: how many blocks have arrived, the generation (how many barriers have completed) and the
// kernel's error word. One thread of each block arrives (grid_barrier_arrive). The block that arrives last may run a
// serial section — work that needs every block's results and that every block needs, such as a decode step's choices —
// and then releases the others (grid_barrier_release): one barrier where "wait, one block works, wait" took two. The
// others wait for the new generation (grid_barrier_await); a wait that lasts too long, or an error another block
// recorded, ends it, and every block then learns from grid_barrier_passed that the kernel must stop.
//
// Ops provides, as static functions: load (a load that sees other blocks' stores), store, fetch_add, fence (orders this
// thread's accesses before and after it, for every block), compare_exchange, now_ns and pause.

#include <cstdint>

#include "asrdec/detail/hd.hpp"
#include "core/grid_barrier_status.hpp"

namespace asrdec::detail {

/** Device words of one barrier: zero before the first launch that uses them (arrived returns to 0 after each
 *  barrier; generation only grows). status is the kernel's error word, shared with other error kinds. */
struct GridBarrier {
  unsigned int* arrived;
  unsigned int* generation;
  int* status;
};

/** One block's arrival (one of its threads), after the block's writes for the barrier are done. `seen` gets the
 *  generation this barrier completes. Returns true for the block that arrives last of `blocks`: it alone must call
 *  grid_barrier_release, after its serial section if it has one; every other block calls grid_barrier_await. */
template <class Ops>
ASRDEC_HD_INLINE bool grid_barrier_arrive(const GridBarrier& barrier, unsigned int blocks, unsigned int& seen) {
  // Read before arriving: the generation cannot move on until this block has arrived.
  seen = Ops::load(barrier.generation);
  Ops::fence();  // publish this block's writes before counting it in
  return Ops::fetch_add(barrier.arrived, 1u) == blocks - 1;
}

/** The last block lets the others go on; its writes before the call (the serial section's) are visible to them. */
template <class Ops>
ASRDEC_HD_INLINE void grid_barrier_release(const GridBarrier& barrier) {
  // Reset before the new generation: no block arrives at the next barrier until it has seen the new generation.
  Ops::store(barrier.arrived, 0u);
  Ops::fence();
  Ops::fetch_add(barrier.generation, 1u);
}

/** A block that did not arrive last waits until the generation moves past `seen`, until an error is recorded, or
 *  `timeout_ns` (then it records kGridBarrierTimedOut, unless another error came first). */
template <class Ops>
ASRDEC_HD_INLINE void grid_barrier_await(const GridBarrier& barrier, unsigned int seen, std::uint64_t timeout_ns) {
  const std::uint64_t start = Ops::now_ns();
  while (Ops::load(barrier.generation) == seen) {
    if (Ops::load(barrier.status) != kGridBarrierOk) return;  // an error elsewhere: the others will not all come
    if (Ops::now_ns() - start > timeout_ns) {
      Ops::compare_exchange(barrier.status, kGridBarrierOk, kGridBarrierTimedOut);
      return;
    }
    Ops::pause();
  }
}

/** After the arrival (and, for the others, the wait): whether the kernel goes on. The writes other blocks published
 *  before they arrived are visible to this thread's reads after the call (the fence). */
template <class Ops>
ASRDEC_HD_INLINE bool grid_barrier_passed(const GridBarrier& barrier) {
  Ops::fence();
  return Ops::load(barrier.status) == kGridBarrierOk;
}

}  // namespace asrdec::detail

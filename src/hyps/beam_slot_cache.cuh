#pragma once
// Internal (CUDA): a block's copy, in shared memory, of the per-slot state of a range of beam slots.
//
// The update rules of beam_hyps_ref.hpp run as short phases two barriers apart, each reading a few per-slot values
// of every other slot of the utterance (recombination, the frame cap, prefix search) one after another. From global
// memory every such read is an L2 round trip on the phase's critical path, and a step of ten phases waits for tens of
// them. A block that owns an utterance (or, in one block, every utterance) for a step instead loads the slots' state
// once, runs the phases on the copy, and writes it back: the same functions, handed a BeamHypsRef whose per-slot
// arrays point into shared memory. The back-pointer tree (written once per slot and step) and the overflow flags
// stay in global memory.

#include <cstddef>
#include <cstdint>

#include "asrdec/hyps/beam_hyps_ref.hpp"

namespace asrdec::detail {

/** Shared memory that beam_slot_cache_load needs per slot: the eight state arrays and their seven staged copies. */
constexpr std::size_t kBeamSlotCacheBytesPerSlot =
    4 * sizeof(std::uint64_t) + 2 * sizeof(float) + 9 * sizeof(std::int32_t);

/** Whether `slots` slots fit in `bytes` of cache. */
__host__ __device__ constexpr bool beam_slot_cache_fits(std::int64_t slots, std::size_t bytes) {
  return slots >= 0 && static_cast<std::size_t>(slots) * kBeamSlotCacheBytesPerSlot <= bytes;
}

/** `array` moved so that index `first` lands on `base[0]`. The view is indexed with the same slot numbers as the
 *  global arrays (beam_slot(h, b, k)), and only at slots first … first + n - 1, which land inside the cache; the
 *  offset is integer arithmetic on the generic address, which CUDA's flat address space turns back exactly. */
template <class T>
__device__ __forceinline__ T* beam_slot_cache_shift(T* base, std::int64_t first) {
  return reinterpret_cast<T*>(reinterpret_cast<std::uintptr_t>(base) - static_cast<std::uintptr_t>(first) * sizeof(T));
}

/** Copies the per-slot state of slots first … first + n - 1 of `h` into `cache` (kBeamSlotCacheBytesPerSlot · n
 *  bytes of shared memory, 8-byte aligned) and returns the view that reads and writes the copies. Every thread of
 *  the block calls it; it ends with a barrier. The staged arrays are not loaded: every phase writes them before the
 *  next one reads them. */
__device__ inline BeamHypsRef beam_slot_cache_load(const BeamHypsRef& h, std::int64_t first, std::int64_t n,
                                                   unsigned char* cache) {
  auto* hash = reinterpret_cast<std::uint64_t*>(cache);
  std::uint64_t* prefix_hash = hash + n;
  std::uint64_t* staged_hash = prefix_hash + n;
  std::uint64_t* staged_prefix_hash = staged_hash + n;
  auto* scores = reinterpret_cast<float*>(staged_prefix_hash + n);
  float* staged_score = scores + n;
  auto* steps = reinterpret_cast<std::int32_t*>(staged_score + n);
  std::int32_t* tokens = steps + n;
  std::int32_t* last_label = tokens + n;
  std::int32_t* next_time = last_label + n;
  std::int32_t* on_frame = next_time + n;
  std::int32_t* staged_tokens = on_frame + n;
  std::int32_t* staged_last_label = staged_tokens + n;
  std::int32_t* staged_next_time = staged_last_label + n;
  std::int32_t* staged_on_frame = staged_next_time + n;
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const std::int64_t s = first + i;
    hash[i] = h.hash[s];
    prefix_hash[i] = h.prefix_hash[s];
    scores[i] = h.scores[s];
    steps[i] = h.steps[s];
    tokens[i] = h.tokens[s];
    last_label[i] = h.last_label[s];
    next_time[i] = h.next_time[s];
    on_frame[i] = h.on_frame[s];
  }
  BeamHypsRef view = h;
  view.hash = beam_slot_cache_shift(hash, first);
  view.prefix_hash = beam_slot_cache_shift(prefix_hash, first);
  view.staged_hash = beam_slot_cache_shift(staged_hash, first);
  view.staged_prefix_hash = beam_slot_cache_shift(staged_prefix_hash, first);
  view.scores = beam_slot_cache_shift(scores, first);
  view.staged_score = beam_slot_cache_shift(staged_score, first);
  view.steps = beam_slot_cache_shift(steps, first);
  view.tokens = beam_slot_cache_shift(tokens, first);
  view.last_label = beam_slot_cache_shift(last_label, first);
  view.next_time = beam_slot_cache_shift(next_time, first);
  view.on_frame = beam_slot_cache_shift(on_frame, first);
  view.staged_tokens = beam_slot_cache_shift(staged_tokens, first);
  view.staged_last_label = beam_slot_cache_shift(staged_last_label, first);
  view.staged_next_time = beam_slot_cache_shift(staged_next_time, first);
  view.staged_on_frame = beam_slot_cache_shift(staged_on_frame, first);
  __syncthreads();
  return view;
}

/** Writes the state of slots first … first + n - 1 back from the cached view to `h` (the staged arrays are scratch
 *  of one step and stay behind). Every thread of the block calls it, after a barrier that ends the phases. */
__device__ inline void beam_slot_cache_store(const BeamHypsRef& cached, const BeamHypsRef& h, std::int64_t first,
                                             std::int64_t n) {
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const std::int64_t s = first + i;
    h.hash[s] = cached.hash[s];
    h.prefix_hash[s] = cached.prefix_hash[s];
    h.scores[s] = cached.scores[s];
    h.steps[s] = cached.steps[s];
    h.tokens[s] = cached.tokens[s];
    h.last_label[s] = cached.last_label[s];
    h.next_time[s] = cached.next_time[s];
    h.on_frame[s] = cached.on_frame[s];
  }
}

}  // namespace asrdec::detail

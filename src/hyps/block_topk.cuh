#pragma once
// The K best candidates of a CUDA block's work in beam_before order, for the beam-search kernels (ALSD++ proposals,
// CTC beam frames). Each thread first keeps the K best of its own share with topk_insert; then K rounds of a
// block-wide arg-best over the heads of the threads' lists take them out in order. Every one of the K best of all
// candidates is among the K best of its thread's share, and the order is total (ids are distinct), so the result is
// the same K candidates in the same order as one topk_insert over all of them: the CPU executors' loop.
//
// A round costs a warp shuffle reduction and one block barrier, so a block of T threads finds the K best of n
// candidates in about n/T inserts and K rounds, where one thread would make n inserts.

#include <cstdint>

#include "hyps/beam_search_step.hpp"

namespace asrdec::detail {

/** The id a thread offers once its list is exhausted: after every real candidate in beam_before order. */
constexpr std::int32_t kNoTopkCandidate = 0x7fffffff;

/** Shared memory of block_topk_merge: each warp's best head, twice (rounds alternate, so one barrier a round). */
struct BlockTopkShared {
  float score[2][32];
  std::int32_t id[2][32];
};

/** Keeps in (score, id) whichever of it and (other_score, other_id) comes first in beam_before order. */
__device__ __forceinline__ void topk_keep_first(float& score, std::int32_t& id, float other_score,
                                                std::int32_t other_id) {
  if (beam_before(other_score, other_id, score, id)) {
    score = other_score;
    id = other_id;
  }
}

/** Merges the threads' lists (`mine`: this thread's `count` entries in beam_before order, ids distinct across the
 *  block) into the block's k best, written by thread 0 to out_scores/out_ids; returns their number (the same in
 *  every thread). Every thread of the block must call it; blockDim.x is a multiple of 32. */
__device__ inline std::int32_t block_topk_merge(const float* my_scores, const std::int32_t* my_ids,
                                                std::int32_t my_count, std::int32_t k, float* out_scores,
                                                std::int32_t* out_ids, BlockTopkShared& shared) {
  constexpr unsigned kFullWarp = 0xffffffffu;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int warps = static_cast<int>(blockDim.x) / 32;
  std::int32_t head = 0;
  std::int32_t kept = 0;
  for (; kept < k; ++kept) {
    const int buffer = kept & 1;
    float score = head < my_count ? my_scores[head] : -__builtin_huge_valf();
    std::int32_t id = head < my_count ? my_ids[head] : kNoTopkCandidate;
    for (int offset = 16; offset > 0; offset >>= 1) {
      const float other_score = __shfl_xor_sync(kFullWarp, score, offset);
      const std::int32_t other_id = __shfl_xor_sync(kFullWarp, id, offset);
      topk_keep_first(score, id, other_score, other_id);
    }
    if ((threadIdx.x & 31) == 0) {
      shared.score[buffer][warp] = score;
      shared.id[buffer][warp] = id;
    }
    // The buffer written here was last read two rounds ago, before the previous round's barrier.
    __syncthreads();
    float best = shared.score[buffer][0];
    std::int32_t best_id = shared.id[buffer][0];
    for (int w = 1; w < warps; ++w) topk_keep_first(best, best_id, shared.score[buffer][w], shared.id[buffer][w]);
    if (best_id == kNoTopkCandidate) break;  // every list is exhausted (block-uniform)
    if (threadIdx.x == 0) {
      out_scores[kept] = best;
      out_ids[kept] = best_id;
    }
    if (head < my_count && my_ids[head] == best_id) ++head;
  }
  // The next call may write the buffers this call's last two rounds read.
  __syncthreads();
  return kept;
}

}  // namespace asrdec::detail

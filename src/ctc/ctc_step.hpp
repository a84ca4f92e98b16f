#pragma once
// Per-element rules of CTC greedy decoding, shared by the CPU loop and the CUDA kernels.

#include <cstdint>

#include "asrdec/detail/argmax.hpp"
#include "asrdec/detail/hd.hpp"

namespace asrdec::detail {

/** A token is emitted at a frame when it is not blank and differs from the previous frame's argmax
 *  (`previous` = -1 at the first frame): repeats collapse unless a blank separates them. */
ASRDEC_HD_INLINE bool ctc_emits(std::int32_t token, std::int32_t previous, std::int32_t blank) {
  return token != blank && token != previous;
}

/** The frame's token from its argmax: a frame where nothing could be compared (every value NaN, possible
 *  only with value checks disabled) counts as blank rather than yielding an invalid id. */
ASRDEC_HD_INLINE std::int32_t ctc_frame_token(ArgMax best, std::int32_t blank) {
  return best.index == argmax_identity().index ? blank : best.index;
}

}  // namespace asrdec::detail

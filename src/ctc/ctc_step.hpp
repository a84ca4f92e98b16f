#pragma once
// Per-element rules of CTC greedy decoding, shared by the CPU loop and the CUDA kernels.

#include <cstdint>

#include "asrdec/detail/argmax.hpp"
#include "asrdec/detail/hd.hpp"
#include "core/bad_value.hpp"

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

/** Values a log-probability may not take: NaN and +inf (-inf, log 0, is valid). */
ASRDEC_HD_INLINE bool is_invalid_logprob(float x) {
  return static_cast<bool>(static_cast<int>(x != x) | static_cast<int>(x > 3.402823466e+38f));  // branch-free
}

/** An utterance length is usable when 0 <= length <= frames. */
ASRDEC_HD_INLINE bool length_in_range(std::int64_t length, std::int64_t frames) {
  return length >= 0 && length <= frames;
}

}  // namespace asrdec::detail

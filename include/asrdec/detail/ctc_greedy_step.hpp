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

/** Values a log-probability may not take: NaN and +inf (-inf, log 0, is valid). */
ASRDEC_HD_INLINE bool is_invalid_logprob(float x) {
  return static_cast<bool>(static_cast<int>(x != x) | static_cast<int>(x > 3.402823466e+38f));  // branch-free
}

/** An utterance length is usable when 0 <= length <= frames. */
ASRDEC_HD_INLINE bool length_in_range(std::int64_t length, std::int64_t frames) {
  return length >= 0 && length <= frames;
}

// The first invalid value of a batch is located by the smallest key (b, t, v) and carries whether it was NaN:
// bits 43..63 hold b, 22..42 hold t, 1..21 hold v and bit 0 is 0 for NaN, 1 for +inf, so that one atomicMin
// over keys finds the first invalid element in (b, t, v) order on the device.
constexpr int kBadValueFieldBits = 21;
constexpr std::int64_t kBadValueFieldLimit = std::int64_t{1} << kBadValueFieldBits;
constexpr unsigned long long kNoBadValue = ~0ull;
constexpr int kBadValueShiftB = 2 * kBadValueFieldBits + 1;
constexpr int kBadValueShiftT = kBadValueFieldBits + 1;
constexpr int kBadValueShiftV = 1;

ASRDEC_HD_INLINE unsigned long long pack_bad_value(std::int64_t b, std::int64_t t, std::int64_t v, bool is_nan) {
  return (static_cast<unsigned long long>(b) << kBadValueShiftB) |
         (static_cast<unsigned long long>(t) << kBadValueShiftT) |
         (static_cast<unsigned long long>(v) << kBadValueShiftV) | (is_nan ? 0ull : 1ull);
}

struct BadValue {
  std::int64_t b, t, v;
  bool is_nan;
};

ASRDEC_HD_INLINE BadValue unpack_bad_value(unsigned long long key) {
  constexpr unsigned long long mask = (1ull << kBadValueFieldBits) - 1;
  return BadValue{static_cast<std::int64_t>((key >> kBadValueShiftB) & mask),
                  static_cast<std::int64_t>((key >> kBadValueShiftT) & mask),
                  static_cast<std::int64_t>((key >> kBadValueShiftV) & mask), (key & 1ull) == 0};
}

}  // namespace asrdec::detail

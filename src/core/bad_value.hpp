#pragma once
// Locating the first invalid input value (NaN or infinity) of a batch from many threads at once: each thread
// that finds one packs its coordinates into a 64-bit key and one atomicMin keeps the smallest, i.e. the first in
// (b, t, v) order, which is also the one the CPU executors report.

#include <cstdint>

#include "asrdec/detail/hd.hpp"

namespace asrdec::detail {

// Bits 43..63 hold b, 22..42 hold t, 1..21 hold v, and bit 0 is 0 for NaN, 1 for infinity.
constexpr int kBadValueFieldBits = 21;
constexpr std::int64_t kBadValueFieldLimit = std::int64_t{1} << kBadValueFieldBits;
constexpr unsigned long long kNoBadValue = ~0ull;
constexpr int kBadValueShiftB = 2 * kBadValueFieldBits + 1;
constexpr int kBadValueShiftT = kBadValueFieldBits + 1;
constexpr int kBadValueShiftV = 1;
// The v field of a key that reports a joint row whose outputs are not finite (encoder values finite but so large
// that the joint overflows float32), rather than a bad input element: the largest v, so that a bad input element of
// the same (b, t) is reported first, as the CPU reads the inputs before it computes the outputs.
constexpr std::int64_t kJointOutputColumn = kBadValueFieldLimit - 1;

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

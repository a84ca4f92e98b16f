#pragma once
// Internal: the k-th smallest of a lane's keys, by most-significant-digit radix select — a pass per byte, each counting
// the byte of the keys that still match the digits chosen so far. The frame step uses it where the CPU executor uses
// std::nth_element (min_active's (M+1)-th cheapest way in, the overflow selection's cheapest max_tokens_per_frame):
// the same value, found in parallel without sorting, whatever order the keys come in.

#include <cstdint>

#include "asrdec/detail/hd.hpp"

namespace asrdec::detail {

/** Scratch of one select: 256 counts and the digits chosen so far (lane memory every thread of the lane reads). */
struct WfstSelectScratch {
  std::int64_t* counts;  ///< [256]
  std::uint64_t* state;  ///< [2]: the prefix chosen so far, the rank left within it
};

/** The k-th smallest (0-based; k < the number of keys) of the `bits`-bit keys of items i < n for which
 *  `key(i, value)` returns true. Every thread of the lane calls it; the result is the same for all. */
template <class Exec, class Key>
ASRDEC_HD std::uint64_t wfst_lane_select(Exec& exec, const WfstSelectScratch& s, std::int64_t n, std::int64_t k,
                                         int bits, Key key) {
  exec.single([&] {
    s.state[0] = 0;
    s.state[1] = static_cast<std::uint64_t>(k);
  });
  exec.barrier();
  for (int shift = bits - 8; shift >= 0; shift -= 8) {
    exec.for_each(256, [&](std::int64_t d) { s.counts[d] = 0; });
    exec.barrier();
    const std::uint64_t high = shift + 8 >= 64 ? 0 : ~((std::uint64_t{1} << (shift + 8)) - 1);
    const std::uint64_t prefix = s.state[0];
    exec.for_each(n, [&](std::int64_t i) {
      std::uint64_t value = 0;
      if (!key(i, value) || (value & high) != (prefix & high)) return;
      exec.atomic_add(&s.counts[(value >> shift) & 0xff], std::int64_t{1});
    });
    exec.barrier();
    exec.single([&] {
      auto left = static_cast<std::int64_t>(s.state[1]);
      std::uint64_t digit = 0;
      for (; digit < 255 && left >= s.counts[digit]; ++digit) left -= s.counts[digit];
      s.state[0] |= digit << shift;
      s.state[1] = static_cast<std::uint64_t>(left);
    });
    exec.barrier();
  }
  return s.state[0];
}

}  // namespace asrdec::detail

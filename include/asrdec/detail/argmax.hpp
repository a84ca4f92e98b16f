#pragma once
// The argmax tie rule used by every decoder: the first (lowest-index) maximum wins, as torch.argmax does.
// Scans update in increasing index order; parallel reductions merge partial results with argmax_merge, which
// gives the same answer whatever the reduction order. NaN never wins (every comparison with it is false);
// decoders that must reject NaN check for it separately.

#include <cstdint>

#include "asrdec/detail/hd.hpp"

namespace asrdec::detail {

struct ArgMax {
  float value;
  std::int32_t index;
};

/** The neutral element: loses to any value, including -inf at any index. */
ASRDEC_HD_INLINE ArgMax argmax_identity() { return ArgMax{-__builtin_huge_valf(), 0x7fffffff}; }

ASRDEC_HD_INLINE ArgMax argmax_merge(ArgMax a, ArgMax b) {
  return (b.value > a.value || (b.value == a.value && b.index < a.index)) ? b : a;
}

ASRDEC_HD_INLINE void argmax_update(ArgMax& best, float value, std::int32_t index) {
  best = argmax_merge(best, ArgMax{value, index});
}

}  // namespace asrdec::detail

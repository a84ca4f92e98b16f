#pragma once
// Streaming log-sum-exp, mergeable in any order (for parallel reductions): value = max + log(sum).

#include <cmath>

#include "asrdec/detail/hd.hpp"

namespace asrdec::detail {

struct LogSumExp {
  float max;
  float sum;  ///< sum of exp(x - max)
};

ASRDEC_HD_INLINE LogSumExp lse_identity() { return LogSumExp{-__builtin_huge_valf(), 0.0f}; }

ASRDEC_HD_INLINE LogSumExp lse_merge(LogSumExp a, LogSumExp b) {
  if (a.sum == 0.0f) return b;
  if (b.sum == 0.0f) return a;
  const float m = a.max > b.max ? a.max : b.max;
  return LogSumExp{m, a.sum * expf(a.max - m) + b.sum * expf(b.max - m)};
}

ASRDEC_HD_INLINE LogSumExp lse_add(LogSumExp a, float x) { return lse_merge(a, LogSumExp{x, 1.0f}); }

/** x - logsumexp: the log-softmax of a value x of the reduction. */
ASRDEC_HD_INLINE float lse_log_probability(LogSumExp lse, float x) { return (x - lse.max) - logf(lse.sum); }

/** exp(best - logsumexp): the softmax probability of the best value. */
ASRDEC_HD_INLINE float lse_max_probability(LogSumExp lse, float best) { return expf(best - lse.max) / lse.sum; }

}  // namespace asrdec::detail

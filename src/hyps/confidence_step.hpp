#pragma once
// Internal: the confidence measures of asrdec/hyps/confidence.hpp as the CPU joint and the CUDA kernels compute
// them, in one pass over a step's logits next to its log-sum-exp: ConfidenceStats accumulates, over the logits l,
// s = Σ e^(α(l − m)) and t = Σ e^(α(l − m)) · (l − m) for the running maximum m (rescaled when m grows, merged like
// the log-sum-exp), from which S_α and G_α follow once the log-sum-exp L is known:
//   S_α = e^(α(m − L)) · s,   G_α = e^(α(m − L)) · (t + (m − L) · s).

#include <cmath>

#include "asrdec/detail/hd.hpp"
#include "asrdec/hyps/confidence.hpp"
#include "core/logsumexp.hpp"

namespace asrdec::detail {

/** Whether `method` needs the entropy sums (ConfidenceStats) over the row; the probability measures need only the
 *  log-sum-exp and the best logit. */
ASRDEC_HD_INLINE bool needs_entropy_sums(const ConfidenceMethod& method) {
  return method.measure != ConfidenceMeasure::probability && method.measure != ConfidenceMeasure::max_prob;
}

struct ConfidenceStats {
  float max;
  float s;
  float t;
};

ASRDEC_HD_INLINE ConfidenceStats confidence_stats_identity() {
  return ConfidenceStats{-__builtin_huge_valf(), 0.0f, 0.0f};
}

/** Rescales a's sums to the maximum m ≥ a.max: each term e^(α(l − a.max))(l − a.max) becomes
 *  e^(α(l − m))(l − m) = e^(αd)(e^(α(l − a.max))(l − a.max) + d·e^(α(l − a.max))) with d = a.max − m. */
ASRDEC_HD_INLINE ConfidenceStats confidence_stats_rescaled(ConfidenceStats a, float m, float alpha) {
  const float d = a.max - m;
  const float scale = a.s == 0.0f ? 0.0f : expf(alpha * d);
  // Terms that vanish (p = 0: a -inf logit, or underflow) add nothing: 0 · (−inf) must not become NaN.
  if (scale == 0.0f) return ConfidenceStats{m, 0.0f, 0.0f};
  return ConfidenceStats{m, a.s * scale, (a.t + d * a.s) * scale};
}

ASRDEC_HD_INLINE ConfidenceStats confidence_stats_merge(ConfidenceStats a, ConfidenceStats b, float alpha) {
  if (a.s == 0.0f) return b;
  if (b.s == 0.0f) return a;
  const float m = a.max > b.max ? a.max : b.max;
  const ConfidenceStats x = confidence_stats_rescaled(a, m, alpha), y = confidence_stats_rescaled(b, m, alpha);
  return ConfidenceStats{m, x.s + y.s, x.t + y.t};
}

ASRDEC_HD_INLINE ConfidenceStats confidence_stats_add(ConfidenceStats a, float logit, float alpha) {
  return confidence_stats_merge(a, ConfidenceStats{logit, 1.0f, 0.0f}, alpha);
}

/** The confidence of a step: `method` over the step's `classes` token columns, whose log-sum-exp is `lse`, whose
 *  largest logit is `best` and whose emitted token's logit is `emitted`; `stats` as accumulated above (ignored by
 *  probability and max_prob). */
ASRDEC_HD_INLINE float step_confidence(const ConfidenceMethod& method, LogSumExp lse, ConfidenceStats stats, float best,
                                       float emitted, int classes) {
  if (method.measure == ConfidenceMeasure::probability) return lse_max_probability(lse, emitted);
  const float c = static_cast<float>(classes);
  const float a = method.alpha;
  const bool one = a == 1.0f;
  const float log_sum = lse.max + logf(lse.sum);  // L
  if (method.measure == ConfidenceMeasure::max_prob) {
    const float x_max = best - log_sum;
    if (one) return (c * expf(x_max) - 1.0f) / (c - 1.0f);
    const float ca = powf(c, a);
    return (ca * expf(a * x_max) - 1.0f) / (ca - 1.0f);
  }
  const float scale = expf(a * (stats.max - log_sum));
  const float s_alpha = scale * stats.s;                                      // Σ p^α
  const float g_alpha = scale * (stats.t + (stats.max - log_sum) * stats.s);  // Σ p^α log p
  const float log_c = logf(c);
  if (one || method.measure == ConfidenceMeasure::gibbs) {
    if (one) {
      return method.norm == EntropyNorm::lin ? 1.0f + g_alpha / log_c : (c * expf(g_alpha) - 1.0f) / (c - 1.0f);
    }
    const float c_1a = powf(c, 1.0f - a);
    if (method.norm == EntropyNorm::lin) return 1.0f + g_alpha / (log_c * c_1a);
    const float floor = powf(c, -a * c_1a);
    return (expf(a * g_alpha) - floor) / (1.0f - floor);
  }
  const float c_1a = powf(c, 1.0f - a);
  if (method.measure == ConfidenceMeasure::tsallis) {
    if (method.norm == EntropyNorm::lin) return 1.0f + (1.0f - s_alpha) / (c_1a - 1.0f);
    const float floor = expf((1.0f - c_1a) / (1.0f - a));
    return (expf((1.0f - s_alpha) / (1.0f - a)) - floor) / (1.0f - floor);
  }
  // renyi
  if (method.norm == EntropyNorm::lin) return 1.0f + log2f(s_alpha) / ((a - 1.0f) * log2f(c));
  return (powf(s_alpha, 1.0f / (a - 1.0f)) * c - 1.0f) / (c - 1.0f);
}

}  // namespace asrdec::detail

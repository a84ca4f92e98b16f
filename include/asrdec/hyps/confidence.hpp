#pragma once
/**
 * @file
 * How a decoder turns the distribution of the step that emitted a token into the token's confidence
 * (Hypothesis::token_confidences; word confidences aggregate them, text/word_timing.hpp). The default is the
 * emitted token's probability; the others are NeMo's frame measures (Laptev and Ginsburg, "Fast entropy-based
 * methods of word-level confidence estimation", 2022), with the same formulas, over the step's C = V + 1 token
 * classes, blank included (TDT durations excluded).
 *
 * With log-probabilities x_i (the log-softmax of the step's logits), p_i = exp(x_i), α = `alpha` > 0 and
 * S_α = Σ_i p_i^α, G_α = Σ_i p_i^α · x_i (G = G_1 = −H, the negative Shannon entropy):
 *
 * | measure, norm | α = 1 | α ≠ 1 |
 * |---|---|---|
 * | max_prob | (C · p_max − 1) / (C − 1) | (C^α · p_max^α − 1) / (C^α − 1) |
 * | gibbs, lin | 1 + G / ln C | 1 + G_α / (ln C · C^(1−α)) |
 * | gibbs, exp | (C · e^G − 1) / (C − 1) | (e^(α·G_α) − C^(−α·C^(1−α))) / (1 − C^(−α·C^(1−α))) |
 * | tsallis, lin | as gibbs, lin | 1 + (1 − S_α) / (C^(1−α) − 1) |
 * | tsallis, exp | as gibbs, exp | (e^((1 − S_α)/(1 − α)) − e^((1 − C^(1−α))/(1 − α))) / (1 − e^((1 − C^(1−α))/(1 −
 * α))) | | renyi, lin | as gibbs, lin | 1 + log2(S_α) / ((α − 1) · log2 C) | | renyi, exp | as gibbs, exp | (S_α^(1/(α
 * − 1)) · C − 1) / (C − 1) |
 *
 * p_max is the step's largest probability, whichever token is emitted (LM fusion may emit another). Each measure is
 * 1 for a one-hot distribution and 0 for a uniform one. NeMo's default is tsallis, exp, α = 0.33.
 */

#include <string>

#include "asrdec/core/export.hpp"

namespace asrdec {

enum class ConfidenceMeasure {
  probability,  ///< the emitted token's probability, exp(token_scores[i]) (the default)
  max_prob,     ///< NeMo's normalised maximum probability
  gibbs,        ///< entropy measures
  tsallis,
  renyi
};

enum class EntropyNorm { lin, exp };

struct ASRDEC_API ConfidenceMethod {
  ConfidenceMeasure measure = ConfidenceMeasure::probability;
  EntropyNorm norm = EntropyNorm::exp;  ///< entropy measures only
  float alpha = 0.33f;                  ///< α > 0 (not used by `probability`)

  /** Throws InvalidArgument for a non-finite or non-positive alpha. */
  void validate() const;
  std::string to_string() const;
};

ASRDEC_API const char* to_string(ConfidenceMeasure measure) noexcept;
ASRDEC_API const char* to_string(EntropyNorm norm) noexcept;
/** "probability", "max_prob", "gibbs", "tsallis", "renyi"; InvalidArgument otherwise. */
ASRDEC_API ConfidenceMeasure parse_confidence_measure(const std::string& name);
/** "lin" or "exp"; InvalidArgument otherwise. */
ASRDEC_API EntropyNorm parse_entropy_norm(const std::string& name);

}  // namespace asrdec

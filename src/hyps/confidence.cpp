#include "asrdec/hyps/confidence.hpp"

#include <cmath>

#include "asrdec/core/error.hpp"

namespace asrdec {

const char* to_string(ConfidenceMeasure measure) noexcept {
  switch (measure) {
    case ConfidenceMeasure::probability:
      return "probability";
    case ConfidenceMeasure::max_prob:
      return "max_prob";
    case ConfidenceMeasure::gibbs:
      return "gibbs";
    case ConfidenceMeasure::tsallis:
      return "tsallis";
    case ConfidenceMeasure::renyi:
      return "renyi";
  }
  return "?";
}

const char* to_string(EntropyNorm norm) noexcept { return norm == EntropyNorm::lin ? "lin" : "exp"; }

ConfidenceMeasure parse_confidence_measure(const std::string& name) {
  for (const auto m : {ConfidenceMeasure::probability, ConfidenceMeasure::max_prob, ConfidenceMeasure::gibbs,
                       ConfidenceMeasure::tsallis, ConfidenceMeasure::renyi}) {
    if (name == to_string(m)) return m;
  }
  throw InvalidArgument("unknown confidence measure '" + name +
                        "': expected probability, max_prob, gibbs, tsallis or renyi");
}

EntropyNorm parse_entropy_norm(const std::string& name) {
  if (name == "lin") return EntropyNorm::lin;
  if (name == "exp") return EntropyNorm::exp;
  throw InvalidArgument("unknown entropy norm '" + name + "': expected lin or exp");
}

void ConfidenceMethod::validate() const {
  ASRDEC_CHECK_ARG(std::isfinite(alpha) && alpha > 0.0f, "ConfidenceMethod.alpha must be finite and > 0, got ", alpha);
}

std::string ConfidenceMethod::to_string() const {
  if (measure == ConfidenceMeasure::probability) return "probability";
  if (measure == ConfidenceMeasure::max_prob) return detail::concat("max_prob(alpha=", alpha, ")");
  return detail::concat(asrdec::to_string(measure), "/", asrdec::to_string(norm), "(alpha=", alpha, ")");
}

}  // namespace asrdec

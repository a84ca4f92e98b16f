#include "asrdec/core/batch_limits.hpp"

#include "asrdec/core/error.hpp"

namespace asrdec {

void BatchLimits::validate() const {
  ASRDEC_CHECK_ARG(max_batch > 0, "BatchLimits.max_batch must be positive, got ", max_batch);
  ASRDEC_CHECK_ARG(max_frames > 0, "BatchLimits.max_frames must be positive, got ", max_frames);
}

std::string BatchLimits::to_string() const {
  return detail::concat("BatchLimits{max_batch=", max_batch, ", max_frames=", max_frames, "}");
}

}  // namespace asrdec

#include "asrdec/core/batch_limits.hpp"

#include "asrdec/core/error.hpp"

namespace asrdec {

void BatchLimits::validate() const {
  ASRDEC_CHECK_ARG(max_batch > 0 && max_batch <= kMaxBatch, "BatchLimits.max_batch must be in [1, ", kMaxBatch,
                   "], got ", max_batch);
  ASRDEC_CHECK_ARG(max_frames > 0 && max_frames <= kMaxFrames, "BatchLimits.max_frames must be in [1, ", kMaxFrames,
                   "], got ", max_frames);
  ASRDEC_CHECK_ARG(max_open_utterances > 0 && max_open_utterances <= kMaxBatch,
                   "BatchLimits.max_open_utterances must be in [1, ", kMaxBatch, "], got ", max_open_utterances);
}

std::string BatchLimits::to_string() const {
  return detail::concat("BatchLimits{max_batch=", max_batch, ", max_frames=", max_frames,
                        ", max_open_utterances=", max_open_utterances, "}");
}

}  // namespace asrdec

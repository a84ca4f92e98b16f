#include "asrdec/hyps/batched_hyps.hpp"

#include "asrdec/core/error.hpp"

namespace asrdec {

std::vector<Hypothesis> to_hypotheses(const BatchedHypsView& v, const std::int64_t* time_offsets, bool with_durations,
                                      bool is_final) {
  ASRDEC_CHECK_ARG(v.device.is_cpu(), "to_hypotheses needs a host view, got one on ", v.device.to_string());
  std::vector<Hypothesis> out(static_cast<std::size_t>(v.batch));
  for (std::int64_t b = 0; b < v.batch; ++b) {
    Hypothesis& h = out[static_cast<std::size_t>(b)];
    const std::int64_t begin = b * v.capacity;
    const std::int64_t end = begin + v.lengths[b];
    const std::int64_t offset = time_offsets != nullptr ? time_offsets[b] : 0;
    h.tokens.assign(v.tokens + begin, v.tokens + end);
    h.timestamps.reserve(static_cast<std::size_t>(end - begin));
    for (std::int64_t i = begin; i < end; ++i) {
      h.timestamps.push_back(static_cast<std::int32_t>(v.timestamps[i] + offset));
    }
    if (with_durations) {
      h.durations.assign(v.durations + begin, v.durations + end);
    }
    h.token_scores.assign(v.scores + begin, v.scores + end);
    h.token_confidences.assign(v.confidences + begin, v.confidences + end);
    h.score = v.total_scores[b];
    h.ranking_score = v.total_scores[b];
    h.am_score = v.total_scores[b];
    h.is_final = is_final;
  }
  return out;
}

}  // namespace asrdec

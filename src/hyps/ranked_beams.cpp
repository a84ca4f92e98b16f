#include "hyps/ranked_beams.hpp"

#include "asrdec/core/error.hpp"

namespace asrdec::detail {

std::vector<std::vector<Hypothesis>> ranked_beams_of(const BeamHypsRef& h, std::int64_t batch, bool length_normalized,
                                                     const float* lm_total, const float* boost_total) {
  std::vector<std::vector<Hypothesis>> out(static_cast<std::size_t>(batch));
  for (std::int64_t b = 0; b < batch; ++b) {
    ASRDEC_EXPECTS(!h.overflow[b], Error, "internal error: beam hypothesis capacity exceeded for utterance ", b);
    for (const std::int32_t k : beam_ranking(h, b, length_normalized)) {
      Hypothesis hyp = beam_hypothesis(h, b, k);
      const std::int64_t s = beam_slot(h, b, k);
      hyp.lm_score = lm_total != nullptr ? lm_total[s] : 0.0f;
      hyp.boost_score = boost_total != nullptr ? boost_total[s] : 0.0f;
      hyp.am_score = hyp.score - hyp.lm_score - hyp.boost_score;
      hyp.ranking_score = beam_ranking_score(h, s, length_normalized);
      out[static_cast<std::size_t>(b)].push_back(std::move(hyp));
    }
  }
  return out;
}

}  // namespace asrdec::detail

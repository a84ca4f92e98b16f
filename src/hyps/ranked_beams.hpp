#pragma once
// Internal: the final N-best lists of a batch of beams in host memory, with the fused models' parts, as every beam
// executor (CPU and CUDA, transducer and CTC) returns them.

#include <cstdint>
#include <vector>

#include "asrdec/hyps/batched_beam_hyps.hpp"

namespace asrdec::detail {

/** The live hypotheses of each of `batch` utterances of `h` (host memory), ranked by beam_ranking, with their LM and
 *  boosting parts from the per-slot weighted totals (nullptr: that model is not fused). Throws Error when an
 *  utterance ran out of hypothesis entries. */
std::vector<std::vector<Hypothesis>> ranked_beams_of(const BeamHypsRef& h, std::int64_t batch, bool length_normalized,
                                                     const float* lm_total, const float* boost_total);

}  // namespace asrdec::detail

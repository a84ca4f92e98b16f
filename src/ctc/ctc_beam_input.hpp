#pragma once
// Internal: validating a CTC beam-search request (the CTC greedy rules) and reading one frame as floats.

#include "asrdec/ctc/ctc_beam.hpp"
#include "ctc/ctc_greedy_backend.hpp"

namespace asrdec::detail {

/** Validates logprobs [B, T, V+1] on `device`, host lengths and the fusion models against them. */
CtcGreedyProblem make_ctc_beam_problem(const TensorView& logprobs, const TensorView& lengths,
                                       const CtcBeamConfig& config, Device device);

/** The V+1 log-probabilities of utterance b at frame t as floats; InvalidArgument naming the element for NaN or
 *  +inf when `check_values`. */
void read_frame(const CtcGreedyProblem& problem, std::int64_t b, std::int32_t t, bool check_values, float* out);

}  // namespace asrdec::detail

#pragma once
// Test oracle, built into the test-only library asrdec_oracles (never into libasrdec). The CTC beam-search oracle:
// whole transcripts per hypothesis. It shares input validation with the library, never the step functions it checks.

#include <vector>

#include "asrdec/ctc/ctc_beam.hpp"

namespace asrdec {

/** The oracle: the same search one utterance at a time with whole transcripts, merging by comparing them, and
 *  the LM and tree queried one token at a time. Returns each utterance's final beam, best first. CPU inputs. */
std::vector<std::vector<Hypothesis>> ctc_beam_reference(const TensorView& logprobs, const TensorView& lengths,
                                                        const CtcBeamConfig& config);

}  // namespace asrdec

#pragma once
// Test oracle, built into the test-only library asrdec_oracles (never into libasrdec). The transducer beam-search
// oracle (ALSD++, AES++, WIND beam): whole transcripts per hypothesis. It shares input validation with the library,
// never the step functions it checks.

#include <vector>

#include "asrdec/transducer/beam_decoder.hpp"

namespace asrdec {

/** The oracle: a plain beam search over one utterance at a time with the same rules, written for clarity (whole
 *  token sequences per hypothesis, merging by comparing them, LM and boosting queried one token at a time). Returns
 *  the final beam of each utterance, ranked as TransducerBeamDecoder::decode_nbest. Needs a CPU model, LM and
 *  tree. */
std::vector<std::vector<Hypothesis>> transducer_beam_reference(const TransducerModel& model, const TensorView& enc_proj,
                                                               const TensorView& lengths,
                                                               const TransducerBeamConfig& config);

}  // namespace asrdec

#pragma once
// Test oracle, built into the test-only library asrdec_oracles (never into libasrdec). The transducer greedy oracle:
// label-looping paper, Algorithm 1, frame by frame and one utterance at a time. It shares input validation with the
// library, never the step functions it checks.

#include <vector>

#include "asrdec/transducer/greedy_decoder.hpp"

namespace asrdec {

/** Algorithm 1 of the label-looping paper — one utterance at a time, frame by frame, written for clarity rather
 *  than speed: the oracle every decoder is tested against. Same semantics and result fields as the decoders.
 *  Needs a CPU model. */
std::vector<Hypothesis> transducer_greedy_reference(const TransducerModel& model, const TensorView& enc_proj,
                                                    const TensorView& lengths, std::int32_t max_symbols_per_frame = 10);
/** The reference with fusion: max_symbols_per_frame, lm, lm_weight, boost and boost_weight are read from
 *  `config` (the algorithm is not: the reference is frame by frame). The LM and the boosting tree are queried one
 *  token at a time (NgramLm::score, BoostingTree::score), so it checks the decoders' full-vocabulary queries
 *  too. Needs a CPU model, LM and tree. */
std::vector<Hypothesis> transducer_greedy_reference(const TransducerModel& model, const TensorView& enc_proj,
                                                    const TensorView& lengths, const TransducerGreedyConfig& config);

}  // namespace asrdec

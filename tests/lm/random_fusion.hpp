#pragma once
// Random fusion models for the decoder tests: token-level n-gram LMs from random ARPA files, fusion weights, and
// phrase-boosting trees built from pieces of given transcripts.

#include <memory>
#include <random>
#include <vector>

#include "asrdec/asrdec.hpp"

namespace asrdec::testing {

/** Options of a token-level LM over `vocab` tokens. */
NgramLmOptions token_lm_options(std::int64_t vocab);

/** A random token LM of order 1..4 on `device`; `cpu_keep` receives its CPU copy (the same LM on the CPU). */
std::shared_ptr<const NgramLm> random_lm(std::mt19937_64& rng, std::int64_t vocab, Device device,
                                         std::shared_ptr<const NgramLm>& cpu_keep);

/** One of 0, 0.25, 0.6, 1.5, 4. */
float random_weight(std::mt19937_64& rng);

/** Up to 4 phrases that matter: pieces of plain[utterance]'s tokens (of random utterances when utterance < 0) with
 *  one token changed, or random tokens. */
PhraseList random_phrases(std::mt19937_64& rng, std::int64_t vocab, const std::vector<Hypothesis>& plain,
                          std::int64_t utterance);

/** Phrase lists that matter: pieces of the `plain` transcripts with one token changed (so boosting must pull the
 *  decoder away from the acoustic choice), plus random phrases; one list for the batch or one per utterance.
 *  `cpu_keep` receives the CPU copy. */
std::shared_ptr<const BoostingTree> random_boost(std::mt19937_64& rng, std::int64_t vocab,
                                                 const std::vector<Hypothesis>& plain, Device device,
                                                 std::shared_ptr<const BoostingTree>& cpu_keep);

}  // namespace asrdec::testing

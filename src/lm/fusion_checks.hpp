#pragma once
// Internal: the checks every decoder makes on the models it fuses (an n-gram LM, a boosting tree): same device,
// same vocabulary (V tokens: the model's columns without the blank, wherever it is; lm/fusion_step.hpp maps them).

#include <cstdint>
#include <string>
#include <vector>

#include "asrdec/core/streaming.hpp"
#include "asrdec/lm/boosting_tree.hpp"
#include "asrdec/lm/ngram_lm.hpp"

namespace asrdec::detail {

/** Throws InvalidArgument when the LM or the tree (either may be null) is not on `device`. `config` names the
 *  config struct, `owner` what lives on `device` ("model", "decoder"). */
void check_fusion_device(const NgramLm* lm, const BoostingTree* boost, Device device, const char* config,
                         const char* owner);

/** Throws InvalidArgument when the LM or the tree does not have V = `vocab` tokens; `source` says where the
 *  decoder's V comes from ("the model has 256", "logprobs has 257 columns"). */
void check_fusion_vocab(const NgramLm* lm, const BoostingTree* boost, std::int64_t vocab, const std::string& source);

/** CTC log-probabilities of `columns` columns (V + 1, the blank in any of them), fused with an LM or a tree (either
 *  may be null; neither: no check): InvalidArgument unless they have V tokens. */
void check_ctc_fusion(const NgramLm* lm, const BoostingTree* boost, std::int64_t columns);

/** Streaming with a boosting tree (may be null: zeros): the root of each row's phrase list, read by first chunks.
 *  Throws InvalidArgument, naming `owner`, for a first row's phrase list outside the tree's lists. */

std::vector<std::int32_t> boost_roots_of(const std::vector<ChunkRow>& rows, const BoostingTree* boost,
                                         const char* owner);

}  // namespace asrdec::detail

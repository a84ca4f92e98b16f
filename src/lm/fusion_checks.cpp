#include "lm/fusion_checks.hpp"

#include "asrdec/core/error.hpp"

namespace asrdec::detail {

void check_fusion_device(const NgramLm* lm, const BoostingTree* boost, Device device, const char* config,
                         const char* owner) {
  if (lm != nullptr) {
    ASRDEC_CHECK_ARG(lm->device() == device, config, ".lm is on ", lm->device().to_string(), ", the ", owner, " on ",
                     device.to_string(), "; load the LM onto the ", owner, "'s device");
  }
  if (boost != nullptr) {
    ASRDEC_CHECK_ARG(boost->device() == device, config, ".boost is on ", boost->device().to_string(), ", the ", owner,
                     " on ", device.to_string(), "; build the boosting tree on the ", owner, "'s device");
  }
}

void check_fusion_vocab(const NgramLm* lm, const BoostingTree* boost, std::int64_t vocab, const std::string& source) {
  if (lm != nullptr) {
    ASRDEC_CHECK_ARG(lm->vocab_size() == vocab, "vocabulary mismatch: the LM has V = ", lm->vocab_size(), " tokens, ",
                     source);
  }
  if (boost != nullptr) {
    ASRDEC_CHECK_ARG(boost->vocab_size() == vocab,
                     "vocabulary mismatch: the boosting tree has V = ", boost->vocab_size(), " tokens, ", source);
  }
}

void check_ctc_fusion(const NgramLm* lm, const BoostingTree* boost, std::int64_t columns) {
  if (lm == nullptr && boost == nullptr) return;
  check_fusion_vocab(lm, boost, columns - 1, concat("logprobs has ", columns, " columns (V + 1 expected)"));
}

std::vector<std::int32_t> boost_roots_of(const std::vector<ChunkRow>& rows, const BoostingTree* boost,
                                         const char* owner) {
  std::vector<std::int32_t> roots(rows.size(), 0);
  if (boost == nullptr) return roots;
  for (std::size_t b = 0; b < rows.size(); ++b) {
    if (!rows[b].first) continue;
    const std::int64_t list = rows[b].phrase_list;
    ASRDEC_CHECK_ARG(list >= 0 && list < boost->num_lists(), owner, "::decode_chunks: utterance ", rows[b].utterance,
                     " asks for phrase list ", list, ", but the boosting tree has ", boost->num_lists(), " list",
                     boost->num_lists() == 1 ? "" : "s", " (ChunkRow::phrase_list)");
    roots[b] = boost->root_state(list);
  }
  return roots;
}

}  // namespace asrdec::detail

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

}  // namespace asrdec::detail

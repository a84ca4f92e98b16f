#include "lm/random_fusion.hpp"

#include <algorithm>
#include <string>

#include "lm/random_arpa.hpp"
#include "support/test_support.hpp"

namespace asrdec::testing {

NgramLmOptions token_lm_options(std::int64_t vocab) {
  NgramLmOptions options;
  options.vocabulary = LmVocabularyKind::token_level;
  options.vocab_size = vocab;
  return options;
}

std::shared_ptr<const NgramLm> random_lm(std::mt19937_64& rng, std::int64_t vocab, Device device,
                                         std::shared_ptr<const NgramLm>& cpu_keep) {
  const std::string path = temp_path("fusion.arpa");
  const int order = std::uniform_int_distribution<int>(1, 4)(rng);
  write_random_token_arpa(path, static_cast<int>(vocab), order, rng);
  cpu_keep = std::make_shared<const NgramLm>(NgramLm::load(path, token_lm_options(vocab)));
  if (device.is_cpu()) return cpu_keep;
  return std::make_shared<const NgramLm>(NgramLm::load(path, token_lm_options(vocab), device));
}

float random_weight(std::mt19937_64& rng) {
  const float weights[] = {0.0f, 0.25f, 0.6f, 1.5f, 4.0f};
  return weights[rng() % 5];
}

PhraseList random_phrases(std::mt19937_64& rng, std::int64_t vocab, const std::vector<Hypothesis>& plain,
                          std::int64_t utterance) {
  PhraseList list;
  for (int k = std::uniform_int_distribution<int>(0, 4)(rng); k > 0; --k) {
    const auto& source = plain[utterance >= 0 ? static_cast<std::size_t>(utterance) : rng() % plain.size()].tokens;
    std::vector<std::int32_t> phrase;
    if (!source.empty() && rng() % 4 != 0) {
      const std::size_t begin = rng() % source.size();
      const std::size_t size = std::min<std::size_t>(source.size() - begin, 1 + rng() % 4);
      phrase.assign(source.begin() + static_cast<std::ptrdiff_t>(begin),
                    source.begin() + static_cast<std::ptrdiff_t>(begin + size));
      phrase[rng() % phrase.size()] = static_cast<std::int32_t>(rng() % vocab);
    } else {
      phrase.resize(1 + rng() % 3);
      for (auto& token : phrase) token = static_cast<std::int32_t>(rng() % vocab);
    }
    list.push_back(phrase);
  }
  return list;
}

std::shared_ptr<const BoostingTree> random_boost(std::mt19937_64& rng, std::int64_t vocab,
                                                 const std::vector<Hypothesis>& plain, Device device,
                                                 std::shared_ptr<const BoostingTree>& cpu_keep) {
  const bool per_utterance = rng() % 2 == 0;
  std::vector<PhraseList> lists(per_utterance ? plain.size() : 1);
  for (std::size_t u = 0; u < lists.size(); ++u) {
    lists[u] = random_phrases(rng, vocab, plain, per_utterance ? static_cast<std::int64_t>(u) : -1);
  }
  BoostingTreeOptions options;
  options.context_score = std::uniform_real_distribution<float>(0.5f, 2.0f)(rng);
  options.uniform_weights = rng() % 4 == 0;
  cpu_keep = std::make_shared<const BoostingTree>(BoostingTree::build(lists, vocab, options));
  if (device.is_cpu()) return cpu_keep;
  return std::make_shared<const BoostingTree>(BoostingTree::build(lists, vocab, options, device));
}

}  // namespace asrdec::testing

#include "phrase_boosting.hpp"

#include "sentencepiece_model.hpp"

namespace asrdec::cli {

std::shared_ptr<const BoostingTree> load_boosting(const BoostOptions& options, std::int64_t vocab, Device device,
                                                  bool quiet, std::int64_t text_tokens) {
  if (text_tokens < 0) text_tokens = vocab;
  if (options.phrases.empty()) return nullptr;
  ASRDEC_CHECK_ARG(!options.bpe.empty(), "--boost needs --bpe: the SentencePiece model that tokenises the phrases");
  const std::unique_ptr<sentencepiece::SentencePieceProcessor> model = load_sentencepiece(options.bpe);
  const sentencepiece::SentencePieceProcessor& tokenizer = *model;
  ASRDEC_CHECK_ARG(tokenizer.GetPieceSize() == text_tokens, "vocabulary mismatch: ", options.bpe, " has ",
                   tokenizer.GetPieceSize(), " pieces, the model ", text_tokens, " text tokens");
  const std::vector<std::string> phrases = read_phrase_list(options.phrases);
  ASRDEC_CHECK_ARG(!phrases.empty(), options.phrases, " holds no phrases");
  PhraseList list;
  for (const std::string& phrase : phrases) {
    std::vector<int> ids;
    const auto encoded = tokenizer.Encode(phrase, &ids);
    if (!encoded.ok()) throw Error(detail::concat("cannot tokenise '", phrase, "': ", encoded.ToString()));
    list.emplace_back(ids.begin(), ids.end());
  }
  BoostingTreeOptions tree_options;
  tree_options.context_score = static_cast<float>(options.context_score);
  tree_options.depth_scaling = static_cast<float>(options.depth_scaling);
  auto tree = std::make_shared<const BoostingTree>(BoostingTree::build({list}, vocab, tree_options, device));
  if (!quiet) std::fprintf(stderr, "boosting: %s, weight %g\n", tree->describe().c_str(), options.weight);
  return tree;
}

}  // namespace asrdec::cli

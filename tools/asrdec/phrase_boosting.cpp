#include "phrase_boosting.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "asrdec/text/text_file.hpp"
#include "sentencepiece_model.hpp"

namespace asrdec::cli {
namespace {

std::unique_ptr<sentencepiece::SentencePieceProcessor> phrase_tokenizer(const BoostOptions& options,
                                                                        std::int64_t text_tokens, const char* flag) {
  ASRDEC_CHECK_ARG(!options.bpe.empty(), flag, " needs --bpe: the SentencePiece model that tokenises the phrases");
  std::unique_ptr<sentencepiece::SentencePieceProcessor> model = load_sentencepiece(options.bpe);
  ASRDEC_CHECK_ARG(model->GetPieceSize() == text_tokens, "vocabulary mismatch: ", options.bpe, " has ",
                   model->GetPieceSize(), " pieces, the model ", text_tokens, " text tokens");
  return model;
}

PhraseList tokenised(const sentencepiece::SentencePieceProcessor& tokenizer, const std::vector<std::string>& phrases) {
  PhraseList list;
  for (const std::string& phrase : phrases) {
    std::vector<int> ids;
    const auto encoded = tokenizer.Encode(phrase, &ids);
    if (!encoded.ok()) throw Error(detail::concat("cannot tokenise '", phrase, "': ", encoded.ToString()));
    if (!ids.empty()) list.emplace_back(ids.begin(), ids.end());
  }
  return list;
}

BoostingTreeOptions tree_options_of(const BoostOptions& options) {
  BoostingTreeOptions tree_options;
  tree_options.context_score = static_cast<float>(options.context_score);
  tree_options.depth_scaling = static_cast<float>(options.depth_scaling);
  return tree_options;
}

}  // namespace

std::shared_ptr<const BoostingTree> load_boosting(const BoostOptions& options, std::int64_t vocab, Device device,
                                                  bool quiet, std::int64_t text_tokens) {
  if (text_tokens < 0) text_tokens = vocab;
  ASRDEC_CHECK_ARG(options.per_utterance.empty(),
                   "--boost-per-utterance: this decoder takes one phrase list "
                   "(--boost)");
  if (options.phrases.empty()) return nullptr;
  const auto model = phrase_tokenizer(options, text_tokens, "--boost");
  const std::vector<std::string> phrases = read_phrase_list(options.phrases);
  ASRDEC_CHECK_ARG(!phrases.empty(), options.phrases, " holds no phrases");
  const PhraseList list = tokenised(*model, phrases);
  const BoostingTreeOptions tree_options = tree_options_of(options);
  auto tree = std::make_shared<const BoostingTree>(BoostingTree::build({list}, vocab, tree_options, device));
  if (!quiet) std::fprintf(stderr, "boosting: %s, weight %g\n", tree->describe().c_str(), options.weight);
  return tree;
}

UtterancePhrases::UtterancePhrases(std::vector<PhraseList> lists, std::int64_t vocab, std::int64_t slots,
                                   const BoostingTreeOptions& options, Device device)
    : lists_(std::move(lists)), slot_of_(lists_.size(), -1) {
  // Each slot holds the largest list: its root plus one state per phrase token (an upper bound on its trie).
  std::int64_t states = 1;
  std::int32_t longest = 1;
  for (const PhraseList& list : lists_) {
    std::int64_t tokens = 1;
    for (const auto& phrase : list) {
      tokens += static_cast<std::int64_t>(phrase.size());
      longest = std::max(longest, static_cast<std::int32_t>(phrase.size()));
    }
    states = std::max(states, tokens);
  }
  tree_ = std::make_shared<BoostingTree>(BoostingTree::with_slots(
      vocab, BoostingSlots{std::max<std::int64_t>(slots, 1), states, longest}, options, device));
  for (auto s = static_cast<std::int32_t>(tree_->num_lists()); s > 0; --s) free_.push_back(s - 1);
}

void UtterancePhrases::fill_batch(std::int64_t first, std::int64_t count) {
  for (std::int64_t b = 0; b < count; ++b) tree_->set_list(b, lists_[static_cast<std::size_t>(first + b)]);
}

std::int32_t UtterancePhrases::join(std::int64_t utterance) {
  ASRDEC_CHECK_ARG(!free_.empty(), "--boost-per-utterance: more utterances open than the tree's ", tree_->num_lists(),
                   " slots");
  const std::int32_t slot = free_.back();
  free_.pop_back();
  tree_->set_list(slot, lists_[static_cast<std::size_t>(utterance)]);
  slot_of_[static_cast<std::size_t>(utterance)] = slot;
  return slot;
}

void UtterancePhrases::leave(std::int64_t utterance) {
  free_.push_back(slot_of_[static_cast<std::size_t>(utterance)]);
  slot_of_[static_cast<std::size_t>(utterance)] = -1;
}

Boosting load_boosting(const BoostOptions& options, std::int64_t vocab, Device device, bool quiet,
                       std::int64_t utterances, std::int64_t slots) {
  if (options.per_utterance.empty()) {
    BoostOptions fixed = options;
    return Boosting{load_boosting(fixed, vocab, device, quiet), nullptr};
  }
  ASRDEC_CHECK_ARG(options.phrases.empty(), "--boost and --boost-per-utterance exclude each other");
  const auto model = phrase_tokenizer(options, vocab, "--boost-per-utterance");
  std::vector<PhraseList> lists;
  TextFileReader reader(options.per_utterance, "per-utterance phrases");
  std::string line;
  while (reader.next(line)) {
    nlohmann::json phrases;
    try {
      phrases = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw reader.error(detail::concat("not JSON (", e.what(), ")"));
    }
    if (!phrases.is_array() ||
        !std::all_of(phrases.begin(), phrases.end(), [](const nlohmann::json& p) { return p.is_string(); })) {
      throw reader.error("expected an array of phrases (strings), e.g. [\"children of israel\", \"watched\"]");
    }
    lists.push_back(tokenised(*model, phrases.get<std::vector<std::string>>()));
  }
  ASRDEC_CHECK_ARG(static_cast<std::int64_t>(lists.size()) == utterances,
                   "--boost-per-utterance: ", options.per_utterance, " has ", lists.size(), " lines, the input ",
                   utterances, " utterances");
  auto per_utterance =
      std::make_shared<UtterancePhrases>(std::move(lists), vocab, slots, tree_options_of(options), device);
  if (!quiet) {
    std::fprintf(stderr, "boosting: phrases per utterance, %s, weight %g\n", per_utterance->tree()->describe().c_str(),
                 options.weight);
  }
  return Boosting{per_utterance->tree(), per_utterance};
}

}  // namespace asrdec::cli

// Transducer beam search (ALSD++ for RNN-T and TDT) with an n-gram LM and phrase boosting fused in.
//
//   transducer_beam_example model.safetensors enc_proj.npy lengths.npy tokens.txt lm.arpa.gz phrases.txt [cpu|cuda]
//
// enc_proj is the encoder output already projected to the joint's hidden size [B, T, J] (what the engine's
// encoder and the joint's encoder projection produce). Phrases are boosted for every utterance; a real engine
// tokenises them with its own tokenizer (SentencePiece) — this example spells each word with the longest pieces of
// tokens.txt, which is enough for the sample vocabulary.

#include <cstdio>
#include <memory>
#include <sstream>
#include <string>

#include "example_support.hpp"

namespace {

// "children of israel" → token ids, each word as "▁word" split into the longest matching pieces; empty if a word
// cannot be spelled.
std::vector<std::int32_t> spell(const std::string& phrase, const asrdec::Vocabulary& vocabulary) {
  std::vector<std::int32_t> ids;
  std::istringstream words(phrase);
  std::string word;
  while (words >> word) {
    const std::string text = "\xE2\x96\x81" + word;
    std::size_t at = 0;
    while (at < text.size()) {
      std::int32_t best = -1;
      std::size_t best_size = 0;
      for (std::size_t id = 0; id < vocabulary.size(); ++id) {
        const std::string& piece = vocabulary.token(static_cast<std::int32_t>(id));
        if (piece.size() > best_size && text.compare(at, piece.size(), piece) == 0) {
          best = static_cast<std::int32_t>(id);
          best_size = piece.size();
        }
      }
      if (best < 0) return {};
      ids.push_back(best);
      at += best_size;
    }
  }
  return ids;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr,
                 "usage: %s model.safetensors enc_proj.npy lengths.npy tokens.txt lm.arpa.gz phrases.txt "
                 "[cpu|cuda]\n",
                 argv[0]);
    return 2;
  }
  try {
    const asrdec::Device device = asrdec::Device::parse(argc > 7 ? argv[7] : "cpu");
    const asrdec::TransducerModel model = asrdec::TransducerModel::load(argv[1], device);
    const asrdec::NpyArray enc_proj = asrdec::read_npy(argv[2]);  // [B, T, J]
    const asrdec::NpyArray lengths = asrdec::read_npy(argv[3]);   // [B]
    const asrdec::Vocabulary vocabulary = asrdec::Vocabulary::load(argv[4]);
    vocabulary.check_matches(model.vocab_size(), argv[4]);

    asrdec::NgramLmOptions lm_options;
    lm_options.vocabulary = asrdec::LmVocabularyKind::token_level;
    lm_options.vocab_size = model.vocab_size();
    auto lm = std::make_shared<const asrdec::NgramLm>(asrdec::NgramLm::load(argv[5], lm_options, device));

    asrdec::PhraseList phrases;
    for (const std::string& phrase : asrdec::read_phrase_list(argv[6])) {
      std::vector<std::int32_t> ids = spell(phrase, vocabulary);
      if (!ids.empty()) phrases.push_back(std::move(ids));
    }
    // One list shared by every utterance (a list per utterance is possible too).
    auto boost = std::make_shared<const asrdec::BoostingTree>(
        asrdec::BoostingTree::build({phrases}, model.vocab_size(), asrdec::BoostingTreeOptions{}, device));

    asrdec::TransducerBeamConfig config;  // ALSD++, beam 4, length-normalised ranking
    config.lm = lm;
    config.lm_weight = 0.5f;
    config.boost = boost;
    config.boost_weight = 1.0f;
    asrdec::TransducerBeamDecoder decoder(model, config);

    asrdec::Stream stream(device);
    const example::OnDevice input = example::place(enc_proj, device, stream.handle());
    const auto best = decoder.decode(input.view, lengths.view(), stream.handle());
    std::printf("%zu phrases boosted\n", phrases.size());
    for (std::size_t i = 0; i < best.size(); ++i) example::print_result(i, best[i], vocabulary);
  } catch (const asrdec::Error& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
  return 0;
}

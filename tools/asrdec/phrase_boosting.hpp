#pragma once
// `--boost phrases.txt --bpe bpe.model`: the phrase list of the decode subcommands, tokenised with the model's
// SentencePiece model and built into a BoostingTree shared by every utterance.

#include <memory>
#include <string>

#include "asrdec/asrdec.hpp"

namespace asrdec::cli {

struct BoostOptions {
  std::string phrases;  // one phrase per line; blank lines and lines starting with '#' are skipped
  std::string bpe;      // SentencePiece model that tokenises the phrases
  double weight = 1.0;  // β
  double context_score = 1.0;
  double depth_scaling = 2.0;
};

/** The boosting tree of --boost on `device` for a decoder with `vocab` tokens, or nullptr without --boost.
 *  `text_tokens` (default: `vocab`) is the number of SentencePiece pieces: models with special tokens after the
 *  text tokens (AED) have more. Throws InvalidArgument for --boost without --bpe, a SentencePiece model whose size is
 *  not `text_tokens`, or a file without phrases; Error when a file cannot be read. */
std::shared_ptr<const BoostingTree> load_boosting(const BoostOptions& options, std::int64_t vocab, Device device,
                                                  bool quiet, std::int64_t text_tokens = -1);

}  // namespace asrdec::cli

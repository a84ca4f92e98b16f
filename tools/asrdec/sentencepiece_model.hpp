#pragma once
// Loading a SentencePiece model for the CLI (--bpe). SentencePiece terminates the process on some malformed models
// (a piece holding a NUL byte throws inside a noexcept trie builder), so the pieces are checked first.

#include <sentencepiece_processor.h>

#include <memory>
#include <string>

namespace asrdec::cli {

/** The model in `path`. Throws Error when it cannot be read or SentencePiece refuses it, ParseError naming the file
 *  for a piece SentencePiece would crash on. */
std::unique_ptr<sentencepiece::SentencePieceProcessor> load_sentencepiece(const std::string& path);

}  // namespace asrdec::cli

#pragma once
/**
 * @file
 * Token tables (tokens.txt) and turning token ids into text.
 *
 * tokens.txt holds one token per line and the line number (from 0) is the id. Files in the "token id" style
 * (every line a token, one space, and its own line number) are recognised too. SentencePiece pieces mark the
 * start of a word with U+2581 ("▁"), which detokenize() turns into a space. Immutable after loading.
 */

#include <cstdint>
#include <string>
#include <vector>

#include "asrdec/core/export.hpp"

namespace asrdec {

class ASRDEC_API Vocabulary {
 public:
  Vocabulary() = default;
  explicit Vocabulary(std::vector<std::string> tokens);
  /** Throws ParseError (empty file, empty token line) or Error when the file cannot be read. */
  static Vocabulary load(const std::string& path);

  std::size_t size() const noexcept { return tokens_.size(); }
  /** Throws InvalidArgument for an id outside [0, size()). */
  const std::string& token(std::int32_t id) const;
  /** Concatenates the pieces, turning "▁" into word boundaries, and trims the result. */
  std::string detokenize(const std::vector<std::int32_t>& ids) const;
  /** Ids of the pieces that begin a word (they start with SentencePiece's mark "▁"), ascending: the
   *  WfstDecoderConfig::word_start_columns of a model whose output columns are this table's ids. */
  std::vector<std::int32_t> word_start_ids() const;
  /** Checks that the table fits a model with `num_tokens` non-blank tokens: it must hold num_tokens entries,
   *  or num_tokens + 1 when it lists the blank last. Throws InvalidArgument naming `what` otherwise. */
  void check_matches(std::int64_t num_tokens, const std::string& what) const;

 private:
  std::vector<std::string> tokens_;
};

}  // namespace asrdec

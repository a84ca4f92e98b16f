#pragma once
/**
 * @file
 * SymbolTable: word ids and their words, read from a text table — OpenFst/Kaldi style "word id" lines (words.txt
 * written by `asrdec graph build`, Kaldi's words.txt), or one word per line with the line number (from 0) as id.
 * A file is two-column when every non-empty line ends in a non-negative integer field; otherwise every line is a
 * word. Blank lines are skipped; CRLF line ends are accepted.
 *
 * Ids may leave gaps (those ids have the empty word), but a table cannot name an id beyond its own size in bytes,
 * so the memory of a table stays proportional to its file. Duplicate ids and duplicate words are errors.
 * Immutable after loading; safe to share across threads.
 */

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "asrdec/core/export.hpp"

namespace asrdec {

class ASRDEC_API SymbolTable {
 public:
  SymbolTable() = default;
  /** Reads a table (see above). Throws Error when the file cannot be read, ParseError (file and line) for an empty
   *  table, a duplicate id or word, or an id beyond the file's size. */
  static SymbolTable load(const std::string& path);

  /** Number of ids: the largest id + 1. */
  std::size_t size() const noexcept { return symbols_.size(); }
  /** id → word ("" for an id the table skips). */
  const std::vector<std::string>& symbols() const noexcept { return symbols_; }
  /** The word of `id`; throws InvalidArgument for an id outside [0, size()). */
  const std::string& symbol(std::int64_t id) const;
  /** The id of `word`, or nullopt. */
  std::optional<std::int32_t> find(std::string_view word) const;

 private:
  std::vector<std::string> symbols_;
  std::unordered_map<std::string, std::int32_t> ids_;
};

}  // namespace asrdec

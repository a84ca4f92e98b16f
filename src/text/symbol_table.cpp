#include "asrdec/text/symbol_table.hpp"

#include <algorithm>
#include <charconv>
#include <limits>

#include "asrdec/core/error.hpp"
#include "asrdec/text/text_file.hpp"

namespace asrdec {
namespace {

struct Entry {
  std::string word;
  std::int64_t id;  // -1: the line has no id column
  std::int64_t line;
};

bool is_field_space(char c) { return c == ' ' || c == '\t'; }

// "word id": the word is the first field, the id the last one.
Entry parse_line(const std::string& line, std::int64_t number) {
  std::size_t end = line.size();
  while (end > 0 && is_field_space(line[end - 1])) --end;
  std::size_t split = end;
  while (split > 0 && !is_field_space(line[split - 1])) --split;
  std::int64_t id = -1;
  if (split > 0) {
    const auto [stop, error] = std::from_chars(line.data() + split, line.data() + end, id);
    if (error != std::errc() || stop != line.data() + end || id < 0) id = -1;
  }
  std::size_t first = 0;
  while (first < line.size() && is_field_space(line[first])) ++first;
  std::size_t word_end = first;
  while (word_end < line.size() && !is_field_space(line[word_end])) ++word_end;
  return Entry{id >= 0 ? line.substr(first, word_end - first) : line, id, number};
}

}  // namespace

SymbolTable SymbolTable::load(const std::string& path) {
  TextFileReader reader(path);
  std::vector<Entry> entries;
  std::string line;
  bool two_columns = true;
  while (reader.next(line)) {
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    entries.push_back(parse_line(line, reader.line_number()));
    two_columns = two_columns && entries.back().id >= 0;
  }
  if (entries.empty()) throw ParseError(path, 0, "empty symbol table");
  // An id costs one string slot: bounding ids by the bytes read keeps a 26-byte file from asking for gigabytes.
  const auto id_limit =
      static_cast<std::int64_t>(std::min<std::uint64_t>(reader.bytes_read(), std::numeric_limits<std::int32_t>::max()));
  SymbolTable table;
  if (two_columns) {
    std::int64_t size = 0;
    for (const Entry& entry : entries) {
      if (entry.id >= id_limit) {
        throw ParseError(path, entry.line,
                         detail::concat("id ", entry.id, " of '", entry.word, "' is beyond what a ",
                                        reader.bytes_read(), "-byte table can number (ids must stay below its size)"));
      }
      size = std::max(size, entry.id + 1);
    }
    table.symbols_.resize(static_cast<std::size_t>(size));
    std::vector<std::int64_t> line_of(static_cast<std::size_t>(size), 0);
    for (const Entry& entry : entries) {
      const auto slot = static_cast<std::size_t>(entry.id);
      if (line_of[slot] != 0) {
        throw ParseError(path, entry.line,
                         detail::concat("id ", entry.id, " is given to both '", table.symbols_[slot], "' (line ",
                                        line_of[slot], ") and '", entry.word, "'"));
      }
      table.symbols_[slot] = entry.word;
      line_of[slot] = entry.line;
    }
  } else {
    if (entries.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
      throw ParseError(path, 0, "more words than 32-bit ids can number");
    }
    for (Entry& entry : entries) table.symbols_.push_back(std::move(entry.word));
  }
  for (std::size_t id = 0; id < table.symbols_.size(); ++id) {
    const std::string& word = table.symbols_[id];
    if (word.empty()) continue;
    const auto [it, inserted] = table.ids_.emplace(word, static_cast<std::int32_t>(id));
    if (!inserted) {
      throw ParseError(path, 0, detail::concat("word '", word, "' has two ids, ", it->second, " and ", id));
    }
  }
  return table;
}

const std::string& SymbolTable::symbol(std::int64_t id) const {
  ASRDEC_CHECK_ARG(id >= 0 && static_cast<std::size_t>(id) < symbols_.size(), "symbol id ", id,
                   " is outside the table of ", symbols_.size(), " ids");
  return symbols_[static_cast<std::size_t>(id)];
}

std::optional<std::int32_t> SymbolTable::find(std::string_view word) const {
  const auto found = ids_.find(std::string(word));
  if (found == ids_.end()) return std::nullopt;
  return found->second;
}

}  // namespace asrdec

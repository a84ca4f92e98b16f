// The text tables asrdec reads: the first byte picks the reader, the rest is the file. Oracles beyond "no crash":
// - lines: TextFileReader returns exactly the input split at LF with one CR before each LF dropped (or refuses a
//   NUL byte, a line over its limit);
// - token table: every token non-empty, at most one per line;
// - symbol table: every word maps back to its id, and no id exceeds the table's size in bytes;
// - lexicon: every entry a word and at least one non-empty piece;
// - word boosts: every id a word of the table (not <eps>), every score finite;
// - phrases: every phrase non-empty, trimmed, not a comment.

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "asrdec/asrdec.hpp"
#include "asrdec/wfst/graph_builder.hpp"
#include "fuzz_file.hpp"

namespace {

using asrdec::fuzz::FuzzFile;

// The input's lines by hand; refused (false) when TextFileReader must refuse it.
bool expected_lines(const std::string& text, std::size_t max_line, std::vector<std::string>& lines) {
  if (text.find('\0') != std::string::npos) return false;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    const bool has_end = end != std::string::npos;
    if (!has_end) end = text.size();
    if (end - start > max_line) return false;
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
    start = end + 1;
  }
  return true;
}

void check_lines(const std::string& text, const std::string& path) {
  constexpr std::size_t kMaxLine = 64;
  if (text.rfind("\x1f\x8b", 0) == 0) return;  // gzip magic: the reader decompresses, the oracle would not
  std::vector<std::string> want;
  const bool accepted = expected_lines(text, kMaxLine, want);
  std::vector<std::string> got;
  try {
    asrdec::TextFileReader reader(path, "", kMaxLine);
    std::string line;
    while (reader.next(line)) got.push_back(line);
  } catch (const asrdec::ParseError&) {
    ASRDEC_FUZZ_CHECK(!accepted);
    return;
  }
  ASRDEC_FUZZ_CHECK(accepted && got == want);
}

std::size_t count_lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static FuzzFile input("table.txt");
  static FuzzFile words_file("words.txt");
  static const std::string words_path = words_file.write(std::string("<eps> 0\nhello 1\nworld 2\n"));
  static const asrdec::SymbolTable words = asrdec::SymbolTable::load(words_path);
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string& path = input.write(text);
  try {
    switch (data[0] % 6) {
      case 0:
        check_lines(text, path);
        break;
      case 1: {
        const asrdec::Vocabulary vocabulary = asrdec::Vocabulary::load(path);
        ASRDEC_FUZZ_CHECK(vocabulary.size() >= 1 && vocabulary.size() <= count_lines(text));
        std::vector<std::int32_t> all;
        for (std::size_t id = 0; id < vocabulary.size(); ++id) {
          ASRDEC_FUZZ_CHECK(!vocabulary.token(static_cast<std::int32_t>(id)).empty());
          all.push_back(static_cast<std::int32_t>(id));
        }
        (void)vocabulary.detokenize(all);
        break;
      }
      case 2: {
        const asrdec::SymbolTable table = asrdec::SymbolTable::load(path);
        ASRDEC_FUZZ_CHECK(table.size() >= 1 && table.size() <= text.size());
        for (std::size_t id = 0; id < table.size(); ++id) {
          const std::string& word = table.symbol(static_cast<std::int64_t>(id));
          if (!word.empty()) ASRDEC_FUZZ_CHECK(table.find(word) == static_cast<std::int32_t>(id));
        }
        break;
      }
      case 3: {
        const asrdec::Lexicon lexicon = asrdec::read_lexicon(path);
        ASRDEC_FUZZ_CHECK(!lexicon.entries.empty() && lexicon.entries.size() <= count_lines(text));
        for (const asrdec::LexiconEntry& entry : lexicon.entries) {
          ASRDEC_FUZZ_CHECK(!entry.word.empty() && !entry.pieces.empty());
          for (const std::string& piece : entry.pieces) ASRDEC_FUZZ_CHECK(!piece.empty());
        }
        break;
      }
      case 4:
        for (const auto& [id, score] : asrdec::read_word_boosts(path, words)) {
          ASRDEC_FUZZ_CHECK(id > 0 && static_cast<std::size_t>(id) < words.size() && std::isfinite(score));
        }
        break;
      default:
        for (const std::string& phrase : asrdec::read_phrase_list(path)) {
          ASRDEC_FUZZ_CHECK(!phrase.empty() && phrase.front() != '#' && phrase.front() != ' ' && phrase.back() != ' ' &&
                            phrase.front() != '\t' && phrase.back() != '\t');
        }
    }
  } catch (const asrdec::Error&) {
    // A typed refusal.
  }
  return 0;
}

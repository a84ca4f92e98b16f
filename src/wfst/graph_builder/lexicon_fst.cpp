// L: the lexicon transducer (token pieces to words) with disambiguation symbols, and the words table.

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "asrdec/core/error.hpp"
#include "asrdec/text/text_file.hpp"
#include "wfst/graph_builder/graph_builder_openfst.hpp"

namespace asrdec {
namespace {

// Symbols with a fixed meaning in the words table; a lexicon word spelled like one would be ambiguous.
bool is_reserved_word(const std::string& word) {
  if (word == "<eps>" || word == "<s>" || word == "</s>") return true;
  return word.size() >= 2 && word[0] == '#' &&
         std::all_of(word.begin() + 1, word.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

Lexicon read_lexicon(const std::string& path) {
  TextFileReader in(path, "the lexicon");
  Lexicon lexicon;
  lexicon.source = path;
  std::string line;
  std::int64_t number = 0;
  while (in.next(line)) {
    number = in.line_number();
    std::vector<std::string> fields = split_fields(line);
    if (fields.empty()) continue;
    if (fields.size() == 1) {
      throw ParseError(path, number,
                       detail::concat("word '", fields[0], "' has no pieces (expected 'word piece ...')"));
    }
    if (is_reserved_word(fields[0])) {
      throw ParseError(path, number,
                       detail::concat("'", fields[0], "' is a reserved symbol of the words table, not a word"));
    }
    LexiconEntry entry;
    entry.word = std::move(fields[0]);
    entry.pieces.assign(std::make_move_iterator(fields.begin() + 1), std::make_move_iterator(fields.end()));
    entry.line = number;
    lexicon.entries.push_back(std::move(entry));
  }
  if (lexicon.entries.empty()) throw ParseError(path, number, "the lexicon has no pronunciations");
  return lexicon;
}

namespace detail {

WordTable make_word_table(const Lexicon& lexicon) {
  std::set<std::string> sorted;
  for (const LexiconEntry& entry : lexicon.entries) {
    ASRDEC_CHECK_ARG(!is_reserved_word(entry.word), lexicon.source, ":", entry.line, ": '", entry.word,
                     "' is a reserved symbol of the words table, not a word");
    sorted.insert(entry.word);
  }
  WordTable table;
  table.words.reserve(sorted.size() + 4);
  table.words.push_back("<eps>");
  table.words.insert(table.words.end(), sorted.begin(), sorted.end());
  table.disambig0 = static_cast<std::int32_t>(table.words.size());
  table.words.push_back("#0");
  table.bos = static_cast<std::int32_t>(table.words.size());
  table.words.push_back("<s>");
  table.eos = static_cast<std::int32_t>(table.words.size());
  table.words.push_back("</s>");
  for (std::size_t id = 0; id < table.words.size(); ++id) {
    table.id_of.emplace(table.words[id], static_cast<std::int32_t>(id));
  }
  return table;
}

void WordTable::write(const std::string& path) const {
  std::ofstream out(path);
  if (!out) throw FileError(path, concat(path, ": cannot open the words table for writing: ", std::strerror(errno)));
  for (std::size_t id = 0; id < words.size(); ++id) out << words[id] << ' ' << id << '\n';
  out.flush();
  if (!out) throw FileError(path, concat(path, ": write error: ", std::strerror(errno)));
}

LexiconFst make_lexicon_fst(const Lexicon& lexicon, const TokenLabels& tokens, const WordTable& words) {
  using fst::StdArc;
  ASRDEC_CHECK_ARG(!lexicon.entries.empty(), lexicon.source, ": the lexicon is empty");

  // Distinct (word, pronunciation) pairs in first-seen order: a repeated line adds no path.
  struct Pronunciation {
    std::int32_t word;
    std::vector<std::int32_t> labels;
  };
  std::vector<Pronunciation> pronunciations;
  std::set<std::pair<std::int32_t, std::vector<std::int32_t>>> seen;
  for (const LexiconEntry& entry : lexicon.entries) {
    ASRDEC_CHECK_ARG(!entry.pieces.empty(), lexicon.source, ":", entry.line, ": word '", entry.word, "' has no pieces");
    const auto word = words.id_of.find(entry.word);
    ASRDEC_CHECK_ARG(word != words.id_of.end(), lexicon.source, ":", entry.line, ": word '", entry.word,
                     "' is not in the words table");
    Pronunciation pronunciation{word->second, {}};
    for (const std::string& piece : entry.pieces) {
      const auto label = tokens.label_of_piece.find(piece);
      ASRDEC_CHECK_ARG(label != tokens.label_of_piece.end(), lexicon.source, ":", entry.line, ": piece '", piece,
                       "' of word '", entry.word, "' is not a token of the token table (or is the blank)");
      pronunciation.labels.push_back(label->second);
    }
    if (seen.emplace(pronunciation.word, pronunciation.labels).second) {
      pronunciations.push_back(std::move(pronunciation));
    }
  }

  // A pronunciation shared by several words, or a proper prefix of another, would make L∘G non-determinisable:
  // it gets its own #n (n counted per pronunciation from 1), so that every word's token string is unique and
  // no word's string continues into another's.
  std::map<std::vector<std::int32_t>, int> count;
  std::set<std::vector<std::int32_t>> prefixes;
  for (const Pronunciation& p : pronunciations) {
    ++count[p.labels];
    for (std::size_t n = 1; n < p.labels.size(); ++n) prefixes.emplace(p.labels.begin(), p.labels.begin() + n);
  }
  std::map<std::vector<std::int32_t>, std::int32_t> last_used;
  LexiconFst result;
  result.pronunciations = static_cast<std::int64_t>(pronunciations.size());
  fst::StdVectorFst& l = result.fst;
  const auto one = StdArc::Weight::One();
  const auto loop = l.AddState();
  l.SetStart(loop);
  l.SetFinal(loop, one);
  for (const Pronunciation& p : pronunciations) {
    std::vector<std::int32_t> labels = p.labels;
    if (count[p.labels] > 1 || prefixes.count(p.labels) != 0) {
      const std::int32_t n = ++last_used[p.labels];
      result.max_disambig = std::max(result.max_disambig, n);
      labels.push_back(tokens.disambig_label(n));
    }
    // The word goes on the first arc, so that LG emits it as early as its first token.
    auto from = loop;
    for (std::size_t i = 0; i < labels.size(); ++i) {
      const auto to = i + 1 == labels.size() ? loop : l.AddState();
      l.AddArc(from, StdArc(labels[i], i == 0 ? p.word : 0, one, to));
      from = to;
    }
  }
  // Carries G's back-off symbol through L (token #0 in, word #0 out).
  l.AddArc(loop, StdArc(tokens.disambig_label(0), words.disambig0, one, loop));
  fst::ArcSort(&l, fst::OLabelCompare<StdArc>());
  return result;
}

}  // namespace detail
}  // namespace asrdec

#include "asrdec/text/vocabulary.hpp"

#include "asrdec/core/error.hpp"
#include "asrdec/text/text_file.hpp"

namespace asrdec {
namespace {

constexpr std::string_view kWordStart = "\xE2\x96\x81";  // U+2581, SentencePiece's word-start mark

// "token id" lines whose id is the line number, as k2/sherpa-style token tables have.
bool is_two_column(const std::vector<std::string>& lines) {
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::size_t space = lines[i].rfind(' ');
    if (space == std::string::npos || space == 0 || lines[i].substr(space + 1) != std::to_string(i)) {
      return false;
    }
  }
  return !lines.empty();
}

}  // namespace

Vocabulary::Vocabulary(std::vector<std::string> tokens) : tokens_(std::move(tokens)) {}

Vocabulary Vocabulary::load(const std::string& path) {
  TextFileReader reader(path);
  std::vector<std::string> lines;
  std::string line;
  while (reader.next(line)) {
    lines.push_back(line);
  }
  while (!lines.empty() && lines.back().empty()) {
    lines.pop_back();  // a trailing newline or blank lines at the end are not tokens
  }
  if (lines.empty()) {
    throw ParseError(path, 0, "empty token table");
  }
  if (is_two_column(lines)) {
    for (auto& l : lines) {
      l.erase(l.rfind(' '));
    }
  }
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty()) {
      throw ParseError(path, static_cast<std::int64_t>(i + 1), detail::concat("empty token for id ", i));
    }
  }
  return Vocabulary(std::move(lines));
}

const std::string& Vocabulary::token(std::int32_t id) const {
  ASRDEC_CHECK_ARG(id >= 0 && static_cast<std::size_t>(id) < tokens_.size(), "token id ", id,
                   " is outside the vocabulary of ", tokens_.size(), " tokens");
  return tokens_[static_cast<std::size_t>(id)];
}

std::vector<std::int32_t> Vocabulary::word_start_ids() const {
  std::vector<std::int32_t> ids;
  for (std::size_t id = 0; id < tokens_.size(); ++id) {
    if (tokens_[id].compare(0, kWordStart.size(), kWordStart) == 0) ids.push_back(static_cast<std::int32_t>(id));
  }
  return ids;
}

std::string Vocabulary::detokenize(const std::vector<std::int32_t>& ids) const {
  std::string text;
  for (std::int32_t id : ids) {
    const std::string& piece = token(id);
    std::size_t start = 0;
    std::size_t found;
    while ((found = piece.find(kWordStart, start)) != std::string::npos) {
      text.append(piece, start, found - start);
      text += ' ';
      start = found + kWordStart.size();
    }
    text.append(piece, start, std::string::npos);
  }
  // Collapse the spaces word marks produce at the edges and between empty pieces.
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == ' ' && (out.empty() || out.back() == ' ')) {
      continue;
    }
    out += c;
  }
  while (!out.empty() && out.back() == ' ') {
    out.pop_back();
  }
  return out;
}

void Vocabulary::check_matches(std::int64_t num_tokens, const std::string& what) const {
  const auto size = static_cast<std::int64_t>(tokens_.size());
  ASRDEC_CHECK_ARG(size == num_tokens || size == num_tokens + 1, "vocabulary mismatch: the token table has ", size,
                   " entries but ", what, " has ", num_tokens, " tokens plus blank (expected ", num_tokens, " or ",
                   num_tokens + 1, " entries)");
}

}  // namespace asrdec

#include "lm/arpa_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string_view>
#include <unordered_set>

#include "asrdec/core/error.hpp"
#include "asrdec/core/log.hpp"
#include "asrdec/text/text_file.hpp"

namespace asrdec::detail {
namespace {

// Values are log10 probabilities and backoffs. Real models stay within ±100 (-99 marks an impossible <s>);
// anything beyond ±10^6 is damage, and refusing it keeps every sum of scores a decoder forms finite in float.
constexpr double kMaxLog10Magnitude = 1e6;
// Entries are reserved as the header declares them, but never more than this many up front: a header may lie.
constexpr std::int64_t kMaxReservedEntries = std::int64_t{1} << 20;
// Symbols and n-grams are numbered with int32.
constexpr std::int64_t kMaxEntriesPerOrder = std::numeric_limits<std::int32_t>::max() / 2;

bool is_arpa_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

bool is_blank(std::string_view line) {
  for (char c : line) {
    if (!is_arpa_space(c)) return false;
  }
  return true;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_arpa_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_arpa_space(text.back())) text.remove_suffix(1);
  return text;
}

// Splits on ASCII whitespace only: token-level LMs use code points such as U+0085 and U+00A0 as symbols.
void split(std::string_view line, std::vector<std::string_view>& out) {
  out.clear();
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_arpa_space(line[i])) ++i;
    const std::size_t start = i;
    while (i < line.size() && !is_arpa_space(line[i])) ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
}

}  // namespace

ArpaModel read_arpa(const std::string& path, bool clamp_positive_probabilities) {
  TextFileReader reader(path);
  ArpaModel model;
  model.path = path;
  std::string line;
  const auto fail = [&](const std::string& message) -> ParseError { return reader.error(message); };
  const auto number = [&](std::string_view text, const char* what) -> double {
    double value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) {
      throw fail(concat(what, " '", text, "' is not a number"));
    }
    if (!std::isfinite(value)) {
      throw fail(concat(what, " ", text, " is not finite"));
    }
    if (std::fabs(value) > kMaxLog10Magnitude) {
      throw fail(
          concat(what, " ", text, " is outside [-", kMaxLog10Magnitude, ", ", kMaxLog10Magnitude, "] (damaged file?)"));
    }
    return value;
  };
  const auto count_field = [&](std::string_view text, const char* what) -> std::int64_t {
    std::int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || value < 0) {
      throw fail(concat(what, " '", text, "' is not a non-negative integer"));
    }
    return value;
  };

  // Anything may precede \data\ (KenLM skips it too).
  bool found = false;
  while (reader.next(line)) {
    if (line == "\\data\\") {
      found = true;
      break;
    }
  }
  if (!found) {
    throw ParseError(path, reader.line_number(), "no \\data\\ section: not an ARPA file (or it is empty)");
  }

  std::vector<std::int64_t> counts;
  while (reader.next(line)) {
    if (is_blank(line)) {
      if (counts.empty()) continue;
      break;
    }
    if (line.rfind("ngram ", 0) != 0) {
      if (line.rfind("\\1-grams:", 0) == 0 && !counts.empty()) break;  // header without its blank line
      throw fail(concat("expected 'ngram N=COUNT' in the \\data\\ header, got '", line, "'"));
    }
    const std::size_t equals = line.find('=');
    if (equals == std::string::npos) throw fail(concat("expected 'ngram N=COUNT', got '", line, "'"));
    // Toolkits pad these fields (IRSTLM writes "ngram  1=       256").
    const std::int64_t order = count_field(trim(std::string_view(line).substr(6, equals - 6)), "n-gram order");
    const std::int64_t count = count_field(trim(std::string_view(line).substr(equals + 1)), "n-gram count");
    if (order > kMaxArpaOrder) {
      throw fail(concat("n-gram order ", order, " is above the ", kMaxArpaOrder, " orders asrdec reads"));
    }
    if (order != static_cast<std::int64_t>(counts.size() + 1)) {
      throw fail(concat("n-gram orders must be listed as 1, 2, 3, ...; found order ", order, " after ", counts.size()));
    }
    if (count > kMaxEntriesPerOrder) {
      throw fail(
          concat("n-gram count ", count, " is more than the ", kMaxEntriesPerOrder, " entries an order may hold"));
    }
    counts.push_back(count);
  }
  if (counts.empty()) throw fail("the \\data\\ header lists no n-gram counts");
  if (counts[0] == 0) throw fail("the \\data\\ header declares no unigrams");

  model.orders.resize(counts.size());
  std::vector<std::string_view> fields;
  std::string header_line;
  for (std::size_t n = 1; n <= counts.size(); ++n) {
    // The section header, after optional blank lines.
    bool have_header = line.rfind("\\1-grams:", 0) == 0 && n == 1;
    while (!have_header) {
      if (!reader.next(line)) throw fail(concat("truncated: the file ends before the \\", n, "-grams: section"));
      if (is_blank(line)) continue;
      const std::string expected = concat("\\", n, "-grams:");
      if (line.rfind(expected, 0) != 0 || !is_blank(std::string_view(line).substr(expected.size()))) {
        throw fail(concat("expected '", expected, "', got '", line, "'"));
      }
      have_header = true;
    }
    ArpaOrder& order = model.orders[n - 1];
    order.first_line = reader.line_number() + 1;
    const auto reserved = static_cast<std::size_t>(std::min(counts[n - 1], kMaxReservedEntries));
    order.words.reserve(reserved * n);
    order.prob.reserve(reserved);
    order.backoff.reserve(reserved);
    for (std::int64_t i = 0; i < counts[n - 1]; ++i) {
      if (!reader.next(line)) {
        throw fail(
            concat("truncated: the \\", n, "-grams: section has ", i, " entries, the header declares ", counts[n - 1]));
      }
      split(line, fields);
      if (fields.empty() || fields[0].front() == '\\') {
        throw fail(concat("the \\", n, "-grams: section has ", i, " entries, the header declares ", counts[n - 1]));
      }
      if (fields.size() != n + 1 && fields.size() != n + 2) {
        throw fail(concat("expected a probability, ", n, n == 1 ? " word" : " words", " and an optional backoff, got ",
                          fields.size(), " fields"));
      }
      double prob = number(fields[0], "probability");
      if (prob > 0) {
        if (!clamp_positive_probabilities) {
          throw fail(
              concat("positive log10 probability ", fields[0],
                     " (load with clamp_positive_probabilities to read it as 0, as KenLM's build_binary -i does)"));
        }
        warn_once("arpa-positive:" + path, concat(path, ":", reader.line_number(), ": positive log10 probability ",
                                                  fields[0], " read as 0 (further ones silently)"));
        prob = 0;
      }
      double backoff = 0;
      if (fields.size() == n + 2) {
        backoff = number(fields[n + 1], "backoff");
        if (n == counts.size() && backoff != 0) {
          throw fail(concat("backoff ", fields[n + 1], " on an n-gram of the highest order ", n));
        }
      }
      for (std::size_t w = 1; w <= n; ++w) {
        const std::string word(fields[w]);
        std::int32_t id;
        if (n == 1) {
          const auto [it, inserted] = model.index.emplace(word, static_cast<std::int32_t>(model.symbols.size()));
          if (!inserted) throw fail(concat("duplicate unigram '", word, "'"));
          model.symbols.push_back(word);
          id = it->second;
        } else {
          const auto it = model.index.find(word);
          if (it == model.index.end()) throw fail(concat("word '", word, "' is not among the unigrams"));
          id = it->second;
        }
        order.words.push_back(id);
      }
      order.prob.push_back(static_cast<float>(prob));
      order.backoff.push_back(static_cast<float>(backoff));
    }
  }
  // After the last section: blank lines, \end\, then only whitespace.
  bool ended = false;
  while (reader.next(line)) {
    if (is_blank(line)) continue;
    if (line == "\\end\\" && !ended) {
      ended = true;
      continue;
    }
    if (!ended) {
      throw fail(concat("expected \\end\\ after the \\", counts.size(), "-grams: section (more entries than the ",
                        counts.back(), " declared?), got '", line, "'"));
    }
    throw fail(concat("unexpected text after \\end\\: '", line, "'"));
  }
  if (!ended) throw fail("truncated: no \\end\\ line");
  for (const char* required : {"<s>", "</s>"}) {
    if (model.index.count(required) == 0) {
      throw ParseError(path, 0, concat("the unigrams lack ", required, ", which every ARPA model needs"));
    }
  }
  return model;
}

}  // namespace asrdec::detail

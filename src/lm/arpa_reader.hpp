#pragma once
// Internal: reading ARPA n-gram files (plain or gzip) with KenLM's rules. Symbols are interned in the order of
// the unigram section; n-grams are stored per order as flat arrays of symbol indices.

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace asrdec::detail {

/** The highest n-gram order an ARPA file or LM image may have (real models stop well below 10). */
constexpr std::int64_t kMaxArpaOrder = 255;

struct ArpaOrder {
  std::vector<std::int32_t> words;  ///< n symbol indices per entry
  std::vector<float> prob;          ///< log10
  std::vector<float> backoff;       ///< log10, 0 when the column is absent
  std::int64_t first_line = 0;      ///< entries are consecutive lines: entry i is on line first_line + i
};

struct ArpaModel {
  std::string path;
  std::vector<std::string> symbols;  ///< unigram symbols, file order
  std::unordered_map<std::string, std::int32_t> index;
  std::vector<ArpaOrder> orders;  ///< orders[n-1] holds the n-grams
  int order() const { return static_cast<int>(orders.size()); }
};

/** Reads an ARPA file; gzip-compressed files are recognised by content. Throws ParseError with file and line
 *  for every malformation listed in docs/ngram-lm.md. */
ArpaModel read_arpa(const std::string& path, bool clamp_positive_probabilities = false);

}  // namespace asrdec::detail

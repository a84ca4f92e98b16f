#include "asrdec/text/wer.hpp"

#include <algorithm>

namespace asrdec {

double WerStats::rate() const noexcept {
  if (reference_words == 0) {
    return static_cast<double>(errors());
  }
  return static_cast<double>(errors()) / static_cast<double>(reference_words);
}

WerStats& WerStats::operator+=(const WerStats& other) noexcept {
  substitutions += other.substitutions;
  deletions += other.deletions;
  insertions += other.insertions;
  reference_words += other.reference_words;
  return *this;
}

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  std::size_t i = 0;
  const auto is_space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  };
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    const std::size_t start = i;
    while (i < text.size() && !is_space(text[i])) ++i;
    if (i > start) {
      words.emplace_back(text.substr(start, i - start));
    }
  }
  return words;
}

WerStats word_errors(std::string_view reference, std::string_view hypothesis) {
  const std::vector<std::string> ref = split_words(reference);
  const std::vector<std::string> hyp = split_words(hypothesis);
  const std::size_t n = ref.size();
  const std::size_t m = hyp.size();
  // Full table for the traceback; utterances are short, so O(n*m) memory is fine.
  std::vector<std::int32_t> cost((n + 1) * (m + 1));
  const auto at = [&](std::size_t i, std::size_t j) -> std::int32_t& { return cost[i * (m + 1) + j]; };
  for (std::size_t i = 0; i <= n; ++i) at(i, 0) = static_cast<std::int32_t>(i);
  for (std::size_t j = 0; j <= m; ++j) at(0, j) = static_cast<std::int32_t>(j);
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const std::int32_t diagonal = at(i - 1, j - 1) + (ref[i - 1] == hyp[j - 1] ? 0 : 1);
      at(i, j) = std::min({diagonal, at(i - 1, j) + 1, at(i, j - 1) + 1});
    }
  }
  WerStats stats;
  stats.reference_words = static_cast<std::int64_t>(n);
  std::size_t i = n;
  std::size_t j = m;
  while (i > 0 || j > 0) {
    if (i > 0 && j > 0 && at(i, j) == at(i - 1, j - 1) + (ref[i - 1] == hyp[j - 1] ? 0 : 1)) {
      stats.substitutions += ref[i - 1] == hyp[j - 1] ? 0 : 1;
      --i;
      --j;
    } else if (i > 0 && at(i, j) == at(i - 1, j) + 1) {
      ++stats.deletions;
      --i;
    } else {
      ++stats.insertions;
      --j;
    }
  }
  return stats;
}

}  // namespace asrdec

#pragma once
/**
 * @file
 * Word error rate: the word-level Levenshtein alignment of a hypothesis against a reference, with its
 * substitutions, deletions and insertions. Words are split on ASCII whitespace; comparison is exact (callers
 * normalise case and punctuation first if they want to).
 */

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "asrdec/core/export.hpp"

namespace asrdec {

struct ASRDEC_API WerStats {
  std::int64_t substitutions = 0;
  std::int64_t deletions = 0;
  std::int64_t insertions = 0;
  std::int64_t reference_words = 0;

  std::int64_t errors() const noexcept { return substitutions + deletions + insertions; }
  /** errors / reference_words (0 when both are 0; errors when there are no reference words). */
  double rate() const noexcept;
  WerStats& operator+=(const WerStats& other) noexcept;
};

ASRDEC_API std::vector<std::string> split_words(std::string_view text);

/** Minimum-edit alignment; among equally short alignments the counts are those of a fixed traceback
 *  preference (substitution, then deletion, then insertion). */
ASRDEC_API WerStats word_errors(std::string_view reference, std::string_view hypothesis);

}  // namespace asrdec

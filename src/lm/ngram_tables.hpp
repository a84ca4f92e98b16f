#pragma once
// Internal: the host tables of an NgramLm (owned vectors, or views into a memory-mapped binary image) and
// building them from an ARPA model.

#include <memory>
#include <string>
#include <vector>

#include "asrdec/lm/ngram_lm.hpp"
#include "lm/arpa_reader.hpp"

namespace asrdec::detail {

/** The largest LM vocabulary (V tokens or words): full-vocabulary queries hold [batch, V] scores, and START holds
 *  an arc per label, so V bounds the memory of every LM and fused decoder. */
constexpr std::int64_t kMaxLmVocabulary = std::int64_t{1} << 24;

struct NgramTables {
  std::int32_t vocab_size = 0;
  std::int32_t order = 0;
  float missing_offset = 0.0f;
  LmVocabularyKind vocabulary = LmVocabularyKind::token_level;
  std::vector<std::string> words;  // word-level vocabularies: id -> word
  // Query tables; `owner` keeps them alive (vectors below, or a file mapping).
  std::vector<std::int32_t> arc_begin, arc_label, arc_target, backoff_to;
  std::vector<float> arc_weight, backoff_weight, final_weight;
  std::vector<std::uint8_t> missing;
  std::shared_ptr<const void> mapping;  // set when the arrays live in a mapped file
  NgramLmRef mapped{};                  // pointers into the mapping when `mapping` is set

  NgramLmRef ref() const;
  std::int64_t states() const { return static_cast<std::int64_t>(ref().states); }
  std::int64_t arcs() const;
  std::size_t bytes() const;
};

/** Builds the suffix tree. `table` maps words to ids for LmVocabularyKind::symbol_table. */
NgramTables build_ngram_tables(const ArpaModel& arpa, const NgramLmOptions& options);

/** The code point of a string holding exactly one UTF-8 encoded character, else -1. */
std::int64_t single_code_point(const std::string& s);

void write_binary(const NgramTables& tables, const std::string& path);
bool is_binary_image(const std::string& path);
/** Whether `path` is a KenLM binary model (build_binary's output), which asrdec does not read. */
bool is_kenlm_binary(const std::string& path);
NgramTables read_binary(const std::string& path);

}  // namespace asrdec::detail

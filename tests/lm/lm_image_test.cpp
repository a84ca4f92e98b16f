// The binary LM image against hostile files: every header field and every table value a query reads is checked,
// with the checksum recomputed so that the checks behind it are reached (a real attacker can recompute it too).

#include <zlib.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>

#include "support/test_support.hpp"

namespace asrdec {
namespace {

// Offsets of the version-3 header fields (src/lm/ngram_binary.cpp).
constexpr std::size_t kVersion = 8, kHeaderBytesField = 12, kCrc = 24, kVocabSize = 28, kOrder = 32, kVocabulary = 36,
                      kMissingOffset = 40, kStates = 48, kArcs = 56, kWordCount = 64;
constexpr std::size_t kHeaderBytes = 128;

std::string image_bytes() {
  NgramLmOptions options;
  options.vocab_size = 8;
  const NgramLm lm = NgramLm::load(testing::source_path("tests/data/arpa/tokens_3gram.arpa"), options);
  const std::string path = testing::temp_path("image.lm");
  lm.save_binary(path);
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

template <class T>
void put(std::string& bytes, std::size_t offset, T value) {
  std::memcpy(bytes.data() + offset, &value, sizeof value);
}

template <class T>
T get(const std::string& bytes, std::size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

// The checksum over the header (its CRC field zero) and the payload, as the writer computes it.
void fix_crc(std::string& bytes) {
  put<std::uint32_t>(bytes, kCrc, 0);
  auto crc = crc32_z(0, reinterpret_cast<const Bytef*>(bytes.data()), kHeaderBytes);
  crc = crc32_z(crc, reinterpret_cast<const Bytef*>(bytes.data()) + kHeaderBytes, bytes.size() - kHeaderBytes);
  put<std::uint32_t>(bytes, kCrc, static_cast<std::uint32_t>(crc));
}

using testing::write_temp_file;

NgramLmOptions image_options() {
  NgramLmOptions options;
  options.vocab_size = 0;  // the image's own V
  return options;
}

struct Case {
  const char* name;
  std::function<void(std::string&)> change;
  const char* message;
};

// Each case changes a copy of `good`, recomputes the checksum and must be refused with its message.
void expect_refused(const std::string& good, const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string bytes = good;
    c.change(bytes);
    fix_crc(bytes);
    ASRDEC_EXPECT_THROW_MSG(NgramLm::load(write_temp_file(std::string(c.name) + ".lm", bytes), image_options()),
                            ParseError, c.message);
  }
}

std::size_t aligned(std::size_t n) { return (n + 63) / 64 * 64; }

TEST(LmImage, HeaderFieldsAreCheckedBeforeTheyAreUsed) {
  const std::string good = image_bytes();
  ASSERT_EQ(get<std::uint32_t>(good, kVersion), 3u);
  EXPECT_NO_THROW(NgramLm::load(write_temp_file("good.lm", good), image_options()));
  const std::vector<Case> cases = {
      // The vocabulary kind used to index an array in describe(): a SIGSEGV from one byte.
      {"vocabulary", [](std::string& b) { put<std::int32_t>(b, kVocabulary, 7); },
       "header field vocabulary = 7 is outside [0, 2]"},
      // states + 2^60 used to wrap the layout so that size and checksum checks passed.
      {"states_wrap",
       [](std::string& b) { put<std::int64_t>(b, kStates, get<std::int64_t>(b, kStates) + (1ll << 60)); },
       "header field states = "},
      {"arcs_negative", [](std::string& b) { put<std::int64_t>(b, kArcs, -5); }, "header field arcs = -5 is outside"},
      {"order", [](std::string& b) { put<std::int32_t>(b, kOrder, 1000000); },
       "header field order = 1000000 is outside [1, 255]"},
      {"vocab", [](std::string& b) { put<std::int32_t>(b, kVocabSize, -1); }, "header field vocab_size = -1"},
      {"misaligned", [](std::string& b) { put<std::uint32_t>(b, kHeaderBytesField, 129); },
       "header field header_bytes = 129 is outside [128, 128]"},
      {"word_count", [](std::string& b) { put<std::int64_t>(b, kWordCount, 3); },
       "header field word_count = 3 is outside [0, 0]"},
      {"missing_offset_nan", [](std::string& b) { put<float>(b, kMissingOffset, std::nanf("")); },
       "missing_offset = nan is not a finite value"},
      {"missing_offset_inf",
       [](std::string& b) { put<float>(b, kMissingOffset, -std::numeric_limits<float>::infinity()); },
       "missing_offset = -inf"},
      {"trailing", [](std::string& b) { b += std::string(64, '\0'); }, "truncated or corrupted"},
      {"truncated", [](std::string& b) { b.resize(b.size() - 64); }, "truncated or corrupted"},
  };
  expect_refused(good, cases);
  // Without a recomputed checksum, any one changed header byte is caught: the CRC covers the header now.
  for (std::size_t offset = kVocabSize; offset < 80; ++offset) {
    std::string bytes = good;
    bytes[offset] = static_cast<char>(bytes[offset] ^ 0x01);
    EXPECT_THROW(NgramLm::load(write_temp_file("flip.lm", bytes), image_options()), ParseError) << "byte " << offset;
  }
  std::string old_version = good;
  put<std::uint32_t>(old_version, kVersion, 2);
  ASRDEC_EXPECT_THROW_MSG(NgramLm::load(write_temp_file("v2.lm", old_version), image_options()), ParseError,
                          "LM image version 2 is not supported (expected 3)");
}

TEST(LmImage, TableValuesAreCheckedBeforeAnyQuery) {
  const std::string good = image_bytes();
  const auto states = static_cast<std::size_t>(get<std::int64_t>(good, kStates));
  const auto arcs = static_cast<std::size_t>(get<std::int64_t>(good, kArcs));
  const std::size_t arc_begin = kHeaderBytes;
  const std::size_t arc_label = arc_begin + aligned((states + 1) * 4);
  const std::size_t arc_target = arc_label + aligned(arcs * 4);
  const std::size_t arc_weight = arc_target + aligned(arcs * 4);
  const std::size_t backoff_to = arc_weight + aligned(arcs * 4);
  const std::size_t backoff_weight = backoff_to + aligned(states * 4);
  const std::size_t final_weight = backoff_weight + aligned(states * 4);
  const std::size_t missing = final_weight + aligned(states * 4);
  const std::size_t last_arc = arcs - 1;  // of the last state with arcs: a bigram or trigram arc
  const std::vector<Case> cases = {
      {"nan_weight", [&](std::string& b) { put<float>(b, arc_weight + 4 * last_arc, std::nanf("")); },
       "has a non-finite or out-of-range weight"},
      {"inf_backoff",
       [&](std::string& b) { put<float>(b, backoff_weight + 4 * 2, std::numeric_limits<float>::infinity()); },
       "state 2 has a non-finite or out-of-range backoff or final weight"},
      {"huge_final", [&](std::string& b) { put<float>(b, final_weight + 4 * 1, -1e30f); },
       "state 1 has a non-finite or out-of-range backoff or final weight"},
      {"target",
       [&](std::string& b) { put<std::int32_t>(b, arc_target + 4 * last_arc, static_cast<std::int32_t>(states)); },
       "corrupted arc"},
      {"label", [&](std::string& b) { put<std::int32_t>(b, arc_label + 4 * last_arc, 9); }, "corrupted arc"},
      {"unsorted",
       [&](std::string& b) {
         // The first two arcs of the first state after START that has two.
         std::size_t s = 1;
         while (get<std::int32_t>(b, arc_begin + 4 * (s + 1)) - get<std::int32_t>(b, arc_begin + 4 * s) < 2) ++s;
         const auto a = static_cast<std::size_t>(get<std::int32_t>(b, arc_begin + 4 * s));
         const auto first = get<std::int32_t>(b, arc_label + 4 * a);
         put<std::int32_t>(b, arc_label + 4 * a, get<std::int32_t>(b, arc_label + 4 * (a + 1)));
         put<std::int32_t>(b, arc_label + 4 * (a + 1), first);
       },
       "are not sorted by label"},
      {"backoff_up", [&](std::string& b) { put<std::int32_t>(b, backoff_to + 4 * 1, 5); },
       "corrupted backoff link of state 1"},
      {"offsets", [&](std::string& b) { put<std::int32_t>(b, arc_begin + 4 * 1, 1 << 30); },
       "corrupted arc offsets of state 0"},
      {"missing_flag", [&](std::string& b) { b[missing + 3] = 7; }, "corrupted missing-token flag of token 3"},
  };
  expect_refused(good, cases);
}

TEST(LmImage, KindAndVocabularyMustMatchTheRequest) {
  const std::string token_image = write_temp_file("tokens.lm", image_bytes());
  // arpa_words asks for the file's own vocabulary, which an image records.
  NgramLmOptions own;
  own.vocabulary = LmVocabularyKind::arpa_words;
  EXPECT_EQ(NgramLm::load(token_image, own).vocab_size(), 8);
  NgramLmOptions words;
  words.vocabulary = LmVocabularyKind::symbol_table;
  words.symbol_table = testing::temp_path("any_words.txt");
  std::ofstream(words.symbol_table) << "a 0\n";
  ASRDEC_EXPECT_THROW_MSG(NgramLm::load(token_image, words), InvalidArgument,
                          "is a token-level LM image, loaded as a word-level LM");
  NgramLmOptions negative;
  negative.vocab_size = -5;
  ASRDEC_EXPECT_THROW_MSG(NgramLm::load(token_image, negative), InvalidArgument,
                          "NgramLmOptions.vocab_size: a token-level LM needs V");
  // A word-level image loaded with a symbol table must have been built with that table.
  NgramLmOptions table;
  table.vocabulary = LmVocabularyKind::symbol_table;
  const std::string words_path = testing::temp_path("words.txt");
  std::ofstream(words_path) << "a 0\nb 1\n";
  table.symbol_table = words_path;
  const std::string arpa = testing::temp_path("words.arpa");
  std::ofstream(arpa) << "\\data\\\nngram 1=4\n\n\\1-grams:\n-0.5\t<s>\n-0.6\t</s>\n-0.7\ta\n-0.8\tb\n\n\\end\\\n";
  const std::string word_image = testing::temp_path("words.lm");
  NgramLm::load(arpa, table).save_binary(word_image);
  EXPECT_EQ(NgramLm::load(word_image, table).vocab_size(), 2);
  std::ofstream(words_path) << "b 0\na 1\n";
  ASRDEC_EXPECT_THROW_MSG(NgramLm::load(word_image, table), InvalidArgument,
                          "was built with another word table than " + words_path);
}

}  // namespace
}  // namespace asrdec

// asrdec's binary LM image: a fixed header, then the query tables as aligned arrays, then the vocabulary words.
// Loading maps the file and points the tables into it. Nothing in the file is trusted: every header field is
// range-checked and every size computed with checked arithmetic before any table is touched, one CRC-32 covers
// the header and the payload, and a structural pass checks every value a query reads (offsets, labels sorted,
// targets, backoff links going down so a query always ends at START, finite weights), so a damaged or hostile
// image is a ParseError instead of a crash or NaN scores.

#include <zlib.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <vector>

#include "asrdec/core/error.hpp"
#include "core/checked_size.hpp"
#include "core/mapped_file.hpp"
#include "lm/ngram_tables.hpp"

namespace asrdec::detail {
namespace {

constexpr char kMagic[8] = {'A', 'S', 'R', 'D', 'E', 'C', 'L', 'M'};
// Version 2: START's backoff link is -1 (the root marker) instead of 0.
// Version 3: the CRC covers the header too (with the CRC field zero).
constexpr std::uint32_t kVersion = 3;
constexpr std::size_t kAlign = 64;
// |ln weight| of any arc, backoff or final weight: ARPA values are bounded by 10^6 in log10 (arpa_reader.cpp).
constexpr float kMaxLnMagnitude = 1e6f * 2.302585093f;

struct Header {
  char magic[8];
  std::uint32_t version;
  std::uint32_t header_bytes;
  std::uint64_t payload_bytes;
  std::uint32_t crc32;  // of the header (this field zero) followed by the payload
  std::int32_t vocab_size;
  std::int32_t order;
  std::int32_t vocabulary;
  float missing_offset;
  std::int32_t reserved;
  std::int64_t states;
  std::int64_t arcs;
  std::int64_t word_count;
  std::int64_t word_bytes;
};

constexpr std::size_t kHeaderBytes = (sizeof(Header) + kAlign - 1) / kAlign * kAlign;

// Offsets of the tables in the payload, each aligned to 64 bytes; every size is checked by `sizes`.
struct Layout {
  std::uint64_t arc_begin, arc_label, arc_target, arc_weight, backoff_to, backoff_weight, final_weight, missing, words,
      end;
  Layout(std::uint64_t states, std::uint64_t arcs, std::uint64_t vocab, std::uint64_t word_bytes,
         const FileSizes& sizes) {
    std::uint64_t at = 0;
    const auto next = [&](std::uint64_t count, std::uint64_t element, const char* what) {
      const std::uint64_t here = at;
      at = sizes.add(at, sizes.bytes(count, element, what), what);
      at = sizes.add(at, (kAlign - at % kAlign) % kAlign, what);
      return here;
    };
    arc_begin = next(states + 1, 4, "arc offsets");
    arc_label = next(arcs, 4, "arc labels");
    arc_target = next(arcs, 4, "arc targets");
    arc_weight = next(arcs, 4, "arc weights");
    backoff_to = next(states, 4, "backoff links");
    backoff_weight = next(states, 4, "backoff weights");
    final_weight = next(states, 4, "final weights");
    missing = next(vocab, 1, "missing-token flags");
    words = next(word_bytes, 1, "vocabulary words");
    end = at;
  }
  // Layout of tables already in memory (writing): sizes cannot be hostile there.
  Layout(std::uint64_t states, std::uint64_t arcs, std::uint64_t vocab, std::uint64_t word_bytes)
      : Layout(states, arcs, vocab, word_bytes, FileSizes("<LM image being written>", ~std::uint64_t{0})) {}
};

std::uint32_t image_crc(const Header& header, const char* payload, std::size_t payload_bytes) {
  Header zeroed = header;
  zeroed.crc32 = 0;
  std::vector<unsigned char> bytes(kHeaderBytes, 0);
  std::memcpy(bytes.data(), &zeroed, sizeof zeroed);
  auto crc = crc32_z(0, bytes.data(), bytes.size());
  crc = crc32_z(crc, reinterpret_cast<const Bytef*>(payload), static_cast<z_size_t>(payload_bytes));
  return static_cast<std::uint32_t>(crc);
}

bool finite_within(float value, float bound) { return std::isfinite(value) && std::fabs(value) <= bound; }

}  // namespace

bool is_kenlm_binary(const std::string& path) {
  // KenLM's build_binary files start with "mmap lm http://kheafield.com/code format version N".
  static constexpr char kKenLm[] = "mmap lm http://kheafield.com/code";
  std::ifstream in(path, std::ios::binary);
  char head[sizeof kKenLm - 1] = {};
  return in.read(head, sizeof head) && std::memcmp(head, kKenLm, sizeof head) == 0;
}

bool is_binary_image(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  return in.read(magic, 8) && std::memcmp(magic, kMagic, 8) == 0;
}

void write_binary(const NgramTables& t, const std::string& path) {
  const NgramLmRef r = t.ref();
  std::string words;
  for (const std::string& word : t.words) {
    words += word;
    words += '\0';
  }
  const Layout layout(static_cast<std::uint64_t>(r.states), static_cast<std::uint64_t>(t.arcs()),
                      static_cast<std::uint64_t>(r.vocab_size), words.size());
  std::vector<char> payload(layout.end, 0);
  const auto put = [&](std::uint64_t offset, const void* source, std::size_t bytes) {
    if (bytes > 0) std::memcpy(payload.data() + offset, source, bytes);
  };
  const auto states = static_cast<std::size_t>(r.states);
  const auto arcs = static_cast<std::size_t>(t.arcs());
  put(layout.arc_begin, r.arc_begin, (states + 1) * 4);
  put(layout.arc_label, r.arc_label, arcs * 4);
  put(layout.arc_target, r.arc_target, arcs * 4);
  put(layout.arc_weight, r.arc_weight, arcs * 4);
  put(layout.backoff_to, r.backoff_to, states * 4);
  put(layout.backoff_weight, r.backoff_weight, states * 4);
  put(layout.final_weight, r.final_weight, states * 4);
  put(layout.missing, r.missing, static_cast<std::size_t>(r.vocab_size));
  put(layout.words, words.data(), words.size());

  Header h{};
  std::memcpy(h.magic, kMagic, 8);
  h.version = kVersion;
  h.header_bytes = static_cast<std::uint32_t>(kHeaderBytes);
  h.payload_bytes = payload.size();
  h.vocab_size = r.vocab_size;
  h.order = r.order;
  h.vocabulary = static_cast<std::int32_t>(t.vocabulary);
  h.missing_offset = r.missing_offset;
  h.states = r.states;
  h.arcs = t.arcs();
  h.word_count = static_cast<std::int64_t>(t.words.size());
  h.word_bytes = static_cast<std::int64_t>(words.size());
  h.crc32 = image_crc(h, payload.data(), payload.size());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw FileError(path, concat(path, ": cannot open for writing: ", std::strerror(errno)));
  std::vector<char> header(kHeaderBytes, 0);
  std::memcpy(header.data(), &h, sizeof h);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(payload.data(), static_cast<std::streamsize>(payload.size()));
  if (!out) throw FileError(path, concat(path, ": write failed"));
}

NgramTables read_binary(const std::string& path) {
  auto mapping = std::make_shared<MappedFile>(path);
  const FileSizes sizes(path, mapping->size());
  if (mapping->size() < kHeaderBytes) sizes.fail("truncated: shorter than the LM image header");
  Header h;
  std::memcpy(&h, mapping->data(), sizeof h);
  if (std::memcmp(h.magic, kMagic, 8) != 0) sizes.fail("not an asrdec LM image");
  if (h.version != kVersion) {
    sizes.fail(concat("LM image version ", h.version, " is not supported (expected ", kVersion,
                      "); convert the ARPA file again with `asrdec lm convert`"));
  }
  // Every field is checked before it sizes or indexes anything.
  sizes.field<std::uint32_t>(h.header_bytes, kHeaderBytes, kHeaderBytes, "header_bytes");
  const auto vocab = sizes.field<std::int64_t>(h.vocab_size, 1, kMaxLmVocabulary, "vocab_size");
  sizes.field<std::int64_t>(h.order, 1, kMaxArpaOrder, "order");
  sizes.field<std::int64_t>(h.vocabulary, 0, 2, "vocabulary");
  const auto states = sizes.field<std::int64_t>(h.states, 2, std::numeric_limits<std::int32_t>::max() - 1, "states");
  const auto arcs = sizes.field<std::int64_t>(h.arcs, vocab + 1, std::numeric_limits<std::int32_t>::max(), "arcs");
  const auto word_bytes =
      sizes.field<std::int64_t>(h.word_bytes, 0, std::numeric_limits<std::int64_t>::max(), "word_bytes");
  const auto vocabulary = static_cast<LmVocabularyKind>(h.vocabulary);
  const std::int64_t expected_words = vocabulary == LmVocabularyKind::token_level ? 0 : vocab;
  sizes.field<std::int64_t>(h.word_count, expected_words, expected_words, "word_count");
  if (!(std::isfinite(h.missing_offset) && h.missing_offset <= 0.0f && h.missing_offset >= -kMaxLnMagnitude)) {
    sizes.fail(concat("header field missing_offset = ", h.missing_offset, " is not a finite value <= 0"));
  }
  const Layout layout(static_cast<std::uint64_t>(states), static_cast<std::uint64_t>(arcs),
                      static_cast<std::uint64_t>(vocab), static_cast<std::uint64_t>(word_bytes), sizes);
  const std::uint64_t image_bytes = sizes.add(kHeaderBytes, layout.end, "the image size");
  if (h.payload_bytes != layout.end || image_bytes != mapping->size()) {
    sizes.fail(concat("truncated or corrupted: the header describes ", image_bytes, " bytes (payload_bytes ",
                      h.payload_bytes, "), the file has ", mapping->size()));
  }
  const auto* payload = reinterpret_cast<const char*>(mapping->data()) + kHeaderBytes;
  if (image_crc(h, payload, static_cast<std::size_t>(layout.end)) != h.crc32) {
    sizes.fail("checksum mismatch: the image is corrupted");
  }

  NgramTables t;
  t.vocab_size = h.vocab_size;
  t.order = h.order;
  t.missing_offset = h.missing_offset;
  t.vocabulary = vocabulary;
  t.mapping = mapping;
  NgramLmRef& r = t.mapped;
  // The mapping is page-aligned and every table starts on a 64-byte boundary, so these loads are aligned.
  r.arc_begin = reinterpret_cast<const std::int32_t*>(payload + layout.arc_begin);
  r.arc_label = reinterpret_cast<const std::int32_t*>(payload + layout.arc_label);
  r.arc_target = reinterpret_cast<const std::int32_t*>(payload + layout.arc_target);
  r.arc_weight = reinterpret_cast<const float*>(payload + layout.arc_weight);
  r.backoff_to = reinterpret_cast<const std::int32_t*>(payload + layout.backoff_to);
  r.backoff_weight = reinterpret_cast<const float*>(payload + layout.backoff_weight);
  r.final_weight = reinterpret_cast<const float*>(payload + layout.final_weight);
  r.missing = reinterpret_cast<const std::uint8_t*>(payload + layout.missing);
  r.vocab_size = h.vocab_size;
  r.order = h.order;
  r.states = static_cast<std::int32_t>(states);
  r.missing_offset = h.missing_offset;

  // Structure: CSR offsets in order, labels sorted and in range, targets in range, START dense over 0..V,
  // backoff going down, every weight finite.
  if (r.arc_begin[0] != 0 || r.arc_begin[states] != arcs) sizes.fail("corrupted arc offsets");
  for (std::int64_t s = 0; s < states; ++s) {
    if (r.arc_begin[s + 1] < r.arc_begin[s] || r.arc_begin[s + 1] > arcs) {
      sizes.fail(concat("corrupted arc offsets of state ", s));
    }
    if (s == 0 ? r.backoff_to[s] != -1 : (r.backoff_to[s] < 0 || r.backoff_to[s] >= s)) {
      sizes.fail(concat("corrupted backoff link of state ", s));
    }
    if (!finite_within(r.backoff_weight[s], kMaxLnMagnitude) || !finite_within(r.final_weight[s], kMaxLnMagnitude)) {
      sizes.fail(concat("state ", s, " has a non-finite or out-of-range backoff or final weight"));
    }
    for (std::int32_t a = r.arc_begin[s]; a < r.arc_begin[s + 1]; ++a) {
      if (r.arc_label[a] < 0 || r.arc_label[a] > vocab || r.arc_target[a] < 0 || r.arc_target[a] >= states) {
        sizes.fail(concat("corrupted arc ", a, " of state ", s));
      }
      if (a > r.arc_begin[s] && r.arc_label[a] <= r.arc_label[a - 1]) {
        sizes.fail(concat("arcs of state ", s, " are not sorted by label"));
      }
      if (!finite_within(r.arc_weight[a], kMaxLnMagnitude)) {
        sizes.fail(concat("arc ", a, " of state ", s, " has a non-finite or out-of-range weight"));
      }
    }
  }
  if (r.arc_begin[1] != vocab + 1) sizes.fail("corrupted START state");
  for (std::int64_t a = 0; a <= vocab; ++a) {
    if (r.arc_label[a] != a) sizes.fail("corrupted START state");
  }
  for (std::int64_t token = 0; token < vocab; ++token) {
    if (r.missing[token] > 1) sizes.fail(concat("corrupted missing-token flag of token ", token));
  }
  const char* words = payload + layout.words;
  std::int64_t at = 0;
  for (std::int64_t i = 0; i < h.word_count; ++i) {
    const std::size_t length = strnlen(words + at, static_cast<std::size_t>(word_bytes - at));
    if (at + static_cast<std::int64_t>(length) >= word_bytes) sizes.fail("corrupted vocabulary");
    t.words.emplace_back(words + at, length);
    at += static_cast<std::int64_t>(length) + 1;
  }
  if (at != word_bytes) sizes.fail("corrupted vocabulary: bytes after the last word");
  return t;
}

}  // namespace asrdec::detail

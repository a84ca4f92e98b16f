// asrdec's binary LM image: a fixed header, then the query tables as aligned arrays, then the vocabulary words.
// Loading maps the file and points the tables into it; the CRC-32 of the payload and a structural check make a
// corrupted or foreign file a ParseError instead of a crash (backoff links must point to lower states, so a
// query always ends at START).

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "asrdec/core/error.hpp"
#include "lm/ngram_tables.hpp"

namespace asrdec::detail {
namespace {

constexpr char kMagic[8] = {'A', 'S', 'R', 'D', 'E', 'C', 'L', 'M'};
// Version 2: START's backoff link is -1 (the root marker) instead of 0.
constexpr std::uint32_t kVersion = 2;
constexpr std::size_t kAlign = 64;

struct Header {
  char magic[8];
  std::uint32_t version;
  std::uint32_t header_bytes;
  std::uint64_t payload_bytes;
  std::uint32_t payload_crc32;
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

std::size_t aligned(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

struct Layout {
  std::size_t arc_begin, arc_label, arc_target, arc_weight, backoff_to, backoff_weight, final_weight, missing, words,
      end;
  Layout(std::int64_t states, std::int64_t arcs, std::int64_t vocab, std::int64_t word_bytes) {
    std::size_t at = 0;
    const auto next = [&](std::size_t bytes) {
      const std::size_t here = at;
      at = aligned(at + bytes);
      return here;
    };
    arc_begin = next(static_cast<std::size_t>(states + 1) * 4);
    arc_label = next(static_cast<std::size_t>(arcs) * 4);
    arc_target = next(static_cast<std::size_t>(arcs) * 4);
    arc_weight = next(static_cast<std::size_t>(arcs) * 4);
    backoff_to = next(static_cast<std::size_t>(states) * 4);
    backoff_weight = next(static_cast<std::size_t>(states) * 4);
    final_weight = next(static_cast<std::size_t>(states) * 4);
    missing = next(static_cast<std::size_t>(vocab));
    words = next(static_cast<std::size_t>(word_bytes));
    end = at;
  }
};

struct Mapping {
  void* data = nullptr;
  std::size_t size = 0;
  ~Mapping() {
    if (data != nullptr) munmap(data, size);
  }
};

}  // namespace

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
  const Layout layout(r.states, t.arcs(), r.vocab_size, static_cast<std::int64_t>(words.size()));
  std::vector<char> payload(layout.end, 0);
  const auto put = [&](std::size_t offset, const void* source, std::size_t bytes) {
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
  h.header_bytes = static_cast<std::uint32_t>(aligned(sizeof(Header)));
  h.payload_bytes = payload.size();
  h.payload_crc32 = static_cast<std::uint32_t>(
      crc32_z(0, reinterpret_cast<const Bytef*>(payload.data()), static_cast<z_size_t>(payload.size())));
  h.vocab_size = r.vocab_size;
  h.order = r.order;
  h.vocabulary = static_cast<std::int32_t>(t.vocabulary);
  h.missing_offset = r.missing_offset;
  h.states = r.states;
  h.arcs = t.arcs();
  h.word_count = static_cast<std::int64_t>(t.words.size());
  h.word_bytes = static_cast<std::int64_t>(words.size());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(concat(path, ": cannot open for writing: ", std::strerror(errno)));
  std::vector<char> header(h.header_bytes, 0);
  std::memcpy(header.data(), &h, sizeof h);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(payload.data(), static_cast<std::streamsize>(payload.size()));
  if (!out) throw Error(concat(path, ": write failed"));
}

NgramTables read_binary(const std::string& path) {
  const auto fail = [&](const std::string& message) { return ParseError(path, 0, message); };
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(concat(path, ": cannot open for reading: ", std::strerror(errno)));
  struct stat info {};
  if (fstat(fd, &info) != 0) {
    close(fd);
    throw Error(concat(path, ": cannot stat"));
  }
  auto mapping = std::make_shared<Mapping>();
  mapping->size = static_cast<std::size_t>(info.st_size);
  if (mapping->size < sizeof(Header)) {
    close(fd);
    throw fail("truncated: shorter than the image header");
  }
  mapping->data = mmap(nullptr, mapping->size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (mapping->data == MAP_FAILED) {
    mapping->data = nullptr;
    throw Error(concat(path, ": cannot map"));
  }
  Header h;
  std::memcpy(&h, mapping->data, sizeof h);
  if (std::memcmp(h.magic, kMagic, 8) != 0) throw fail("not an asrdec LM image");
  if (h.version != kVersion)
    throw fail(concat("LM image version ", h.version, " is not supported (expected ", kVersion,
                      "); convert the ARPA file again with `asrdec lm convert`"));
  if (h.states < 2 || h.arcs < 1 || h.vocab_size < 1 || h.order < 1 || h.word_bytes < 0 || h.word_count < 0) {
    throw fail("corrupted header");
  }
  const Layout layout(h.states, h.arcs, h.vocab_size, h.word_bytes);
  if (h.header_bytes < sizeof(Header) || h.payload_bytes != layout.end ||
      mapping->size < static_cast<std::size_t>(h.header_bytes) + layout.end) {
    throw fail(concat("truncated or corrupted: the header describes ", h.header_bytes + layout.end,
                      " bytes, the file has ", mapping->size));
  }
  const auto* payload = static_cast<const char*>(mapping->data) + h.header_bytes;
  const auto crc = static_cast<std::uint32_t>(
      crc32_z(0, reinterpret_cast<const Bytef*>(payload), static_cast<z_size_t>(layout.end)));
  if (crc != h.payload_crc32) throw fail("checksum mismatch: the image is corrupted");

  NgramTables t;
  t.vocab_size = h.vocab_size;
  t.order = h.order;
  t.missing_offset = h.missing_offset;
  t.vocabulary = static_cast<LmVocabularyKind>(h.vocabulary);
  t.mapping = mapping;
  NgramLmRef& r = t.mapped;
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
  r.states = static_cast<std::int32_t>(h.states);
  r.missing_offset = h.missing_offset;

  // Structure: CSR offsets in order, labels and targets in range, START dense over 0..V, backoff going down.
  if (r.arc_begin[0] != 0 || r.arc_begin[h.states] != h.arcs) throw fail("corrupted arc offsets");
  for (std::int64_t s = 0; s < h.states; ++s) {
    if (r.arc_begin[s + 1] < r.arc_begin[s]) throw fail("corrupted arc offsets");
    if (s == 0 ? r.backoff_to[s] != -1 : (r.backoff_to[s] < 0 || r.backoff_to[s] >= s)) {
      throw fail("corrupted backoff links");
    }
  }
  if (r.arc_begin[1] != h.vocab_size + 1) throw fail("corrupted START state");
  for (std::int64_t a = 0; a < h.arcs; ++a) {
    if (r.arc_label[a] < 0 || r.arc_label[a] > h.vocab_size || r.arc_target[a] < 0 || r.arc_target[a] >= h.states) {
      throw fail("corrupted arcs");
    }
    if (a < h.vocab_size + 1 && r.arc_label[a] != a) throw fail("corrupted START state");
  }
  const char* words = payload + layout.words;
  for (std::int64_t i = 0, at = 0; i < h.word_count; ++i) {
    const std::size_t length = strnlen(words + at, static_cast<std::size_t>(h.word_bytes - at));
    if (at + static_cast<std::int64_t>(length) >= h.word_bytes) throw fail("corrupted vocabulary");
    t.words.emplace_back(words + at, length);
    at += static_cast<std::int64_t>(length) + 1;
  }
  return t;
}

}  // namespace asrdec::detail

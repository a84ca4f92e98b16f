// asrdec's binary LM images. The CRC would stop almost every mutation at the checksum, so the target recomputes it
// (as an attacker could) before loading: the header and structural checks behind it are what is fuzzed. Oracle
// beyond "no crash": an accepted image satisfies lm_oracle.hpp.

#include <zlib.h>

#include <cstring>
#include <vector>

#include "fuzz_file.hpp"
#include "lm_oracle.hpp"

namespace {

// The version-3 image layout (src/lm/ngram_binary.cpp): a 128-byte header whose bytes 24..27 hold the CRC-32 of the
// header (those bytes zero) followed by the payload.
constexpr std::size_t kHeaderBytes = 128;
constexpr std::size_t kCrcOffset = 24;

void fix_crc(std::vector<std::uint8_t>& image) {
  if (image.size() < kHeaderBytes) return;
  std::memset(image.data() + kCrcOffset, 0, 4);
  auto crc = crc32_z(0, image.data(), kHeaderBytes);
  crc = crc32_z(crc, image.data() + kHeaderBytes, image.size() - kHeaderBytes);
  const auto value = static_cast<std::uint32_t>(crc);
  std::memcpy(image.data() + kCrcOffset, &value, 4);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static asrdec::fuzz::FuzzFile input("image.lm");
  static asrdec::fuzz::FuzzFile copy("image_copy.lm");
  std::vector<std::uint8_t> image(data, data + size);
  fix_crc(image);
  for (const auto vocabulary : {asrdec::LmVocabularyKind::token_level, asrdec::LmVocabularyKind::arpa_words}) {
    asrdec::NgramLmOptions options;
    options.vocabulary = vocabulary;
    options.vocab_size = 0;  // the image's own V
    try {
      const asrdec::NgramLm lm = asrdec::NgramLm::load(input.write(image.data(), image.size()), options);
      asrdec::fuzz::check_lm_queries(lm);
      asrdec::fuzz::check_lm_image_round_trip(lm, options, copy);
    } catch (const asrdec::Error&) {
      // A typed refusal (of the image, or of the kind it was not built for).
    }
  }
  return 0;
}

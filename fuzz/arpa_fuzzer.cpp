// ARPA language models (plain or gzip, recognised by content), read with the ARPA's own words. Oracle beyond
// "no crash": an accepted LM satisfies lm_oracle.hpp (finite scores, full-vocabulary query == one-token query,
// image round trip).

#include "fuzz_file.hpp"
#include "lm_oracle.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static asrdec::fuzz::FuzzFile input("model.arpa");
  static asrdec::fuzz::FuzzFile image("model.lm");
  asrdec::NgramLmOptions options;
  options.vocabulary = asrdec::LmVocabularyKind::arpa_words;
  try {
    const asrdec::NgramLm lm = asrdec::NgramLm::load(input.write(data, size), options);
    asrdec::fuzz::check_lm_queries(lm);
    asrdec::fuzz::check_lm_image_round_trip(lm, options, image);
  } catch (const asrdec::Error&) {
    // A typed refusal.
  }
  return 0;
}

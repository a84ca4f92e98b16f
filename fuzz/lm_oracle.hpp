#pragma once
// What an accepted n-gram LM must satisfy, whatever file it came from: every score a query returns is finite and
// the full-vocabulary query (the decoders' path) equals the one-token query (the reference's path) bit for bit,
// next states included; and the LM written as an image and loaded again scores the same.

#include <cmath>
#include <random>
#include <vector>

#include "asrdec/asrdec.hpp"
#include "fuzz_file.hpp"

namespace asrdec::fuzz {

inline std::vector<std::int32_t> sample_states(const NgramLm& lm) {
  std::vector<std::int32_t> states = {NgramLm::start_state(), NgramLm::bos_state()};
  std::mt19937 rng(11);
  const auto count = static_cast<std::int32_t>(lm.num_states());
  for (int i = 0; i < 6; ++i) states.push_back(std::uniform_int_distribution<std::int32_t>(0, count - 1)(rng));
  return states;
}

inline void check_lm_queries(const NgramLm& lm) {
  const std::int64_t V = lm.vocab_size();
  if (V > (1 << 16)) return;  // keep each input fast
  std::vector<float> scores(static_cast<std::size_t>(V));
  std::vector<std::int32_t> next(static_cast<std::size_t>(V));
  for (const std::int32_t state : sample_states(lm)) {
    lm.advance(&state, 1, scores.data(), next.data());
    for (std::int64_t v = 0; v < V; ++v) {
      ASRDEC_FUZZ_CHECK(std::isfinite(scores[static_cast<std::size_t>(v)]));
      ASRDEC_FUZZ_CHECK(next[static_cast<std::size_t>(v)] >= 0 && next[static_cast<std::size_t>(v)] < lm.num_states());
      if (v < 64) {
        const auto [score, to] = lm.score(state, static_cast<std::int32_t>(v));
        ASRDEC_FUZZ_CHECK(score == scores[static_cast<std::size_t>(v)] && to == next[static_cast<std::size_t>(v)]);
      }
    }
    ASRDEC_FUZZ_CHECK(std::isfinite(lm.final_score(state)));
    ASRDEC_FUZZ_CHECK(std::isfinite(lm.score_unknown(state).first));
  }
  (void)lm.describe();
}

inline void check_lm_image_round_trip(const NgramLm& lm, const NgramLmOptions& options, FuzzFile& image) {
  lm.save_binary(image.path());
  NgramLmOptions image_options = options;
  if (image_options.vocabulary == LmVocabularyKind::symbol_table)
    image_options.vocabulary = LmVocabularyKind::arpa_words;
  const NgramLm back = NgramLm::load(image.path(), image_options);
  ASRDEC_FUZZ_CHECK(back.vocab_size() == lm.vocab_size() && back.num_states() == lm.num_states() &&
                    back.num_arcs() == lm.num_arcs() && back.order() == lm.order());
  for (const std::int32_t state : sample_states(lm)) {
    for (std::int64_t v = 0; v < std::min<std::int64_t>(lm.vocab_size(), 64); ++v) {
      ASRDEC_FUZZ_CHECK(back.score(state, static_cast<std::int32_t>(v)) ==
                        lm.score(state, static_cast<std::int32_t>(v)));
    }
    ASRDEC_FUZZ_CHECK(back.final_score(state) == lm.final_score(state));
  }
}

}  // namespace asrdec::fuzz

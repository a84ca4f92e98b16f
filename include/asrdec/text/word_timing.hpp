#pragma once
/**
 * @file
 * Words with their times, from a hypothesis's word pieces (every decoder but WFST, whose results carry words; see
 * wfst_decoder.hpp's word_timings).
 *
 * A word begins at a piece's word mark (U+2581, "▁") or at the first piece, and takes the characters of the pieces
 * up to the next mark, exactly as Vocabulary::detokenize() joins them: the words' texts joined by single spaces are
 * the detokenized transcript. A word's start frame is the timestamp of the piece that gave its first character;
 * its end frame (exclusive) is the end frame of the last piece that gave it a character (token_end_frames():
 * timestamp + 1, TDT: timestamp + duration). Adjacent words may share a frame: a transducer emits several pieces on
 * one frame, and one piece may hold the end of a word and the start of the next.
 *
 * Seconds never overlap. A word occupies the frames from its start frame to its end frame, and at least its start
 * frame; a frame that k words occupy is cut into k equal parts, given to them in order. So a word's start_seconds
 * is (start_frame + j/k) × frame_shift_seconds when it is the j-th (from 0) of the k words on its start frame, its
 * end_seconds is (f + (j'+1)/k') × frame_shift_seconds for its last frame f, shared the same way; on frames that
 * no other word occupies these are start_frame × and end_frame × frame_shift_seconds. Every word lasts longer than
 * zero, and each starts at or after the end of the one before. frame_shift_seconds is the model's output frame
 * period (the encoder's hop times its subsampling: 0.08 s for a FastConformer with 10 ms features and 8×
 * subsampling, 0.04 s for 4×). Timestamps are taken as the decoders give them (never decreasing).
 */

#include <cstdint>
#include <string>
#include <vector>

#include "asrdec/core/export.hpp"
#include "asrdec/hyps/hypothesis.hpp"
#include "asrdec/text/vocabulary.hpp"

namespace asrdec {

struct ASRDEC_API WordTiming {
  std::string word;
  std::int32_t start_frame = 0;
  std::int32_t end_frame = 0;  ///< exclusive
  double start_seconds = 0.0;
  double end_seconds = 0.0;
  /** The word's confidence in [0, 1]: its pieces' token_confidences aggregated; -1 when the hypothesis has none. */
  float confidence = -1.0f;
};

/** How a word's confidence combines the confidences c_1..c_n of the pieces that give it characters (NeMo's
 *  aggregations): min (default) = min c_i, max = max c_i, mean = (Σ c_i) / n, prod = Π c_i. A piece that ends one
 *  word and begins the next counts for both. */
enum class ConfidenceAggregation { min, max, mean, prod };

ASRDEC_API const char* to_string(ConfidenceAggregation aggregation) noexcept;
/** "min", "max", "mean" or "prod"; InvalidArgument otherwise. */
ASRDEC_API ConfidenceAggregation parse_confidence_aggregation(const std::string& name);

/** The words of `hypothesis` with their frames, seconds and confidences (aggregated by `aggregation` when the
 *  hypothesis has token_confidences). Throws InvalidArgument for a frame_shift_seconds that is not positive and
 *  finite, a token outside the vocabulary, timestamps that do not match the tokens, or token_confidences of another
 *  length than the tokens. */
ASRDEC_API std::vector<WordTiming> word_timings(const Hypothesis& hypothesis, const Vocabulary& vocabulary,
                                                double frame_shift_seconds,
                                                ConfidenceAggregation aggregation = ConfidenceAggregation::min);

/** The words' texts joined by single spaces. */
ASRDEC_API std::string join_words(const std::vector<WordTiming>& words);

}  // namespace asrdec

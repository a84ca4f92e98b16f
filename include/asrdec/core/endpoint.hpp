#pragma once
/**
 * @file
 * Endpointing for streaming (docs/streaming.md#endpointing): has the speaker finished? A server that streams an
 * utterance asks after every chunk whether the decoded result so far ends in enough silence to close the utterance
 * (and start a new one), as Kaldi's and sherpa's online decoders do.
 *
 * Silence is decoded, not measured: the trailing silence of a result is the time from the end of its last token to
 * the end of the frames decoded so far (the whole result when it has no token). A token ends after its frame, or its
 * TDT duration (token_end_frames()); for CTC the frames that repeat a token after the first count as silence, which
 * moves an endpoint earlier by at most the length of the last token's run.
 *
 * A rule fires when all of its conditions hold:
 *   (!must_contain_speech || the result has a token)
 *   && trailing silence ≥ min_trailing_silence && frames decoded so far ≥ min_utterance_length (both in seconds).
 * The defaults are sherpa's: rule 1 — 2.4 s of silence with nothing said; rule 2 — 1.2 s of silence after speech;
 * rule 3 — an utterance of 20 s, whatever was said. A rule with min_trailing_silence and min_utterance_length both
 * 0 and must_contain_speech false would fire on every chunk: set `enabled` false to switch a rule off.
 */

#include <cstdint>
#include <string>

#include "asrdec/core/export.hpp"
#include "asrdec/hyps/hypothesis.hpp"

namespace asrdec {

struct ASRDEC_API EndpointRule {
  bool enabled = true;
  bool must_contain_speech = false;   ///< fires only once a token was decoded
  float min_trailing_silence = 0.0f;  ///< seconds of decoded silence at the end
  float min_utterance_length = 0.0f;  ///< seconds decoded so far
};

struct ASRDEC_API EndpointConfig {
  EndpointRule rule1{true, false, 2.4f, 0.0f};   ///< nothing said for 2.4 s
  EndpointRule rule2{true, true, 1.2f, 0.0f};    ///< 1.2 s of silence after speech
  EndpointRule rule3{true, false, 0.0f, 20.0f};  ///< the longest utterance: 20 s
  /** Seconds per decoder frame: the encoder's hop times its subsampling (0.08 s: 10 ms features, 8×). */
  double frame_shift_seconds = 0.08;

  /** Throws InvalidArgument for a negative or non-finite time, or a frame shift that is not positive and finite. */
  void validate() const;
  std::string to_string() const;
};

/** Which rule fires (1, 2 or 3; the first in that order) for a result whose speech ends at frame `speech_end`
 *  (exclusive; -1: nothing said) after `frames_decoded` frames; 0 when none does. Throws InvalidArgument for a
 *  config that does not validate, frames_decoded < 0, or speech_end outside [-1, frames_decoded]. */
ASRDEC_API int detect_endpoint(const EndpointConfig& config, std::int64_t frames_decoded, std::int64_t speech_end);

/** detect_endpoint() for a decoder's result so far after `frames_decoded` frames of its utterance: speech ends where
 *  its last token ends (token_end_frames(), at most frames_decoded). Throws InvalidArgument as above, and when the
 *  last token's frame is not below frames_decoded (the frames count is not this utterance's). */
ASRDEC_API int detect_endpoint(const EndpointConfig& config, const Hypothesis& so_far, std::int64_t frames_decoded);

}  // namespace asrdec

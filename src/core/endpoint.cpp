#include "asrdec/core/endpoint.hpp"

#include <algorithm>
#include <cmath>

#include "asrdec/core/error.hpp"

namespace asrdec {
namespace {

void check_rule(const EndpointRule& rule, const char* name) {
  ASRDEC_CHECK_ARG(std::isfinite(rule.min_trailing_silence) && rule.min_trailing_silence >= 0.0f, "EndpointConfig.",
                   name, ".min_trailing_silence must be finite and >= 0, got ", rule.min_trailing_silence);
  ASRDEC_CHECK_ARG(std::isfinite(rule.min_utterance_length) && rule.min_utterance_length >= 0.0f, "EndpointConfig.",
                   name, ".min_utterance_length must be finite and >= 0, got ", rule.min_utterance_length);
}

bool fires(const EndpointRule& rule, bool speech, double silence_seconds, double length_seconds) {
  // Seconds are compared with a tolerance of a microsecond, so that 15 frames of 0.08 s reach 1.2 s.
  constexpr double kSlack = 1e-6;
  return rule.enabled && (speech || !rule.must_contain_speech) &&
         silence_seconds + kSlack >= rule.min_trailing_silence && length_seconds + kSlack >= rule.min_utterance_length;
}

}  // namespace

void EndpointConfig::validate() const {
  check_rule(rule1, "rule1");
  check_rule(rule2, "rule2");
  check_rule(rule3, "rule3");
  ASRDEC_CHECK_ARG(std::isfinite(frame_shift_seconds) && frame_shift_seconds > 0.0,
                   "EndpointConfig.frame_shift_seconds must be positive and finite, got ", frame_shift_seconds);
}

std::string EndpointConfig::to_string() const {
  const auto rule = [](const EndpointRule& r) {
    return !r.enabled
               ? std::string("off")
               : detail::concat(r.must_contain_speech ? "after speech, " : "", "silence >= ", r.min_trailing_silence,
                                " s, length >= ", r.min_utterance_length, " s");
  };
  return detail::concat("EndpointConfig{rule1: ", rule(rule1), "; rule2: ", rule(rule2), "; rule3: ", rule(rule3),
                        "; frame_shift_seconds=", frame_shift_seconds, "}");
}

int detect_endpoint(const EndpointConfig& config, std::int64_t frames_decoded, std::int64_t speech_end) {
  config.validate();
  ASRDEC_CHECK_ARG(frames_decoded >= 0, "detect_endpoint: frames_decoded = ", frames_decoded, " is negative");
  ASRDEC_CHECK_ARG(speech_end >= -1 && speech_end <= frames_decoded, "detect_endpoint: speech_end = ", speech_end,
                   " is outside [-1, frames_decoded = ", frames_decoded, "]");
  const bool speech = speech_end >= 0;
  const double silence = static_cast<double>(frames_decoded - (speech ? speech_end : 0)) * config.frame_shift_seconds;
  const double length = static_cast<double>(frames_decoded) * config.frame_shift_seconds;
  if (fires(config.rule1, speech, silence, length)) return 1;
  if (fires(config.rule2, speech, silence, length)) return 2;
  if (fires(config.rule3, speech, silence, length)) return 3;
  return 0;
}

int detect_endpoint(const EndpointConfig& config, const Hypothesis& so_far, std::int64_t frames_decoded) {
  std::int64_t speech_end = -1;
  if (!so_far.tokens.empty()) {
    ASRDEC_CHECK_ARG(so_far.timestamps.size() == so_far.tokens.size(), "detect_endpoint: the result has ",
                     so_far.tokens.size(), " tokens but ", so_far.timestamps.size(), " timestamps");
    const std::int32_t last = so_far.timestamps.back();
    ASRDEC_CHECK_ARG(last >= 0 && last < frames_decoded, "detect_endpoint: the result's last token is on frame ", last,
                     ", outside the ", frames_decoded, " frames decoded");
    // A TDT duration may reach past the frames decoded so far: speech ends there at the latest.
    speech_end = std::min<std::int64_t>(token_end_frames(so_far).back(), frames_decoded);
  }
  return detect_endpoint(config, frames_decoded, speech_end);
}

}  // namespace asrdec

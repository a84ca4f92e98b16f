// Endpointing (asrdec/core/endpoint.hpp): the three rules at their thresholds, switched off and misconfigured, and on
// a CTC stream: speech followed by blank frames, fed chunk by chunk to the decoder, is closed by rule 2 at the first
// chunk that ends 1.2 s after the last token; a silent stream by rule 1 at 2.4 s; a long one by rule 3 at 20 s.

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "asrdec/asrdec.hpp"
#include "support/test_support.hpp"

namespace asrdec {
namespace {

TEST(Endpoint, RulesFireAtTheirThresholds) {
  const EndpointConfig config;  // 80 ms frames: rule 1 at 30 frames, rule 2 at 15, rule 3 at 250
  EXPECT_EQ(detect_endpoint(config, 0, -1), 0);
  EXPECT_EQ(detect_endpoint(config, 29, -1), 0);
  EXPECT_EQ(detect_endpoint(config, 30, -1), 1);  // nothing said for 2.4 s
  EXPECT_EQ(detect_endpoint(config, 24, 10), 0);
  EXPECT_EQ(detect_endpoint(config, 25, 10), 2);  // 1.2 s after speech
  EXPECT_EQ(detect_endpoint(config, 25, 25), 0);  // speech up to the last frame
  EXPECT_EQ(detect_endpoint(config, 249, 249), 0);
  EXPECT_EQ(detect_endpoint(config, 250, 250), 3);  // 20 s
  EXPECT_EQ(detect_endpoint(config, 300, 200), 1);  // rule 1 wins over 2 and 3 when all fire: 100 frames of silence
  EndpointConfig off = config;
  off.rule1.enabled = false;
  EXPECT_EQ(detect_endpoint(off, 300, 200), 2);
  off.rule2.enabled = false;
  EXPECT_EQ(detect_endpoint(off, 300, 200), 3);
  off.rule3.enabled = false;
  EXPECT_EQ(detect_endpoint(off, 100000, -1), 0);
  EndpointConfig fine = config;
  fine.frame_shift_seconds = 0.04;
  EXPECT_EQ(detect_endpoint(fine, 50, 20), 2);  // 30 frames of 40 ms
  EXPECT_EQ(detect_endpoint(fine, 49, 20), 0);

  // From a result: speech ends where its last token ends (TDT: after its duration, at most the frames decoded).
  Hypothesis h;
  h.tokens = {3, 4};
  h.timestamps = {2, 9};
  EXPECT_EQ(detect_endpoint(config, h, 24), 0);
  EXPECT_EQ(detect_endpoint(config, h, 25), 2);
  h.durations = {1, 4};
  EXPECT_EQ(detect_endpoint(config, h, 27), 0);  // speech ends at 9 + 4
  EXPECT_EQ(detect_endpoint(config, h, 28), 2);
  EXPECT_EQ(detect_endpoint(config, h, 10), 0);  // the duration reaches past the frames decoded: no silence
  EXPECT_EQ(detect_endpoint(config, Hypothesis{}, 30), 1);
}

TEST(Endpoint, BadConfigsAndArgumentsAreRefused) {
  EndpointConfig config;
  config.rule2.min_trailing_silence = -1.0f;
  ASRDEC_EXPECT_THROW_MSG(config.validate(), InvalidArgument,
                          "EndpointConfig.rule2.min_trailing_silence must be finite and >= 0, got -1");
  config = EndpointConfig{};
  config.rule3.min_utterance_length = std::nanf("");
  ASRDEC_EXPECT_THROW_MSG(detect_endpoint(config, 10, -1), InvalidArgument, "rule3.min_utterance_length");
  config = EndpointConfig{};
  config.frame_shift_seconds = 0.0;
  ASRDEC_EXPECT_THROW_MSG(config.validate(), InvalidArgument, "frame_shift_seconds must be positive and finite");
  config = EndpointConfig{};
  ASRDEC_EXPECT_THROW_MSG(detect_endpoint(config, -1, -1), InvalidArgument, "frames_decoded = -1 is negative");
  ASRDEC_EXPECT_THROW_MSG(detect_endpoint(config, 5, 6), InvalidArgument,
                          "speech_end = 6 is outside [-1, frames_decoded = 5]");
  Hypothesis h;
  h.tokens = {1};
  h.timestamps = {7};
  ASRDEC_EXPECT_THROW_MSG(detect_endpoint(config, h, 7), InvalidArgument,
                          "the result's last token is on frame 7, outside the 7 frames decoded");
  h.timestamps = {};
  ASRDEC_EXPECT_THROW_MSG(detect_endpoint(config, h, 7), InvalidArgument, "1 tokens but 0 timestamps");
  EXPECT_NE(EndpointConfig{}.to_string().find("rule2: after speech, silence >= 1.2 s"), std::string::npos)
      << EndpointConfig{}.to_string();
}

// Frames of a CTC stream: `speech` frames whose argmax is a token, another than the frame before's (so every
// speech frame emits one), then blank frames (the blank is the last column).
std::vector<float> ctc_stream(std::mt19937_64& rng, int frames, int speech, int columns) {
  std::vector<float> values(static_cast<std::size_t>(frames * columns), -8.0f);
  const int offset = static_cast<int>(rng() % columns);
  for (int t = 0; t < frames; ++t) {
    const int winner = t < speech ? (t + offset) % (columns - 1) : columns - 1;
    values[static_cast<std::size_t>(t * columns + winner)] = -0.01f;
  }
  return values;
}

// A server loop: chunks of `chunk` frames of one utterance to CtcGreedyDecoder::decode_chunks, the endpoint asked
// after each; returns (rule, frames decoded) of the first that fires, or (0, frames).
std::pair<int, int> stream_until_endpoint(CtcGreedyDecoder& decoder, const std::vector<float>& values, int frames,
                                          int columns, int chunk, const EndpointConfig& config) {
  for (int start = 0; start < frames; start += chunk) {
    const int n = std::min(chunk, frames - start);
    const std::int32_t length = n;
    const ChunkRow row{77, start == 0, start + n == frames, 0};
    const auto result =
        decoder.decode_chunks({row}, TensorView(values.data() + start * columns, DType::f32, {1, n, columns}),
                              TensorView(&length, DType::i32, {1}));
    const int rule = detect_endpoint(config, result.at(0), start + n);
    if (rule != 0) {
      if (!row.last) decoder.cancel(77);
      return {rule, start + n};
    }
  }
  return {0, frames};
}

TEST(Endpoint, StreamedCtcUtterancesEndByTheRules) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  CtcGreedyDecoder decoder(Device::cpu());
  const EndpointConfig config;
  const int columns = 9;
  for (int i = 0; i < 50; ++i) {
    const int chunk = 1 + static_cast<int>(rng() % 8);
    const int speech = 1 + static_cast<int>(rng() % 40);
    SCOPED_TRACE("case " + std::to_string(i) + ": speech frames " + std::to_string(speech) + ", chunks of " +
                 std::to_string(chunk));
    // Speech then silence: rule 2 at the first chunk end at least 15 frames after the last token ends.
    const int frames = speech + 40;
    const auto values = ctc_stream(rng, frames, speech, columns);
    const int due = ((speech + 15 + chunk - 1) / chunk) * chunk;
    EXPECT_EQ(stream_until_endpoint(decoder, values, frames, columns, chunk, config),
              std::make_pair(due <= frames ? 2 : 0, std::min(due, frames)));
    // Silence only: rule 1 at 30 frames.
    const auto silent = ctc_stream(rng, 60, 0, columns);
    EXPECT_EQ(stream_until_endpoint(decoder, silent, 60, columns, chunk, config),
              std::make_pair(1, ((30 + chunk - 1) / chunk) * chunk));
    // Speech all along: rule 3 at 250 frames.
    const auto talking = ctc_stream(rng, 300, 300, columns);
    EXPECT_EQ(stream_until_endpoint(decoder, talking, 300, columns, chunk, config),
              std::make_pair(3, ((250 + chunk - 1) / chunk) * chunk));
    EXPECT_EQ(decoder.open_utterances(), 0);
  }
}

}  // namespace
}  // namespace asrdec

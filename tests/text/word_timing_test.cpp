// Word timings from word pieces (asrdec/text/word_timing.hpp) and from WFST results.

#include <random>

#include "support/test_support.hpp"

namespace asrdec {
namespace {

const std::string kMark = "\xE2\x96\x81";  // ▁

TEST(WordTimings, WordsStartAtMarksAndEndAfterTheirLastPiece) {
  const Vocabulary v({"<unk>", kMark + "the", "s", kMark + "cat", kMark, "x" + kMark + "y"});
  Hypothesis h;
  h.tokens = {1, 3, 2, 4, 5};
  h.timestamps = {0, 4, 6, 9, 12};
  const auto words = word_timings(h, v, 0.04);
  ASSERT_EQ(words.size(), 4u);
  EXPECT_EQ(words[0].word, "the");
  EXPECT_EQ(words[0].start_frame, 0);
  EXPECT_EQ(words[0].end_frame, 1);
  EXPECT_EQ(words[1].word, "cats");
  EXPECT_EQ(words[1].start_frame, 4);
  EXPECT_EQ(words[1].end_frame, 7);  // "s" on frame 6
  EXPECT_DOUBLE_EQ(words[1].start_seconds, 0.16);
  EXPECT_DOUBLE_EQ(words[1].end_seconds, 0.28);
  // A lone mark gives no word; "x▁y" ends one word and begins the next on the same frame.
  EXPECT_EQ(words[2].word, "x");
  EXPECT_EQ(words[2].start_frame, 12);
  EXPECT_EQ(words[3].word, "y");
  EXPECT_EQ(words[3].start_frame, 12);
  EXPECT_EQ(words[3].end_frame, 13);
  EXPECT_EQ(join_words(words), v.detokenize(h.tokens));
  // TDT: a piece ends after its duration.
  h.durations = {1, 2, 3, 0, 2};
  const auto tdt = word_timings(h, v, 0.08);
  EXPECT_EQ(tdt[1].end_frame, 9);
  EXPECT_EQ(tdt[3].end_frame, 14);
  EXPECT_TRUE(word_timings(Hypothesis{}, v, 0.08).empty());
}

// On random hypotheses over the sample vocabulary, the words joined are the detokenized text; each word starts on
// the frame of a piece that opens it and ends after the last of its pieces.
TEST(WordTimings, JoinedWordsAreTheDetokenizedTextOnRandomHypotheses) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const Vocabulary v = Vocabulary::load(testing::source_path("examples/data/tokens.txt"));
  for (int i = 0; i < 300; ++i) {
    Hypothesis h;
    std::int32_t frame = 0;
    const int n = static_cast<int>(rng() % 30);
    for (int k = 0; k < n; ++k) {
      h.tokens.push_back(static_cast<std::int32_t>(rng() % v.size()));
      frame += static_cast<std::int32_t>(rng() % 3);
      h.timestamps.push_back(frame);
    }
    if (rng() % 2 == 0) {  // TDT: durations (0 included) that lead to the next piece's frame
      for (std::size_t k = 0; k < h.tokens.size(); ++k) {
        h.durations.push_back(k + 1 < h.tokens.size() ? h.timestamps[k + 1] - h.timestamps[k]
                                                      : static_cast<std::int32_t>(rng() % 3));
      }
    }
    const auto words = word_timings(h, v, 0.08);
    ASSERT_EQ(join_words(words), v.detokenize(h.tokens));
    const std::vector<std::int32_t> ends = token_end_frames(h);
    for (std::size_t i = 0; i < words.size(); ++i) {
      const WordTiming& w = words[i];
      EXPECT_LE(w.start_frame, w.end_frame);
      EXPECT_NE(std::find(h.timestamps.begin(), h.timestamps.end(), w.start_frame), h.timestamps.end());
      EXPECT_NE(std::find(ends.begin(), ends.end(), w.end_frame), ends.end());
      // Seconds: inside the word's frames (at least its first), longer than zero, after the word before.
      EXPECT_GE(w.start_seconds, w.start_frame * 0.08 - 1e-12);
      EXPECT_LT(w.start_seconds, (w.start_frame + 1) * 0.08);
      EXPECT_LE(w.end_seconds, std::max(w.end_frame, w.start_frame + 1) * 0.08 + 1e-12);
      EXPECT_GT(w.end_seconds, w.start_seconds);
      if (i > 0) {
        EXPECT_GE(w.start_seconds, words[i - 1].end_seconds - 1e-12) << "word " << i << " overlaps";
      }
    }
  }
}

// Words that share a frame split it in equal parts, in order; frames keep the emissions.
TEST(WordTimings, WordsOnOneFrameShareItInEqualParts) {
  const Vocabulary v({kMark + "the", kMark + "cat", kMark + "sat", "s", "x" + kMark + "y"});
  Hypothesis h;
  h.tokens = {0, 1, 2, 3};  // the cat (frame 4), sat (frames 5-6)
  h.timestamps = {4, 4, 5, 6};
  auto words = word_timings(h, v, 0.08);
  ASSERT_EQ(words.size(), 3u);
  EXPECT_EQ(words[0].start_frame, 4);
  EXPECT_EQ(words[0].end_frame, 5);
  EXPECT_EQ(words[1].start_frame, 4);
  EXPECT_DOUBLE_EQ(words[0].start_seconds, 0.32);
  EXPECT_NEAR(words[0].end_seconds, 0.36, 1e-12);
  EXPECT_NEAR(words[1].start_seconds, 0.36, 1e-12);
  EXPECT_DOUBLE_EQ(words[1].end_seconds, 0.40);
  EXPECT_NEAR(words[2].start_seconds, 0.40, 1e-12);
  EXPECT_NEAR(words[2].end_seconds, 0.56, 1e-12);
  // Three words on frame 6: "the", "catx" and "y" (from "x▁y"), a third each.
  h.tokens = {0, 1, 4};
  h.timestamps = {6, 6, 6};
  words = word_timings(h, v, 0.3);
  ASSERT_EQ(words.size(), 3u);
  EXPECT_EQ(words[1].word, "catx");
  EXPECT_NEAR(words[0].start_seconds, 1.8, 1e-12);
  EXPECT_NEAR(words[0].end_seconds, 1.9, 1e-12);
  EXPECT_NEAR(words[1].start_seconds, 1.9, 1e-12);
  EXPECT_NEAR(words[1].end_seconds, 2.0, 1e-12);
  EXPECT_NEAR(words[2].start_seconds, 2.0, 1e-12);
  EXPECT_NEAR(words[2].end_seconds, 2.1, 1e-12);
  // TDT: a piece of duration 0 ends where it starts; its word still takes a share of that frame.
  h.tokens = {0, 1};
  h.timestamps = {3, 3};
  h.durations = {0, 2};
  words = word_timings(h, v, 1.0);
  EXPECT_EQ(words[0].end_frame, 3);
  EXPECT_DOUBLE_EQ(words[0].start_seconds, 3.0);
  EXPECT_DOUBLE_EQ(words[0].end_seconds, 3.5);
  EXPECT_DOUBLE_EQ(words[1].start_seconds, 3.5);
  EXPECT_DOUBLE_EQ(words[1].end_seconds, 5.0);
}

// A word's confidence aggregates the confidences of the pieces that give it characters (a piece that ends one word
// and begins the next counts for both); none without token confidences.
TEST(WordTimings, WordConfidencesAggregateTheirPieces) {
  const Vocabulary v({kMark + "ca", "t", kMark + "s", "at" + kMark + "on"});
  Hypothesis h;
  h.tokens = {0, 1, 2, 3};  // "cat" (0.5, 0.8), "sat" (0.9, 0.4), "on" (0.4)
  h.timestamps = {0, 1, 2, 3};
  EXPECT_EQ(word_timings(h, v, 0.08)[0].confidence, -1.0f);
  h.token_confidences = {0.5f, 0.8f, 0.9f, 0.4f};
  const auto expect = [&](ConfidenceAggregation a, float cat, float sat, float on) {
    const auto words = word_timings(h, v, 0.08, a);
    ASSERT_EQ(words.size(), 3u);
    EXPECT_FLOAT_EQ(words[0].confidence, cat) << to_string(a);
    EXPECT_FLOAT_EQ(words[1].confidence, sat) << to_string(a);
    EXPECT_FLOAT_EQ(words[2].confidence, on) << to_string(a);
  };
  expect(ConfidenceAggregation::min, 0.5f, 0.4f, 0.4f);
  expect(ConfidenceAggregation::max, 0.8f, 0.9f, 0.4f);
  expect(ConfidenceAggregation::mean, 0.65f, 0.65f, 0.4f);
  expect(ConfidenceAggregation::prod, 0.4f, 0.36f, 0.4f);
  EXPECT_EQ(parse_confidence_aggregation("prod"), ConfidenceAggregation::prod);
  ASRDEC_EXPECT_THROW_MSG(parse_confidence_aggregation("avg"), InvalidArgument,
                          "unknown confidence aggregation 'avg': expected min, max, mean or prod");
  h.token_confidences = {0.5f};
  ASRDEC_EXPECT_THROW_MSG(word_timings(h, v, 0.08), InvalidArgument, "4 tokens but 1 token confidences");
}

TEST(WordTimings, BadArgumentsAreRefused) {
  const Vocabulary v({"a", "b"});
  Hypothesis h;
  h.tokens = {0, 1};
  h.timestamps = {0};
  ASRDEC_EXPECT_THROW_MSG(word_timings(h, v, 0.08), InvalidArgument, "the hypothesis has 2 tokens but 1 timestamps");
  h.timestamps = {0, 1};
  ASRDEC_EXPECT_THROW_MSG(word_timings(h, v, 0.0), InvalidArgument, "frame_shift_seconds must be positive and finite");
  ASRDEC_EXPECT_THROW_MSG(word_timings(h, v, std::nan("")), InvalidArgument, "frame_shift_seconds");
  h.tokens = {0, 2};
  ASRDEC_EXPECT_THROW_MSG(word_timings(h, v, 0.08), InvalidArgument, "token id 2 is outside the vocabulary");
}

TEST(WordTimings, WfstResultsUseTheWordsTable) {
  const SymbolTable words = SymbolTable::load(testing::write_temp_file("words.txt", "<eps> 0\nin 1\nthe 2\n"));
  WfstResult r;
  r.words = {1, 2};
  r.word_start_frames = {3, 7};
  r.word_end_frames = {5, 7};
  r.cost = 12.5f;
  EXPECT_EQ(r.score(), -12.5f);
  const auto timed = word_timings(r, words, 0.04);
  ASSERT_EQ(timed.size(), 2u);
  EXPECT_EQ(timed[0].word, "in");
  EXPECT_EQ(timed[0].end_frame, 6);  // the last frame, inclusive in WfstResult, exclusive here
  EXPECT_EQ(timed[1].start_frame, 7);
  EXPECT_DOUBLE_EQ(timed[1].end_seconds, 0.32);
  r.words = {1, 9};
  ASRDEC_EXPECT_THROW_MSG(word_timings(r, words, 0.04), InvalidArgument, "9");
  r.words = {1};
  ASRDEC_EXPECT_THROW_MSG(word_timings(r, words, 0.04), InvalidArgument, "the WFST result has 1 words but 2 start");
}

}  // namespace
}  // namespace asrdec

#include <algorithm>

#include "support/test_support.hpp"

namespace asrdec {
namespace {

// Plain recursive edit distance on small inputs: an independent oracle for the number of errors.
int edit_distance(const std::vector<std::string>& a, std::size_t i, const std::vector<std::string>& b, std::size_t j) {
  if (i == a.size()) return static_cast<int>(b.size() - j);
  if (j == b.size()) return static_cast<int>(a.size() - i);
  return std::min({edit_distance(a, i + 1, b, j + 1) + (a[i] == b[j] ? 0 : 1), edit_distance(a, i + 1, b, j) + 1,
                   edit_distance(a, i, b, j + 1) + 1});
}

TEST(Wer, CountsSubstitutionsDeletionsInsertions) {
  const WerStats s = word_errors("the cat sat on the mat", "the cat sit on the mat");
  EXPECT_EQ(s.reference_words, 6);
  EXPECT_EQ(s.substitutions, 1);
  EXPECT_EQ(s.deletions, 0);
  EXPECT_EQ(s.insertions, 0);
  EXPECT_EQ(word_errors("a b c d", "a c d").deletions, 1);
  EXPECT_EQ(word_errors("a c d", "a b c d").insertions, 1);
  // Ties between alignments are broken towards substitutions: 3 substitutions rather than S + D + I.
  const WerStats tie = word_errors("the cat sat on the mat", "the cat sit on mat now");
  EXPECT_EQ(tie.errors(), 3);
  EXPECT_EQ(tie.substitutions, 3);
  EXPECT_DOUBLE_EQ(tie.rate(), 0.5);
  EXPECT_EQ(word_errors("", "").rate(), 0.0);
  EXPECT_EQ(word_errors("", "a b").insertions, 2);
  EXPECT_EQ(word_errors("a b", "").deletions, 2);
  EXPECT_EQ(split_words("  a\tb \n c  "), (std::vector<std::string>{"a", "b", "c"}));
  WerStats total;
  total += s;
  total += s;
  EXPECT_EQ(total.errors(), 2);
  EXPECT_EQ(total.reference_words, 12);
}

TEST(Wer, ErrorCountEqualsEditDistanceOnRandomSentences) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const std::vector<std::string> words = {"a", "b", "c", "d"};
  for (int i = 0; i < 300; ++i) {
    std::vector<std::string> ref(rng() % 7), hyp(rng() % 7);
    for (auto& w : ref) w = words[rng() % words.size()];
    for (auto& w : hyp) w = words[rng() % words.size()];
    std::string ref_text, hyp_text;
    for (const auto& w : ref) ref_text += w + " ";
    for (const auto& w : hyp) hyp_text += w + " ";
    const WerStats s = word_errors(ref_text, hyp_text);
    ASSERT_EQ(s.errors(), edit_distance(ref, 0, hyp, 0)) << ref_text << "| " << hyp_text;
    ASSERT_EQ(static_cast<std::int64_t>(hyp.size()), s.reference_words - s.deletions + s.insertions);
  }
}

}  // namespace
}  // namespace asrdec

#include <fstream>

#include "support/test_support.hpp"

namespace asrdec {
namespace {

using testing::write_temp_file;

TEST(Vocabulary, LoadsOneTokenPerLineAndDetokenizesPieces) {
  const Vocabulary v = Vocabulary::load(write_temp_file("tokens.txt",
                                                        "<unk>\n\xE2\x96\x81"
                                                        "the\ns\n\xE2\x96\x81"
                                                        "cat\r\nx\n\n"));
  EXPECT_EQ(v.size(), 5u);
  EXPECT_EQ(v.token(2), "s");
  EXPECT_EQ(v.token(3),
            "\xE2\x96\x81"
            "cat");  // CRLF stripped
  EXPECT_EQ(v.detokenize({1, 3, 2}), "the cats");
  EXPECT_EQ(v.detokenize({}), "");
  EXPECT_EQ(v.detokenize({2, 1}), "s the");
  EXPECT_EQ(v.word_start_ids(), (std::vector<std::int32_t>{1, 3}));
  ASRDEC_EXPECT_THROW_MSG(v.token(5), InvalidArgument, "token id 5 is outside the vocabulary of 5 tokens");
  ASRDEC_EXPECT_THROW_MSG(v.detokenize({1, -1}), InvalidArgument, "token id -1");
}

TEST(Vocabulary, RecognisesTokenIdColumns) {
  const Vocabulary v = Vocabulary::load(write_temp_file("two_col.txt",
                                                        "<blk> 0\n\xE2\x96\x81"
                                                        "a 1\nb 2\n"));
  EXPECT_EQ(v.size(), 3u);
  EXPECT_EQ(v.token(2), "b");
  // Not every line ends with its own id: the table is one token per line.
  const Vocabulary literal = Vocabulary::load(write_temp_file("mixed.txt", "a 0\nb 7\n"));
  EXPECT_EQ(literal.token(1), "b 7");
}

TEST(Vocabulary, ErrorsNameFileAndLine) {
  ASRDEC_EXPECT_THROW_MSG(Vocabulary::load(write_temp_file("empty.txt", "\n\n")), ParseError, "empty token table");
  const std::string path = write_temp_file("hole.txt", "a\n\nb\n");
  ASRDEC_EXPECT_THROW_MSG(Vocabulary::load(path), ParseError, path + ":2: empty token for id 1");
  ASRDEC_EXPECT_THROW_MSG(Vocabulary::load(testing::temp_path("absent.txt")), Error, "cannot open for reading");
}

TEST(Vocabulary, ChecksTheModelSize) {
  const Vocabulary v({"a", "b", "c"});
  v.check_matches(3, "model");
  v.check_matches(2, "model");  // blank listed last
  ASRDEC_EXPECT_THROW_MSG(v.check_matches(256, "logprobs"), InvalidArgument,
                          "vocabulary mismatch: the token table has 3 entries but logprobs has 256 tokens plus blank");
}

}  // namespace
}  // namespace asrdec

// TextFileReader and SymbolTable: every text table asrdec reads goes through them, so the bounds of docs/robustness.md
// (NUL bytes, line length, damaged gzip, ids bounded by the file) are tested here once.

#include <zlib.h>

#include <fstream>

#include "support/test_support.hpp"

namespace asrdec {
namespace {

using testing::write_temp_file;

std::string write_gzip(const std::string& name, const std::string& text) {
  const std::string path = testing::temp_path(name);
  gzFile file = gzopen(path.c_str(), "wb");
  gzwrite(file, text.data(), static_cast<unsigned>(text.size()));
  gzclose(file);
  return path;
}

std::vector<std::string> all_lines(TextFileReader& reader) {
  std::vector<std::string> lines;
  std::string line;
  while (reader.next(line)) lines.push_back(line);
  return lines;
}

TEST(TextFileReader, ReadsLfCrlfGzipAndALastLineWithoutItsEnd) {
  const std::vector<std::string> expected = {"a b", "", "c", "last"};
  TextFileReader plain(write_temp_file("plain.txt", "a b\n\nc\nlast"));
  EXPECT_EQ(all_lines(plain), expected);
  EXPECT_EQ(plain.line_number(), 4);
  EXPECT_EQ(plain.bytes_read(), 11u);
  TextFileReader crlf(write_temp_file("crlf.txt", "a b\r\n\r\nc\r\nlast\r\n"));
  EXPECT_EQ(all_lines(crlf), expected);
  TextFileReader gz(write_gzip("text.gz", "a b\n\nc\nlast\n"));
  EXPECT_EQ(all_lines(gz), expected);
  TextFileReader empty(write_temp_file("empty.txt", ""));
  EXPECT_TRUE(all_lines(empty).empty());
}

TEST(TextFileReader, LinesLongerThanTheReadBufferAreJoinedExactly) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::vector<std::string> lines;
  std::string text;
  for (int i = 0; i < 40; ++i) {
    std::string line(rng() % 200000, 'x');
    for (char& c : line) c = static_cast<char>('a' + rng() % 26);
    lines.push_back(line);
    text += line + (rng() % 2 ? "\r\n" : "\n");
  }
  TextFileReader reader(write_gzip("long.gz", text));
  EXPECT_EQ(all_lines(reader), lines);
}

TEST(TextFileReader, RefusesNulBytesLongLinesAndDamagedGzip) {
  // A NUL byte used to end a line early and glue what followed onto the next one.
  TextFileReader nul(write_temp_file("nul.txt", std::string("ok\nab\0cd\nef\n", 12)));
  std::string line;
  ASSERT_TRUE(nul.next(line));
  ASRDEC_EXPECT_THROW_MSG(nul.next(line), ParseError, "nul.txt:2: NUL byte in a text line");
  TextFileReader zero("/dev/zero");
  ASRDEC_EXPECT_THROW_MSG(zero.next(line), ParseError, "/dev/zero:1: NUL byte");
  TextFileReader long_line(write_temp_file("long.txt", "short\n" + std::string(5000, 'x') + "\n"), "", 4096);
  ASSERT_TRUE(long_line.next(line));
  ASRDEC_EXPECT_THROW_MSG(long_line.next(line), ParseError, "long.txt:2: line longer than 4096 bytes");
  // A gzip stream cut short is an error, not a shorter file.
  std::ifstream in(write_gzip("whole.gz", std::string(100000, 'a') + "\n"), std::ios::binary);
  const std::string compressed(std::istreambuf_iterator<char>(in), {});
  TextFileReader cut(write_temp_file("cut.gz", compressed.substr(0, compressed.size() / 2)));
  ASRDEC_EXPECT_THROW_MSG(all_lines(cut), ParseError, "cannot decompress");
  ASRDEC_EXPECT_THROW_MSG(TextFileReader(testing::temp_path("absent.txt"), "the lexicon"), Error,
                          "cannot open the lexicon for reading");
  TextFileReader directory(testing::source_path("tests"));
  ASRDEC_EXPECT_THROW_MSG(directory.next(line), Error, "read error");
}

TEST(SymbolTable, ReadsTwoColumnsOrOneWordPerLine) {
  const SymbolTable two = SymbolTable::load(write_temp_file("words.txt", "<eps> 0\r\nhello 1\n\nworld\t3\n"));
  EXPECT_EQ(two.size(), 4u);
  EXPECT_EQ(two.symbol(1), "hello");  // CRLF stripped
  EXPECT_EQ(two.symbol(2), "");       // a gap
  EXPECT_EQ(two.find("world"), 3);
  EXPECT_FALSE(two.find("nope").has_value());
  ASRDEC_EXPECT_THROW_MSG(two.symbol(4), InvalidArgument, "symbol id 4 is outside the table of 4 ids");
  const SymbolTable one = SymbolTable::load(write_temp_file("list.txt", "a\nb c\n"));
  EXPECT_EQ(one.symbols(), (std::vector<std::string>{"a", "b c"}));
}

TEST(SymbolTable, IdsAreBoundedByTheFileAndUnique) {
  // A 24-byte table used to ask for a 2^31-entry vector (16 GB).
  const std::string huge = write_temp_file("huge.txt", "<eps> 0\nword 2147483647\n");
  ASRDEC_EXPECT_THROW_MSG(SymbolTable::load(huge), ParseError,
                          huge + ":2: id 2147483647 of 'word' is beyond what a 24-byte table can number");
  ASRDEC_EXPECT_THROW_MSG(SymbolTable::load(write_temp_file("dup_id.txt", "a 0\nb 1\nc 1\n")), ParseError,
                          ":3: id 1 is given to both 'b' (line 2) and 'c'");
  ASRDEC_EXPECT_THROW_MSG(SymbolTable::load(write_temp_file("dup_word.txt", "a 0\nb 1\na 2\n")), ParseError,
                          "word 'a' has two ids, 0 and 2");
  ASRDEC_EXPECT_THROW_MSG(SymbolTable::load(write_temp_file("blank.txt", "\n \n")), ParseError, "empty symbol table");
  ASRDEC_EXPECT_THROW_MSG(SymbolTable::load(write_temp_file("nul.txt", std::string("a 0\n\0b 1\n", 9))), ParseError,
                          ":2: NUL byte");
}

TEST(TextTables, WordBoostListsAndPhraseLists) {
  const SymbolTable words = SymbolTable::load(write_temp_file("boost_words.txt", "<eps> 0\nhello 1\nworld 2\n"));
  const WordBoosts boosts = read_word_boosts(write_temp_file("boosts.txt", "hello 2.5\r\n\n  world\t-1\n"), words);
  ASSERT_EQ(boosts.size(), 2u);
  EXPECT_EQ(boosts[0], std::make_pair(1, 2.5f));
  EXPECT_EQ(boosts[1], std::make_pair(2, -1.0f));
  ASRDEC_EXPECT_THROW_MSG(read_word_boosts(write_temp_file("nan.txt", "hello nan\n"), words), ParseError,
                          "nan.txt:1: expected \"word score\" with a finite score");
  ASRDEC_EXPECT_THROW_MSG(read_word_boosts(write_temp_file("big.txt", "hello 1e39\n"), words), ParseError,
                          "finite score");
  ASRDEC_EXPECT_THROW_MSG(read_word_boosts(write_temp_file("three.txt", "hello 1 2\n"), words), ParseError,
                          "finite score");
  ASRDEC_EXPECT_THROW_MSG(read_word_boosts(write_temp_file("oov.txt", "\nnope 1\n"), words), ParseError,
                          "oov.txt:2: word 'nope' is not in the word table");
  ASRDEC_EXPECT_THROW_MSG(read_word_boosts(write_temp_file("eps.txt", "<eps> 1\n"), words), ParseError,
                          "word '<eps>' is not in the word table");
  const std::vector<std::string> phrases =
      read_phrase_list(write_temp_file("phrases.txt", "# comment\r\n  new york \r\n\n\tlos angeles\n"));
  EXPECT_EQ(phrases, (std::vector<std::string>{"new york", "los angeles"}));
  ASRDEC_EXPECT_THROW_MSG(read_phrase_list("/dev/zero"), ParseError, "/dev/zero:1: NUL byte");
}

}  // namespace
}  // namespace asrdec

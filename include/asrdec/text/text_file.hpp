#pragma once
/**
 * @file
 * TextFileReader: how asrdec reads every text file it is given — token tables, symbol tables, lexicons, phrase and
 * word-boost lists, reference transcripts and ARPA language models. Files may be plain or gzip-compressed
 * (recognised by content) and end their lines with LF or CRLF. Reading is bounded: a NUL byte (binary data, or
 * /dev/zero), a line longer than the reader's limit, or a damaged gzip stream is a ParseError naming the file and
 * the line, so a hostile file can neither glue lines together nor grow a line without bound.
 *
 * Not thread-safe (one reader, one thread); memory is one read buffer plus the longest line.
 */

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "asrdec/core/error.hpp"
#include "asrdec/core/export.hpp"

namespace asrdec {

class ASRDEC_API TextFileReader {
 public:
  /** Lines longer than this (1 MiB) are refused unless a reader asks for another limit. */
  static constexpr std::size_t kDefaultMaxLineBytes = std::size_t{1} << 20;

  /** Opens `path`; throws Error when it cannot be opened ("<path>: cannot open <what> for reading: ...", where
   *  `what` names the file's role, e.g. "the lexicon"). */
  explicit TextFileReader(const std::string& path, const std::string& what = "",
                          std::size_t max_line_bytes = kDefaultMaxLineBytes);
  ~TextFileReader();
  TextFileReader(const TextFileReader&) = delete;
  TextFileReader& operator=(const TextFileReader&) = delete;

  /** The next line, without its LF or CRLF; false at the end of the file. Throws ParseError (file and line) for a
   *  NUL byte, a line over the limit or a damaged compressed stream, Error for a read error. */
  bool next(std::string& line);

  /** 1-based number of the line next() returned last (0 before the first). */
  std::int64_t line_number() const noexcept { return line_number_; }
  /** Bytes of text (decompressed) returned so far, line ends included. */
  std::uint64_t bytes_read() const noexcept { return bytes_read_; }
  const std::string& path() const noexcept { return path_; }
  /** A ParseError at the line next() returned last. */
  ParseError error(const std::string& message) const { return ParseError(path_, line_number_, message); }

 private:
  bool fill();

  struct File;
  std::string path_;
  std::size_t max_line_bytes_;
  std::unique_ptr<File> file_;
  std::string buffer_;
  std::size_t begin_ = 0;  // unread bytes are buffer_[begin_, end_)
  std::size_t end_ = 0;
  bool at_end_ = false;
  std::int64_t line_number_ = 0;
  std::uint64_t bytes_read_ = 0;
};

/** The fields of a text line, separated by runs of ASCII space and tab only (as KenLM splits words: token-level
 *  vocabularies use other code points, U+00A0 among them, as symbols). */
ASRDEC_API std::vector<std::string> split_fields(std::string_view line);

}  // namespace asrdec

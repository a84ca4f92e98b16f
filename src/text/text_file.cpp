#include "asrdec/text/text_file.hpp"

#include <zlib.h>

#include <cerrno>
#include <cstring>

namespace asrdec {
namespace {

constexpr unsigned kReadBytes = 1u << 16;

}  // namespace

// zlib reads uncompressed files through as they are, so one code path serves plain and gzip files.
struct TextFileReader::File {
  gzFile handle = nullptr;
  ~File() {
    if (handle != nullptr) gzclose(handle);
  }
};

TextFileReader::TextFileReader(const std::string& path, const std::string& what, std::size_t max_line_bytes)
    : path_(path), max_line_bytes_(max_line_bytes), file_(std::make_unique<File>()) {
  errno = 0;
  file_->handle = gzopen(path.c_str(), "rb");
  if (file_->handle == nullptr) {
    throw FileError(path, detail::concat(path, ": cannot open ", what, what.empty() ? "" : " ",
                                         "for reading: ", errno != 0 ? std::strerror(errno) : "out of memory"));
  }
  gzbuffer(file_->handle, kReadBytes);
}

TextFileReader::~TextFileReader() = default;

// Appends up to kReadBytes to the buffer; false when the file has ended.
bool TextFileReader::fill() {
  if (at_end_) return false;
  if (begin_ > 0) {
    buffer_.erase(0, begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  buffer_.resize(end_ + kReadBytes);
  errno = 0;
  const int got = gzread(file_->handle, buffer_.data() + end_, kReadBytes);
  if (got < 0) {
    int code = Z_OK;
    const char* message = gzerror(file_->handle, &code);
    if (code == Z_ERRNO) {
      throw FileError(path_, detail::concat(path_, ": read error: ", std::strerror(errno)));
    }
    throw ParseError(path_, line_number_ + 1, detail::concat("cannot decompress: ", message));
  }
  end_ += static_cast<std::size_t>(got);
  buffer_.resize(end_);
  if (got == 0) {
    // gzread also returns 0 for a gzip stream cut short; zlib reports that through gzerror.
    int code = Z_OK;
    const char* message = gzerror(file_->handle, &code);
    if (code != Z_OK && code != Z_STREAM_END) {
      throw ParseError(path_, line_number_ + 1, detail::concat("cannot decompress: ", message));
    }
    at_end_ = true;
    return false;
  }
  return true;
}

bool TextFileReader::next(std::string& line) {
  std::size_t scanned = begin_;
  for (;;) {
    const char* start = buffer_.data() + scanned;
    const std::size_t available = end_ - scanned;
    const void* newline = std::memchr(start, '\n', available);
    const std::size_t stop =
        newline != nullptr ? static_cast<std::size_t>(static_cast<const char*>(newline) - start) : available;
    if (std::memchr(start, '\0', stop) != nullptr) {
      throw ParseError(path_, line_number_ + 1, "NUL byte in a text line (a binary file, or damaged text)");
    }
    scanned += stop;
    if (scanned - begin_ > max_line_bytes_) {
      throw ParseError(path_, line_number_ + 1,
                       detail::concat("line longer than ", max_line_bytes_, " bytes (a binary or damaged file?)"));
    }
    if (newline != nullptr) break;
    const std::size_t offset = scanned - begin_;
    if (!fill()) {
      if (end_ == begin_) return false;  // the end of the file, after a complete last line
      scanned = begin_ + offset;
      break;  // a last line without a line end
    }
    scanned = begin_ + offset;
  }
  const bool has_newline = scanned < end_;
  line.assign(buffer_, begin_, scanned - begin_);
  bytes_read_ += scanned - begin_ + (has_newline ? 1 : 0);
  begin_ = has_newline ? scanned + 1 : scanned;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  ++line_number_;
  return true;
}

std::vector<std::string> split_fields(std::string_view line) {
  std::vector<std::string> fields;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) fields.emplace_back(line.substr(start, i - start));
  }
  return fields;
}

}  // namespace asrdec

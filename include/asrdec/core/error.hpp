#pragma once
/**
 * @file
 * The exceptions asrdec throws. Every error the library reports derives from asrdec::Error; the library
 * never calls exit() or abort(), so an engine can catch, log and carry on.
 *
 * After a CudaError whose code is "sticky" (an illegal address or a launch failure inside a kernel) the CUDA
 * context of that device is unusable for the rest of the process; that is a property of CUDA, not of asrdec.
 */

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "asrdec/core/export.hpp"

namespace asrdec {

/** Base class of every exception asrdec throws. */
class ASRDEC_API Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/** An argument, tensor or configuration value is invalid (wrong shape, dtype, range, NaN input, ...). */
class ASRDEC_API InvalidArgument : public Error {
 public:
  explicit InvalidArgument(const std::string& message) : Error(message) {}
};

/** A file could not be parsed. line() is 1-based for text formats and 0 for binary formats, whose message
 *  names the byte offset instead. */
class ASRDEC_API ParseError : public Error {
 public:
  ParseError(std::string file, std::int64_t line, const std::string& message);
  const std::string& file() const noexcept { return file_; }
  std::int64_t line() const noexcept { return line_; }
  /** The message without the "file:line: " prefix. */
  const std::string& detail() const noexcept { return detail_; }

 private:
  std::string file_;
  std::int64_t line_;
  std::string detail_;
};

/** A file could not be opened, read or written (missing, not a regular file, no permission, disk full): the
 *  message names the file and the system's reason. A file that opens but whose content is wrong is a ParseError. */
class ASRDEC_API FileError : public Error {
 public:
  FileError(std::string file, const std::string& message);
  const std::string& file() const noexcept { return file_; }

 private:
  std::string file_;
};

/** The request is valid but this build, device or driver cannot serve it (e.g. CUDA in a CPU-only build,
 *  a dtype a file format does not carry). */
class ASRDEC_API Unsupported : public Error {
 public:
  explicit Unsupported(const std::string& message) : Error(message) {}
};

/** Host, pinned or device memory the library needed could not be allocated (what() names the size and the device).
 *  Sizes derived from files and arguments are bounded before anything is allocated, so this signals a real
 *  shortage, not a hostile input. A decoder whose growth fails this way stays usable at its old capacity. */
class ASRDEC_API OutOfMemory : public Error {
 public:
  explicit OutOfMemory(const std::string& message) : Error(message) {}
};

/** A CUDA runtime call failed. what() names the call, the error and where it was made. */
class ASRDEC_API CudaError : public Error {
 public:
  CudaError(std::string call, int code, const std::string& error_name, const std::string& error_string,
            const char* file, int line);
  const std::string& call() const noexcept { return call_; }
  int code() const noexcept { return code_; }

 private:
  std::string call_;
  int code_;
};

namespace detail {

/** Concatenates its arguments with operator<<; used to build error messages only when they are thrown. */
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

}  // namespace detail
}  // namespace asrdec

/** Throws `ExceptionType(message...)` when `condition` is false; the message is only built on failure. */
#define ASRDEC_EXPECTS(condition, ExceptionType, ...)             \
  do {                                                            \
    if (!(condition)) {                                           \
      throw ExceptionType(::asrdec::detail::concat(__VA_ARGS__)); \
    }                                                             \
  } while (false)

/** Shorthand for the most common case, an invalid argument. */
#define ASRDEC_CHECK_ARG(condition, ...) ASRDEC_EXPECTS(condition, ::asrdec::InvalidArgument, __VA_ARGS__)

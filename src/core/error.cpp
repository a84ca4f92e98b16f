#include "asrdec/core/error.hpp"

namespace asrdec {
namespace {

std::string parse_message(const std::string& file, std::int64_t line, const std::string& message) {
  return line > 0 ? detail::concat(file, ":", line, ": ", message) : detail::concat(file, ": ", message);
}

std::string cuda_message(const std::string& call, int code, const std::string& name, const std::string& text,
                         const char* file, int line) {
  return detail::concat("CUDA call ", call, " failed: ", text, " (", name, ", error ", code, ") at ", file, ":", line);
}

}  // namespace

ParseError::ParseError(std::string file, std::int64_t line, const std::string& message)
    : Error(parse_message(file, line, message)), file_(std::move(file)), line_(line), detail_(message) {}

FileError::FileError(std::string file, const std::string& message) : Error(message), file_(std::move(file)) {}

CudaError::CudaError(std::string call, int code, const std::string& error_name, const std::string& error_string,
                     const char* file, int line)
    : Error(cuda_message(call, code, error_name, error_string, file, line)), call_(std::move(call)), code_(code) {}

}  // namespace asrdec

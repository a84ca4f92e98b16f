#include "core/checked_size.hpp"

namespace asrdec::detail {

std::uint64_t checked_bytes(std::uint64_t count, std::uint64_t element_bytes, std::string_view what,
                            std::uint64_t limit) {
  const std::optional<std::uint64_t> bytes = checked_mul(count, element_bytes);
  ASRDEC_CHECK_ARG(bytes.has_value() && *bytes <= limit, what, ": ", count, " elements of ", element_bytes,
                   " bytes exceed the ", limit, "-byte limit of one allocation");
  return *bytes;
}

void FileSizes::fail(const std::string& message) const { throw ParseError(path_, 0, message); }

std::uint64_t FileSizes::mul(std::uint64_t a, std::uint64_t b, std::string_view what) const {
  const std::optional<std::uint64_t> product = checked_mul(a, b);
  if (!product) fail(concat(what, ": ", a, " × ", b, " overflows 64 bits"));
  return *product;
}

std::uint64_t FileSizes::add(std::uint64_t a, std::uint64_t b, std::string_view what) const {
  const std::optional<std::uint64_t> sum = checked_add(a, b);
  if (!sum) fail(concat(what, ": ", a, " + ", b, " overflows 64 bits"));
  return *sum;
}

std::uint64_t FileSizes::bytes(std::uint64_t count, std::uint64_t element_bytes, std::string_view what) const {
  const std::uint64_t bytes = mul(count, element_bytes, what);
  if (bytes > file_bytes_) {
    fail(concat(what, ": ", count, " × ", element_bytes, " bytes is more than the whole ", file_bytes_,
                "-byte file holds"));
  }
  return bytes;
}

void FileSizes::within_file(std::uint64_t end, std::string_view what) const {
  if (end > file_bytes_) {
    fail(concat("truncated: ", what, " ends at byte ", end, " but the file has ", file_bytes_, " bytes"));
  }
}

}  // namespace asrdec::detail

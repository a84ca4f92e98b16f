#pragma once
// Internal: size arithmetic that cannot wrap, and header fields checked against their range. Every reader turns
// the counts it reads from a file into byte counts through FileSizes, and every allocation sized by an argument
// goes through checked_bytes, so that a hostile count becomes a typed error naming the file or the argument
// instead of a wrapped product, a tiny allocation and a write past its end (docs/robustness.md).

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "asrdec/core/error.hpp"

namespace asrdec::detail {

/** a × b, or nullopt when the product does not fit in 64 bits. */
constexpr std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b) noexcept {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return std::nullopt;
  return a * b;
}

/** a + b, or nullopt when the sum does not fit in 64 bits. */
constexpr std::optional<std::uint64_t> checked_add(std::uint64_t a, std::uint64_t b) noexcept {
  if (b > std::numeric_limits<std::uint64_t>::max() - a) return std::nullopt;
  return a + b;
}

/** count × element_bytes for memory an argument asks for: InvalidArgument naming `what` when the product wraps or
 *  exceeds `limit` bytes. */
std::uint64_t checked_bytes(std::uint64_t count, std::uint64_t element_bytes, std::string_view what,
                            std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() / 2);

/** The sizes one reader derives from one file: every product, sum and header field goes through here, and anything
 *  that wraps, exceeds what the file holds, or lies outside its range is a ParseError naming the file. */
class FileSizes {
 public:
  FileSizes(std::string path, std::uint64_t file_bytes) : path_(std::move(path)), file_bytes_(file_bytes) {}

  const std::string& path() const noexcept { return path_; }
  std::uint64_t file_bytes() const noexcept { return file_bytes_; }

  /** count × element_bytes of data the file must hold: fails when it wraps or exceeds the file's size. */
  std::uint64_t bytes(std::uint64_t count, std::uint64_t element_bytes, std::string_view what) const;
  /** a × b with no bound but 64 bits (e.g. the elements of a shape). */
  std::uint64_t mul(std::uint64_t a, std::uint64_t b, std::string_view what) const;
  /** a + b with no bound but 64 bits. */
  std::uint64_t add(std::uint64_t a, std::uint64_t b, std::string_view what) const;
  /** Fails unless `end` (an offset just past some data) lies within the file. */
  void within_file(std::uint64_t end, std::string_view what) const;

  /** A header field, checked to lie in [min, max], returned as T (which must hold the range). */
  template <class T, class V>
  T field(V value, T min, T max, std::string_view name) const {
    static_assert(std::is_integral_v<T> && std::is_integral_v<V>, "integer fields only");
    if (!in_range(value, min, max)) {
      fail(concat("header field ", name, " = ", widen(value), " is outside [", widen(min), ", ", widen(max), "]"));
    }
    return static_cast<T>(value);
  }

  [[noreturn]] void fail(const std::string& message) const;

 private:
  template <class V>
  static auto widen(V value) {
    if constexpr (std::is_signed_v<V>) {
      return static_cast<long long>(value);
    } else {
      return static_cast<unsigned long long>(value);
    }
  }
  template <class V, class T>
  static bool in_range(V value, T min, T max) {
    // Compare as mathematical integers, whatever the signedness of the two types.
    if constexpr (std::is_signed_v<V>) {
      const auto v = static_cast<long long>(value);
      if constexpr (std::is_signed_v<T>) {
        return v >= static_cast<long long>(min) && v <= static_cast<long long>(max);
      } else {
        return v >= 0 && static_cast<unsigned long long>(v) >= static_cast<unsigned long long>(min) &&
               static_cast<unsigned long long>(v) <= static_cast<unsigned long long>(max);
      }
    } else {
      const auto v = static_cast<unsigned long long>(value);
      if constexpr (std::is_signed_v<T>) {
        return (min < 0 || v >= static_cast<unsigned long long>(min)) && max >= 0 &&
               v <= static_cast<unsigned long long>(max);
      } else {
        return v >= static_cast<unsigned long long>(min) && v <= static_cast<unsigned long long>(max);
      }
    }
  }

  std::string path_;
  std::uint64_t file_bytes_;
};

}  // namespace asrdec::detail

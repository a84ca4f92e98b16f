#pragma once
// Option validators the library has no config field for (values that only the CLI uses).

#include <CLI/CLI.hpp>
#include <cmath>
#include <string>

namespace asrdec::cli {

/** A finite number above zero: CLI11's PositiveNumber lets NaN through (NaN <= 0 is false). */
inline CLI::Validator finite_positive() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        double value = 0.0;
        if (!CLI::detail::lexical_cast(input, value) || !std::isfinite(value) || value <= 0.0) {
          return "must be a finite number above 0, got " + input;
        }
        return {};
      },
      "FINITE > 0");
}

}  // namespace asrdec::cli

#pragma once
// Test oracle for CTC greedy decoding, written independently of the library: plain loops over one utterance's
// frames in float, with the textbook rule (argmax with first max, collapse repeats, drop blanks).

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "support/test_support.hpp"

namespace asrdec::testing {

struct CtcReference {
  std::vector<std::int32_t> tokens;
  std::vector<std::int32_t> timestamps;
  std::vector<float> token_logprobs;
  double score = 0.0;
};

/** frames: row-major [length][columns] values. */
inline CtcReference ctc_greedy_reference(const std::vector<float>& frames, int length, int columns, int blank) {
  CtcReference out;
  int previous = -1;
  for (int t = 0; t < length; ++t) {
    const float* row = frames.data() + static_cast<std::size_t>(t) * columns;
    int best = 0;
    for (int v = 1; v < columns; ++v) {
      if (row[v] > row[best]) best = v;
    }
    out.score += row[best];
    if (best != blank && best != previous) {
      out.tokens.push_back(best);
      out.timestamps.push_back(t);
      out.token_logprobs.push_back(row[best]);
    }
    previous = best;
  }
  return out;
}

/** IEEE binary16 decoding from the definition (independent of the library's conversion). */
inline float decode_half_reference(std::uint16_t h) {
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  double value = exponent == 0    ? std::ldexp(mantissa, -24)
                 : exponent == 31 ? (mantissa == 0 ? INFINITY : NAN)
                                  : std::ldexp(1024 + mantissa, exponent - 25);
  return static_cast<float>((h & 0x8000) ? -value : value);
}

inline float decode_bf16_reference(std::uint16_t b) {
  const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

}  // namespace asrdec::testing

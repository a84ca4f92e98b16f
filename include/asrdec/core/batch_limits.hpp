#pragma once

#include <cstdint>
#include <string>

namespace asrdec {

/** Sizes a decoder allocates for at construction. A call that exceeds them grows the buffers (and re-captures
 *  CUDA graphs) before it starts, never inside a decode loop; size them for your largest batch to avoid that. */
struct BatchLimits {
  std::int64_t max_batch = 32;
  std::int64_t max_frames = 2048;

  /** Throws InvalidArgument unless both are positive. */
  void validate() const;
  std::string to_string() const;
};

}  // namespace asrdec

#pragma once

#include <cstdint>
#include <string>

#include "asrdec/core/export.hpp"

namespace asrdec {

/** Sizes a decoder allocates for at construction. A call that exceeds them grows the buffers (and re-captures
 *  CUDA graphs) before it starts, never inside a decode loop; size them for your largest batch to avoid that. */
struct ASRDEC_API BatchLimits {
  /** The largest limits a decoder accepts: utterances and frames are indexed with 32-bit integers on the device,
   *  and a hostile or mistaken request (say 2^40 utterances) must be refused before anything is sized from it. */
  static constexpr std::int64_t kMaxBatch = std::int64_t{1} << 24;
  static constexpr std::int64_t kMaxFrames = (std::int64_t{1} << 30) - 1;

  std::int64_t max_batch = 32;
  std::int64_t max_frames = 2048;
  /** Streaming (asrdec/core/streaming.hpp): the most utterances open at once, each keeping its decoding state (a
   *  channel) between decode_chunks() calls. Fixed for the decoder's lifetime; the channels' memory is taken by the
   *  first decode_chunks() call, so decoders that never stream pay nothing for it. */
  std::int64_t max_open_utterances = 1024;

  /** Throws InvalidArgument unless 1 ≤ max_batch ≤ kMaxBatch, 1 ≤ max_frames ≤ kMaxFrames and
   *  1 ≤ max_open_utterances ≤ kMaxBatch. */
  void validate() const;
  std::string to_string() const;
};

}  // namespace asrdec

#pragma once
// Random server traffic for the streaming tests of every decoder (asrdec/core/streaming.hpp): utterances arrive at
// random calls, each call carries the next chunk (0 frames allowed) of some open utterances in random row order,
// ids are reused once free, and some utterances are cancelled or abandoned by a new first chunk on their id.

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "asrdec/core/streaming.hpp"
#include "asrdec/hyps/hypothesis.hpp"

namespace asrdec::testing {

/** One decode_chunks() call: row r continues utterance `utterance[r]` (an index into the whole batch) with its frames
 *  [start[r], start[r] + length[r]); `cancel` lists the ids to cancel() before the call. */
struct StreamingCall {
  std::vector<ChunkRow> rows;
  std::vector<int> utterance;
  std::vector<std::int32_t> start;
  std::vector<std::int32_t> length;
  std::vector<std::int64_t> cancel;
};

struct StreamingSchedule {
  std::vector<StreamingCall> calls;
  std::vector<bool> finished;  ///< [utterances] whether the utterance got its last chunk (else it was dropped)
  std::int64_t max_open = 0;   ///< the most utterances open at once
  std::int64_t max_rows = 0;   ///< the most rows in a call
};

/** Traffic for utterances of the given lengths: at most `max_open` open at once and `max_lanes` rows per call;
 *  `drop_rate` of them are cancelled or abandoned before their end. */
StreamingSchedule random_streaming_schedule(std::mt19937_64& rng, const std::vector<std::int32_t>& lengths,
                                            int max_open, int max_lanes, double drop_rate);

/** The frames of one call's rows, cut out of a contiguous [B, T, X] array of `element`-byte values: a contiguous
 *  [rows, frames, X] array (frames = the longest chunk, at least 1), the rest zero-filled. */
std::vector<std::byte> gather_chunks(const void* whole, std::int64_t T, std::int64_t X, std::size_t element,
                                     const StreamingCall& call, std::int64_t& frames);

/** A finished streamed utterance against decode() of the whole utterance on the same device: every field equal, the
 *  scores bit for bit (chunked decoding continues the very sums decode() makes). */
void expect_streamed_equals_whole(const Hypothesis& streamed, const Hypothesis& whole);

/** A partial streamed result of a greedy decoder: its labels so far are the first labels of the whole result. */
void expect_prefix_of_whole(const Hypothesis& partial, const Hypothesis& whole);

}  // namespace asrdec::testing

#pragma once
// Internal: the bookkeeping of asrdec/core/streaming.hpp that every decoder shares — which channel (a slot in the
// executor's per-utterance state arrays) each open utterance holds, the checks of a decode_chunks() call's rows,
// and the frames each utterance has decoded (for absolute timestamps). What a channel holds is the executor's.

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "asrdec/core/streaming.hpp"
#include "asrdec/hyps/hypothesis.hpp"

namespace asrdec::detail {

/** Where the rows of one call keep their state. */
struct ChunkPlan {
  std::vector<std::int32_t> slot;    ///< per row: its channel, in [0, capacity)
  std::vector<std::uint8_t> fresh;   ///< per row: the utterance starts here (its state is the start state)
  std::vector<std::int64_t> offset;  ///< per row: frames of the utterance decoded before this call
};

class UtteranceChannels {
 public:
  /** `owner` names the decoder in messages. */
  UtteranceChannels(std::int64_t capacity, std::string owner);

  /** Checks a call's rows against the open utterances and assigns their channels; changes nothing. Throws
   *  InvalidArgument for an id given twice, a row without `first` whose utterance is not open, or a chunk that would
   *  take an utterance past 2^31 - 1 frames (lengths[b]: frames of row b); OutOfMemory when the new utterances would
   *  pass the capacity. */
  ChunkPlan plan(const std::vector<ChunkRow>& rows, const std::vector<std::int32_t>& lengths) const;
  /** After the call succeeded: opens its new utterances, counts their frames, frees the channels of last rows. */
  void commit(const std::vector<ChunkRow>& rows, const ChunkPlan& plan, const std::vector<std::int32_t>& lengths);
  /** Frees an open utterance's channel without a result and returns it; -1 when the utterance is not open. */
  std::int32_t cancel(std::int64_t utterance);
  /** The channel of an open utterance, -1 when it is not open. */
  std::int32_t slot(std::int64_t utterance) const {
    const auto open = slot_of_.find(utterance);
    return open == slot_of_.end() ? -1 : open->second.slot;
  }

  std::int64_t open() const { return static_cast<std::int64_t>(slot_of_.size()); }
  std::int64_t capacity() const { return capacity_; }

 private:
  struct Open {
    std::int32_t slot;
    std::int64_t frames;
  };
  // The slot the n-th new utterance of a call would take (-1: none left): freed slots first, latest freed first,
  // then slots never used, so that a large capacity costs nothing until it is used.
  std::int32_t nth_free(std::size_t n) const;
  std::int32_t take_free();

  std::int64_t capacity_;
  std::string owner_;
  std::unordered_map<std::int64_t, Open> slot_of_;
  std::vector<std::int32_t> freed_;  // slots freed by ended utterances
  std::int64_t never_used_ = 0;      // slots [never_used_, capacity) have not been used yet
};

/** The hypotheses so far of a greedy decoder's open utterances, one per channel: each chunk appends its labels
 *  and replaces the scores by the path's so far. */
class PartialHypotheses {
 public:
  explicit PartialHypotheses(std::int64_t capacity) : by_slot_(static_cast<std::size_t>(capacity)) {}

  /** Row b's chunk result `chunk[b]` (timestamps absolute, scores of the whole path so far) is appended to its
   *  channel's hypothesis (which a fresh row starts empty); returns every row's hypothesis so far, is_final =
   *  rows[b].last, and forgets the hypotheses of last rows. Call after the executor succeeded. */
  std::vector<Hypothesis> append(const std::vector<ChunkRow>& rows, const ChunkPlan& plan,
                                 std::vector<Hypothesis>&& chunk);
  /** Forgets a channel's hypothesis (a cancelled utterance). */
  void clear(std::int32_t slot);

 private:
  std::vector<Hypothesis> by_slot_;
};

}  // namespace asrdec::detail

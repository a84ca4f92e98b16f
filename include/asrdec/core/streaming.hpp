#pragma once
/**
 * @file
 * The streaming model every decoder shares (docs/streaming.md). A server keeps many utterances open at once and
 * hands a decoder whatever chunks are ready: one decode_chunks() call carries rows of frames, each row continuing
 * one utterance named by the caller's id, so a call may mix first, middle and last chunks of different
 * utterances, of different lengths, in any order.
 *
 * - The decoder keeps each open utterance's state (a channel) between calls, under its id. A call gathers the
 *   states of its rows into its rows of computation (lanes), decodes the frames, and keeps the new states.
 * - Channels are counted against BatchLimits::max_open_utterances, fixed at construction; rows per call (lanes)
 *   against BatchLimits::max_batch, which grows like a whole-batch call's.
 * - `first` starts an utterance (an open one with the same id is discarded and started again); a row without
 *   `first` continues an open utterance; `last` ends it: its result is final and its channel is freed. cancel()
 *   frees an utterance without a last chunk (a client that went away).
 * - Every row returns the utterance's hypothesis so far (tokens, timestamps absolute from the utterance's first
 *   frame, scores of the path so far) with is_final = `last`. Chunked decoding gives exactly the whole-utterance
 *   result on the same device (tokens, timestamps and scores bit-equal), whatever the chunk sizes (0 included).
 * - A call that throws changes no utterance: everything that can be rejected (ids, shapes, values) is checked
 *   before a channel changes, or the new states are kept aside until the call has succeeded.
 */

#include <cstdint>

#include "asrdec/core/export.hpp"

namespace asrdec {

/** One row of a decode_chunks() call: which utterance the row's frames continue. */
struct ASRDEC_API ChunkRow {
  /** The caller's id for the utterance (e.g. a server's correlation id); any value. An id appears at most once per
   *  call. */
  std::int64_t utterance = 0;
  /** The utterance starts with this chunk; an open utterance with the same id is discarded first. */
  bool first = false;
  /** The utterance ends with this chunk: the result is final and the utterance's state is freed. */
  bool last = false;
  /** Phrase boosting (CTC and transducer decoders with a BoostingTree): the tree's phrase list this utterance uses,
   *  in [0, BoostingTree::num_lists()); read on the first chunk. */
  std::int32_t phrase_list = 0;
};

}  // namespace asrdec

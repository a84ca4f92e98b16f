#pragma once
// Internal: CUDA kernels of CTC greedy decoding. Both kernels read the per-call arguments from device memory
// (CtcGreedyArgs), so that one captured graph serves every call: only the small argument block is copied
// before each replay.

#include <cuda_runtime.h>

#include <cstdint>

#include "asrdec/core/dtype.hpp"
#include "asrdec/lm/ngram_lm.hpp"

namespace asrdec::detail {

struct CtcGreedyArgs {
  const void* logprobs;
  std::int64_t stride_b;
  std::int64_t stride_t;
  std::int64_t stride_v;
  const void* lengths;
  std::int64_t lengths_stride;
  std::int32_t lengths_are_int64;
  std::int32_t batch;
  std::int32_t frames;
  std::int32_t columns;
  std::int32_t blank;
  std::int32_t check_values;
  /** Streaming (decode_chunks): lanes start from their channels (CtcGreedyWorkspace::lane_*) and the new states are
   *  committed to them; 0: whole utterances, every lane from the start state. */
  std::int32_t streaming;
};

/** Frames whose log-probabilities one lane of the non-fused path sums: frame g goes to sum g mod 32, so that every
 *  sum adds its frames in frame order however the utterance is cut into chunks. */
constexpr int kCtcScoreSums = 32;

/** What an utterance carries from chunk to chunk on CUDA (a channel), and what a lane ends a chunk with. The path's
 *  score is kept as sums in double, reduced in a fixed order when a result is read, so chunked decoding gives the
 *  whole utterance's score bit for bit. */
struct CtcGreedyCarry {
  double sums[kCtcScoreSums];  ///< without fusion: the chosen log-probabilities of frames ≡ l (mod 32)
  double fused_score;          ///< with fusion: the same, one sum in frame order (one thread walks the frames)
  std::int32_t previous;       ///< the last frame's token (-1 before the first frame)
  std::int32_t lm_state;
  std::int32_t boost_state;
  float lm_total;
  float boost_total;
};

/** Buffers that stay fixed for the lifetime of a captured graph. */
struct CtcGreedyWorkspace {
  const CtcGreedyArgs* args;            ///< device copy of the call's arguments
  std::int32_t* frame_token;            ///< [max_batch, row_stride] argmax per frame
  float* frame_logprob;                 ///< [max_batch, row_stride] max log-prob per frame
  std::int32_t* tokens;                 ///< [max_batch, row_stride]
  std::int32_t* timestamps;             ///< [max_batch, row_stride]
  float* token_logprobs;                ///< [max_batch, row_stride]
  std::int32_t* token_counts;           ///< [max_batch]
  float* scores;                        ///< [max_batch]
  unsigned long long* first_bad_value;  ///< packed (b, t, v, kind); all ones when none
  unsigned int* first_bad_length;       ///< smallest b with a length outside [0, T]; all ones when none
  std::int64_t row_stride;
  // Fusion (use_lm or use_boost != 0): the collapse walks each utterance's frames in order, re-choosing emitted
  // tokens by log p + α·LM + β·boost.
  float* lm_scores;     ///< [max_batch] weighted LM score per utterance
  float* boost_scores;  ///< [max_batch] weighted boosting score per utterance
  NgramLmRef lm;
  NgramLmRef boost;
  const std::int32_t* boost_roots;  ///< [boost_lists] the root of each phrase list
  std::int64_t boost_lists;
  float lm_weight;
  float boost_weight;
  std::int32_t use_lm;
  std::int32_t use_boost;
  // Streaming: each lane's channel, whether it starts there, its frame offset (frames the utterance decoded before)
  // and, when it starts, its boosting root; [max_batch] each, copied before each streaming call.
  CtcGreedyCarry* lane_carry;           ///< [max_batch] the state each lane ends the call with
  CtcGreedyCarry* channels;             ///< [max_open_utterances], null until the first streaming call
  const std::int32_t* lane_slot;        ///< [max_batch]
  const std::int32_t* lane_fresh;       ///< [max_batch]
  const std::int32_t* lane_offset;      ///< [max_batch]
  const std::int32_t* lane_boost_root;  ///< [max_batch]
};

/** Enqueues the whole decode: status reset, per-frame argmax, per-utterance collapse from each lane's start state,
 *  and (streaming) the commit of the lanes' new states to their channels when no bad value or length was found.
 *  Grid sizes are fixed by the caller (grid-stride loops cover any batch), which keeps a captured graph valid for any
 *  call within the buffers' limits. */
void launch_ctc_greedy(DType dtype, const CtcGreedyWorkspace& workspace, int argmax_blocks, int collapse_blocks,
                       cudaStream_t stream);

void preload_ctc_greedy_kernels();

}  // namespace asrdec::detail

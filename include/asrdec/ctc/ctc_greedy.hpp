#pragma once
/**
 * @file
 * Greedy (best-path) decoding of CTC log-probabilities, batched, on the CPU or a CUDA device.
 *
 * Input: log-probabilities `[B, T, V+1]` (fp32, fp16 or bf16; any non-negative strides, so a padded or sliced
 * tensor needs no copy) and per-utterance lengths `[B]` (int32 or int64). Per frame t < length the decoder takes
 * the argmax over the V+1 columns (the first maximum on ties, as torch.argmax), collapses repeats and drops
 * blanks: a token is emitted at frame t when it is not blank and differs from the argmax of frame t-1.
 *
 * Result per utterance (asrdec::Hypothesis):
 * - tokens, and timestamps = the first frame of each emitted run;
 * - token_scores = the log-probability of the token at that frame; token_confidences = exp(token_scores);
 * - am_score = the log-probability of the whole path, i.e. the sum over frames t < length of the chosen
 *   column's log-probability (the frame's maximum without an LM), blank frames included (accumulated in double
 *   precision);
 * - lm_score = the sum of lm_weight × ln p_LM of the emitted tokens with an LM (CtcGreedyConfig::lm), else 0;
 * - boost_score = the sum of boost_weight × the boosting tree's scores of the emitted tokens with a tree
 *   (CtcGreedyConfig::boost), else 0;
 * - score = am_score + lm_score + boost_score.
 * Frames at or beyond an utterance's length are never read.
 *
 * Bad input raises InvalidArgument with a precise message: wrong rank/dtype/device, lengths outside [0, T],
 * blank id outside the columns, and (unless CtcGreedyConfig::check_values is false) NaN or +inf in a frame that
 * is read. -inf is a valid log-probability.
 *
 * CUDA: all work is enqueued on the given stream (nullptr = the legacy default stream), after what was enqueued
 * there before (docs/cuda-contract.md); by default the two kernels run
 * as one CUDA graph replayed on every call (CtcGreedyConfig::graph_mode). decode() synchronises and returns host
 * results; decode_async() leaves them in the decoder's device buffers.
 *
 * Streaming (asrdec/core/streaming.hpp, docs/streaming.md): decode_chunks() continues many utterances at once, each
 * from where its last chunk ended (the last frame's token, the LM and boosting states, the score so far), so a
 * token run that crosses a chunk border is emitted once and the chunks of an utterance give exactly decode()'s
 * result on the same device, scores included.
 *
 * Thread safety: a decoder has one owner at a time; use one decoder per thread or stream.
 */

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "asrdec/core/batch_limits.hpp"
#include "asrdec/core/device.hpp"
#include "asrdec/core/export.hpp"
#include "asrdec/core/graph.hpp"
#include "asrdec/core/stream.hpp"
#include "asrdec/core/streaming.hpp"
#include "asrdec/core/tensor.hpp"
#include "asrdec/hyps/hypothesis.hpp"
#include "asrdec/lm/boosting_tree.hpp"
#include "asrdec/lm/ngram_lm.hpp"

namespace asrdec {

struct ASRDEC_API CtcGreedyConfig {
  /** Column of the blank symbol; -1 (default) means the last column, V (NeMo's convention). */
  std::int32_t blank_id = -1;
  /** How the CUDA work is launched; ignored on the CPU. */
  GraphMode graph_mode = GraphMode::automatic;
  /** CUDA: the most device memory the decoder's buffers may take (0: no cap). Limits whose buffers need more are
   *  refused with OutOfMemory before the allocation that would pass it, at construction or when a call grows
   *  them (the decoder then stays at its old size); device_bytes() says what they take. */
  std::int64_t max_device_bytes = 0;
  /** Reject NaN and +inf log-probabilities (costs one comparison per element). */
  bool check_values = true;
  /** CPU only: threads the utterances of a call are spread over, the caller's included; 0 (default) means the
   *  process's shared CPU pool (asrdec/core/cpu_threads.hpp: every core unless sized otherwise), which this caps.
   *  Results do not depend on it. */
  std::int32_t threads = 0;
  /** Shallow fusion of a token-level n-gram LM (NGPU-LM), or none. The LM must be on the decoder's device with
   *  V = columns - 1 tokens; its token ids are the columns without the blank, in order (column c is id c before the
   *  blank and c - 1 after it; docs/ngram-lm.md), so the blank may be in any column. A frame whose acoustic argmax is
   *  blank or repeats the previous frame's token keeps it; any other frame takes the argmax over the non-blank tokens,
   *  except the previous frame's token, of log p + lm_weight × ln p_LM(token | history). The LM state starts at `<s>`
   *  and moves on emitted tokens. */
  std::shared_ptr<const NgramLm> lm;
  /** α, the LM weight (natural-log scores). */
  float lm_weight = 0.0f;
  /** Phrase boosting (a BoostingTree on the decoder's device over the V tokens), alone or with the LM: the
   *  re-chosen token maximises log p + (lm_weight × LM + boost_weight × boost). Utterance b starts at the root of
   *  phrase list b (list 0 when the tree has one). */
  std::shared_ptr<const BoostingTree> boost;
  /** β, the boosting weight. */
  float boost_weight = 1.0f;

  /** Throws InvalidArgument for a blank_id below -1 or a non-finite lm_weight or boost_weight. */
  void validate() const;
  std::string to_string() const;
};

/** Results of one batch left by decode_async() in memory the decoder owns (device memory for a CUDA decoder,
 *  host memory for a CPU one), valid until the decoder's next decode call. Row b holds lengths[b] entries. */
struct ASRDEC_API CtcGreedyBatchResult {
  Device device;
  std::int64_t batch = 0;
  std::int64_t row_stride = 0;               ///< elements between consecutive rows of the [batch, *] arrays
  const std::int32_t* tokens = nullptr;      ///< [batch, row_stride]
  const std::int32_t* timestamps = nullptr;  ///< [batch, row_stride]
  const float* token_logprobs = nullptr;     ///< [batch, row_stride]
  const std::int32_t* lengths = nullptr;     ///< [batch] number of tokens per utterance
  const float* scores = nullptr;             ///< [batch] acoustic log-probability of the path (am_score)
  const float* lm_scores = nullptr;          ///< [batch] weighted LM score (lm_score); nullptr without an LM
  const float* boost_scores = nullptr;       ///< [batch] weighted boosting score; nullptr without a tree
};

class ASRDEC_API CtcGreedyDecoder {
 public:
  /** Throws InvalidArgument for a bad config or limits, Unsupported when `device` is CUDA and CUDA is not
   *  available. */
  explicit CtcGreedyDecoder(Device device, CtcGreedyConfig config = {}, BatchLimits limits = {});
  ~CtcGreedyDecoder();
  CtcGreedyDecoder(CtcGreedyDecoder&&) noexcept;
  CtcGreedyDecoder& operator=(CtcGreedyDecoder&&) noexcept;

  /** Decodes a batch and returns one Hypothesis per utterance, in order. `logprobs` must live on the decoder's
   *  device; `lengths` on the host or the decoder's device. Synchronises `stream`. */
  std::vector<Hypothesis> decode(const TensorView& logprobs, const TensorView& lengths, StreamHandle stream = nullptr);

  /** Enqueues the decode and returns at once (CUDA); the result is ready when `stream` reaches this point.
   *  Value checks that need the data (NaN, lengths given in device memory) are reported by
   *  synchronize_and_check(). On the CPU this is synchronous. */
  CtcGreedyBatchResult decode_async(const TensorView& logprobs, const TensorView& lengths,
                                    StreamHandle stream = nullptr);

  /** Waits for `stream` and throws InvalidArgument if the last decode_async() met invalid values. */
  void synchronize_and_check(StreamHandle stream = nullptr);

  /** Streaming: row b of `logprobs` (lengths[b] frames, possibly 0; lengths in host memory) continues utterance
   *  rows[b].utterance. Returns each row's hypothesis so far (its tokens, timestamps absolute from the utterance's
   *  first frame, the scores of its path so far), is_final = rows[b].last. Synchronises `stream`. Throws as decode()
   *  for bad input, InvalidArgument for rows that do not fit the open utterances (an id twice, a continuing row of
   *  an utterance that is not open, a phrase list the boosting tree lacks) and OutOfMemory beyond
   *  BatchLimits::max_open_utterances; a call that throws changes no utterance. */
  std::vector<Hypothesis> decode_chunks(const std::vector<ChunkRow>& rows, const TensorView& logprobs,
                                        const TensorView& lengths, StreamHandle stream = nullptr);
  /** Forgets an open utterance without a last chunk (a client that went away); false when it is not open. */
  bool cancel(std::int64_t utterance);
  /** Utterances started and not yet ended or cancelled. */
  std::int64_t open_utterances() const;

  Device device() const;
  const CtcGreedyConfig& config() const;
  /** The graph mode in use (eager on the CPU). */
  GraphMode graph_mode() const;
  /** CUDA: device bytes the decoder's sized buffers take for its current limits (grown by calls that exceed
   *  them), counted as they were allocated; 0 on the CPU. Capped by the config's max_device_bytes. */
  std::int64_t device_bytes() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace asrdec

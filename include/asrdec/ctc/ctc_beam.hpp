#pragma once
/**
 * @file
 * Batched beam search over CTC log-probabilities (NeMo's beam_batch), with optional shallow fusion of an n-gram LM
 * and/or a phrase-boosting tree, on the CPU and on CUDA.
 *
 * Frame-synchronous: on each frame t < length every hypothesis k proposes every column v (or, with beam_size_token
 * N, the frame's N most likely columns) with score_k + log p(v | t), plus, when v is a token that is not a repeat of
 * k's last label (blank included in "last label"), the insertion bonus β (beam_beta) and α·ln p_LM(v | k) +
 * β_boost·boost(v | k). Each utterance keeps the K best of the proposals (higher score first, then lower k·(V+1) + v),
 * drops those more than beam_threshold below the best, and merges equal hypotheses — same tokens (after folding
 * repeats and dropping blanks) and same last label — keeping the maximum score (Viterbi merging: a prefix ending in
 * blank and the same prefix ending in its last token stay distinct, as NeMo's). Options give flashlight-text's
 * variants: merge_before_prune merges the proposals first and keeps the K best merged ones, and log_add merges by
 * log-sum-exp (docs/beam-search.md). After its last frame an utterance's beam is frozen
 * (NeMo keeps adding padded frames' scores; see docs/beam-search.md), and each hypothesis adds α·ln p_LM(</s> |
 * its LM state).
 *
 * Results (asrdec::Hypothesis; docs/results.md): tokens, timestamps (the first frame of each token's run), score
 * (the beam score, a log-probability), ranking_score = score (NeMo's CTC beam does not length-normalise),
 * lm_score = α × (Σ ln p_LM of the tokens + ln p_LM(</s>)), boost_score = Σ β_boost·boost, am_score = score −
 * lm_score − boost_score (acoustic log-probability plus the insertion bonuses). N-best lists hold distinct
 * transcripts (unique_transcripts). token_scores = each token's log-probability on the first frame of its run, along
 * the hypothesis' own path (the alignment that survived every merge); token_confidences = exp(token_scores).
 *
 * Beam 1 with β = 0 and no fusion is greedy decoding (the same tokens), up to the rounding of the running score: two
 * columns whose sums with it round to the same float tie, and the lower column wins.
 *
 * Bad input raises InvalidArgument as for CtcGreedyDecoder: shapes, dtypes, lengths outside [0, T], blank out of
 * range, NaN or +inf in a frame that is read, fusion models over another vocabulary. The blank may be in any column,
 * with fusion too: the LM's and the tree's token ids are the columns without the blank (docs/ngram-lm.md).
 *
 * Executors: the CPU executor decodes utterance by utterance, spread over `threads` threads; the CUDA executor decodes
 * the batch frame by frame (one block per utterance: each thread keeps the K best of its share of the K·(V+1)
 * proposals, and the merged lists are exactly the K best, the order being total), with the frame loop inside CUDA
 * graphs (graph_mode) and buffers sized for the limits' batch × beam × frames. Both apply the same rules
 * (src/ctc/beam/ctc_beam_step.hpp), so they keep the same hypotheses; scores agree to float rounding.
 *
 * Streaming: decode_chunks() keeps each open utterance's K hypotheses (their scores, last labels, hashes, LM and
 * boosting states) between calls, and the tokens of their paths as a forest that each chunk extends; the search is
 * frame-synchronous, so chunked decoding makes exactly the whole utterance's choices.
 *
 * Thread safety: a decoder has one owner at a time; LMs and trees may be shared.
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

struct ASRDEC_API CtcBeamConfig {
  /** Column of the blank; -1 (default) means the last column. */
  std::int32_t blank_id = -1;
  /** The largest beam: on the CPU each frame ranks K·(V+1) proposals and keeps K hypotheses with their LM queries
   *  ([K, V] scores), so time and memory grow linearly with K; on CUDA each thread's candidate list lives in registers
   *  and local memory, which caps K at kMaxBeamCuda. */
  static constexpr std::int32_t kMaxBeam = 1024;
  static constexpr std::int32_t kMaxBeamCuda = 64;
  /** K, hypotheses kept per utterance, 1 … kMaxBeam (CUDA: 1 … kMaxBeamCuda). */
  std::int32_t beam = 4;
  /** β, added for every emitted token (an insertion bonus that offsets the LM's per-token cost; NeMo's config
   *  uses 1.0 with an LM). */
  float beam_beta = 0.0f;
  /** Proposals more than this below the utterance's best on a frame are dropped. */
  float beam_threshold = 20.0f;
  /** Merge equal proposals before keeping the K best (flashlight-text's order), so K distinct hypotheses survive;
   *  false (NeMo's order): keep the K best proposals, then merge, which can leave fewer than K. As flashlight does,
   *  the end of the utterance is then pruned like a frame: hypotheses more than beam_threshold below the best (with
   *  the end-of-sentence scores) are dropped. CPU only. */
  bool merge_before_prune = false;
  /** Equal hypotheses merge by log-sum-exp of their scores (flashlight's logAdd: the probability of the prefix over
   *  its alignments), else by maximum (Viterbi, NeMo's). With log_add, the two ends of one transcript (in blank, in
   *  its last token) also merge at the end of the utterance. */
  bool log_add = false;
  /** Per-frame token pruning (flashlight's beam_size_token): only the N most likely columns of a frame (blank
   *  included; the lower column on ties) are proposed; 0: all. CPU only. */
  std::int32_t beam_size_token = 0;
  /** N-best lists keep only the best-ranked hypothesis of each transcript (drop_repeated_transcripts): a prefix
   *  ending in blank and the same prefix ending in its last token stay apart in the search. */
  bool unique_transcripts = true;
  /** Token-level n-gram LM over the V = columns − 1 tokens, or none. */
  std::shared_ptr<const NgramLm> lm;
  float lm_weight = 0.0f;  ///< α
  /** Phrase boosting tree over the V tokens, or none; utterance b starts at the root of list b (list 0 when the
   *  tree has one). */
  std::shared_ptr<const BoostingTree> boost;
  float boost_weight = 1.0f;
  /** Reject NaN and +inf log-probabilities in the frames that are read. */
  bool check_values = true;
  /** How the CUDA frame loop is launched; ignored on the CPU. */
  GraphMode graph_mode = GraphMode::automatic;
  /** CUDA: the most device memory the decoder's buffers may take (0: no cap). Limits whose buffers need more are
   *  refused with OutOfMemory before the allocation that would pass it, at construction or when a call grows
   *  them (the decoder then stays at its old size); device_bytes() says what they take. */
  std::int64_t max_device_bytes = 0;
  /** CPU only: threads the utterances of a call are spread over, the caller's included; 0 (default) means the
   *  process's shared CPU pool (asrdec/core/cpu_threads.hpp: every core unless sized otherwise), which this caps. Each
   *  utterance is searched whole by one thread, so results do not depend on it. */
  std::int32_t threads = 0;

  /** Throws InvalidArgument for a beam outside [1, kMaxBeam], blank_id below -1, non-finite values, a negative
   *  beam_size_token, or threads outside [0, 1024]. */
  void validate() const;
  std::string to_string() const;
};

class ASRDEC_API CtcBeamDecoder {
 public:
  /** Throws InvalidArgument for a bad config or limits, or an LM or tree on another device; Unsupported for a CUDA
   *  device in a build without CUDA. */
  explicit CtcBeamDecoder(Device device, CtcBeamConfig config = {}, BatchLimits limits = {});
  ~CtcBeamDecoder();
  CtcBeamDecoder(CtcBeamDecoder&&) noexcept;
  CtcBeamDecoder& operator=(CtcBeamDecoder&&) noexcept;

  /** The best hypothesis of each utterance. logprobs: [B, T, V+1] fp32/fp16/bf16 on the decoder's device, any
   *  non-negative strides; lengths: [B] int32/int64 on the host. CUDA: the work is ordered on `stream` (nullptr:
   *  the legacy default stream) and the call returns after synchronising it. */
  std::vector<Hypothesis> decode(const TensorView& logprobs, const TensorView& lengths, StreamHandle stream = nullptr);
  /** The final beam of each utterance, best first (dead slots left out). */
  std::vector<std::vector<Hypothesis>> decode_nbest(const TensorView& logprobs, const TensorView& lengths,
                                                    StreamHandle stream = nullptr);

  /** Streaming (asrdec/core/streaming.hpp, docs/streaming.md): row b of `logprobs` (lengths[b] frames, possibly 0;
   *  lengths in host memory) continues utterance rows[b].utterance from where its last chunk ended (its K
   *  hypotheses with their LM and boosting states). Returns each row's best hypothesis so far (timestamps absolute);
   *  a last chunk adds the LM's end-of-sentence term and returns the final best, equal to decode()'s for the whole
   *  utterance on the same device. Throws as decode() for bad input, InvalidArgument for rows that do not fit the
   *  open utterances and OutOfMemory beyond BatchLimits::max_open_utterances; a call that throws changes no
   *  utterance. */
  std::vector<Hypothesis> decode_chunks(const std::vector<ChunkRow>& rows, const TensorView& logprobs,
                                        const TensorView& lengths, StreamHandle stream = nullptr);
  /** Forgets an open utterance without a last chunk; false when it is not open. */
  bool cancel(std::int64_t utterance);
  /** Utterances started and not yet ended or cancelled. */
  std::int64_t open_utterances() const;

  const CtcBeamConfig& config() const;
  Device device() const;
  /** The graph mode the frame loop really runs in (eager on the CPU). */
  GraphMode graph_mode() const;
  /** CUDA: device bytes the decoder's sized buffers take for its current limits (grown by calls that exceed
   *  them), counted as they were allocated; 0 on the CPU. Capped by the config's max_device_bytes. */
  std::int64_t device_bytes() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace asrdec

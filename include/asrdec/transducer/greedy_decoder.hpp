#pragma once
/**
 * @file
 * Greedy decoding of RNN-T and TDT transducers, batched, on the CPU or a CUDA device, whole utterances or
 * chunk by chunk. Every algorithm gives the output of the textbook frame-by-frame greedy search (Algorithm 1 of
 * the label-looping paper); they differ only in speed:
 *
 * - `frame_looping`: the batch walks the frames together; on each frame, symbol steps run until every utterance
 *   on it has emitted a blank, moved on (TDT) or hit max_symbols (Algorithm 2, the conventional batched baseline).
 * - `label_looping` (default): each outer iteration finds one label per utterance; an inner loop skips blank
 *   frames with the same predictor output (Algorithm 3). TDT: token and duration argmax are independent, a blank
 *   of duration 0 counts as 1, a label is stored when the utterance was active at the start of the iteration
 *   even if its duration carries it past the end.
 * - `wind` (RNN-T only): label looping where each joint evaluation covers a window of W frames and takes the
 *   first non-blank (WIND); a label found at window offset k is stamped at frame t + k.
 *
 * Rules shared by all: argmax takes the first maximum (lower ids win ties, blank loses to an equal token, the
 * shorter duration wins); at most max_symbols_per_frame labels per frame, after which the decoder moves to the
 * next frame; a zero-length utterance yields an empty hypothesis and never reads a frame.
 *
 * Results (asrdec::Hypothesis; docs/results.md has the table for every decoder): tokens; timestamps (the frame
 * each label was emitted on, absolute across chunks); TDT durations (the raw predicted duration of each label);
 * token_scores = log p(label), the log-softmax of the label over the V+1 token columns; token_confidences =
 * exp(token_scores); am_score = the log-probability of the path: the log-softmax of every label and every blank
 * the search chose (TDT: plus the log-softmax of each chosen duration over the duration columns; WIND: the blanks
 * of the window positions it skipped), the move after max_symbols labels adding nothing (no joint evaluation is
 * made); with an LM (TransducerGreedyConfig::lm), lm_score = the sum of lm_weight × ln p_LM of the labels (no
 * end-of-sentence term, as in NeMo's greedy fusion); with a boosting tree (TransducerGreedyConfig::boost),
 * boost_score = the sum of boost_weight × the tree's token scores; score = ranking_score = am_score + lm_score +
 * boost_score. Beam search with beam 1 (ALSD++) finds the same path and score when no max_symbols move occurs.
 * The same definitions hold on the CPU and on CUDA.
 *
 * CUDA: the decode loops run through the CUDA-graph helper (graph_mode: conditional = one graph with nested
 * WHILE nodes, per_step = captured bodies with host-checked conditions, eager). Buffers are sized from the
 * BatchLimits at construction and grow (with graph re-capture) only between calls. Streaming keeps each open
 * utterance's state in a channel (about 4 × (predictor state + joint hidden) bytes) and gathers the rows of a call
 * into the fixed-size working buffers with one kernel before the captured work, scattering them back after it.
 *
 * Thread safety: a decoder has one owner at a time; the model may be shared. A call made while another thread is
 * inside a call on the same decoder throws InvalidArgument (it would mix their state), as does any use of a
 * moved-from decoder.
 */

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "asrdec/core/batch_limits.hpp"
#include "asrdec/core/export.hpp"
#include "asrdec/core/graph.hpp"
#include "asrdec/core/streaming.hpp"
#include "asrdec/core/tensor.hpp"
#include "asrdec/hyps/batched_hyps.hpp"
#include "asrdec/hyps/confidence.hpp"
#include "asrdec/lm/boosting_tree.hpp"
#include "asrdec/lm/ngram_lm.hpp"
#include "asrdec/transducer/transducer_model.hpp"

namespace asrdec {

enum class TransducerGreedyAlgorithm { frame_looping, label_looping, wind };

/** How the last call's decoding loop ran (TransducerGreedyDecoder::loop_counts): the passes of its loops over the
 *  batch, and the joint choices the passes used. A pass that evaluates the joint does so for every row, so
 *  choices / (joint_passes × batch) is the fraction of the rows' joint evaluations that did work; the rest waited
 *  for slower rows (label looping stops an inner loop early for its last stragglers; docs/transducer-greedy.md).
 *  - label looping and WIND: `outer` counts the passes that look for each row's next label (the first joint of
 *    the pass included), `inner` the passes that skip blank frames (a joint each);
 *  - frame looping: `outer` counts frames, `inner` the symbol passes within them.
 *  `choices` counts the rows each pass evaluated (WIND: one per row, whatever the window positions it read).
 *  The CPU executor decodes each thread's slice of rows on its own (TransducerGreedyConfig::threads): `outer` and
 *  `inner` are then the largest of the slices', `choices` their sum; with threads = 1 the counts are the CUDA
 *  executor's. */
struct GreedyLoopCounts {
  std::int64_t outer = 0;
  std::int64_t inner = 0;
  std::int64_t choices = 0;
  std::int64_t joint_passes = 0;  ///< the passes that evaluate the joint: outer + inner (frame looping: inner)
};

ASRDEC_API const char* to_string(TransducerGreedyAlgorithm algorithm) noexcept;
/** "frame-looping", "label-looping" or "wind" (underscores accepted); throws InvalidArgument otherwise. */
ASRDEC_API TransducerGreedyAlgorithm parse_greedy_algorithm(std::string_view name);

struct ASRDEC_API TransducerGreedyConfig {
  TransducerGreedyAlgorithm algorithm = TransducerGreedyAlgorithm::label_looping;
  /** WIND window W (frames per joint evaluation); 1 is plain label looping. */
  std::int32_t window = 8;
  /** Labels allowed per frame before the decoder moves on (NeMo's max_symbols). */
  std::int32_t max_symbols_per_frame = 10;
  /** How the CUDA loops are launched; ignored on the CPU. */
  GraphMode graph_mode = GraphMode::automatic;
  /** CUDA: the most device memory the decoder's buffers may take (0: no cap). Limits whose buffers need more are
   *  refused with OutOfMemory before the allocation that would pass it, at construction or when a call grows
   *  them (the decoder then stays at its old size); device_bytes() says what they take. */
  std::int64_t max_device_bytes = 0;
  /** Reject NaN or infinite values in the frames of enc_proj that are read. */
  bool check_values = true;
  /** CPU only: threads the rows of a call are spread over (in contiguous slices, each decoded by one thread), the
   *  caller's included; 0 (default) means the process's shared CPU pool
   *  (asrdec/core/cpu_threads.hpp: every core unless sized otherwise), which this caps. Results do not depend on it;
   *  when several rows hold bad values, which one the error names may. */
  std::int32_t threads = 0;
  /** How token_confidences are computed: the emitted token's probability (default), or one of NeMo's measures of
   *  the emitting step's distribution (asrdec/hyps/confidence.hpp has the formulas). */
  ConfidenceMethod confidence;
  /** Shallow fusion of a token-level n-gram LM (NGPU-LM), or none. The LM must be on the model's device with
   *  V = the model's vocabulary (blank excluded); its token ids are the model's columns without the blank, in
   *  order, wherever the blank is (docs/ngram-lm.md). The acoustic model alone decides blank versus non-blank; a
   *  non-blank choice is replaced by the argmax over the non-blank tokens of logit + lm_weight × ln p_LM(token |
   *  history). Each utterance's LM state starts at `<s>`, moves on emitted tokens only and is carried across
   *  chunks (decode_chunks). */
  std::shared_ptr<const NgramLm> lm;
  /** α, the LM weight (natural-log scores). */
  float lm_weight = 0.0f;
  /** Phrase boosting (a BoostingTree on the model's device over the model's V tokens), alone or with the LM:
   *  the fused choice maximises logit + (lm_weight × LM + boost_weight × boost). Utterance b of decode() starts at
   *  the root of phrase list b (list 0 when the tree has one), a streamed utterance at that of its
   *  ChunkRow::phrase_list; the boosting state is carried across chunks. */
  std::shared_ptr<const BoostingTree> boost;
  /** β, the boosting weight. */
  float boost_weight = 1.0f;

  /** Throws InvalidArgument for a window outside [1, 64], max_symbols_per_frame outside [1, 100], a non-finite
   *  lm_weight or boost_weight, or threads outside [0, 1024]. */
  void validate() const;
  std::string to_string() const;
};

class ASRDEC_API TransducerGreedyDecoder {
 public:
  /** The decoder keeps a copy of `model` (cheap: the parts are shared). Throws InvalidArgument for a bad config
   *  or limits, Unsupported for WIND on a TDT model. */
  TransducerGreedyDecoder(const TransducerModel& model, TransducerGreedyConfig config = {}, BatchLimits limits = {});
  ~TransducerGreedyDecoder();
  TransducerGreedyDecoder(TransducerGreedyDecoder&&) noexcept;
  TransducerGreedyDecoder& operator=(TransducerGreedyDecoder&&) noexcept;

  /** Decodes whole utterances. enc_proj: [B, T, J] (fp32/fp16/bf16, any non-negative strides) on the model's
   *  device; lengths: [B] int32/int64 on the host (or the device). Synchronises `stream`. */
  std::vector<Hypothesis> decode(const TensorView& enc_proj, const TensorView& lengths, StreamHandle stream = nullptr);

  /** As decode() but leaves the result in the decoder's buffers (device memory for CUDA) and returns at once.
   *  Call synchronize_and_check() before reading. */
  BatchedHypsView decode_async(const TensorView& enc_proj, const TensorView& lengths, StreamHandle stream = nullptr);
  void synchronize_and_check(StreamHandle stream = nullptr);

  /** Streaming (asrdec/core/streaming.hpp, docs/streaming.md): row b of `enc_proj` (lengths[b] frames, possibly 0)
   *  continues utterance rows[b].utterance from where its last chunk ended (predictor state and output, last label,
   *  TDT overshoot, LM and boosting states, the path's scores). Returns each row's hypothesis so far: its labels,
   *  timestamps absolute from the utterance's first frame, the scores of its path so far; is_final = rows[b].last.
   *  The chunks of an utterance give exactly decode()'s result for the whole utterance on the same device.
   *  Synchronises `stream`. Throws as decode() for bad input, InvalidArgument for rows that do not fit the open
   *  utterances (an id twice, a continuing row of an utterance that is not open, a phrase list the boosting tree
   *  lacks) and OutOfMemory beyond BatchLimits::max_open_utterances; a call that throws changes no utterance. */
  std::vector<Hypothesis> decode_chunks(const std::vector<ChunkRow>& rows, const TensorView& enc_proj,
                                        const TensorView& lengths, StreamHandle stream = nullptr);
  /** Forgets an open utterance without a last chunk (a client that went away); false when it is not open. */
  bool cancel(std::int64_t utterance);
  /** Utterances started and not yet ended or cancelled. */
  std::int64_t open_utterances() const;

  const TransducerModel& model() const;
  const TransducerGreedyConfig& config() const;
  Device device() const;
  GraphMode graph_mode() const;
  /** CUDA: device bytes the decoder's sized buffers take for its current limits (grown by calls that exceed
   *  them), counted as they were allocated; 0 on the CPU. Capped by the config's max_device_bytes. */
  std::int64_t device_bytes() const;
  /** The loop counts of the last decode or decode_chunks call (zeros before the first); after decode_async, valid
   *  once synchronize_and_check() has returned. On CUDA the device counts them in the loop's kernels and they come
   *  back with the call's error checks, at no extra synchronisation. */
  GreedyLoopCounts loop_counts() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace asrdec

#pragma once
/**
 * @file
 * Batched beam search for RNN-T and TDT transducers — the beam-search paper's ALSD++ (RNN-T, TDT) and AES++
 * (RNN-T), and the WIND paper's windowed beam search (RNN-T) — with optional shallow fusion of an n-gram LM and/or a
 * phrase-boosting tree.
 *
 * ALSD++ (alignment-length synchronous): each step extends every hypothesis of every utterance by exactly one
 * symbol, so hypotheses of one beam may sit on different frames.
 * - A hypothesis on a frame proposes its K best extensions by log-softmax score (TDT: (label, duration) pairs,
 *   log p(label) + log p(duration)); blank moves it to the next frame (TDT: by the duration, at least one frame),
 *   a token keeps it on its frame (TDT: moves it by the duration).
 * - After max_symbols_per_frame tokens on one frame its only extension is blank to the next frame (TDT: scored
 *   with the best duration's log-probability).
 * - A hypothesis past the end of its utterance proposes a no-op that keeps its score, so finished hypotheses
 *   compete with unfinished ones.
 * - Each utterance keeps the K best of the K·K proposals (higher score first, then lower (slot, rank); a total
 *   order, so results do not depend on the executor). Equal hypotheses (same tokens; TDT also the same frame) are
 *   merged by log-sum-exp into the first best of them (BatchedBeamHyps).
 * - Decoding stops when every live hypothesis is past its utterance's end.
 * - The result is the beam ranked by score, or by score / (tokens + 1) with length_normalized (the default, as
 *   NeMo's score_norm).
 *
 * AES++ (RNN-T; algorithm = aes): frame-synchronous. On each frame, prefix search (a hypothesis gains the paths
 * through its one-token-shorter prefix in the beam), then up to aes_num_steps expansion steps: every hypothesis
 * still expanding proposes its K + aes_expansion_beta best labels within aes_expansion_gamma of its best,
 * proposals recreating a hypothesis already in the beam are dropped, the K best proposals (and the hypotheses done
 * with the frame, with their own score) are kept; a hypothesis goes on expanding after a token. Those still
 * expanding after aes_num_steps leave the frame with a blank. NeMo's maes_batch quirks are fixed (expansion
 * follows each hypothesis through the reorder, no double-counted log-probability under early pruning with
 * lm_weighted_full, the end-of-frame blank is scored like any blank, timestamps are emission frames).
 *
 * WIND beam search (RNN-T; algorithm = wind; the WIND paper's Algorithm 3, batched): each utterance keeps a pool
 * of hypotheses keyed by frame, at most K per frame. Each step expands the hypotheses on the utterance's earliest
 * unfinished frame t: prefix search among them, then each proposes its K best first outputs over the window
 * t … t+n-1 (n = min(wind_window, frames left)) — token v on t+j after blanks on t … t+j-1, or blank over the
 * whole window — and moves to the frame of its output (blank: past the window). Equal hypotheses (same tokens and
 * frame) merge by log-sum-exp. Window 1 with beam 1 is greedy decoding.
 *
 * Fusion (lm and/or boost, BeamFusion): a token's score becomes log p + α·ln p_LM + β·boost, plus, with
 * BlankLmScoring::lm_weighted_full (default), λ·ln(1 − p_blank) for tokens and λ·ln p_blank extra for blank, where
 * λ = α + β (the paper's equation 3; p_blank is clamped to 1 − 10⁻², AES++ 1 − 10⁻⁶). Late pruning (default)
 * scores the whole vocabulary before taking the K best; early pruning takes the acoustic K best and re-scores only
 * those (AES++ applies its gamma cut to the acoustic scores too, before fusion, as NeMo's maes_batch). LM and boosting
 * states advance on tokens only; there is no end-of-sentence LM term (as in NeMo's transducer beam).
 *
 * Deviations of ALSD++ from NeMo's malsd_batch, chosen deliberately (docs/beam-search.md):
 * - TDT frame jumps are the model's duration values (NeMo uses the duration index, which is only right for
 *   durations 0, 1, 2, …).
 * - The forced blank after max_symbols is scored like any other blank (NeMo uses the raw log-probability under
 *   early pruning and the fused one under late pruning) and moves exactly one frame, so beam 1 is greedy.
 * - Dead (−inf) slots do not keep the loop running; this changes no result.
 *
 * Results (asrdec::Hypothesis; the table for every decoder is docs/results.md): tokens, timestamps (the frame a
 * token was emitted on, RNN-T and TDT alike, as greedy decoding and NeMo's returned hypotheses; token_end_frames()
 * gives the frame after a TDT token's duration), TDT durations, score = the hypothesis's beam score, a
 * log-probability (merged hypotheses carry the log-sum-exp), ranking_score = what the list is sorted by (score /
 * (tokens + 1) with length_normalized), lm_score = Σ α·ln p_LM and boost_score = Σ β·boost over its tokens, am_score
 * = score − lm_score − boost_score (the acoustic part, blank-scoring terms included). N-best lists hold distinct
 * transcripts (unique_transcripts). token_scores = each token's log-probability (log-softmax over the V+1 token
 * columns) on the frame it was emitted on, along the hypothesis' own path (the alignment that survived every merge);
 * token_confidences = exp(token_scores).
 *
 * Executors: every algorithm runs on the CPU and on CUDA, with the same step rules (src/transducer/beam/alsd_step.hpp,
 * src/transducer/beam/aes_step.hpp, src/transducer/beam/wind_beam_step.hpp) in CPU loops and in kernels over the
 * hypothesis slots (B·K; WIND: B·K·(W+K)). On CUDA the decode loops run inside CUDA graphs (graph_mode: conditional =
 * the whole decode is one graph launch; per_step and eager as for greedy decoding), with no allocation in the loop
 * (buffers sized for the limits' batch × slots × frames, grown outside the loop when a call exceeds them). A CUDA
 * decode returns after synchronising its stream.
 *
 * CPU threads (TransducerBeamConfig::threads): a call's rows are cut into contiguous slices, one per thread, each
 * searched by its own executor (with its own predictor session); results are the same for every thread count.
 *
 * Thread safety: a decoder has one owner at a time; the model, LM and tree may be shared.
 */

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "asrdec/core/batch_limits.hpp"
#include "asrdec/core/export.hpp"
#include "asrdec/core/graph.hpp"
#include "asrdec/core/streaming.hpp"
#include "asrdec/core/tensor.hpp"
#include "asrdec/hyps/hypothesis.hpp"
#include "asrdec/lm/boosting_tree.hpp"
#include "asrdec/lm/ngram_lm.hpp"
#include "asrdec/transducer/transducer_model.hpp"

namespace asrdec {

/** ALSD++ (alignment-length synchronous, RNN-T and TDT), AES++ (frame-synchronous adaptive expansion, RNN-T) or
 *  WIND beam search (windowed first-output proposals, hypotheses grouped by frame, RNN-T). */
enum class TransducerBeamAlgorithm { alsd, aes, wind };

/** When the fusion scores enter the top-K choice of each hypothesis. */
enum class FusionPruning { early, late };
/** Whether blank takes part in fusion (the paper's eq. 2 = none, eq. 3 = lm_weighted_full). */
enum class BlankLmScoring { none, lm_weighted_full };

ASRDEC_API const char* to_string(TransducerBeamAlgorithm algorithm) noexcept;
ASRDEC_API const char* to_string(FusionPruning pruning) noexcept;
ASRDEC_API const char* to_string(BlankLmScoring scoring) noexcept;
/** "alsd++" (also "alsd", "malsd"), "aes++" (also "aes", "maes") or "wind-beam" (also "wind"); throws
 *  InvalidArgument otherwise. */
ASRDEC_API TransducerBeamAlgorithm parse_beam_algorithm(std::string_view name);
/** "early" or "late"; throws InvalidArgument otherwise. */
ASRDEC_API FusionPruning parse_fusion_pruning(std::string_view name);
/** "none" or "full" ("lm-weighted-full", "lm_weighted_full"); throws InvalidArgument otherwise. */
ASRDEC_API BlankLmScoring parse_blank_lm_scoring(std::string_view name);

/** How the last call's search loop ran (TransducerBeamDecoder::loop_counts), in passes over the batch:
 *  - ALSD++ and WIND beam: `outer` counts the search's steps, each a joint evaluation of the slots that step, their
 *    proposals, the selection and a predictor step; `inner` is 0. A WIND step expands the hypotheses on each
 *    utterance's earliest unfinished frame, and those that emit a token stay on it, so a frame can be visited up to
 *    max_symbols_per_frame + 1 times;
 *  - AES++: `outer` counts frames, `inner` expansion steps (a predictor step and a joint evaluation each).
 *  `joint_passes` counts the joint evaluations: `outer` (ALSD++, WIND), `outer` + `inner` (AES++: one on entering a
 *  frame, one after each step). A step's time over joint_passes is the cost of one pass. The CPU executor searches
 *  each thread's slice of rows on its own (TransducerBeamConfig::threads): the counts are then those of the slice
 *  that made the most joint passes; with threads = 1 they are the CUDA executor's. */
struct BeamLoopCounts {
  std::int64_t outer = 0;
  std::int64_t inner = 0;
  std::int64_t joint_passes = 0;
};

struct ASRDEC_API TransducerBeamConfig {
  TransducerBeamAlgorithm algorithm = TransducerBeamAlgorithm::alsd;
  /** K, hypotheses kept per utterance, 1 … 64. Beam 1 is greedy decoding (the same tokens). */
  std::int32_t beam = 4;
  /** ALSD++ and WIND beam: tokens a hypothesis may emit on one frame before its only extension is blank (WIND:
   *  before it must leave the frame). */
  std::int32_t max_symbols_per_frame = 10;
  /** AES++: expansion steps per frame (tokens a hypothesis may emit on one frame), 1 … 64. */
  std::int32_t aes_num_steps = 2;
  /** AES++: each hypothesis proposes its K + beta best labels, 0 … 16. */
  std::int32_t aes_expansion_beta = 2;
  /** AES++: a proposal survives only if it scores above its hypothesis's best proposal minus gamma (> 0). */
  float aes_expansion_gamma = 2.3f;
  /** WIND beam: frames a hypothesis looks ahead with one predictor output, 1 … 64. */
  std::int32_t wind_window = 8;
  /** Rank the final beam by score / (tokens + 1) instead of the score (Hypothesis::ranking_score says which). */
  bool length_normalized = true;
  /** N-best lists keep only the best-ranked hypothesis of each transcript (drop_repeated_transcripts): TDT
   *  hypotheses with the same tokens on different frames are not merged by the search. */
  bool unique_transcripts = true;
  /** Token-level n-gram LM (NGPU-LM) on the model's device over the model's V tokens, or none. Its token ids are
   *  the model's columns without the blank, in order (docs/ngram-lm.md), wherever the model's blank is. */
  std::shared_ptr<const NgramLm> lm;
  float lm_weight = 0.0f;  ///< α
  /** Phrase boosting tree on the model's device over the model's V tokens, or none. Utterance b starts at the
   *  root of list b (list 0 when the tree has one). */
  std::shared_ptr<const BoostingTree> boost;
  float boost_weight = 1.0f;  ///< β
  FusionPruning pruning = FusionPruning::late;
  BlankLmScoring blank_scoring = BlankLmScoring::lm_weighted_full;
  /** How the CUDA loops are launched; ignored on the CPU. */
  GraphMode graph_mode = GraphMode::automatic;
  /** CUDA: the most device memory the decoder's buffers may take (0: no cap). Limits whose buffers need more are
   *  refused with OutOfMemory before the allocation that would pass it, at construction or when a call grows
   *  them (the decoder then stays at its old size); device_bytes() says what they take. */
  std::int64_t max_device_bytes = 0;
  /** Reject NaN or infinite values in the frames of enc_proj that are read. */
  bool check_values = true;
  /** CPU only: threads the rows of a call are spread over (in contiguous slices, each searched by one thread), the
   *  caller's included; 0 (default) means the process's shared CPU pool
   *  (asrdec/core/cpu_threads.hpp: every core unless sized otherwise), which this caps. Results do not depend on it;
   *  when several rows hold bad values, which one the error names may. */
  std::int32_t threads = 0;

  /** Throws InvalidArgument for a beam outside [1, 64], max_symbols_per_frame outside [1, 100], AES++ or WIND
   *  parameters out of range (wind_window: [1, 64]), non-finite weights, or threads outside [0, 1024]. */
  void validate() const;
  std::string to_string() const;
};

class ASRDEC_API TransducerBeamDecoder {
 public:
  /** Throws InvalidArgument for a bad config or limits, or fusion models that do not fit the model (device,
   *  vocabulary, blank not last). */
  TransducerBeamDecoder(const TransducerModel& model, TransducerBeamConfig config = {}, BatchLimits limits = {});
  ~TransducerBeamDecoder();
  TransducerBeamDecoder(TransducerBeamDecoder&&) noexcept;
  TransducerBeamDecoder& operator=(TransducerBeamDecoder&&) noexcept;

  /** The best hypothesis of each utterance. enc_proj: [B, T, J] on the model's device; lengths: [B] int32/int64
   *  on the host. A zero-length utterance yields an empty hypothesis with score 0. */
  std::vector<Hypothesis> decode(const TensorView& enc_proj, const TensorView& lengths, StreamHandle stream = nullptr);
  /** The final beam of each utterance, best first (at most K hypotheses; dead slots left out). */
  std::vector<std::vector<Hypothesis>> decode_nbest(const TensorView& enc_proj, const TensorView& lengths,
                                                    StreamHandle stream = nullptr);

  /** Streaming (asrdec/core/streaming.hpp, docs/streaming.md), on the CPU and CUDA: row b of `enc_proj` (lengths[b]
   * frames, possibly 0) continues utterance rows[b].utterance from where its last chunk left it — its hypotheses with
   * their predictor, LM and boosting states. Returns each row's best hypothesis so far (timestamps absolute, is_final =
   *  rows[b].last); a last chunk returns the final best, equal to decode()'s for the whole utterance. AES++ is
   *  frame-synchronous. ALSD++ and WIND beam hypotheses stand on different frames, so an utterance's beam stops
   *  before the first step that needs a frame the chunks have not brought yet (a hypothesis past them; a window
   *  reaching past them), keeps the frames its hypotheses have not passed, and goes on with the next chunk: its best
   *  so far may stand behind the chunk's end. These two check every frame of a chunk for NaN and infinities as it
   *  arrives (check_values; on CUDA the chunk is copied to the host for that and for building the lanes, see
   *  docs/beam-search.md). Throws as decode() for bad input,
   *  InvalidArgument for rows that do not fit the open utterances and OutOfMemory beyond
   *  BatchLimits::max_open_utterances; a call that throws changes no utterance. */
  std::vector<Hypothesis> decode_chunks(const std::vector<ChunkRow>& rows, const TensorView& enc_proj,
                                        const TensorView& lengths, StreamHandle stream = nullptr);
  /** Forgets an open utterance without a last chunk; false when it is not open. */
  bool cancel(std::int64_t utterance);
  /** Utterances started and not yet ended or cancelled. */
  std::int64_t open_utterances() const;

  const TransducerModel& model() const;
  const TransducerBeamConfig& config() const;
  /** The graph mode the decode loop really runs in (eager on the CPU). */
  GraphMode graph_mode() const;
  /** CUDA: device bytes the decoder's sized buffers take for its current limits (grown by calls that exceed
   *  them), counted as they were allocated; 0 on the CPU. Capped by the config's max_device_bytes. */
  std::int64_t device_bytes() const;
  /** The loop counts of the last decode, decode_nbest or decode_chunks call (zeros before the first, and after a
   *  call refused before its search). On CUDA the device counts them in the loop's kernels, and they come back with
   *  the results. */
  BeamLoopCounts loop_counts() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace asrdec

#pragma once
/**
 * @file
 * WFST beam search over CTC log-probabilities: the best path through a decoding graph (WfstGraph, typically TLG)
 * and the frames, token-passing with Viterbi recombination per graph state, as Kaldi-style decoders do.
 *
 * Per utterance, the cost of a path is Σ arc weights + Σ_frames −acoustic_scale · logp[t][ilabel − 1] (+ the final
 * weight of its last state). Before the first frame the start state's ε-closure is taken; then, on each frame t:
 *   1. every active token of frame t − 1 takes every emitting arc of its state; each state keeps its best way in
 *      (lowest cost, then fewest ε-arcs since the frame's emitting arc, then lowest arc id: src/wfst/wfst_step.hpp);
 *   2. cutoff = (best of step 1) + beam; tokens at or above it are dropped;
 *   3. ε-closure of the survivors, keeping only ways in below the cutoff (the result does not depend on the order
 *      arcs are tried);
 *   4. active tokens (expanded on the next frame): those below min(cutoff, best of the frame + beam); when more
 *      than max_active, a 255-bin histogram of their costs over that range keeps whole bins up to the first at which
 *      max_active tokens are reached.
 * With min_active = M > 0 (Kaldi's GetCutoff), step 1 keeps every way in (no running bound); step 2's cutoff is at
 * least the cost of the (M+1)-th cheapest way in when there are more than M (so the M cheapest survive), else the
 * worst way in + beam (all survive); step 4's bound is at least the (M+1)-th cheapest token's cost when the frame
 * has more than M tokens, else the cutoff (all are active).
 * A frame with more than max_tokens_per_frame tokens is decoded again with half the beam (up to 8 times: the beam
 * tightens under queue pressure); if it still does not fit, the cheapest max_tokens_per_frame tokens are kept and
 * the utterance's `overflow` flag is set. Decoding always goes on.
 *
 * At the end of an utterance the best token is the one with the lowest cost + final weight among those on final
 * states when use_final_probs is set and some token is on one (`reached_final`); otherwise the lowest cost, final
 * weights ignored. With a beam and max_active large enough to prune nothing, the result is the exact best path
 * (tests check it against OpenFst's ShortestPath of the composition of the frames with the graph).
 *
 * Results: word ids (the output labels along the best path), each word's first and last frame, cost =
 * graph_cost + acoustic_cost, where graph_cost
 * sums the path's arc weights (boosts included) and final weight, and acoustic_cost is the rest.
 *
 * Word frames. Determinising LG moves a word's output label to where the word is told apart from the others
 * (after "▁cat" the graph cannot yet say "cat" or "cats"), so output arcs do not mark where words start. With
 * word_start_columns (the columns whose token begins a word, e.g. BPE pieces starting with "▁"), a word starts at
 * the first frame of the n-th word-starting token on the path and ends at the last non-blank frame before the next
 * one (a token is a run of frames of one label without blank between; consecutive repeats count as one token).
 * Without it, or when the path's word-starting tokens do not match its words one to one, each word spans the
 * non-blank frames from its output arc up to the next word's output arc — right only for graphs that do not delay
 * outputs.
 *
 * Word boosting (per utterance): a word id → score list; every arc whose output label is a boosted word costs
 * `score` less (on-the-fly composition with a one-state boosting acceptor). Rule of thumb: keep scores ≤ beam / 2,
 * or boosted paths crowd out the rest of the beam. Boosts that would make a cycle of ε-arcs cost ≤ 0 are rejected.
 *
 * Streaming (asrdec/core/streaming.hpp, docs/streaming.md): decode_chunks() takes chunks of several utterances at
 * once (a ChunkRow per batch row: the utterance's id, first- and last-chunk flags). An utterance's state (its tokens
 * and back-pointers) is kept between calls, so chunked decoding gives exactly the whole-utterance result; calls on
 * chunks that are not last return partial hypotheses (the best path so far, final weights ignored). At most
 * max_open_utterances are open at once. A call that throws changes no utterance (values and boosts are checked
 * first).
 *
 * Bad input raises InvalidArgument: shapes and dtypes as for CtcGreedyDecoder, lengths outside [0, T], a graph whose
 * input labels need more columns than the logits have, NaN or +inf log-probabilities in frames that are read,
 * boosting lists with unknown word ids, non-finite scores or scores that make an ε-cycle cost ≤ 0, chunks of
 * utterances that are not open; OutOfMemory when more than max_open_utterances would be open.
 *
 * Executors: the CPU executor spreads the rows of a call over `threads` threads (the calling thread included), each
 * row decoded whole by one thread, so results do not depend on the number of threads. The CUDA executor
 * (Device::cuda(i); logprobs in that device's memory, lengths on the host) has the same rules and cost arithmetic,
 * so its results equal the CPU's. decode() and decode_chunks() run a whole call in one kernel: each lane (a thread
 * block) takes rows from a queue and decodes each on the device, keeping its tokens and back-pointers in memory sized
 * by tokens, not by the graph (lane_device_bytes(), a few MB); the host receives only the paths of the results.
 * Lanes are as many as the rows, max_device_bytes, the blocks the GPU runs at once and 1024 allow. decode() decodes
 * each row from the start to its best path; decode_chunks() continues each row's utterance, whose back-pointers and
 * active tokens stay on the device between calls: 16 × device_history_tokens + 4 × device_frame_tokens bytes (1.1 MB
 * by default) per open utterance, outside max_device_bytes. A row with a frame of more tokens than a lane holds
 * (device_frame_tokens), or live paths longer than its history (device_history_tokens), is decoded on the CPU with
 * the same result: a whole utterance again from the start, a streamed one from the last frame its lane kept, to its
 * end (host_fallbacks() counts such rows and chunks). decode_nbest() with n > 1 decodes each row on a lane as a
 * stream of one chunk, in groups of as many rows as max_device_bytes holds a lane and a channel for, reads each row's
 * tokens and back-pointers back to the host and ranks the last frame's tokens there. Each call is one kernel launch
 * (decode_nbest: one per group of rows), so graph_mode has no effect. Work runs on the caller's stream (nullptr: the
 * legacy default stream), after what was enqueued there before; the calls return host results, so the stream is
 * synchronised before they return.
 *
 * Thread safety: a decoder has one owner at a time; graphs may be shared.
 */

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "asrdec/core/device.hpp"
#include "asrdec/core/export.hpp"
#include "asrdec/core/graph.hpp"
#include "asrdec/core/streaming.hpp"
#include "asrdec/core/tensor.hpp"
#include "asrdec/text/symbol_table.hpp"
#include "asrdec/text/word_timing.hpp"
#include "asrdec/wfst/wfst_graph.hpp"

namespace asrdec {

struct ASRDEC_API WfstDecoderConfig {
  /** Search beam (cost units): tokens more than this above a frame's best are dropped. */
  float beam = 17.0f;
  /** Soft cap of tokens expanded per frame (see the file comment). */
  std::int64_t max_active = 10000;
  /** Floor of tokens per frame (Kaldi's min_active; 0: off): when fewer than min_active ways in (step 2) or tokens
   *  (step 4) lie within the beam, the cutoff widens to the cost of the (min_active+1)-th cheapest, so the
   *  min_active cheapest survive (see the file comment). Kaldi's decoders default to 20; at tight beams it finds
   *  cheaper paths. At most max_active. */
  std::int64_t min_active = 0;
  /** Hard cap of tokens per frame (see the file comment). */
  std::int64_t max_tokens_per_frame = 1000000;
  /** Multiplies the log-probabilities (their weight against the graph's costs). */
  float acoustic_scale = 1.0f;
  /** Prefer paths ending in final states, with their final weights. */
  bool use_final_probs = true;
  /** Model column of the blank (for word frames only); -1 (default) means the last column. */
  std::int32_t blank_id = -1;
  /** Columns whose token begins a word (for word frames only; see the file comment). */
  std::vector<std::int32_t> word_start_columns;
  /** Reject NaN and +inf log-probabilities in the frames that are read. */
  bool check_values = true;
  /** CUDA only, and without effect on WFST decoding, which launches one kernel per call (decode_nbest: per group of
   *  rows) rather than frame programs; validated and reported by graph_mode() as for the other decoders
   *  (graph.hpp). */
  GraphMode graph_mode = GraphMode::automatic;
  /** CUDA only: the most device memory the rows decoded at once (lanes) may take, in bytes. Rows beyond the lanes
   *  that fit (at most 1024) wait in the lanes' queue; a graph whose single lane needs more throws OutOfMemory with
   *  the number (WfstDecoder::lane_device_bytes()). A fixed budget, not a fraction of what happens to be free. The
   *  state of open streamed utterances is not part of it (see WfstDecoder). */
  std::int64_t max_device_bytes = std::int64_t{1} << 30;
  /** CUDA only: tokens a lane holds in one frame (rounded up to a power of two; 0: 16384). A frame with
   *  more sends its utterance to the CPU executor (host_fallbacks()). About 156 bytes a token. */
  std::int64_t device_frame_tokens = 0;
  /** CUDA only: back-pointers a lane keeps for its utterance, and a streamed utterance between chunks (0: 65536);
   *  older ones that no surviving path uses are dropped when it is full, and an utterance whose live paths need more
   *  goes to the CPU executor. 20 bytes each in a lane, 16 in an open streamed utterance. */
  std::int64_t device_history_tokens = 0;
  /** CUDA only: the most tokens of a frame a lane keeps in its thread block's shared memory (0, or a power of two up
   *  to 512; at most half of device_frame_tokens, and no more than the device's shared memory holds without fewer
   *  lanes running at once: 152 bytes a token, all 512 on an H100). A frame after one with at most half as many
   *  active tokens is expanded there, where every probe and atomic of its table and every access to its tokens
   *  stays on the chip, and again in lane memory when it outgrows it; the active tokens the next frame expands stay
   *  there too when they fit. Results do not depend on it; 0 keeps every frame in lane memory. */
  std::int64_t device_fast_tokens = 512;
  /** CPU only: threads the rows of a call are spread over, the caller's included; 0 (default) means the
   *  process's shared CPU pool (asrdec/core/cpu_threads.hpp: every core unless sized otherwise), which this caps.
   *  Results do not depend on it. Each thread keeps 5 bytes of scratch per graph state. */
  std::int32_t threads = 0;
  /** Streaming: the most utterances open at once (as BatchLimits::max_open_utterances for the other decoders). */
  std::int64_t max_open_utterances = 1024;

  /** Throws InvalidArgument for a beam that is not positive and finite, max_active or max_tokens_per_frame < 1,
   *  min_active outside [0, max_active],
   *  a non-finite or negative acoustic scale, blank_id < -1, max_device_bytes < 1, device_frame_tokens outside
   *  [0, 2^24], device_history_tokens outside {0} ∪ [16, 2^28], device_fast_tokens not 0 or a power of two up to 512,
   *  threads outside [0, 1024], or max_open_utterances
   *  outside [1, 2^24]. */
  void validate() const;
  std::string to_string() const;
};

/** Word id → boost (cost subtracted on every arc that outputs the word). */
using WordBoosts = std::vector<std::pair<std::int32_t, float>>;

/** Reads a word boosting list: "word score" per line (blank lines skipped, CRLF accepted), words looked up in
 *  `words` (the graph's words table). Throws ParseError (file and line) for a malformed line, a non-finite score,
 *  or a word the table lacks (or `<eps>`), and the errors of TextFileReader. */
ASRDEC_API WordBoosts read_word_boosts(const std::string& path, const SymbolTable& words);

/** The best path of one utterance. Costs are Kaldi's (negated, scaled log-probabilities: lower is better);
 *  score() gives the log-probability view the other decoders' results use (docs/results.md). */
struct ASRDEC_API WfstResult {
  std::vector<std::int32_t> words;              ///< word ids (the graph's output labels along the path)
  std::vector<std::int32_t> word_start_frames;  ///< first frame of each word
  std::vector<std::int32_t> word_end_frames;    ///< last frame of each word (inclusive)
  float cost = 0.0f;                            ///< graph_cost + acoustic_cost (+∞ when no path survived)
  float graph_cost = 0.0f;                      ///< arc weights (boosts included) and the final weight along the path
  float acoustic_cost = 0.0f;  ///< cost − graph_cost: −acoustic_scale · Σ logp along the path, to float rounding
  bool reached_final = false;  ///< the path ends in a final state whose weight is included
  bool overflow = false;       ///< some frame exceeded max_tokens_per_frame even with a tightened beam
  std::int32_t frames = 0;     ///< frames decoded

  /** −cost: acoustic_scale · Σ logp minus the graph costs, a (scaled) log-probability; −∞ when no path survived. */
  float score() const noexcept { return -cost; }
};

/** The words of `result` spelled with `words` (the graph's words table), with frames (end exclusive: last frame + 1)
 *  and seconds (frames × frame_shift_seconds), the same WordTiming the other decoders' word_timings() give. Throws
 *  InvalidArgument for a frame_shift_seconds that is not positive and finite or a word id the table lacks. */
ASRDEC_API std::vector<WordTiming> word_timings(const WfstResult& result, const SymbolTable& words,
                                                double frame_shift_seconds);

/** The row descriptor of asrdec 0.1's WFST streaming, now every decoder's (its `stream` field is `utterance`). */
using WfstChunk [[deprecated("use asrdec::ChunkRow (asrdec/core/streaming.hpp)")]] = ChunkRow;

class ASRDEC_API WfstDecoder {
 public:
  /** Throws InvalidArgument for a bad config, Unsupported for a device without an executor. */
  WfstDecoder(WfstGraph graph, WfstDecoderConfig config = {}, Device device = Device::cpu());
  ~WfstDecoder();
  WfstDecoder(WfstDecoder&&) noexcept;
  WfstDecoder& operator=(WfstDecoder&&) noexcept;

  /** Whole utterances: logprobs [B, T, C] (f32, f16 or bf16, any strides, on the decoder's device), lengths [B]
   *  (int32/int64, host). `boosts`, if not empty, has one list per utterance. */
  std::vector<WfstResult> decode(const TensorView& logprobs, const TensorView& lengths,
                                 const std::vector<WordBoosts>& boosts = {}, StreamHandle stream = nullptr);

  /** N-best: for each utterance, up to `n` distinct word sequences, best first, each the path of a token of the
   *  final frame (ranked as decode() ranks them: by cost + final weight among tokens on final states when
   *  use_final_probs and some is on one, else by cost). The first equals decode()'s result. Each token of the final
   *  frame holds the best path into its graph state only (Viterbi recombination), so this is the N-best of the
   *  search's surviving paths, not of a lattice: sequences whose paths merged into another's state earlier are not
   *  listed. An utterance without a surviving path has decode()'s one result (cost +∞). Throws as decode(), and
   *  InvalidArgument for n < 1. */
  std::vector<std::vector<WfstResult>> decode_nbest(const TensorView& logprobs, const TensorView& lengths,
                                                    std::int64_t n, const std::vector<WordBoosts>& boosts = {},
                                                    StreamHandle stream = nullptr);

  /** Chunks of utterances: row b of logprobs (lengths[b] frames, possibly 0) continues utterance
   *  rows[b].utterance (asrdec/core/streaming.hpp; ChunkRow::phrase_list is not used: word boosts come in
   *  `boosts`). `boosts`, if not empty, has one list per row and is used by first chunks. */
  std::vector<WfstResult> decode_chunks(const std::vector<ChunkRow>& rows, const TensorView& logprobs,
                                        const TensorView& lengths, const std::vector<WordBoosts>& boosts = {},
                                        StreamHandle stream = nullptr);
  /** Forgets an open utterance without a last chunk (a client that went away); false when it is not open. */
  bool cancel(std::int64_t utterance);

  /** Utterances started and not yet ended or cancelled. */
  std::int64_t open_utterances() const;
  [[deprecated("use open_utterances()")]] std::int64_t open_streams() const { return open_utterances(); }
  /** CUDA: the device bytes one lane of decode() and decode_chunks() takes (by device_frame_tokens,
   *  device_history_tokens and the graph's input labels, not its states); a call decodes at most
   *  min(rows, 1024, config().max_device_bytes / this, the lanes the GPU runs at once) rows at a time. 0 on the
   *  CPU. */
  std::int64_t lane_device_bytes() const;
  /** CUDA: the device memory the decoder holds now, in bytes: the graph's arrays, the lanes (within
   *  config().max_device_bytes), the channels of open streamed utterances and of decode_nbest()'s rows (outside it;
   * kept for reuse, never shrunk) and per-call buffers; the sizes of its allocations, not a formula. 0 on the CPU. */
  std::int64_t device_bytes() const;
  /** CUDA: rows of decode() and decode_nbest() and chunks of decode_chunks() so far that a lane could not hold,
   *  decoded on the CPU instead (same results; a streamed utterance stays on the CPU to its end). 0 on the CPU. */
  std::int64_t host_fallbacks() const;

  const WfstGraph& graph() const;
  const WfstDecoderConfig& config() const;
  Device device() const;
  /** The graph mode config().graph_mode resolves to on this device (eager on the CPU), as every decoder reports it;
   *  WFST decoding launches one kernel per call whatever the mode. */
  GraphMode graph_mode() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace asrdec

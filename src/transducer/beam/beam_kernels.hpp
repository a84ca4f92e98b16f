#pragma once
// Internal: the kernels of batched transducer beam search on CUDA — ALSD++, AES++ and WIND beam search (CTC beam
// search has its own, in src/ctc/beam/). Everything a kernel needs is in BeamDeviceState (fixed device pointers,
// captured into graphs once) plus the per-call JointEncArgs block in device memory (rewritten before each replay). The
// per-hypothesis and per-utterance rules are the shared step functions of transducer/beam/alsd_step.hpp and
// beam_hyps_step.hpp, so the CPU and CUDA executors make the same choices.
//
// One step of the decode loop, over the B·K hypothesis slots of the largest batch:
//   joint hidden (live slots on a frame of their utterance) → GEMM → LM/boosting queries of those slots →
//   launch_alsd_propose (log-softmax and the K best extensions per slot, then, in its last block, the K best per
//   utterance, recombination) → launch_beam_take (each new slot gathers its parent's states into the next_*
//   buffers) → predictor step there of the slots that took a token → launch_beam_commit_then(alsd_activity) (the
//   next_* buffers become current; then which slots step next, and the loop flag).

#include <cuda_runtime.h>

#include <cstdint>

#include "asrdec/core/dtype.hpp"
#include "asrdec/detail/activation.hpp"
#include "asrdec/hyps/beam_hyps_ref.hpp"
#include "asrdec/lm/ngram_lm.hpp"
#include "lm/fusion_step.hpp"
#include "transducer/beam/aes_step.hpp"
#include "transducer/beam/alsd_step.hpp"
#include "transducer/beam/wind_beam_step.hpp"
#include "transducer/model/joint_enc_args.hpp"
#include "transducer/model/predictor_kernels.hpp"

namespace asrdec::detail {

/** AES++ (frame-synchronous; BeamDeviceState::running then marks the utterances that have the frame). */
struct AesDeviceState {
  std::int32_t* frame = nullptr;  ///< t; nullptr for ALSD++ and WIND, whose slots sit on their own frames
  std::int32_t* expanding;        ///< [slots] still expanding on the frame
  /** [slots] the expanding slots whose LM and boosting queries the next evaluation needs: all of them on entering a
   *  frame, none after its last expansion step (that evaluation only scores the blank that ends the frame; the next
   *  frame's entry queries again), as the CPU executor does. */
  std::int32_t* querying;
  std::int32_t* step;           ///< expansion steps made on the frame
  std::int32_t* any_expanding;  ///< inner loop flag
  AesProposals* proposals;      ///< [slots]
  std::int32_t steps;           ///< aes_num_steps
  std::int32_t per_hypothesis;  ///< K + beta
  float gamma;
};

/** WIND beam search (RNN-T, so outputs == token_columns): each utterance's group is the live slots on its earliest
 *  unfinished frame; member g's window row j is joint row (b·K + g)·window + j. */
struct WindDeviceState {
  std::int32_t window = 0;       ///< W; 0 for ALSD++ and AES++
  std::int32_t* frame;           ///< [max_batch] the group's frame
  std::int32_t* width;           ///< [max_batch] frames in its window (≤ W)
  std::int32_t* group_size;      ///< [max_batch]
  std::int32_t* group;           ///< [max_batch, K] pool slots of the group, in slot order
  WindCandidate* candidates;     ///< [slots] wind_step's scratch
  std::int32_t* internal_error;  ///< bit 1 a group above K slots, bit 2 a pool overflow (the CPU throws)
};

struct BeamDeviceState {
  const JointEncArgs* args;
  const std::int32_t* lengths;  ///< [max_batch] device copy of the lengths
  /** Streaming (decode_chunks): 1 when the begin kernels keep the beams the executor loaded (the lanes' channels)
   *  instead of clearing them. */
  const std::int32_t* seeded;
  /** [max_batch] 1 where the row ends its utterance (every row of a whole decode); a row that does not waits for
   *  more frames (alsd_waits_for_frames, wind_waits_for_frames). AES++ is frame-synchronous and never waits. */
  const std::int32_t* row_last;
  BeamHypsRef hyps;  ///< max_batch × K slots (WIND: max_batch × pool)
  std::int64_t max_batch;
  std::int64_t slots;  ///< max_batch * hyps.beam
  std::int32_t beam;   ///< K (WIND: the pool holds more slots than the beam)
  // Per-slot states; the take kernel writes the next_* buffers, the predictor steps next_state and next_dec there,
  // and the commit copies them over the current ones.
  float* state;             ///< [slots, state_size] predictor state
  float* next_state;        ///< [slots, state_size]
  float* dec;               ///< [slots, J] predictor output
  float* next_dec;          ///< [slots, J]
  std::int64_t state_size;  ///< floats of predictor state per slot
  FusionRef fusion;         ///< per-slot queries [slots, V], states and totals [slots]; !active() without fusion
  std::int32_t* next_lm_state;
  float* next_lm_total;
  std::int32_t* next_boost_state;
  float* next_boost_total;
  std::int32_t* step_label;  ///< [slots] the label each slot's predictor steps with
  std::int32_t* step_mask;   ///< [slots] 1 for slots that took a token
  std::int64_t* take_from;   ///< [slots] alsd_select's output
  std::int32_t* take_label;  ///< [slots]
  // Activity.
  std::int32_t* row_active;   ///< [slots] alsd_row_active
  std::int32_t* running;      ///< [max_batch] the utterance has an active slot
  std::int32_t* any_running;  ///< loop flag
  std::int32_t*
      blocks_done;  ///< finished blocks of launch_alsd_propose or launch_beam_commit_then (0 between launches)
  // Joint.
  std::int64_t joint_rows;        ///< rows of hidden and logits: slots (WIND: max_batch · K · window)
  void* hidden;                   ///< [joint_rows, J] act(enc + dec) in the weight dtype
  float* logits;                  ///< [joint_rows, outputs] without bias; the propose kernels make them log-softmax
  const float* bias;              ///< [outputs]
  const void* weight;             ///< [outputs, J] the joint's output weights, in the weight dtype
  const std::int32_t* durations;  ///< TDT [num_durations]
  std::int32_t num_durations;     ///< 0 for RNN-T
  std::int64_t hidden_size;       ///< J
  std::int64_t outputs;           ///< V + 1 + D
  std::int64_t token_columns;     ///< V + 1
  std::int32_t blank;
  AlsdProposals* proposals;  ///< [slots] (WIND: [max_batch, K], by group rank)
  BeamFusionRule rule;
  std::int32_t max_symbols;
  JointActivation activation;
  DType enc_dtype;
  DType weight_dtype;
  std::int32_t check_values;
  unsigned long long* bad_value;  ///< first NaN/inf of enc_proj read, packed (b, t, j, kind)
  /** [2] BeamLoopCounts::outer and inner of the run (start() zeroes them): the phase that ends each pass of a loop
   *  counts it (alsd_activity and wind_groups a step, aes_mark_rows an expansion step, aes_next_frame a frame). */
  unsigned long long* loop_counts;
  AesDeviceState aes;    ///< AES++ only
  WindDeviceState wind;  ///< WIND beam search only (wind.window is 0 for the others)
};

// WIND beam search: "groups; while some utterance has a group { joint hidden of the window rows → GEMM → fused
// queries of the group slots → launch_wind_propose → launch_wind_step → take, predictor step, commit then groups }".

/** Clears every beam (slot 0 on frame 0; kept when seeded), then BeamPhase::wind_groups. */
void launch_wind_begin(const BeamDeviceState& g, cudaStream_t stream);
/** One block per group member: log-softmax (bias added) of its window rows, then wind_propose's ranking over the
 *  block (wind_rank_share, block_topk_merge). */
void launch_wind_propose(const BeamDeviceState& g, cudaStream_t stream);
/** wind_step_phases for every utterance with a group, a block each (its threads over the pool's slots); the slots of
 *  the others keep their states. */
void launch_wind_step(const BeamDeviceState& g, cudaStream_t stream);

// AES++: "while some utterance has frame t { evaluate the expanding slots; prefix search; while a slot expands and
// steps are left { launch_aes_propose; aes_expand; take, predictor step, commit then mark rows; evaluate };
// aes_end_frame; next frame }", where evaluate = launch_beam_joint_hidden, GEMM, launch_beam_log_softmax and the fused
// queries of the rows in row_active.

/** Clears every beam (kept when seeded); t = 0 and the frame's masks (launch_aes_next_frame without the increment). */
void launch_aes_begin(const BeamDeviceState& g, cudaStream_t stream);
/** Log-softmax of the token columns (bias added) of every slot in row_active, in place in `logits`. */
void launch_beam_log_softmax(const BeamDeviceState& g, cudaStream_t stream);
/** aes_prefix_search for every utterance that has the frame; then step = 0 and the inner loop flag. */
void launch_aes_prefix_search(const BeamDeviceState& g, cudaStream_t stream);
/** aes_slot_proposals for every slot of an utterance that has the frame and an expanding slot (a block per slot). */
void launch_aes_propose(const BeamDeviceState& g, cudaStream_t stream);
/** aes_expand for every utterance that has the frame and an expanding slot, from launch_aes_propose's proposals; the
 *  slots of the others keep. */
void launch_aes_expand(const BeamDeviceState& g, cudaStream_t stream);
/** aes_end_frame for every utterance that has the frame. */
void launch_aes_end_frame(const BeamDeviceState& g, cudaStream_t stream);
/** t += 1; running (the utterances that have frame t), expanding = row_active = their live slots; the outer flag. */
void launch_aes_next_frame(const BeamDeviceState& g, cudaStream_t stream);

/** Clears every utterance's beam (kept when seeded), then BeamPhase::alsd_activity (the loop is entered with the
 * flag set). */
void launch_alsd_begin(const BeamDeviceState& g, cudaStream_t stream);
/** act(enc[b, frame of slot] + dec[slot]) for the active slots (WIND: for the window rows of each group member),
 *  zeros for the other rows; NaN/inf in enc_proj is recorded in bad_value. */
void launch_beam_joint_hidden(const BeamDeviceState& g, cudaStream_t stream);
/** The same rows' hidden layer and logits (without bias) in one kernel, for the shapes joint_gemv_fits accepts
 *  (transducer/model/joint_gemv_shape.hpp); otherwise launch_beam_joint_hidden and a cuBLAS GEMM. */
void launch_beam_joint_gemv(const BeamDeviceState& g, cudaStream_t stream);
/** One block per slot: bias and log-softmax of an active slot's logits, then its proposals (alsd_propose or
 *  alsd_force_blank); idle slots get alsd_idle_proposals. Then, in the block that finishes last, alsd_select for
 *  every running utterance (the slots of the others keep their states). */
void launch_alsd_propose(const BeamDeviceState& g, cudaStream_t stream);
/** Every slot takes over its parent's predictor, LM and boosting states (into the next_* buffers) and gets its
 *  step label and mask; the caller then steps the predictor on next_state and next_dec. */
void launch_beam_take(const BeamDeviceState& g, cudaStream_t stream);

/** What a step of the loop does last, once the slots' new states are current. */
enum class BeamPhase {
  alsd_activity,  ///< ALSD++: row_active, running and the loop flag from the current beams (a row that waits for
                  ///< frames does not run)
  wind_groups,    ///< WIND: each utterance's group (wind_group; none while the row waits for frames), window width,
                  ///< row_active (the group's slots), running and the loop flag
  aes_mark_rows,  ///< AES++: row_active = expanding; step += 1; the inner loop flag (steps left and a slot expanding)
};
/** The next_* buffers become the current ones (every block a share), then `phase` in the block that finishes last:
 *  one graph node where a copy kernel and a one-block phase kernel took two. */
void launch_beam_commit_then(BeamPhase phase, const BeamDeviceState& g, cudaStream_t stream);

/** ALSD++'s or WIND's step loop as one persistent kernel (persistent_beam_shape.hpp): the program
 *  "begin; while a slot is active { joint and fused queries; propose; select (WIND: step) }; take over; predictor step;
 *  commit }" with grid barriers between the phases instead of graph nodes. Where the graph program steps the
 *  predictor on every slot, the kernel compacts the slots that took a token into `step_rows` rows (the selection's
 *  last block numbers them), so that the fused LSTM step of a few rows serves a WIND pool of 48 slots. */
struct PersistentBeam {
  LstmFusedStep predictor;  ///< over step_label, step_mask, step_state and step_dec (step_rows rows)
  NgramLmRef lm;            ///< the LM's tables on the device, when g.fusion has an LM
  NgramLmRef boost;         ///< the boosting tree's, when g.fusion has one
  std::int32_t lm_slice;    ///< vocabulary slice of one query item (ngram_advance_slice_size)
  std::int32_t boost_slice;
  unsigned int* barrier;      ///< [2] the grid barrier's words (arrived, generation): zero before first use
  int* status;                ///< kGridBarrierOk, or why the kernel stopped (core/grid_barrier_status.hpp)
  std::int64_t loop_cap;      ///< steps allowed, as the graph program's loop cap
  float* hidden_rows;         ///< [joint rows, J] the joint's hidden layer computed across the grid (null: every block
                              ///< computes it whole; persistent_greedy_shares_hidden decides)
  std::int32_t* row_of_slot;  ///< [slots] the step row of a slot that took a token, -1 for the others
  std::int32_t* step_label;   ///< [step_rows] the token of each step row
  std::int32_t* step_mask;    ///< [step_rows] 1 for the rows in use
  float* step_state;          ///< [step_rows, state_size] the parents' states, then the stepped ones
  float* step_dec;            ///< [step_rows, J] the stepped predictor outputs
  std::int64_t step_rows;     ///< persistent_beam_step_rows
  std::int32_t* internal_error;  ///< bit 4: a step took more tokens than step_rows (ruled out by the bound)
  /** [kPersistentBeamPhases] nanoseconds of each phase over the call (core/phase_times.hpp; null: not timed). */
  unsigned long long* phase_ns;
  int blocks;                ///< the grid: as many as run at once, up to what the widest phase uses
  std::size_t shared_bytes;  ///< persistent_beam_shared_bytes
  std::size_t cache_bytes;   ///< the selection's or WIND step's slot cache within it (0: the slots stay global)
};
/** The persistent kernel's phases, as PersistentBeam::phase_ns counts them: the joint and the fused queries; the
 *  proposals and, in the last block, the selection (WIND: step), step rows and activity; the take-over; the
 *  predictor's layers; its projection; the commit. */
enum PersistentBeamPhase : int {
  kBeamPhaseJoint,
  kBeamPhaseSelect,
  kBeamPhaseTake,
  kBeamPhaseLayers,
  kBeamPhaseProjection,
  kBeamPhaseCommit,
  kPersistentBeamPhases
};
/** Enqueues the whole search loop (the barrier's arrival count, *status and the phase times are cleared first, on
 *  `stream`). */
void launch_beam_persistent(const BeamDeviceState& g, const PersistentBeam& p, cudaStream_t stream);
/** Blocks of the persistent kernel the current device runs at once with `shared_bytes` of dynamic shared memory for
 *  these element types (0 when it cannot run one). */
int persistent_beam_resident_blocks(DType enc_dtype, DType weight_dtype, std::size_t shared_bytes);
/** The dynamic shared memory the persistent kernels may opt in to on the current device, for
 *  persistent_beam_refusal. Loads them; outside any capture. */
std::int64_t preload_persistent_beam_kernels();
/** The shared memory of a slot cache of `slots` slots as the kernels size it: all of them, or 0 when they do not fit
 *  the cache's limit or ASRDEC_BEAM_SLOT_CACHE=0 turns the cache off. */
std::size_t beam_slot_cache_bytes(std::int64_t slots);

/** Loads the kernels on the current device (outside any capture); returns the shared memory the fused joint kernel
 *  may use there, for joint_gemv_fits. */
std::int64_t preload_beam_kernels();

}  // namespace asrdec::detail

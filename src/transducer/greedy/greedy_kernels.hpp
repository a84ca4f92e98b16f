#pragma once
// Internal: the kernels of greedy transducer decoding on CUDA. Everything a kernel needs is in
// GreedyDeviceState (fixed device pointers, captured into graphs once) plus the per-call JointEncArgs block in
// device memory (rewritten before each replay). The per-utterance logic is the shared step functions of
// include/asrdec/detail/transducer_step.hpp.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "asrdec/core/dtype.hpp"
#include "asrdec/detail/activation.hpp"
#include "asrdec/detail/transducer_step.hpp"
#include "asrdec/hyps/confidence.hpp"
#include "asrdec/lm/ngram_lm.hpp"
#include "lm/fusion_step.hpp"
#include "transducer/model/joint_enc_args.hpp"
#include "transducer/model/predictor_kernels.hpp"

namespace asrdec::detail {

struct GreedyDeviceState {
  const JointEncArgs* args;
  GreedyStateRef state;  ///< arrays of max_batch entries; state.lengths is the device copy of the lengths
  HypsRef hyps;
  std::int32_t* time_jump;  ///< TDT overshoot, in (start) and out (carried to the next chunk)
  std::int32_t* last_label;
  std::int32_t* any_active;
  std::int32_t* any_advance;
  std::int32_t* frame;        ///< frame looping: the frame the batch is on
  std::int32_t* blocks_done;  ///< finished blocks of launch_joint_epilogue_then_phase or launch_joint_step (0 between
                              ///< launches)
  const float* am_start;      ///< [max_batch] each path's score before the call (0 for a starting utterance)
  // joint
  const float* dec;               ///< [max_batch, J] predictor output
  void* hidden;                   ///< [rows, J] act(enc + dec) in the weight dtype
  float* logits;                  ///< [rows, outputs] without bias
  const float* bias;              ///< [outputs]
  const void* weight;             ///< [outputs, J] the joint's output weights, in the weight dtype
  void* joint_step_sums;          ///< launch_joint_step's per-block sums of each row (joint_step_sums_bytes)
  std::int32_t* choice_label;     ///< [rows]
  std::int32_t* choice_duration;  ///< [rows]
  float* choice_token_logprob;    ///< [rows] log-softmax of the label over the token columns
  float* choice_step_logprob;     ///< [rows] token_logprob, plus the duration's log-softmax for TDT
  float* choice_confidence;       ///< [rows]
  const std::int32_t* durations;  ///< [num_durations]
  std::int32_t num_durations;
  unsigned long long* bad_value;  ///< first NaN/inf of enc_proj read, packed (b, t, j, kind)
  unsigned long long* row_bad;    ///< [rows] the same, per joint row of the current evaluation (the phases that
                                  ///< begin a call or use an evaluation clear it for the next)
  std::int64_t max_batch;
  std::int64_t rows;           ///< max_batch * window
  std::int64_t hidden_size;    ///< J
  std::int64_t outputs;        ///< V + 1 + D
  std::int64_t token_columns;  ///< V + 1
  std::int32_t window;
  GreedyRules rules;
  JointActivation activation;
  DType enc_dtype;
  DType weight_dtype;
  std::int32_t check_values;
  FusionRef fusion;  ///< LM fusion and boosting (totals gathered with the lanes); !fusion.active() without either
  ConfidenceMethod confidence;  ///< how choice_confidence is computed (hyps/confidence_step.hpp)
  /** [3] the call's loop counts (GreedyLoopCounts: outer, inner, choices), zeroed by the begin phases and counted
   *  by the phases that consume a joint evaluation. */
  unsigned long long* loop_counts;
};

/** act(enc[b, frame] + dec[b]) for every row (b, window position), rounded to the weight dtype. NaN/inf in
 *  enc_proj is recorded per row; the phase kernels report it for the rows whose evaluation is used, so that
 *  exactly the frames the CPU executor reads are checked (for WIND: up to the first non-blank). */
void launch_joint_hidden(const GreedyDeviceState& g, cudaStream_t stream);

enum class GreedyPhase {
  label_looping_begin,
  label_looping_first,
  label_looping_inner,
  label_looping_finish,
  frame_looping_begin,
  frame_looping_enter,
  frame_looping_step,
  frame_looping_next_frame,
  end_of_chunk,
};
/** One single-block kernel that applies `phase` to every utterance and updates the loop flags. */
void launch_greedy_phase(GreedyPhase phase, const GreedyDeviceState& g, cudaStream_t stream);
/** Label (first max over the token columns), log-probabilities, max-prob confidence and duration of every row (a
 *  block each), then `phase` (one that uses the evaluation: label_looping_first or _inner, frame_looping_step) in
 *  the block that finishes last: one kernel. */
void launch_joint_epilogue_then_phase(GreedyPhase phase, const GreedyDeviceState& g, cudaStream_t stream);
/** The whole joint evaluation and `phase` in one kernel, for the shapes joint_gemv_fits accepts with the limit that
 *  preload_greedy_kernels returned (transducer/model/joint_gemv_shape.hpp): each block computes the hidden layer
 *  and a slice of the logits of every row and sums its slice per row (into joint_step_sums); the block that
 *  finishes last merges them, writes the choices and applies `phase`. The same choices as launch_joint_hidden, a
 *  cuBLAS GEMM and launch_joint_epilogue_then_phase, within the float contract (sums in another order). */
void launch_joint_step(GreedyPhase phase, const GreedyDeviceState& g, cudaStream_t stream);
/** Bytes of joint_step_sums for `rows` joint rows of `outputs` columns. */
std::size_t joint_step_sums_bytes(std::int64_t rows, std::int64_t outputs);

/** The label-looping program of a chunk as one persistent kernel (docs/transducer-greedy.md, "Persistent kernel"):
 *  every phase of the loop (begin, the joint passes, the fused LSTM step, the fused models' queries, finish, end of
 *  chunk) in one launch, its
 *  blocks meeting at grid barriers between dependent phases. The joint and predictor steps are the fused kernels'
 *  bodies and the phases greedy_phase, so the results are those of the fused path. For the decoders that
 *  persistent_greedy_refusal (persistent_greedy_shape.hpp) accepts. */
struct PersistentGreedy {
  LstmFusedStep predictor;   ///< the predictor step over state.label, state.emit, the working state and dec
  NgramLmRef lm;             ///< the LM's tables on the device, when g.fusion has an LM
  NgramLmRef boost;          ///< the boosting tree's, when g.fusion has one
  std::int32_t lm_slice;     ///< vocabulary slice of one query item (ngram_advance_slice_size)
  std::int32_t boost_slice;  ///< likewise for the boosting tree
  unsigned int* barrier;     ///< [2] the grid barrier's words (arrived, generation): zero before first use
  int* status;               ///< kGridBarrierOk, or why the kernel stopped (core/grid_barrier_status.hpp)
  std::int64_t loop_cap;     ///< iterations allowed to each run of a loop, as the graph program's loop_cap
  float* hidden_rows;        ///< [rows, J] the joint's hidden layer, computed across the grid (null: each block
                             ///< computes it whole; persistent_greedy_shares_hidden)
  /** [kPersistentGreedyPhases] nanoseconds of each phase over the call (core/phase_times.hpp; null: not timed). */
  unsigned long long* phase_ns;
  int blocks;                ///< persistent_greedy_blocks
  std::size_t shared_bytes;  ///< persistent_greedy_shared_bytes
};
/** The persistent kernel's phases, as PersistentGreedy::phase_ns counts them: an outer iteration's first joint pass,
 *  its inner joint passes, the predictor's layers, and the projection with the fused queries and the finish. */
enum PersistentGreedyPhase : int {
  kGreedyPhaseFirstJoint,
  kGreedyPhaseInnerJoints,
  kGreedyPhaseLayers,
  kGreedyPhaseProjection,
  kPersistentGreedyPhases
};
/** Bytes of the per-block row sums of the persistent kernel (GreedyDeviceState::joint_step_sums) on `blocks` blocks. */
std::size_t persistent_greedy_sums_bytes(int blocks, std::int64_t rows);
/** Enqueues the chunk's decode (*status, the barrier's arrival count and the phase times are cleared first, on
 *  `stream`). */
void launch_label_looping_persistent(const GreedyDeviceState& g, const PersistentGreedy& p, cudaStream_t stream);
/** Blocks of the persistent kernel the current device runs at once with `shared_bytes` of dynamic shared memory for
 *  these element types (0 when it cannot run one). */
int persistent_greedy_resident_blocks(DType enc_dtype, DType weight_dtype, std::size_t shared_bytes);
/** The dynamic shared memory the persistent kernels may opt in to on the current device (as preload_greedy_kernels
 *  for the fused joint step), for persistent_greedy_refusal. Loads them; outside any capture. */
std::int64_t preload_persistent_greedy_kernels();

/** Loads the kernels on the current device (outside any capture); returns the shared memory the fused joint kernel
 *  may use there, for joint_gemv_fits. */
std::int64_t preload_greedy_kernels();

}  // namespace asrdec::detail

#include "asrdec/core/error.hpp"
#include "asrdec/detail/float16.hpp"
#include "core/bad_value.hpp"
#include "core/cuda/check.hpp"
#include "core/cuda/cooperative_launch.hpp"
#include "core/cuda/grid_barrier.cuh"
#include "core/cuda/last_block.cuh"
#include "core/cuda/phase_clock.cuh"
#include "core/float_type.hpp"
#include "core/logsumexp.hpp"
#include "hyps/confidence_step.hpp"
#include "lm/ngram_advance.cuh"
#include "transducer/greedy/greedy_kernels.hpp"
#include "transducer/model/joint_gemv.cuh"
#include "transducer/model/joint_hidden.cuh"
#include "transducer/model/lstm_fused.cuh"

namespace asrdec::detail {
namespace {

constexpr int kThreads = 256;
constexpr int kPhaseThreads = 1024;
constexpr unsigned kFullWarp = 0xffffffffu;

// Joint rows of greedy decoding: row b·W + w is utterance b's frame time[b] + w (clamped to its last frame), with
// its predictor output; a bad encoder value is recorded for the row (reported only if the row's choice is used).
struct GreedyJointRows {
  GreedyDeviceState g;
  __device__ JointEncArgs args() const { return *g.args; }
  __device__ bool gather(std::int64_t row, const JointEncArgs& args, JointGather& at) const {
    const std::int64_t b = row / g.window;
    if (b >= args.batch) return false;
    const auto w = static_cast<std::int32_t>(row - b * g.window);
    const std::int32_t length = g.state.lengths[b];
    const std::int32_t last = length > 0 ? length - 1 : 0;
    const std::int32_t frame = safe_frame(g.state.time[b], length) + w;
    at.b = b;
    at.frame = frame < last ? frame : last;
    at.dec_row = b;
    at.bad = g.row_bad + row;
    at.check = g.check_values && length > 0;
    return true;
  }
};

// A joint row whose outputs overflowed (finite encoder values too large for float32): recorded like a bad input of
// the row, at the joint-output marker column, and reported only if the row's choice is used (as on the CPU).
__device__ void report_joint_output(const GreedyDeviceState& g, std::int64_t row) {
  const std::int64_t b = row / g.window;
  if (b >= g.args->batch) return;
  const std::int32_t w = static_cast<std::int32_t>(row - b * g.window);
  const std::int32_t length = g.state.lengths[b];
  if (length == 0) return;
  std::int32_t frame = safe_frame(g.state.time[b], length) + w;
  frame = frame < length - 1 ? frame : length - 1;
  atomicMin(g.row_bad + row, pack_bad_value(b, frame, kJointOutputColumn, false));
}

// What a joint row's columns reduce to: the first-max token and duration, their log-sum-exps, the confidence sums
// and whether every value was finite. Merged with order-independent rules (first max; log-sum-exp and sums up to
// rounding, within the float contract).
struct EpilogueSums {
  ArgMax best;
  LogSumExp lse;
  ConfidenceStats stats;
  ArgMax duration;
  LogSumExp duration_lse;
  bool finite;
};

__device__ EpilogueSums epilogue_merge(const EpilogueSums& a, const EpilogueSums& b, bool entropy, float alpha) {
  return EpilogueSums{argmax_merge(a.best, b.best),
                      lse_merge(a.lse, b.lse),
                      entropy ? confidence_stats_merge(a.stats, b.stats, alpha) : a.stats,
                      argmax_merge(a.duration, b.duration),
                      lse_merge(a.duration_lse, b.duration_lse),
                      a.finite && b.finite};
}

// Token column o's value x (logit plus bias) added to a row's sums; likewise duration column d's.
__device__ void epilogue_add_token(EpilogueSums& sums, float x, std::int32_t o, bool entropy, float alpha) {
  sums.finite = sums.finite && is_finite_value(x);
  argmax_update(sums.best, x, o);
  sums.lse = lse_add(sums.lse, x);
  if (entropy) sums.stats = confidence_stats_add(sums.stats, x, alpha);
}
__device__ void epilogue_add_duration(EpilogueSums& sums, float x, std::int32_t d) {
  sums.finite = sums.finite && is_finite_value(x);
  argmax_update(sums.duration, x, d);
  sums.duration_lse = lse_add(sums.duration_lse, x);
}

// A value of the lane `offset` away (__shfl_xor_sync over the whole warp), field by field.
__device__ ArgMax shuffle_xor(const ArgMax& x, int offset) {
  return ArgMax{__shfl_xor_sync(kFullWarp, x.value, offset), __shfl_xor_sync(kFullWarp, x.index, offset)};
}
__device__ LogSumExp shuffle_xor(const LogSumExp& x, int offset) {
  return LogSumExp{__shfl_xor_sync(kFullWarp, x.max, offset), __shfl_xor_sync(kFullWarp, x.sum, offset)};
}
__device__ ConfidenceStats shuffle_xor(const ConfidenceStats& x, int offset) {
  return ConfidenceStats{__shfl_xor_sync(kFullWarp, x.max, offset), __shfl_xor_sync(kFullWarp, x.s, offset),
                         __shfl_xor_sync(kFullWarp, x.t, offset)};
}
__device__ EpilogueSums shuffle_xor(const EpilogueSums& x, int offset) {
  return EpilogueSums{shuffle_xor(x.best, offset),         shuffle_xor(x.lse, offset),
                      shuffle_xor(x.stats, offset),        shuffle_xor(x.duration, offset),
                      shuffle_xor(x.duration_lse, offset), __shfl_xor_sync(kFullWarp, x.finite ? 1 : 0, offset) != 0};
}

// The merge of every thread's `x` over the block, the same in every thread: by shuffles within each warp, then the
// warps' results in warp order (`partial`: one entry a warp, in shared memory).
template <class T, class Shuffle, class Merge>
__device__ T block_merge(T x, T* partial, Shuffle&& shuffle, Merge&& merge) {
  for (int offset = 16; offset > 0; offset >>= 1) x = merge(x, shuffle(x, offset));
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x / 32] = x;
  __syncthreads();
  T all = partial[0];
  for (int w = 1; w < kThreads / 32; ++w) all = merge(all, partial[w]);
  __syncthreads();  // `partial` may be written again
  return all;
}

// Row `row`'s choice from its merged sums: the first-max label, or with fusion active and a non-blank winner, the
// best non-blank token by logit + fusion bonus (`fused`, the identity when not needed); its log-probabilities,
// confidence and duration. One thread writes it.
__device__ void write_choice(const GreedyDeviceState& g, std::int64_t row, const EpilogueSums& all, ArgMax fused) {
  if (g.check_values && !all.finite) report_joint_output(g, row);
  const float* logits = g.logits + row * g.outputs;
  std::int32_t label = label_or_blank(all.best, g.rules.blank);
  float score = all.best.value;
  if (g.fusion.active() && label != g.rules.blank && fused.index != argmax_identity().index) {
    label = fused.index;
    score = logits[label] + g.bias[label];
  }
  const float token_logprob = lse_log_probability(all.lse, score);
  g.choice_label[row] = label;
  g.choice_token_logprob[row] = token_logprob;
  g.choice_step_logprob[row] =
      token_logprob + (g.num_durations > 0 ? lse_log_probability(all.duration_lse, all.duration.value) : 0.0f);
  g.choice_confidence[row] =
      step_confidence(g.confidence, all.lse, all.stats, all.best.value, score, static_cast<int>(g.token_columns));
  g.choice_duration[row] = g.num_durations > 0 ? g.durations[duration_index_or_first(all.duration)] : 0;
}

// A block per row: the threads stride over the token columns (loads of several columns in flight at once), then over
// the duration columns, and the block merges their sums. One warp a row left a row's ~1,025 columns to 32 threads,
// 33 dependent rounds each: ~22 µs a step on an H200 at any batch, over half of a greedy step's time.
__device__ void joint_epilogue(const GreedyDeviceState& g) {
  __shared__ EpilogueSums partial[kThreads / 32];
  __shared__ ArgMax fused_partial[kThreads / 32];
  const bool entropy = needs_entropy_sums(g.confidence);
  const float alpha = g.confidence.alpha;
  const auto merge = [&](const EpilogueSums& a, const EpilogueSums& b) { return epilogue_merge(a, b, entropy, alpha); };
  const auto shuffle = [](const EpilogueSums& x, int offset) { return shuffle_xor(x, offset); };
  for (std::int64_t row = blockIdx.x; row < g.rows; row += gridDim.x) {
    const float* logits = g.logits + row * g.outputs;
    EpilogueSums sums{argmax_identity(), lse_identity(), confidence_stats_identity(),
                      argmax_identity(), lse_identity(), true};
#pragma unroll 4
    for (std::int64_t o = threadIdx.x; o < g.token_columns; o += kThreads) {
      epilogue_add_token(sums, logits[o] + g.bias[o], static_cast<std::int32_t>(o), entropy, alpha);
    }
    for (std::int32_t d = threadIdx.x; d < g.num_durations; d += kThreads) {
      const std::int64_t o = g.token_columns + d;
      epilogue_add_duration(sums, logits[o] + g.bias[o], d);
    }
    const EpilogueSums all = block_merge(sums, partial, shuffle, merge);
    ArgMax fused = argmax_identity();
    if (g.fusion.active() && label_or_blank(all.best, g.rules.blank) != g.rules.blank) {
      // Fusion (block-uniform branch: every thread holds the merged argmax): re-choose among the V non-blank
      // tokens by logit + fusion bonus, as the CPU joint does.
      const std::int64_t b = row / g.window;
      for (std::int32_t id = threadIdx.x; id < g.fusion.vocab; id += kThreads) {
        const std::int32_t o = fusion_column(id, g.fusion.blank);  // ascending with id, as the CPU's column order
        argmax_update(fused, (logits[o] + g.bias[o]) + fusion_bonus(g.fusion, b, o), o);
      }
      fused = block_merge(
          fused, fused_partial, [](const ArgMax& x, int offset) { return shuffle_xor(x, offset); },
          [](const ArgMax& a, const ArgMax& b) { return argmax_merge(a, b); });
    }
    if (threadIdx.x == 0) write_choice(g, row, all, fused);
  }
}

// The choice of utterance b: its single row, or WIND's first non-blank among its window rows. The path also takes the
// blanks of the window rows before it (only rows on frames of the utterance count): they are added to the path's
// score here, each on its own and in frame order, so the sum does not depend on where windows or chunks begin; the
// choice carries its own row's log-probability.
__device__ JointChoice choice_of(const GreedyDeviceState& g, std::int64_t b) {
  const std::int64_t first = b * g.window;
  const std::int32_t k = g.window > 1 ? wind_pick(g.choice_label + first, g.window, g.rules.blank) : 0;
  const std::int64_t row = first + k;
  const std::int32_t time = g.state.time[b];
  const std::int32_t length = g.state.lengths[b];
  for (std::int32_t w = 0; w < k; ++w) {
    if (time + w < length) hyps_add_step_logprob(g.hyps, b, g.choice_step_logprob[first + w]);
  }
  const float step_logprob = time + k < length ? g.choice_step_logprob[row] : 0.0f;
  return JointChoice{g.choice_label[row],         g.choice_duration[row],   k,
                     g.choice_token_logprob[row], g.choice_confidence[row], step_logprob};
}

// Reports the invalid encoder values of the rows an utterance's choice read: its window rows up to the pick.
__device__ void report_bad_values(const GreedyDeviceState& g, std::int64_t b, std::int32_t offset) {
  unsigned long long first = kNoBadValue;
  for (std::int32_t w = 0; w <= offset; ++w) {
    const unsigned long long key = g.row_bad[b * g.window + w];
    first = key < first ? key : first;
  }
  if (first != kNoBadValue) {
    atomicMin(g.bad_value, first);
  }
}

__device__ JointChoice used_choice(const GreedyDeviceState& g, std::int64_t b) {
  const JointChoice choice = choice_of(g, b);
  report_bad_values(g, b, choice.offset);
  return choice;
}

// Label looping's store (label_looping_store, and the fused models take the label), made for a row as soon as its
// inner loop is over: in the pass of first or inner that ends it, rather than in a phase of its own after the loop
// (one dependent node less per label). No one reads a row's emit flag or its fused states before the predictor step
// that follows the loop, and a row's stored label no longer changes once the row stops advancing.
__device__ void store_label(const GreedyDeviceState& g, std::int64_t b) {
  label_looping_store(g.state, g.rules, g.hyps, b);
  if (g.state.emit[b]) fusion_emit(g.fusion, b, g.state.label[b]);
}

// label_looping_cut_stragglers over the whole batch: this thread's counts of its rows, summed in shared memory
// (block-uniform result). Every thread of the block calls it.
__device__ bool cut_stragglers(const GreedyRules& rules, int advancing, int active_at_start) {
  __shared__ int totals[2];
  if (threadIdx.x == 0) totals[0] = totals[1] = 0;
  __syncthreads();
  if (advancing != 0) atomicAdd(&totals[0], advancing);
  if (active_at_start != 0) atomicAdd(&totals[1], active_at_start);
  __syncthreads();
  return label_looping_cut_stragglers(rules, totals[0], totals[1]);
}

// A single block walks the batch so that the loop flags are block-wide reductions written by one thread.
__device__ void greedy_phase(GreedyPhase phase, const GreedyDeviceState& g) {
  const std::int32_t batch = g.args->batch;
  const GreedyStateRef& s = g.state;
  int any = 0;
  int advancing = 0, active_at_start = 0;  // label looping's first and inner passes: for cut_stragglers
  unsigned long long choices = 0;          // this thread's rows evaluated by the pass (GreedyLoopCounts::choices)
  for (std::int64_t b = threadIdx.x; b < g.max_batch; b += blockDim.x) {
    const bool in_batch = b < batch;
    switch (phase) {
      case GreedyPhase::label_looping_begin:
      case GreedyPhase::frame_looping_begin:
        if (in_batch) {
          hyps_clear(g.hyps, b);
          g.hyps.total_scores[b] = g.am_start[b];  // the path goes on from its score so far; so do the fusion totals
          const std::int32_t start = g.rules.tdt ? g.time_jump[b] : 0;
          if (phase == GreedyPhase::label_looping_begin) {
            label_looping_begin(s, b, start);
          } else {
            frame_looping_begin(s, b, start);
          }
        } else {
          s.active[b] = 0;
          s.active_at_start[b] = 0;
          s.advance[b] = 0;
          s.emit[b] = 0;
        }
        any |= s.active[b];
        break;
      case GreedyPhase::label_looping_first:
        if (in_batch) {
          choices += s.active[b] ? 1 : 0;
          label_looping_first(s, g.rules, g.hyps, b, s.active[b] ? used_choice(g, b) : JointChoice{});
          if (!s.advance[b]) store_label(g, b);
        }
        any |= s.advance[b];
        advancing += s.advance[b];
        active_at_start += s.active_at_start[b];
        break;
      case GreedyPhase::label_looping_inner:
        if (in_batch && s.advance[b]) {
          ++choices;
          label_looping_inner(s, g.rules, g.hyps, b, used_choice(g, b));
          if (!s.advance[b]) store_label(g, b);
        }
        any |= s.advance[b];
        advancing += s.advance[b];
        active_at_start += s.active_at_start[b];
        break;
      case GreedyPhase::label_looping_finish:
        if (in_batch) label_looping_finish(s, g.rules, g.hyps, b);
        any |= s.active[b];
        break;
      case GreedyPhase::frame_looping_enter:
        if (in_batch) frame_looping_enter(s, b, *g.frame);
        any |= s.advance[b];
        break;
      case GreedyPhase::frame_looping_step:
        if (in_batch) {
          choices += s.advance[b] ? 1 : 0;
          frame_looping_step(s, g.rules, g.hyps, b, s.advance[b] ? used_choice(g, b) : JointChoice{});
          if (s.emit[b]) fusion_emit(g.fusion, b, s.label[b]);
        }
        any |= s.advance[b];
        break;
      case GreedyPhase::frame_looping_next_frame:
        any |= s.active[b];
        break;
      case GreedyPhase::end_of_chunk:
        if (in_batch) {
          // RNN-T never carries time (a chunk ends on a frame boundary); TDT carries the overshoot.
          const std::int32_t over = s.time[b] - s.lengths[b];
          g.time_jump[b] = g.rules.tdt && over > 0 ? over : 0;
          const std::int32_t n = g.hyps.lengths[b];
          if (n > 0) g.last_label[b] = g.hyps.tokens[b * g.hyps.capacity + n - 1];
        }
        break;
    }
  }
  // The begin phases zero the counts before any pass; a pass's rows add up across the threads (one atomic a thread
  // that evaluated rows, before the barrier; thread 0 counts the pass after it, when the zeroing is long done).
  if (choices > 0) atomicAdd(g.loop_counts + 2, choices);
  if ((phase == GreedyPhase::label_looping_first || phase == GreedyPhase::label_looping_inner) &&
      cut_stragglers(g.rules, advancing, active_at_start)) {
    // The same rows as the loop above, by the same threads.
    for (std::int64_t b = threadIdx.x; b < batch; b += blockDim.x) {
      if (s.advance[b]) {
        label_looping_pause(s, b);
        store_label(g, b);  // emits nothing (its last choice was a blank), clears the previous iteration's emit
      }
    }
    any = 0;
  }
  any = __syncthreads_or(any);
  // The joint rows' bad-value words start clear for the next evaluation: cleared here, after every thread has read
  // them (the barrier above), by the phases that begin a call or used an evaluation; a memset node before each joint
  // did it before, one more dependent node a step.
  if (phase == GreedyPhase::label_looping_begin || phase == GreedyPhase::frame_looping_begin ||
      phase == GreedyPhase::label_looping_first || phase == GreedyPhase::label_looping_inner ||
      phase == GreedyPhase::frame_looping_step) {
    for (std::int64_t r = threadIdx.x; r < g.rows; r += blockDim.x) g.row_bad[r] = kNoBadValue;
  }
  if (threadIdx.x == 0) {
    switch (phase) {
      case GreedyPhase::label_looping_begin:
      case GreedyPhase::frame_looping_begin:
        *g.any_active = any;
        if (phase == GreedyPhase::frame_looping_begin) *g.frame = 0;
        g.loop_counts[0] = g.loop_counts[1] = g.loop_counts[2] = 0;
        break;
      case GreedyPhase::label_looping_first:
      case GreedyPhase::frame_looping_enter:
        g.loop_counts[0] += 1;
        *g.any_advance = any;
        break;
      case GreedyPhase::label_looping_inner:
      case GreedyPhase::frame_looping_step:
        g.loop_counts[1] += 1;
        *g.any_advance = any;
        break;
      case GreedyPhase::label_looping_finish:
        *g.any_active = any;
        break;
      case GreedyPhase::frame_looping_next_frame:
        *g.any_active = any;
        *g.frame += 1;
        break;
      default:
        break;
    }
  }
}

__global__ void __launch_bounds__(kPhaseThreads) greedy_phase_kernel(GreedyPhase phase, GreedyDeviceState g) {
  greedy_phase(phase, g);
}

// Every row's epilogue, then `phase` (which reads every row's choice) in the block that finishes last: one graph node
// instead of two per joint evaluation.
__global__ void __launch_bounds__(kThreads) joint_epilogue_then_phase_kernel(GreedyPhase phase, GreedyDeviceState g) {
  joint_epilogue(g);
  if (last_block_done(g.blocks_done)) greedy_phase(phase, g);
}

// The fused joint step (launch_joint_step): the joint's hidden layer and logits of this block's columns for every
// row (joint_gemv.cuh), each row's sums over those columns, then in the block that finishes last every row's merged
// sums, its choice, and `phase`. One graph node per joint evaluation where the unfused path takes three (hidden,
// GEMM, epilogue with phase).

// What one block's columns of one row reduce to: the epilogue's sums, and the best non-blank column by logit + fusion
// bonus (kept only with fusion active).
struct RowSums {
  EpilogueSums sums;
  ArgMax fused;
};

__device__ RowSums row_sums_identity() {
  return RowSums{EpilogueSums{argmax_identity(), lse_identity(), confidence_stats_identity(), argmax_identity(),
                              lse_identity(), true},
                 argmax_identity()};
}

__device__ RowSums row_sums_merge(const RowSums& a, const RowSums& b, bool entropy, float alpha) {
  return RowSums{epilogue_merge(a.sums, b.sums, entropy, alpha), argmax_merge(a.fused, b.fused)};
}

// Column o's logit (bias not yet added) of joint row `row`, added to the row's sums as the epilogue does.
__device__ void row_sums_add(RowSums& r, const GreedyDeviceState& g, std::int64_t row, std::int64_t o, float logit,
                             bool entropy, float alpha) {
  const float x = logit + g.bias[o];
  if (o < g.token_columns) {
    const auto column = static_cast<std::int32_t>(o);
    epilogue_add_token(r.sums, x, column, entropy, alpha);
    if (g.fusion.active() && column != g.fusion.blank) {
      const std::int32_t id = fusion_id(column, g.fusion.blank);
      if (id < g.fusion.vocab) argmax_update(r.fused, x + fusion_bonus(g.fusion, row / g.window, column), column);
    }
  } else {
    epilogue_add_duration(r.sums, x, static_cast<std::int32_t>(o - g.token_columns));
  }
}

__device__ RowSums shuffle_xor(const RowSums& x, int offset) {
  return RowSums{shuffle_xor(x.sums, offset), shuffle_xor(x.fused, offset)};
}

constexpr int kStepWarps = kJointGemvThreads / 32;

// The last block's part: each row's sums merged over the blocks (a warp a row, in block order within each lane and a
// fixed shuffle tree, so the result repeats), the row's choice, then `phase`. Not inlined: the nine kernels of
// joint_step_kernel share it. `g` by value: a reference to the kernel's parameter made every thread of every block
// copy the whole state to local memory on entry, where only the last block calls this.
__device__ __noinline__ void joint_step_finish(GreedyPhase phase, const GreedyDeviceState g, const RowSums* blocks) {
  const bool entropy = needs_entropy_sums(g.confidence);
  const float alpha = g.confidence.alpha;
  const int lane = static_cast<int>(threadIdx.x & 31);
  for (std::int64_t row = threadIdx.x / 32; row < g.rows; row += kStepWarps) {
    RowSums all = row_sums_identity();
    for (std::int64_t b = lane; b < gridDim.x; b += 32) {
      all = row_sums_merge(all, blocks[b * g.rows + row], entropy, alpha);
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
      all = row_sums_merge(all, shuffle_xor(all, offset), entropy, alpha);
    }
    if (lane == 0) {
      const bool refuse = !g.fusion.active() || label_or_blank(all.sums.best, g.rules.blank) == g.rules.blank;
      write_choice(g, row, all.sums, refuse ? argmax_identity() : all.fused);
    }
  }
  __syncthreads();  // every row's choice is written (global memory, read by this block's threads next)
  greedy_phase(phase, g);
}

// This block's columns of a fused joint evaluation, from every row's hidden layer in `hidden` (shared memory): the
// logits, and each row's sums over the block's columns into blocks[blockIdx.x * rows + row].
template <class TWeight>
__device__ void joint_step_column_sums(const GreedyDeviceState& g, const JointGemvRows& h, RowSums* blocks,
                                       const float* hidden) {
  __shared__ RowSums warp_sums[kStepWarps][kJointGemvMaxRows];  // [warp][row] over the warp's columns
  const bool entropy = needs_entropy_sums(g.confidence);
  const float alpha = g.confidence.alpha;
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int lane = static_cast<int>(threadIdx.x & 31);
  RowSums mine = row_sums_identity();  // lane r: row r over this warp's columns (joint_gemv_columns' visit order)
  joint_gemv_columns<TWeight>(h, hidden, [&](std::int64_t o, std::int64_t row, float logit) {
    g.logits[row * g.outputs + o] = logit;  // read back by write_choice for a fused label's score
    row_sums_add(mine, g, row, o, logit, entropy, alpha);
  });
  if (lane < g.rows) warp_sums[warp][lane] = mine;
  __syncthreads();
  for (std::int64_t r = threadIdx.x; r < g.rows; r += blockDim.x) {
    RowSums all = warp_sums[0][r];
    for (int w = 1; w < kStepWarps; ++w) all = row_sums_merge(all, warp_sums[w][r], entropy, alpha);
    blocks[blockIdx.x * g.rows + r] = all;
  }
}

// This block's part of a fused joint evaluation: the hidden layer of every row (into `hidden`, shared memory), then
// joint_step_column_sums.
template <class TEnc, class TWeight>
__device__ void joint_step_block_sums(const GreedyDeviceState& g, const JointGemvRows& h, RowSums* blocks,
                                      float* hidden) {
  joint_gemv_hidden<TEnc, TWeight>(h, GreedyJointRows{g}, hidden);
  joint_step_column_sums<TWeight>(g, h, blocks, hidden);
}

template <class TEnc, class TWeight>
__global__ void __launch_bounds__(kJointGemvThreads)
    joint_step_kernel(GreedyPhase phase, GreedyDeviceState g, JointGemvRows h, RowSums* blocks) {
  extern __shared__ float hidden[];  // [rows, J]
  joint_step_block_sums<TEnc, TWeight>(g, h, blocks, hidden);
  if (last_block_done(g.blocks_done)) joint_step_finish(phase, g, blocks);
}

// ---- the persistent kernel (PersistentGreedy) ----

// A loop flag written by a one-block phase (block 0's first phase, or the serial section of the last block at a
// barrier) before the barrier that precedes this read; no one writes it again before the next barrier. Volatile, so
// the read goes past this multiprocessor's L1.
__device__ bool read_flag(const std::int32_t* flag) { return *static_cast<const volatile std::int32_t*>(flag) != 0; }

// A loop of the kernel ran past its cap: every block counts the same iterations, so every block stops here, and
// block 0 records it.
__device__ void stop_at_loop_cap(const PersistentGreedy& p) {
  if (blockIdx.x == 0 && threadIdx.x == 0) atomicCAS(p.status, kGridBarrierOk, kGridBarrierLoopCap);
}

// The LM's and the boosting tree's queries (query_fused of the graph program).
__device__ void persistent_fused_queries(const GreedyDeviceState& g, const PersistentGreedy& p,
                                         const std::int32_t* mask) {
  ngram_advance_on_grid(p.lm, g.fusion.lm, p.lm_slice, g.max_batch, mask);
  ngram_advance_on_grid(p.boost, g.fusion.boost, p.boost_slice, g.max_batch, mask);
}

// One joint evaluation and the phase that uses it, as joint_step_kernel does it: every block's sums, then one barrier
// whose last block makes the choices and runs the phase before it releases the others. Many rows (p.hidden_rows set):
// the hidden layer computed once across the grid and loaded by every block after a barrier, instead of by every block
// in full. False when the kernel must stop.
template <class TEnc, class TWeight>
__device__ bool persistent_joint_pass(GreedyPhase phase, const GreedyDeviceState& g, const PersistentGreedy& p,
                                      const JointGemvRows& h, RowSums* blocks, float* shared,
                                      const GridBarrier& barrier) {
  if (p.hidden_rows != nullptr) {  // the same in every block
    joint_gemv_hidden_share<TEnc, TWeight>(h, GreedyJointRows{g}, p.hidden_rows);
    if (!grid_barrier_wait(barrier)) return false;
    load_rows_to_shared(p.hidden_rows, shared, static_cast<std::uint32_t>(g.rows * g.hidden_size));
    joint_step_column_sums<TWeight>(g, h, blocks, shared);
  } else {
    joint_step_block_sums<TEnc, TWeight>(g, h, blocks, shared);
  }
  // The last block to arrive makes the choices and runs the phase, then releases the others.
  const GridBarrierArrival arrival = grid_barrier_arrive_block(barrier);
  if (arrival.last) {
    if (arrival.go_on) joint_step_finish(phase, g, blocks);
    grid_barrier_release_block(barrier);
  }
  return arrival.go_on;
}

// The label-looping program of GreedyCuda::label_looping_program, phase for phase:
//   begin · queries · while (any active) { joint · first · while (any advancing) { joint · inner } · predictor step ·
//   queries of the rows that emitted · finish } · end of chunk
// Block 0 runs the first and the last phase; the phases after a joint evaluation and after a predictor step run in
// the block that arrives last at the barrier before them (grid_barrier_arrive_block), so that a one-block phase costs
// no barrier of its own. Every block takes its share of the joint's columns, of the predictor's units and columns and
// of the fused models' queries; a grid barrier stands wherever the graph program has a dependent node, except between
// the projection and the queries, which touch different arrays.
template <class TEnc, class TWeight>
__global__ void __launch_bounds__(kJointGemvThreads)
    label_looping_persistent_kernel(GreedyDeviceState g, PersistentGreedy p, RowSums* blocks) {
  // persistent_greedy_shared_bytes: the joint's hidden rows or the predictor's (aligned for load_rows_to_shared).
  extern __shared__ __align__(16) float shared[];
  const GridBarrier barrier{p.barrier, p.barrier + 1, p.status};
  const JointGemvRows h{g.dec, g.weight, g.logits, g.rows, g.hidden_size, g.outputs, g.activation};
  if (blockIdx.x == 0) greedy_phase(GreedyPhase::label_looping_begin, g);
  if (!grid_barrier_wait(barrier)) return;
  if (g.fusion.active()) {
    persistent_fused_queries(g, p, nullptr);
    if (!grid_barrier_wait(barrier)) return;
  }
  unsigned long long phase_start = phase_clock_now();  // ASRDEC_PHASE_TIMES: block 0's thread 0 times the phases
  for (std::int64_t outer = 0; read_flag(g.any_active); ++outer) {
    if (outer >= p.loop_cap) return stop_at_loop_cap(p);
    if (!persistent_joint_pass<TEnc, TWeight>(GreedyPhase::label_looping_first, g, p, h, blocks, shared, barrier))
      return;
    phase_clock_mark(p.phase_ns, kGreedyPhaseFirstJoint, phase_start);
    for (std::int64_t inner = 0; read_flag(g.any_advance); ++inner) {
      if (inner >= p.loop_cap) return stop_at_loop_cap(p);
      if (!persistent_joint_pass<TEnc, TWeight>(GreedyPhase::label_looping_inner, g, p, h, blocks, shared, barrier)) {
        return;
      }
      phase_clock_mark(p.phase_ns, kGreedyPhaseInnerJoints, phase_start);
    }
    for (std::int32_t l = 0; l < p.predictor.layer_count; ++l) {
      const LstmFusedLayer layer = p.predictor.layers[l];  // in registers: the layer's stores alias its fields
      lstm_fused_layer<TWeight>(layer, shared);
      if (!grid_barrier_wait(barrier)) return;
      phase_clock_mark(p.phase_ns, kGreedyPhaseLayers, phase_start);
    }
    fused_projection<TWeight>(p.predictor.projection, shared);
    persistent_fused_queries(g, p, g.state.emit);
    const GridBarrierArrival arrival = grid_barrier_arrive_block(barrier);
    if (arrival.last) {
      if (arrival.go_on) greedy_phase(GreedyPhase::label_looping_finish, g);
      grid_barrier_release_block(barrier);
    }
    if (!arrival.go_on) return;
    phase_clock_mark(p.phase_ns, kGreedyPhaseProjection, phase_start);
  }
  if (blockIdx.x == 0) greedy_phase(GreedyPhase::end_of_chunk, g);
}

int blocks_for(std::int64_t n, int threads) {
  const std::int64_t blocks = (n + threads - 1) / threads;
  return static_cast<int>(blocks < 1 ? 1 : (blocks > 65535 ? 65535 : blocks));
}

}  // namespace

void launch_joint_hidden(const GreedyDeviceState& g, cudaStream_t stream) {
  // row_bad is clear: the begin phases clear it, and so does each phase that used an evaluation's choices.
  const JointHiddenRows rows{g.dec, g.hidden, g.rows, g.hidden_size, g.activation};
  detail::launch_joint_hidden(rows, g.enc_dtype, g.weight_dtype, GreedyJointRows{g}, stream);
}

void launch_joint_step(GreedyPhase phase, const GreedyDeviceState& g, cudaStream_t stream) {
  // warp_sums holds kJointGemvMaxRows rows: a caller that skipped joint_gemv_fits would write past it.
  ASRDEC_EXPECTS(g.rows >= 1 && g.rows <= kJointGemvMaxRows, Error,
                 "internal error: the fused joint step launched for ", g.rows, " rows; it takes 1 to ",
                 kJointGemvMaxRows);
  const JointGemvRows h{g.dec, g.weight, g.logits, g.rows, g.hidden_size, g.outputs, g.activation};
  const auto bytes = static_cast<std::size_t>(joint_gemv_shared_bytes(g.rows, g.hidden_size));
  auto* sums = static_cast<RowSums*>(g.joint_step_sums);
  with_float_type(g.enc_dtype, [&](auto enc) {
    with_float_type(g.weight_dtype, [&](auto weight) {
      joint_step_kernel<decltype(enc), decltype(weight)>
          <<<joint_gemv_blocks(g.outputs), kJointGemvThreads, bytes, stream>>>(phase, g, h, sums);
    });
  });
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "joint_step_kernel");
}

void launch_label_looping_persistent(const GreedyDeviceState& g, const PersistentGreedy& p, cudaStream_t stream) {
  ASRDEC_EXPECTS(g.rows >= 1 && g.rows <= kJointGemvMaxRows && p.blocks >= 1, Error,
                 "internal error: the persistent greedy kernel launched for ", g.rows, " rows on ", p.blocks,
                 " blocks");
  if (p.phase_ns != nullptr) {
    ASRDEC_CUDA_CHECK(cudaMemsetAsync(p.phase_ns, 0, kPersistentGreedyPhases * sizeof(unsigned long long), stream));
  }
  auto* sums = static_cast<RowSums*>(g.joint_step_sums);
  with_float_type(g.enc_dtype, [&](auto enc) {
    with_float_type(g.weight_dtype, [&](auto weight) {
      launch_persistent(label_looping_persistent_kernel<decltype(enc), decltype(weight)>, p.barrier, p.status, p.blocks,
                        kJointGemvThreads, p.shared_bytes, stream, g, p, sums);
    });
  });
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "label_looping_persistent_kernel");
}

std::size_t persistent_greedy_sums_bytes(int blocks, std::int64_t rows) {
  return static_cast<std::size_t>(blocks) * static_cast<std::size_t>(rows) * sizeof(RowSums);
}

int persistent_greedy_resident_blocks(DType enc_dtype, DType weight_dtype, std::size_t shared_bytes) {
  int blocks = 0;
  with_float_type(enc_dtype, [&](auto enc) {
    with_float_type(weight_dtype, [&](auto weight) {
      blocks = resident_blocks(label_looping_persistent_kernel<decltype(enc), decltype(weight)>, kJointGemvThreads,
                               shared_bytes);
    });
  });
  return blocks;
}

std::int64_t preload_persistent_greedy_kernels() {
  return opt_in_joint_gemv_shared_all(
      [](auto enc, auto weight) { return label_looping_persistent_kernel<decltype(enc), decltype(weight)>; });
}

std::size_t joint_step_sums_bytes(std::int64_t rows, std::int64_t outputs) {
  return static_cast<std::size_t>(joint_gemv_blocks(outputs)) * static_cast<std::size_t>(rows) * sizeof(RowSums);
}

void launch_joint_epilogue_then_phase(GreedyPhase phase, const GreedyDeviceState& g, cudaStream_t stream) {
  joint_epilogue_then_phase_kernel<<<blocks_for(g.rows, 1), kThreads, 0, stream>>>(phase, g);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "joint_epilogue_then_phase_kernel");
}

void launch_greedy_phase(GreedyPhase phase, const GreedyDeviceState& g, cudaStream_t stream) {
  greedy_phase_kernel<<<1, kPhaseThreads, 0, stream>>>(phase, g);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "greedy_phase_kernel");
}

std::int64_t preload_greedy_kernels() {
  cudaFuncAttributes a{};
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, greedy_phase_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, joint_epilogue_then_phase_kernel));
  preload_joint_hidden<GreedyJointRows>();
  return opt_in_joint_gemv_shared_all(
      [](auto enc, auto weight) { return joint_step_kernel<decltype(enc), decltype(weight)>; });
}

}  // namespace asrdec::detail

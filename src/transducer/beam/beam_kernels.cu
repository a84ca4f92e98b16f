#include "asrdec/detail/float16.hpp"
#include "asrdec/detail/transducer_step.hpp"
#include "core/bad_value.hpp"
#include "core/cuda/check.hpp"
#include "core/cuda/cooperative_launch.hpp"
#include "core/cuda/grid_barrier.cuh"
#include "core/cuda/last_block.cuh"
#include "core/cuda/phase_clock.cuh"
#include "core/environment_switch.hpp"
#include "core/logsumexp.hpp"
#include "hyps/beam_slot_cache.cuh"
#include "hyps/block_topk.cuh"
#include "lm/ngram_advance.cuh"
#include "transducer/beam/beam_kernels.hpp"
#include "transducer/model/joint_gemv.cuh"
#include "transducer/model/joint_hidden.cuh"
#include "transducer/model/lstm_fused.cuh"

namespace asrdec::detail {
namespace {

constexpr int kThreads = 256;
constexpr int kPhaseThreads = 1024;
constexpr int kProposeThreads = 128;
constexpr int kWindProposeThreads = 256;  // a warp per window row: the default window has 8
constexpr int kWindStepThreads = 64;      // a WIND pool has K·(W+K) slots: 48 at beam 4, window 8
constexpr int kAesExpandThreads = 64;     // a thread per candidate: K·(K + beta) = 24 at beam 4
constexpr unsigned kFullWarp = 0xffffffffu;

int blocks_for(std::int64_t n, int threads) {
  const std::int64_t blocks = (n + threads - 1) / threads;
  return static_cast<int>(blocks < 1 ? 1 : (blocks > 65535 ? 65535 : blocks));
}

// Which slots are evaluated next and whether the loop goes on; one block, so the flag is written once.
__device__ void activity(const BeamDeviceState& g) {
  const std::int32_t batch = g.args->batch;
  const std::int32_t K = g.hyps.beam;
  int any = 0;
  for (std::int64_t b = threadIdx.x; b < g.max_batch; b += blockDim.x) {
    std::int32_t running = 0;
    const bool steps = b < batch && (g.row_last[b] != 0 || !alsd_waits_for_frames(g.hyps, b, g.lengths[b]));
    for (std::int32_t k = 0; k < K; ++k) {
      const std::int64_t s = beam_slot(g.hyps, b, k);
      const std::int32_t active = steps && alsd_row_active(g.hyps, s, g.lengths[b]) ? 1 : 0;
      g.row_active[s] = active;
      running |= active;
    }
    g.running[b] = running;
    any |= running;
  }
  any = __syncthreads_or(any);
  if (threadIdx.x == 0) *g.any_running = any;
}

// The begin kernels start every beam over, unless the executor loaded the lanes' channels (streaming).
__device__ void clear_beams_unless_seeded(const BeamDeviceState& g) {
  if (*g.seeded != 0) return;
  for (std::int64_t b = threadIdx.x; b < g.max_batch; b += blockDim.x) beam_clear(g.hyps, b);
}

__global__ void __launch_bounds__(kPhaseThreads) alsd_begin_kernel(BeamDeviceState g) {
  clear_beams_unless_seeded(g);
  __syncthreads();
  activity(g);
}

// Which slot (s), utterance (b) and frame joint row r evaluates; false for a row nothing reads this step. ALSD++ and
// AES++: row r is slot r on its frame (AES++: the common frame). WIND: row (b·K + g)·W + j is group member g's
// window position j.
__device__ bool joint_row(const BeamDeviceState& g, std::int64_t r, std::int64_t& s, std::int64_t& b,
                          std::int32_t& frame) {
  if (g.wind.window > 0) {
    const std::int64_t member = r / g.wind.window;
    const auto j = static_cast<std::int32_t>(r - member * g.wind.window);
    b = member / g.beam;
    const auto rank = static_cast<std::int32_t>(member - b * g.beam);
    if (!g.running[b] || rank >= g.wind.group_size[b] || j >= g.wind.width[b]) return false;
    s = beam_slot(g.hyps, b, g.wind.group[member]);
    frame = g.wind.frame[b] + j;
    return true;
  }
  s = r;
  if (!g.row_active[s]) return false;
  b = s / g.hyps.beam;
  frame = g.aes.frame != nullptr ? *g.aes.frame : g.hyps.next_time[s];
  return true;
}

// Joint rows of beam search (joint_row); a bad encoder value is recorded in the decode's one bad-value word.
struct BeamJointRows {
  BeamDeviceState g;
  __device__ JointEncArgs args() const { return *g.args; }
  __device__ bool gather(std::int64_t r, const JointEncArgs& /*args*/, JointGather& at) const {
    std::int64_t s = 0;
    if (!joint_row(g, r, s, at.b, at.frame)) return false;
    at.dec_row = s;
    at.bad = g.bad_value;
    at.check = g.check_values != 0;
    return true;
  }
};

// The log-sum-exp of the warp's values, the same in every lane.
__device__ LogSumExp warp_lse(LogSumExp lse) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    lse = lse_merge(
        lse, LogSumExp{__shfl_xor_sync(kFullWarp, lse.max, offset), __shfl_xor_sync(kFullWarp, lse.sum, offset)});
  }
  return lse;
}

// The log-sum-exp of the block's values, the same in every thread (any block of up to 1024 threads: the propose
// kernels' and the persistent kernel's).
__device__ LogSumExp block_lse(LogSumExp lse) {
  __shared__ float maxes[32];
  __shared__ float sums[32];
  lse = warp_lse(lse);
  const int warp = static_cast<int>(threadIdx.x) / 32;
  if ((threadIdx.x & 31) == 0) {
    maxes[warp] = lse.max;
    sums[warp] = lse.sum;
  }
  __syncthreads();
  LogSumExp all = lse_identity();
  const int warps = static_cast<int>(blockDim.x / 32);
  for (int w = 0; w < warps; ++w) all = lse_merge(all, LogSumExp{maxes[w], sums[w]});
  __syncthreads();
  return all;
}

// Joint row r's token columns become their log-softmax (bias added), in place, by `stride` threads of which this is
// `first`; `reduce` combines their log-sum-exps (block_lse, warp_lse) and `sync` publishes the row to them.
template <class Reduce, class Sync>
__device__ float* row_log_softmax_by(const BeamDeviceState& g, std::int64_t r, std::int64_t first, std::int64_t stride,
                                     const Reduce& reduce, const Sync& sync) {
  float* logp = g.logits + r * g.outputs;
  LogSumExp lse = lse_identity();
  bool finite = true;
  for (std::int64_t o = first; o < g.token_columns; o += stride) {
    const float x = logp[o] + g.bias[o];
    finite = finite && is_finite_value(x);
    logp[o] = x;
    lse = lse_add(lse, x);
  }
  for (std::int64_t o = g.token_columns + first; o < g.outputs; o += stride) {
    finite = finite && is_finite_value(logp[o] + g.bias[o]);
  }
  if (g.check_values && !finite) {
    // Finite encoder values too large for the joint: reported as the CPU reports them (bad_enc_value_error).
    std::int64_t s = 0, b = 0;
    std::int32_t frame = 0;
    if (joint_row(g, r, s, b, frame)) atomicMin(g.bad_value, pack_bad_value(b, frame, kJointOutputColumn, false));
  }
  lse = reduce(lse);
  const float norm = lse.max + logf(lse.sum);
  for (std::int64_t o = first; o < g.token_columns; o += stride) logp[o] -= norm;
  sync();
  return logp;
}

// row_log_softmax_by the whole block.
__device__ float* row_log_softmax(const BeamDeviceState& g, std::int64_t r) {
  return row_log_softmax_by(g, r, threadIdx.x, blockDim.x, block_lse, [] { __syncthreads(); });
}

// row_log_softmax_by the calling warp alone (its lanes see the row after it; other warps after a block barrier).
__device__ float* warp_row_log_softmax(const BeamDeviceState& g, std::int64_t r) {
  return row_log_softmax_by(g, r, threadIdx.x & 31, 32, warp_lse, [] { __syncwarp(); });
}

__global__ void __launch_bounds__(kProposeThreads) beam_log_softmax_kernel(BeamDeviceState g) {
  for (std::int64_t s = blockIdx.x; s < g.slots; s += gridDim.x) {
    if (g.row_active[s]) row_log_softmax(g, s);  // block-uniform
  }
}

// The dynamic shared memory of the kernels that cache beam slots (beam_slot_cache.cuh): at most this much, so that
// no launch needs the opt-in beyond 48 KiB with the kernels' static shared memory; larger pools stay in global
// memory.
constexpr std::size_t kSlotCacheLimit = 40 * 1024;

// f(b, i) for every i < per_utterance of every running utterance b (its slots, or its candidates), the block's
// threads striding over them.
template <class F>
__device__ void for_each_running(const BeamDeviceState& g, std::int64_t per_utterance, const F& f) {
  const std::int64_t n = g.max_batch * per_utterance;
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const std::int64_t b = i / per_utterance;
    if (g.running[b]) f(b, static_cast<std::int32_t>(i - b * per_utterance));
  }
}

// alsd_select_phases for every running utterance in the block that runs it, a thread per slot or candidate, on a
// shared-memory copy of the slots' state when `cache_bytes` holds them all; the slots of the others keep their
// states.
__device__ void alsd_select_all(const BeamDeviceState& g, unsigned char* cache, std::size_t cache_bytes) {
  const std::int32_t K = g.hyps.beam;
  const bool cached = beam_slot_cache_fits(g.slots, cache_bytes);
  const BeamHypsRef h = cached ? beam_slot_cache_load(g.hyps, 0, g.slots, cache) : g.hyps;
  const auto each_slot = [&g, K](const auto& f) { for_each_running(g, K, f); };
  const auto each_candidate = [&g, K](const auto& f) { for_each_running(g, static_cast<std::int64_t>(K) * K, f); };
  alsd_select_phases(h, g.proposals, g.take_from, g.take_label, each_slot, each_candidate, [] { __syncthreads(); });
  for (std::int64_t s = threadIdx.x; s < g.slots; s += blockDim.x) {
    if (g.running[s / K]) continue;
    g.take_from[s] = s;
    g.take_label[s] = -1;
  }
  if (!cached) return;  // block-uniform
  __syncthreads();
  beam_slot_cache_store(h, g.hyps, 0, g.slots);
}

// The k (≤ kCap) best of a row's candidates (alsd_rank_share): each thread ranks its share, the block merges the
// lists; thread 0's best/best_ids hold them, as alsd_propose's loop would. Every thread of the block calls it.
template <int kCap>
__device__ std::int32_t block_rank_row(const BeamFusionRule& rule, const AlsdRow& row, float offset, std::int32_t k,
                                       float* best, std::int32_t* best_ids) {
  __shared__ BlockTopkShared topk;
  float my_scores[kCap];
  std::int32_t my_ids[kCap];
  std::int32_t count = 0;
  alsd_rank_share(rule, row, offset, k, static_cast<std::int32_t>(threadIdx.x), static_cast<std::int32_t>(blockDim.x),
                  my_scores, my_ids, count);
  return block_topk_merge(my_scores, my_ids, count, k, best, best_ids, topk);
}

// alsd_propose for slots first, first + stride, ... (a block each; every thread of the block calls it).
__device__ void alsd_propose_slots(const BeamDeviceState& g, std::int64_t first, std::int64_t stride) {
  for (std::int64_t s = first; s < g.slots; s += stride) {
    const std::int64_t b = s / g.hyps.beam;
    if (!g.row_active[s]) {  // block-uniform
      if (threadIdx.x == 0) alsd_idle_proposals(g.running[b] != 0, g.hyps.scores[s], g.proposals[s]);
      continue;
    }
    // The graph program's block of kProposeThreads sums the row's columns; a larger block (the persistent kernel's)
    // leaves its other threads out, so that every block size gives the normaliser the same bits.
    float* logp =
        row_log_softmax_by(g, s, threadIdx.x < kProposeThreads ? static_cast<std::int64_t>(threadIdx.x) : g.outputs,
                           kProposeThreads, block_lse, [] { __syncthreads(); });
    float* logp_duration = g.num_durations > 0 ? logp + g.token_columns : nullptr;
    if (logp_duration != nullptr) {  // TDT: D columns, one thread
      if (threadIdx.x == 0) {
        for (std::int32_t d = 0; d < g.num_durations; ++d) logp_duration[d] += g.bias[g.token_columns + d];
        log_softmax_in_place(logp_duration, g.num_durations);
      }
      __syncthreads();
    }
    const AlsdRow row{logp,        logp_duration,   g.blank,   static_cast<std::int32_t>(g.token_columns),
                      g.durations, g.num_durations, &g.fusion, s};
    if (g.hyps.on_frame[s] >= g.max_symbols) {  // block-uniform
      if (threadIdx.x == 0) alsd_force_blank(g.rule, row, g.proposals[s]);
      __syncthreads();
      continue;
    }
    const float offset = beam_token_offset(g.rule, logp[g.blank]);
    const std::int32_t K = g.hyps.beam;
    __shared__ float best[kMaxBeam];
    __shared__ std::int32_t best_ids[kMaxBeam];
    const std::int32_t kept = block_rank_row<kMaxBeam>(g.rule, row, offset, K, best, best_ids);
    if (threadIdx.x == 0) alsd_proposals_from_topk(g.rule, row, K, offset, best, best_ids, kept, g.proposals[s]);
    __syncthreads();
  }
}

__global__ void __launch_bounds__(kProposeThreads) alsd_propose_kernel(BeamDeviceState g, std::size_t cache_bytes) {
  alsd_propose_slots(g, blockIdx.x, gridDim.x);
  // The block that finishes last selects every utterance's K best from all the proposals (one node less a step than
  // a select kernel of its own).
  extern __shared__ __align__(8) unsigned char cache[];  // cache_bytes of it
  if (last_block_done(g.blocks_done)) alsd_select_all(g, cache, cache_bytes);
}

// Slot s takes over the LM and boosting states of slot `from` (into the next_* buffers), extended by `token` (-1:
// none).
__device__ void take_fused_states(const BeamDeviceState& g, std::int64_t s, std::int64_t from, std::int32_t token) {
  if (g.fusion.lm.state != nullptr) {
    fusion_take(g.fusion, g.fusion.lm, g.next_lm_state, g.next_lm_total, s, from, token);
  }
  if (g.fusion.boost.state != nullptr) {
    fusion_take(g.fusion, g.fusion.boost, g.next_boost_state, g.next_boost_total, s, from, token);
  }
}

// Slot s's next LM and boosting states become current.
__device__ void commit_fused_states(const BeamDeviceState& g, std::int64_t s) {
  if (g.fusion.lm.state != nullptr) {
    g.fusion.lm.state[s] = g.next_lm_state[s];
    g.fusion.lm.total[s] = g.next_lm_total[s];
  }
  if (g.fusion.boost.state != nullptr) {
    g.fusion.boost.state[s] = g.next_boost_state[s];
    g.fusion.boost.total[s] = g.next_boost_total[s];
  }
}

// One thread per element of the predictor state and output; the first element of a slot also moves its scalars.
__global__ void __launch_bounds__(kThreads) beam_take_kernel(BeamDeviceState g) {
  const std::int64_t width = g.state_size + g.hidden_size;
  const std::int64_t n = g.slots * width;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t s = i / width;
    const std::int64_t e = i - s * width;
    const std::int64_t from = g.take_from[s];
    if (e < g.state_size) {
      g.next_state[s * g.state_size + e] = g.state[from * g.state_size + e];
    } else {
      const std::int64_t j = e - g.state_size;
      g.next_dec[s * g.hidden_size + j] = g.dec[from * g.hidden_size + j];
    }
    if (e != 0) continue;
    const std::int32_t label = g.take_label[s];
    const bool token = label >= 0 && label != g.blank;
    g.step_mask[s] = token ? 1 : 0;
    g.step_label[s] = token ? label : g.blank;
    take_fused_states(g, s, from, token ? label : -1);
  }
}

// The next_* buffers become current (a kernel rather than copies, so the loop body holds only kernel nodes), then
// the phase in the last block (declared below with the algorithms' kernels).
__device__ void beam_phase(BeamPhase phase, const BeamDeviceState& g);

__global__ void __launch_bounds__(kThreads) beam_commit_then_kernel(BeamPhase phase, BeamDeviceState g) {
  const std::int64_t width = g.state_size + g.hidden_size;
  const std::int64_t n = g.slots * width;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t s = i / width;
    const std::int64_t e = i - s * width;
    if (e < g.state_size) {
      g.state[s * g.state_size + e] = g.next_state[s * g.state_size + e];
    } else {
      const std::int64_t j = e - g.state_size;
      g.dec[s * g.hidden_size + j] = g.next_dec[s * g.hidden_size + j];
    }
    if (e == 0) commit_fused_states(g, s);
  }
  if (last_block_done(g.blocks_done)) beam_phase(phase, g);
}

// --- AES++ ---

// The utterances that have frame t, their live slots expanding and evaluated, and the outer loop flag; one block.
__device__ void aes_frame_masks(const BeamDeviceState& g, std::int32_t t) {
  const std::int32_t batch = g.args->batch;
  int any = 0;
  for (std::int64_t b = threadIdx.x; b < g.max_batch; b += blockDim.x) {
    const bool on = b < batch && t < g.lengths[b];
    g.running[b] = on ? 1 : 0;
    for (std::int32_t k = 0; k < g.hyps.beam; ++k) {
      const std::int64_t s = beam_slot(g.hyps, b, k);
      const std::int32_t expanding = on && g.hyps.scores[s] != -__builtin_huge_valf() ? 1 : 0;
      g.aes.expanding[s] = expanding;
      g.aes.querying[s] = expanding;
      g.row_active[s] = expanding;
    }
    any |= on ? 1 : 0;
  }
  any = __syncthreads_or(any);
  if (threadIdx.x == 0) *g.any_running = any;
}

__device__ AesFrame aes_frame(const BeamDeviceState& g) {
  return AesFrame{g.logits, static_cast<std::int32_t>(g.outputs), g.blank, &g.fusion};
}

__global__ void __launch_bounds__(kPhaseThreads) aes_begin_kernel(BeamDeviceState g) {
  clear_beams_unless_seeded(g);
  if (threadIdx.x == 0) *g.aes.frame = 0;
  __syncthreads();
  aes_frame_masks(g, 0);
}

__global__ void __launch_bounds__(kPhaseThreads) aes_next_frame_kernel(BeamDeviceState g) {
  const std::int32_t t = *g.aes.frame + 1;
  __syncthreads();  // every thread has read t before it changes
  if (threadIdx.x == 0) {
    *g.aes.frame = t;
    g.loop_counts[0] += 1;  // the frame just searched
  }
  aes_frame_masks(g, t);
}

// One block: prefix search of every utterance that has the frame (its two phases, a thread per slot, on a
// shared-memory copy of the slots' state when `cache_bytes` holds it), then the inner loop's start.
__global__ void __launch_bounds__(kPhaseThreads) aes_prefix_search_kernel(BeamDeviceState g, std::size_t cache_bytes) {
  extern __shared__ __align__(8) unsigned char cache[];  // cache_bytes of it
  const std::int32_t t = *g.aes.frame;
  const AesFrame frame = aes_frame(g);
  const std::int32_t K = g.hyps.beam;
  const bool cached = beam_slot_cache_fits(g.slots, cache_bytes);
  const BeamHypsRef h = cached ? beam_slot_cache_load(g.hyps, 0, g.slots, cache) : g.hyps;
  for_each_running(g, K, [&](std::int64_t b, std::int32_t k) {
    beam_stage_prefix_search(h, b, k, t, AesTokenScore{g.rule, frame, h, b});
  });
  __syncthreads();
  for_each_running(g, K, [&](std::int64_t b, std::int32_t k) { beam_commit_prefix_search(h, b, k); });
  __syncthreads();
  if (cached) beam_slot_cache_store(h, g.hyps, 0, g.slots);
  int any = 0;
  for (std::int64_t b = threadIdx.x; b < g.max_batch; b += blockDim.x) {
    if (g.running[b]) any |= aes_any_expanding(g.hyps, b, g.aes.expanding) ? 1 : 0;
  }
  any = __syncthreads_or(any);
  if (threadIdx.x == 0) {
    *g.aes.step = 0;
    *g.aes.any_expanding = any;
  }
}

// A block per slot of an utterance that is expanding: the slot's proposals (aes_slot_proposals), its labels ranked
// by the block (block_topk_merge).
__global__ void __launch_bounds__(kProposeThreads) aes_propose_kernel(BeamDeviceState g) {
  const AesFrame frame = aes_frame(g);
  const std::int32_t C = g.aes.per_hypothesis;
  for (std::int64_t s = blockIdx.x; s < g.slots; s += gridDim.x) {
    const std::int64_t b = s / g.hyps.beam;
    const auto k = static_cast<std::int32_t>(s - b * g.hyps.beam);
    if (!g.running[b] || !aes_any_expanding(g.hyps, b, g.aes.expanding)) continue;  // block-uniform
    AesProposals& p = g.aes.proposals[s];
    if (g.hyps.scores[s] == -__builtin_huge_valf() || !g.aes.expanding[s]) {  // block-uniform
      if (threadIdx.x == 0) aes_slot_proposals(g.rule, g.hyps, b, k, C, g.aes.gamma, frame, g.aes.expanding, p);
      continue;
    }
    const AlsdRow row = frame.row(s);
    const float offset = beam_token_offset(g.rule, row.logp[row.blank]);
    __shared__ float best[kMaxAesProposals];
    __shared__ std::int32_t best_ids[kMaxAesProposals];
    const std::int32_t kept = block_rank_row<kMaxAesProposals>(g.rule, row, offset, C, best, best_ids);
    // aes_proposals_from_topk and aes_drop_repeats, their independent entries a thread each.
    const float top = aes_best_of(best, kept);
    for (std::int32_t j = threadIdx.x; j < kept; j += blockDim.x) {
      aes_proposal_from_topk(g.rule, row, g.aes.gamma, offset, top, best, best_ids, j, p);
      aes_drop_repeat(g.hyps, b, k, frame.blank, j, p);
    }
    if (threadIdx.x == 0) p.count = kept;
    __syncthreads();
  }
}

// A block per utterance that expands, its threads over the slots and candidates (aes_expand_phases; aes_propose_kernel
// wrote the proposals), on a shared-memory copy of the slots' state when `cache_bytes` holds it; the slots of the
// others keep their states.
__global__ void __launch_bounds__(kAesExpandThreads) aes_expand_kernel(BeamDeviceState g, std::size_t cache_bytes) {
  extern __shared__ __align__(8) unsigned char cache[];  // cache_bytes of it
  const AesFrame frame = aes_frame(g);
  const std::int32_t K = g.hyps.beam;
  const std::int32_t candidates = K * g.aes.per_hypothesis;
  const bool cached = beam_slot_cache_fits(K, cache_bytes);
  for (std::int64_t b = blockIdx.x; b < g.max_batch; b += gridDim.x) {
    // Every thread reads `expanding` here, three barriers before the phases write it.
    if (!g.running[b] || !aes_any_expanding(g.hyps, b, g.aes.expanding)) {  // block-uniform
      for (std::int32_t k = threadIdx.x; k < K; k += blockDim.x) {
        const std::int64_t s = beam_slot(g.hyps, b, k);
        g.take_from[s] = s;
        g.take_label[s] = -1;
      }
      continue;
    }
    const std::int64_t first = beam_slot(g.hyps, b, 0);
    const BeamHypsRef h = cached ? beam_slot_cache_load(g.hyps, first, K, cache) : g.hyps;
    const auto each_slot = [b, K](const auto& f) {
      for (std::int32_t k = threadIdx.x; k < K; k += blockDim.x) f(b, k);
    };
    const auto each_candidate = [b, candidates](const auto& f) {
      for (std::int32_t c = threadIdx.x; c < candidates; c += blockDim.x) f(b, c);
    };
    aes_expand_phases(g.rule, h, g.aes.per_hypothesis, g.aes.gamma, frame, g.aes.proposals, g.aes.expanding,
                      g.take_from, g.take_label, /*propose=*/false, each_slot, each_candidate, [] { __syncthreads(); });
    __syncthreads();
    if (cached) beam_slot_cache_store(h, g.hyps, first, K);
    __syncthreads();  // the next utterance's load reuses the cache
  }
}

__device__ void aes_mark_rows(const BeamDeviceState& g) {
  int any = 0;
  const std::int32_t step = *g.aes.step + 1;
  const bool steps_left = step < g.aes.steps;
  for (std::int64_t s = threadIdx.x; s < g.slots; s += blockDim.x) {
    const std::int32_t expanding = g.aes.expanding[s];
    g.row_active[s] = expanding;
    g.aes.querying[s] = steps_left ? expanding : 0;
    any |= expanding != 0 ? 1 : 0;
  }
  any = __syncthreads_or(any);
  if (threadIdx.x == 0) {
    *g.aes.step = step;
    *g.aes.any_expanding = any && step < g.aes.steps ? 1 : 0;
  }
}

__global__ void __launch_bounds__(kThreads) aes_end_frame_kernel(BeamDeviceState g) {
  const AesFrame frame = aes_frame(g);
  for (std::int64_t b = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; b < g.max_batch;
       b += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    if (g.running[b]) aes_end_frame(g.rule, g.hyps, b, g.aes.expanding, frame);
  }
}

// --- WIND beam search ---

// wind_group by the calling warp, its lanes over the pool's slots: utterance b's earliest unfinished frame (a
// warp-wide minimum) and its first `cap` live slots on it in slot order (each lane's place from a ballot), into
// `group`; returns how many slots are on the frame. The same in every lane.
__device__ std::int32_t warp_wind_group(const BeamHypsRef& h, std::int64_t b, std::int32_t length, std::int32_t cap,
                                        std::int32_t& frame, std::int32_t* group) {
  const auto lane = static_cast<std::int32_t>(threadIdx.x & 31);
  std::int32_t t = length;
  for (std::int32_t k = lane; k < h.beam; k += 32) {
    const std::int64_t s = beam_slot(h, b, k);
    if (h.scores[s] != -__builtin_huge_valf() && h.next_time[s] < t) t = h.next_time[s];
  }
  for (int offset = 16; offset > 0; offset >>= 1) t = min(t, __shfl_xor_sync(kFullWarp, t, offset));
  frame = t;
  if (t >= length) return 0;  // warp-uniform
  std::int32_t count = 0;
  for (std::int32_t first = 0; first < h.beam; first += 32) {
    const std::int32_t k = first + lane;
    bool on = false;
    if (k < h.beam) {
      const std::int64_t s = beam_slot(h, b, k);
      on = h.scores[s] != -__builtin_huge_valf() && h.next_time[s] == t;
    }
    const unsigned on_lanes = __ballot_sync(kFullWarp, on);
    const std::int32_t at = count + __popc(on_lanes & ((1u << lane) - 1u));
    if (on && at < cap) group[at] = k;
    count += __popc(on_lanes);
  }
  return count;
}

// Every utterance's group, window and activity, and the loop flag; one block, a warp per utterance.
__device__ void wind_groups(const BeamDeviceState& g) {
  const std::int32_t batch = g.args->batch;
  const std::int32_t K = g.beam;
  const std::int32_t P = g.hyps.beam;
  const auto lane = static_cast<std::int32_t>(threadIdx.x & 31);
  int any = 0;
  for (std::int64_t b = threadIdx.x / 32; b < g.max_batch; b += blockDim.x / 32) {  // warp-uniform
    std::int32_t* group = g.wind.group + b * K;
    std::int32_t frame = 0;
    const std::int32_t found = b < batch ? warp_wind_group(g.hyps, b, g.lengths[b], K, frame, group) : 0;
    // The frame cap keeps a group within K slots; were it broken, the call fails as on the CPU.
    std::int32_t count = min(found, K);
    if (count > 0 && g.row_last[b] == 0 && wind_waits_for_frames(frame, g.wind.window, g.lengths[b])) count = 0;
    for (std::int32_t k = lane; k < P; k += 32) g.row_active[beam_slot(g.hyps, b, k)] = 0;
    __syncwarp();  // the lanes' group entries and cleared rows, before the members are marked
    for (std::int32_t m = lane; m < count; m += 32) g.row_active[beam_slot(g.hyps, b, group[m])] = 1;
    if (lane == 0) {
      if (found > K) atomicOr(g.wind.internal_error, 1);
      g.wind.group_size[b] = count;
      g.wind.frame[b] = frame;
      g.wind.width[b] = count > 0 ? min(g.wind.window, g.lengths[b] - frame) : 0;
      g.running[b] = count > 0 ? 1 : 0;
    }
    any |= count > 0 ? 1 : 0;
  }
  any = __syncthreads_or(any);
  if (threadIdx.x == 0) *g.any_running = any;
}

__global__ void __launch_bounds__(kPhaseThreads) wind_begin_kernel(BeamDeviceState g) {
  clear_beams_unless_seeded(g);
  __syncthreads();
  wind_groups(g);
}

// Runs at the end of each pass of a loop (one block), which it counts: ALSD++ and WIND a step, AES++ an expansion
// step.
__device__ void beam_phase(BeamPhase phase, const BeamDeviceState& g) {
  switch (phase) {
    case BeamPhase::alsd_activity:
      activity(g);
      break;
    case BeamPhase::wind_groups:
      wind_groups(g);
      break;
    case BeamPhase::aes_mark_rows:
      aes_mark_rows(g);
      break;
  }
  if (threadIdx.x == 0) g.loop_counts[phase == BeamPhase::aes_mark_rows ? 1 : 0] += 1;
}

// Utterance b's window log-probabilities (RNN-T: a joint row is exactly the V+1 token columns).
__device__ WindWindows wind_windows(const BeamDeviceState& g, std::int64_t b) {
  return WindWindows{g.logits + b * g.beam * g.wind.window * g.outputs, g.wind.window, g.blank,
                     static_cast<std::int32_t>(g.token_columns), &g.fusion};
}

// wind_propose for group members first, first + stride, ... (a block each; every thread of the block calls it).
__device__ void wind_propose_members(const BeamDeviceState& g, std::int64_t first, std::int64_t stride) {
  const std::int64_t members = g.max_batch * g.beam;
  for (std::int64_t m = first; m < members; m += stride) {
    const std::int64_t b = m / g.beam;
    const auto rank = static_cast<std::int32_t>(m - b * g.beam);
    if (!g.running[b] || rank >= g.wind.group_size[b]) continue;  // block-uniform
    const std::int32_t width = g.wind.width[b];
    // A warp per window row: the rows' normalisers in parallel rather than one block-wide reduction after another.
    const auto warp = static_cast<std::int32_t>(threadIdx.x / 32);
    const auto warps = static_cast<std::int32_t>(blockDim.x / 32);
    for (std::int32_t j = warp; j < width; j += warps) warp_row_log_softmax(g, m * g.wind.window + j);
    __syncthreads();
    // Each thread ranks its share of the window's columns, then the block merges the lists (wind_propose's result).
    const std::int64_t s = beam_slot(g.hyps, b, g.wind.group[m]);
    const WindowRow row = wind_member_row(wind_windows(g, b), g.hyps, s, rank, width, g.max_symbols);
    float my_scores[kMaxBeam];
    std::int32_t my_ids[kMaxBeam];
    std::int32_t count = 0;
    wind_rank_share(g.rule, row, g.beam, static_cast<std::int32_t>(threadIdx.x), static_cast<std::int32_t>(blockDim.x),
                    my_scores, my_ids, count);
    __shared__ float best[kMaxBeam];
    __shared__ std::int32_t best_ids[kMaxBeam];
    __shared__ BlockTopkShared topk;
    const std::int32_t kept = block_topk_merge(my_scores, my_ids, count, g.beam, best, best_ids, topk);
    // wind_proposals_from_topk, its independent entries a thread each.
    AlsdProposals& proposals = g.proposals[m];
    for (std::int32_t i = threadIdx.x; i < kept; i += blockDim.x) {
      wind_proposal_from_topk(g.rule, row, best, best_ids, i, proposals);
    }
    if (threadIdx.x == 0) proposals.count = kept;
    __syncthreads();
  }
}

__global__ void __launch_bounds__(kWindProposeThreads) wind_propose_kernel(BeamDeviceState g) {
  wind_propose_members(g, blockIdx.x, gridDim.x);
}

// wind_step_phases for utterances first, first + stride, ... (a block each, its threads over the pool's slots; every
// thread of the block calls it), on a shared-memory copy of the pool's state when `cache_bytes` of `cache` hold it;
// the slots of the utterances without a group keep their states.
__device__ void wind_step_utterances(const BeamDeviceState& g, unsigned char* cache, std::size_t cache_bytes,
                                     std::int64_t first_utterance, std::int64_t stride) {
  __shared__ bool fits;
  const std::int32_t P = g.hyps.beam;
  const bool cached = beam_slot_cache_fits(P, cache_bytes);
  const auto each = [P](const auto& f) {
    for (std::int32_t k = threadIdx.x; k < P; k += blockDim.x) f(k);
  };
  const auto sync = [] { __syncthreads(); };
  const auto once = [](const auto& f) {
    if (threadIdx.x == 0) f();
  };
  for (std::int64_t b = first_utterance; b < g.max_batch; b += stride) {
    if (g.running[b]) {  // block-uniform
      const std::int64_t first = beam_slot(g.hyps, b, 0);
      const BeamHypsRef h = cached ? beam_slot_cache_load(g.hyps, first, P, cache) : g.hyps;
      wind_step_phases(g.rule, h, b, g.wind.frame[b], g.wind.group + b * g.beam, g.wind.group_size[b],
                       wind_windows(g, b), g.proposals + b * g.beam, g.beam, g.wind.candidates + b * P, g.take_from,
                       g.take_label, fits, each, sync, once);
      __syncthreads();
      if (cached) beam_slot_cache_store(h, g.hyps, first, P);
      // The pool's size leaves room for every proposal; were it broken, the call fails as on the CPU (thread 0
      // wrote `fits` itself, in the `once` phase).
      if (threadIdx.x == 0 && !fits) atomicOr(g.wind.internal_error, 2);
      // The next utterance's load reuses the cache.
      __syncthreads();
      continue;
    }
    for (std::int32_t k = threadIdx.x; k < P; k += blockDim.x) {
      const std::int64_t s = beam_slot(g.hyps, b, k);
      g.take_from[s] = s;
      g.take_label[s] = -1;
    }
  }
}

// A block per utterance with a group (wind_step_utterances).
__global__ void __launch_bounds__(kWindStepThreads) wind_step_kernel(BeamDeviceState g, std::size_t cache_bytes) {
  extern __shared__ __align__(8) unsigned char cache[];  // cache_bytes of it
  wind_step_utterances(g, cache, cache_bytes, blockIdx.x, gridDim.x);
}

// --- the persistent kernel (PersistentBeam) ---

// A loop flag written in the serial section of a barrier before this read, and not again before the next barrier.
// Volatile, so the read goes past this multiprocessor's L1.
__device__ bool read_beam_flag(const std::int32_t* flag) {
  return *static_cast<const volatile std::int32_t*>(flag) != 0;
}

// The joint's logits into the step's logits buffer (a functor rather than a lambda over the kernel's parameters,
// which would make ptxas copy them to local memory).
struct StoreLogit {
  float* logits;
  std::int64_t outputs;
  __device__ void operator()(std::int64_t o, std::int64_t row, float logit) const { logits[row * outputs + o] = logit; }
};

// One block, after the selection (or WIND step) wrote every slot's take_label: the slots that took a token get the
// step rows 0, 1, ... in slot order, with their tokens; the other rows are masked off. A slot past the rows (ruled
// out by persistent_beam_step_rows) is reported as an internal error and steps nothing.
__device__ void number_step_rows(const BeamDeviceState& g, const PersistentBeam& p) {
  __shared__ std::int32_t warp_tokens[32];
  __shared__ std::int32_t numbered;  // rows given to the slots before this pass
  if (threadIdx.x == 0) numbered = 0;
  __syncthreads();
  const auto lane = static_cast<std::int32_t>(threadIdx.x & 31);
  const auto warp = static_cast<std::int32_t>(threadIdx.x / 32);
  const auto warps = static_cast<std::int32_t>(blockDim.x / 32);
  for (std::int64_t first = 0; first < g.slots; first += blockDim.x) {  // block-uniform
    const std::int64_t s = first + threadIdx.x;
    const std::int32_t label = s < g.slots ? g.take_label[s] : -1;
    const bool token = label >= 0 && label != g.blank;
    const unsigned tokens = __ballot_sync(kFullWarp, token);
    if (lane == 0) warp_tokens[warp] = __popc(tokens);
    __syncthreads();
    std::int32_t row = numbered + __popc(tokens & ((1u << lane) - 1u));
    for (std::int32_t w = 0; w < warp; ++w) row += warp_tokens[w];
    if (s < g.slots) {
      const bool fits = row < p.step_rows;
      p.row_of_slot[s] = token && fits ? row : -1;
      if (token && fits) {
        p.step_label[row] = label;
        p.step_mask[row] = 1;
      }
      if (token && !fits) atomicOr(p.internal_error, 4);
    }
    __syncthreads();  // every thread has read `numbered` and the warps' counts
    if (threadIdx.x == 0) {
      for (std::int32_t w = 0; w < warps; ++w) numbered += warp_tokens[w];
    }
    __syncthreads();
  }
  for (std::int64_t r = numbered + threadIdx.x; r < p.step_rows; r += blockDim.x) {
    p.step_label[r] = g.blank;
    p.step_mask[r] = 0;
  }
}

// Every slot takes over its parent's states, as beam_take_kernel does, but a slot that took a token takes its
// parent's predictor state into its step row (the predictor steps only those rows) and no output (the step writes
// it); the others into the next_* buffers. Every block its share.
__device__ void persistent_take(const BeamDeviceState& g, const PersistentBeam& p) {
  const std::int64_t S = g.state_size;
  const std::int64_t width = S + g.hidden_size;
  const std::int64_t n = g.slots * width;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t s = i / width;
    const std::int64_t e = i - s * width;
    const std::int64_t from = g.take_from[s];
    const std::int32_t row = p.row_of_slot[s];
    if (e < S) {
      const float value = g.state[from * S + e];
      if (row >= 0) {
        p.step_state[row * S + e] = value;
      } else {
        g.next_state[s * S + e] = value;
      }
    } else if (row < 0) {
      const std::int64_t j = e - S;
      g.next_dec[s * g.hidden_size + j] = g.dec[from * g.hidden_size + j];
    }
    if (e != 0) continue;
    const std::int32_t label = g.take_label[s];
    take_fused_states(g, s, from, label >= 0 && label != g.blank ? label : -1);
  }
}

// The taken and stepped states become current: a slot's from its step row when it took a token, else from the
// next_* buffers. Every block its share.
__device__ void persistent_commit(const BeamDeviceState& g, const PersistentBeam& p) {
  const std::int64_t S = g.state_size;
  const std::int64_t J = g.hidden_size;
  const std::int64_t width = S + J;
  const std::int64_t n = g.slots * width;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t s = i / width;
    const std::int64_t e = i - s * width;
    const std::int32_t row = p.row_of_slot[s];
    if (e < S) {
      g.state[s * S + e] = row >= 0 ? p.step_state[row * S + e] : g.next_state[s * S + e];
    } else {
      const std::int64_t j = e - S;
      g.dec[s * J + j] = row >= 0 ? p.step_dec[row * J + j] : g.next_dec[s * J + j];
    }
    if (e == 0) commit_fused_states(g, s);
  }
}

// The step program of TransducerBeamCuda::step_program, phase for phase:
//   begin · while (a slot is active) { joint · fused queries | propose · [last block] select (WIND: step), number
//   the step rows, activity (WIND: groups) | take · predictor layers · projection · commit }
// Block 0 runs the begin; the selection and what follows it run in the block that arrives last at the barrier after
// the proposals (grid_barrier_arrive_block). The activity phase moves up from the commit, where the graph program
// runs it, to the selection: it reads only the beams, which the selection has finished, and nothing before the
// next step's joint reads what it writes. Every block takes its share of the joint's columns, of the fused models'
// queries, of the proposals (a block per slot or group member), of the take, the predictor and the commit.
template <class TEnc, class TWeight>
__global__ void __launch_bounds__(kJointGemvThreads) beam_persistent_kernel(BeamDeviceState g, PersistentBeam p) {
  // The phases take turns with it, barriers apart: the joint's hidden rows, the slots' cache, the predictor's rows.
  extern __shared__ __align__(16) unsigned char dynamic_shared[];
  float* shared = reinterpret_cast<float*>(dynamic_shared);
  const GridBarrier barrier{p.barrier, p.barrier + 1, p.status};
  const bool windowed = g.wind.window > 0;
  const JointGemvRows h{g.dec, g.weight, g.logits, g.joint_rows, g.hidden_size, g.outputs, g.activation};
  if (blockIdx.x == 0) {
    clear_beams_unless_seeded(g);
    __syncthreads();
    if (windowed) {
      wind_groups(g);
    } else {
      activity(g);
    }
  }
  if (!grid_barrier_wait(barrier)) return;
  unsigned long long phase_start = phase_clock_now();  // ASRDEC_PHASE_TIMES: block 0's thread 0 times the phases
  for (std::int64_t step = 0; read_beam_flag(g.any_running); ++step) {
    if (step >= p.loop_cap) {  // every block counts the same steps
      if (blockIdx.x == 0 && threadIdx.x == 0) atomicCAS(p.status, kGridBarrierOk, kGridBarrierLoopCap);
      return;
    }
    // The joint's logits and the fused queries: different arrays, one phase.
    if (p.hidden_rows != nullptr) {  // the same in every block
      joint_gemv_hidden_share<TEnc, TWeight>(h, BeamJointRows{g}, p.hidden_rows);
      if (!grid_barrier_wait(barrier)) return;
      load_rows_to_shared(p.hidden_rows, shared, static_cast<std::uint32_t>(g.joint_rows * g.hidden_size));
    } else {
      joint_gemv_hidden<TEnc, TWeight>(h, BeamJointRows{g}, shared);
    }
    joint_gemv_columns<TWeight>(h, shared, StoreLogit{g.logits, g.outputs});
    ngram_advance_on_grid(p.lm, g.fusion.lm, p.lm_slice, g.slots, g.row_active);
    ngram_advance_on_grid(p.boost, g.fusion.boost, p.boost_slice, g.slots, g.row_active);
    if (!grid_barrier_wait(barrier)) return;
    phase_clock_mark(p.phase_ns, kBeamPhaseJoint, phase_start);
    if (windowed) {
      wind_propose_members(g, blockIdx.x, gridDim.x);
    } else {
      alsd_propose_slots(g, blockIdx.x, gridDim.x);
    }
    const GridBarrierArrival arrival = grid_barrier_arrive_block(barrier);
    if (arrival.last) {
      if (arrival.go_on) {
        if (windowed) {
          wind_step_utterances(g, dynamic_shared, p.cache_bytes, 0, 1);
        } else {
          alsd_select_all(g, dynamic_shared, p.cache_bytes);
        }
        __syncthreads();
        number_step_rows(g, p);
        beam_phase(windowed ? BeamPhase::wind_groups : BeamPhase::alsd_activity, g);
      }
      grid_barrier_release_block(barrier);
    }
    if (!arrival.go_on) return;
    phase_clock_mark(p.phase_ns, kBeamPhaseSelect, phase_start);
    persistent_take(g, p);
    if (!grid_barrier_wait(barrier)) return;
    phase_clock_mark(p.phase_ns, kBeamPhaseTake, phase_start);
    for (std::int32_t l = 0; l < p.predictor.layer_count; ++l) {
      const LstmFusedLayer layer = p.predictor.layers[l];  // in registers: the layer's stores alias its fields
      lstm_fused_layer<TWeight>(layer, shared);
      if (!grid_barrier_wait(barrier)) return;
      phase_clock_mark(p.phase_ns, kBeamPhaseLayers, phase_start);
    }
    fused_projection<TWeight>(p.predictor.projection, shared);
    if (!grid_barrier_wait(barrier)) return;
    phase_clock_mark(p.phase_ns, kBeamPhaseProjection, phase_start);
    persistent_commit(g, p);
    if (!grid_barrier_wait(barrier)) return;
    phase_clock_mark(p.phase_ns, kBeamPhaseCommit, phase_start);
  }
}

}  // namespace

void launch_alsd_begin(const BeamDeviceState& g, cudaStream_t stream) {
  alsd_begin_kernel<<<1, kPhaseThreads, 0, stream>>>(g);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "alsd_begin_kernel");
}

void launch_beam_joint_hidden(const BeamDeviceState& g, cudaStream_t stream) {
  const JointHiddenRows rows{g.dec, g.hidden, g.joint_rows, g.hidden_size, g.activation};
  launch_joint_hidden(rows, g.enc_dtype, g.weight_dtype, BeamJointRows{g}, stream);
}

void launch_beam_joint_gemv(const BeamDeviceState& g, cudaStream_t stream) {
  const JointGemvRows rows{g.dec, g.weight, g.logits, g.joint_rows, g.hidden_size, g.outputs, g.activation};
  launch_joint_gemv(rows, g.enc_dtype, g.weight_dtype, BeamJointRows{g}, stream);
}

void launch_alsd_propose(const BeamDeviceState& g, cudaStream_t stream) {
  const std::int64_t blocks = g.slots < 65535 ? g.slots : 65535;
  const std::size_t cache_bytes = beam_slot_cache_bytes(g.slots);
  alsd_propose_kernel<<<static_cast<int>(blocks), kProposeThreads, cache_bytes, stream>>>(g, cache_bytes);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "alsd_propose_kernel");
}

void launch_beam_take(const BeamDeviceState& g, cudaStream_t stream) {
  beam_take_kernel<<<blocks_for(g.slots * (g.state_size + g.hidden_size), kThreads), kThreads, 0, stream>>>(g);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "beam_take_kernel");
}

void launch_beam_commit_then(BeamPhase phase, const BeamDeviceState& g, cudaStream_t stream) {
  beam_commit_then_kernel<<<blocks_for(g.slots * (g.state_size + g.hidden_size), kThreads), kThreads, 0, stream>>>(
      phase, g);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "beam_commit_then_kernel");
}

void launch_aes_begin(const BeamDeviceState& g, cudaStream_t stream) {
  aes_begin_kernel<<<1, kPhaseThreads, 0, stream>>>(g);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "aes_begin_kernel");
}

void launch_beam_log_softmax(const BeamDeviceState& g, cudaStream_t stream) {
  const std::int64_t blocks = g.slots < 65535 ? g.slots : 65535;
  beam_log_softmax_kernel<<<static_cast<int>(blocks), kProposeThreads, 0, stream>>>(g);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "beam_log_softmax_kernel");
}

void launch_aes_prefix_search(const BeamDeviceState& g, cudaStream_t stream) {
  const std::size_t cache_bytes = beam_slot_cache_bytes(g.slots);
  aes_prefix_search_kernel<<<1, kPhaseThreads, cache_bytes, stream>>>(g, cache_bytes);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "aes_prefix_search_kernel");
}

void launch_aes_propose(const BeamDeviceState& g, cudaStream_t stream) {
  aes_propose_kernel<<<static_cast<int>(g.slots < 65535 ? g.slots : 65535), kProposeThreads, 0, stream>>>(g);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "aes_propose_kernel");
}

void launch_aes_expand(const BeamDeviceState& g, cudaStream_t stream) {
  const std::size_t cache_bytes = beam_slot_cache_bytes(g.hyps.beam);
  aes_expand_kernel<<<blocks_for(g.max_batch, 1), kAesExpandThreads, cache_bytes, stream>>>(g, cache_bytes);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "aes_expand_kernel");
}

void launch_aes_end_frame(const BeamDeviceState& g, cudaStream_t stream) {
  aes_end_frame_kernel<<<blocks_for(g.max_batch, kThreads), kThreads, 0, stream>>>(g);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "aes_end_frame_kernel");
}

void launch_aes_next_frame(const BeamDeviceState& g, cudaStream_t stream) {
  aes_next_frame_kernel<<<1, kPhaseThreads, 0, stream>>>(g);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "aes_next_frame_kernel");
}

void launch_wind_begin(const BeamDeviceState& g, cudaStream_t stream) {
  wind_begin_kernel<<<1, kPhaseThreads, 0, stream>>>(g);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "wind_begin_kernel");
}

void launch_wind_propose(const BeamDeviceState& g, cudaStream_t stream) {
  const std::int64_t members = g.max_batch * g.beam;
  wind_propose_kernel<<<static_cast<int>(members < 65535 ? members : 65535), kWindProposeThreads, 0, stream>>>(g);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "wind_propose_kernel");
}

void launch_wind_step(const BeamDeviceState& g, cudaStream_t stream) {
  const std::size_t cache_bytes = beam_slot_cache_bytes(g.hyps.beam);
  wind_step_kernel<<<blocks_for(g.max_batch, 1), kWindStepThreads, cache_bytes, stream>>>(g, cache_bytes);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "wind_step_kernel");
}

void launch_beam_persistent(const BeamDeviceState& g, const PersistentBeam& p, cudaStream_t stream) {
  ASRDEC_EXPECTS(g.joint_rows >= 1 && g.joint_rows <= kJointGemvMaxRows && p.blocks >= 1, Error,
                 "internal error: the persistent beam kernel launched for ", g.joint_rows, " joint rows on ", p.blocks,
                 " blocks");
  if (p.phase_ns != nullptr) {
    ASRDEC_CUDA_CHECK(cudaMemsetAsync(p.phase_ns, 0, kPersistentBeamPhases * sizeof(unsigned long long), stream));
  }
  with_float_type(g.enc_dtype, [&](auto enc) {
    with_float_type(g.weight_dtype, [&](auto weight) {
      launch_persistent(beam_persistent_kernel<decltype(enc), decltype(weight)>, p.barrier, p.status, p.blocks,
                        kJointGemvThreads, p.shared_bytes, stream, g, p);
    });
  });
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "beam_persistent_kernel");
}

int persistent_beam_resident_blocks(DType enc_dtype, DType weight_dtype, std::size_t shared_bytes) {
  int blocks = 0;
  with_float_type(enc_dtype, [&](auto enc) {
    with_float_type(weight_dtype, [&](auto weight) {
      blocks =
          resident_blocks(beam_persistent_kernel<decltype(enc), decltype(weight)>, kJointGemvThreads, shared_bytes);
    });
  });
  return blocks;
}

std::int64_t preload_persistent_beam_kernels() {
  return opt_in_joint_gemv_shared_all(
      [](auto enc, auto weight) { return beam_persistent_kernel<decltype(enc), decltype(weight)>; });
}

std::size_t beam_slot_cache_bytes(std::int64_t slots) {
  // ASRDEC_BEAM_SLOT_CACHE=0 leaves every pool in global memory, so that a GPU check runs the uncached path too.
  static const bool enabled = environment_switch("ASRDEC_BEAM_SLOT_CACHE", true);
  return enabled && beam_slot_cache_fits(slots, kSlotCacheLimit)
             ? static_cast<std::size_t>(slots) * kBeamSlotCacheBytesPerSlot
             : 0;
}

std::int64_t preload_beam_kernels() {
  cudaFuncAttributes a{};
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, alsd_begin_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, alsd_propose_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, beam_take_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, beam_commit_then_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, beam_log_softmax_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, aes_begin_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, aes_next_frame_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, aes_prefix_search_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, aes_propose_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, aes_expand_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, aes_end_frame_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, wind_begin_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, wind_propose_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, wind_step_kernel));
  preload_joint_hidden<BeamJointRows>();
  return preload_joint_gemv<BeamJointRows>();
}

}  // namespace asrdec::detail

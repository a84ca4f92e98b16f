#include <cub/block/block_scan.cuh>

#include "asrdec/detail/float16.hpp"
#include "core/bad_value.hpp"
#include "core/ctc_input.hpp"
#include "core/cuda/check.hpp"
#include "ctc/ctc_step.hpp"
#include "ctc/greedy/ctc_greedy_kernels.hpp"
#include "lm/fusion_step.hpp"
#include "lm/ngram_step.hpp"

namespace asrdec::detail {
namespace {

constexpr int kArgmaxThreads = 256;
constexpr int kCollapseThreads = 256;
constexpr unsigned kFullWarp = 0xffffffffu;

// Reads lengths[b]; an out-of-range length is reported (smallest b wins) and treated as 0 so that nothing
// outside the tensor is ever read.
__device__ __forceinline__ std::int32_t read_length(const CtcGreedyArgs& args, std::int64_t b,
                                                    unsigned int* first_bad_length) {
  const std::int64_t raw = args.lengths_are_int64
                               ? static_cast<const std::int64_t*>(args.lengths)[b * args.lengths_stride]
                               : static_cast<const std::int32_t*>(args.lengths)[b * args.lengths_stride];
  if (!length_in_range(raw, args.frames)) {
    if (first_bad_length != nullptr) {
      atomicMin(first_bad_length, static_cast<unsigned int>(b));
    }
    return 0;
  }
  return static_cast<std::int32_t>(raw);
}

// One warp per frame: lanes stride over the columns, then a shuffle reduction merges (value, index) pairs
// with the first-max rule, so the result does not depend on the reduction order.
template <class T>
__global__ void __launch_bounds__(kArgmaxThreads) frame_argmax_kernel(CtcGreedyWorkspace ws) {
  const CtcGreedyArgs args = *ws.args;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (kArgmaxThreads / 32);
  const std::int64_t total = static_cast<std::int64_t>(args.batch) * args.frames;
  for (std::int64_t frame = (static_cast<std::int64_t>(blockIdx.x) * kArgmaxThreads + threadIdx.x) / 32; frame < total;
       frame += warps) {
    const std::int64_t b = frame / args.frames;
    const std::int64_t t = frame - b * args.frames;
    if (t >= read_length(args, b, nullptr)) {
      continue;
    }
    const T* row = static_cast<const T*>(args.logprobs) + b * args.stride_b + t * args.stride_t;
    ArgMax best = argmax_identity();
    std::int32_t bad_column = 0x7fffffff;
    bool bad_is_nan = false;
    for (std::int32_t v = lane; v < args.columns; v += 32) {
      const float x = to_float(row[v * args.stride_v]);
      if (args.check_values && is_invalid_logprob(x) && v < bad_column) {
        bad_column = v;
        bad_is_nan = x != x;
      }
      argmax_update(best, x, v);
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
      const ArgMax other{__shfl_xor_sync(kFullWarp, best.value, offset),
                         __shfl_xor_sync(kFullWarp, best.index, offset)};
      best = argmax_merge(best, other);
    }
    if (args.check_values) {
      // The lane holding the smallest bad column reports it; its NaN-ness travels with it.
      std::int32_t min_bad = bad_column;
      for (int offset = 16; offset > 0; offset >>= 1) {
        min_bad = min(min_bad, __shfl_xor_sync(kFullWarp, min_bad, offset));
      }
      if (min_bad != 0x7fffffff && bad_column == min_bad) {
        atomicMin(ws.first_bad_value, pack_bad_value(b, t, min_bad, bad_is_nan));
      }
    }
    if (lane == 0) {
      ws.frame_token[b * ws.row_stride + t] = ctc_frame_token(best, args.blank);
      ws.frame_logprob[b * ws.row_stride + t] = best.value;
    }
  }
}

// Streaming: the channel lane b continues, or null when it starts from the start state (always for whole utterances).
__device__ __forceinline__ const CtcGreedyCarry* continued(const CtcGreedyWorkspace& ws, const CtcGreedyArgs& args,
                                                           std::int64_t b) {
  return args.streaming && !ws.lane_fresh[b] ? ws.channels + ws.lane_slot[b] : nullptr;
}

// The global frame index of lane b's first frame in this call.
__device__ __forceinline__ std::int32_t frame_offset(const CtcGreedyWorkspace& ws, const CtcGreedyArgs& args,
                                                     std::int64_t b) {
  return args.streaming ? ws.lane_offset[b] : 0;
}

// One block per utterance: emission flags and a block-wide exclusive scan for output positions, tile by tile. The
// tiles are aligned to the utterance's global frame index, not to the chunk, so that thread x always sees frames
// ≡ x (mod 256) and warp 0's lane l adds the frames ≡ l (mod 32) to its sum in frame order: the sums, and their
// fixed-order reduction, do not depend on how the utterance was cut into chunks.
__global__ void __launch_bounds__(kCollapseThreads) collapse_kernel(CtcGreedyWorkspace ws) {
  using BlockScan = cub::BlockScan<int, kCollapseThreads>;
  __shared__ typename BlockScan::TempStorage scan;
  __shared__ float tile_logprob[kCollapseThreads];
  __shared__ int tile_valid[kCollapseThreads];
  const CtcGreedyArgs args = *ws.args;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  for (std::int64_t b = blockIdx.x; b < args.batch; b += gridDim.x) {
    const std::int32_t length = read_length(args, b, ws.first_bad_length);
    const CtcGreedyCarry* from = continued(ws, args, b);
    const std::int32_t offset = frame_offset(ws, args, b);
    const std::int32_t previous_start = from != nullptr ? from->previous : -1;
    double sum = threadIdx.x < kCtcScoreSums && from != nullptr ? from->sums[lane] : 0.0;
    const std::int32_t* frame_token = ws.frame_token + b * ws.row_stride;
    const float* frame_logprob = ws.frame_logprob + b * ws.row_stride;
    std::int32_t* tokens = ws.tokens + b * ws.row_stride;
    std::int32_t* timestamps = ws.timestamps + b * ws.row_stride;
    float* token_logprobs = ws.token_logprobs + b * ws.row_stride;
    std::int32_t emitted = 0;
    const std::int64_t end = static_cast<std::int64_t>(offset) + length;
    for (std::int64_t base = offset - offset % kCollapseThreads; base < end; base += kCollapseThreads) {
      const auto t = static_cast<std::int32_t>(base + threadIdx.x - offset);  // the chunk's frame
      const bool valid = t >= 0 && t < length;
      int emits = 0;
      std::int32_t token = 0;
      float logprob = 0.0f;
      if (valid) {
        token = frame_token[t];
        logprob = frame_logprob[t];
        emits = ctc_emits(token, t > 0 ? frame_token[t - 1] : previous_start, args.blank) ? 1 : 0;
      }
      int position = 0;
      int tile_emitted = 0;
      BlockScan(scan).ExclusiveSum(emits, position, tile_emitted);
      if (emits) {
        tokens[emitted + position] = token;
        timestamps[emitted + position] = t;
        token_logprobs[emitted + position] = logprob;
      }
      emitted += tile_emitted;
      tile_logprob[threadIdx.x] = logprob;
      tile_valid[threadIdx.x] = valid ? 1 : 0;
      __syncthreads();
      if (threadIdx.x < kCtcScoreSums) {
        for (int k = lane; k < kCollapseThreads; k += kCtcScoreSums) {
          if (tile_valid[k]) sum += tile_logprob[k];
        }
      }
      __syncthreads();  // the scan storage and the tile arrays are reused by the next tile
    }
    if (threadIdx.x < kCtcScoreSums) {
      double total = sum;
      for (int step = 16; step > 0; step >>= 1) total += __shfl_xor_sync(kFullWarp, total, step);
      if (args.streaming) ws.lane_carry[b].sums[lane] = sum;
      if (threadIdx.x == 0) {
        ws.token_counts[b] = emitted;
        ws.scores[b] = static_cast<float>(total);  // lane 0's order of the butterfly, the same on every call
        if (args.streaming) {
          CtcGreedyCarry& out = ws.lane_carry[b];
          out.previous = length > 0 ? frame_token[length - 1] : previous_start;
          out.fused_score = 0.0;
          out.lm_state = 0;
          out.boost_state = 0;
          out.lm_total = 0.0f;
          out.boost_total = 0.0f;
        }
      }
    }
    __syncthreads();
  }
}

// Fusion: one block per utterance walks its frames in order (each emission depends on the LM and boosting states
// the previous one left). A frame whose acoustic argmax would be emitted is re-chosen by the whole block: each
// thread scores a slice of the vocabulary with the shared per-token queries (bit-identical to the CPU's
// full-vocabulary queries), then a first-max reduction picks the token. Thread 0 keeps the sums in the CPU's order.
template <class T>
__global__ void __launch_bounds__(kCollapseThreads) fused_collapse_kernel(CtcGreedyWorkspace ws) {
  constexpr int kWarps = kCollapseThreads / 32;
  __shared__ float warp_value[kWarps];
  __shared__ std::int32_t warp_index[kWarps];
  __shared__ std::int32_t shared_state;
  __shared__ std::int32_t shared_boost_state;
  __shared__ std::int32_t shared_previous;
  const CtcGreedyArgs args = *ws.args;
  const NgramLmRef& lm = ws.lm;
  const NgramLmRef& boost = ws.boost;
  const std::int32_t vocab = ws.use_lm ? lm.vocab_size : boost.vocab_size;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  for (std::int64_t b = blockIdx.x; b < args.batch; b += gridDim.x) {
    const std::int32_t length = read_length(args, b, ws.first_bad_length);
    const T* logprobs = static_cast<const T*>(args.logprobs) + b * args.stride_b;
    const std::int32_t* frame_token = ws.frame_token + b * ws.row_stride;
    const float* frame_logprob = ws.frame_logprob + b * ws.row_stride;
    const CtcGreedyCarry* from = continued(ws, args, b);
    std::int32_t count = 0;
    double score = from != nullptr ? from->fused_score : 0.0;
    float lm_total = from != nullptr ? from->lm_total : 0.0f;
    float boost_total = from != nullptr ? from->boost_total : 0.0f;
    if (threadIdx.x == 0) {
      if (from != nullptr) {
        shared_state = from->lm_state;
        shared_boost_state = from->boost_state;
        shared_previous = from->previous;
      } else {
        shared_state = NgramLm::bos_state();
        shared_boost_state = !ws.use_boost    ? 0
                             : args.streaming ? ws.lane_boost_root[b]
                                              : boost_start_state(ws.boost_roots, ws.boost_lists, b);
        shared_previous = -1;
      }
    }
    __syncthreads();
    for (std::int32_t t = 0; t < length; ++t) {
      const std::int32_t previous = shared_previous;
      const std::int32_t state = shared_state;
      const std::int32_t boost_state = shared_boost_state;
      const std::int32_t token = frame_token[t];
      const T* row = logprobs + t * args.stride_t;
      __syncthreads();  // everyone has read the shared state before thread 0 rewrites it
      if (ctc_emits(token, previous, args.blank)) {
        ArgMax best = argmax_identity();
        for (std::int32_t id = static_cast<std::int32_t>(threadIdx.x); id < vocab; id += kCollapseThreads) {
          const std::int32_t v = fusion_column(id, args.blank);  // ascending with id, as the CPU's column order
          if (v == previous) continue;
          // fusion_bonus's sum, from the per-token queries.
          const float lm_part = ws.use_lm ? weighted(ws.lm_weight, score_token(lm, state, id).score) : 0.0f;
          const float boost_part =
              ws.use_boost ? weighted(ws.boost_weight, score_token(boost, boost_state, id).score) : 0.0f;
          argmax_update(best, to_float(row[v * args.stride_v]) + (lm_part + boost_part), v);
        }
        for (int offset = 16; offset > 0; offset >>= 1) {
          best = argmax_merge(best, ArgMax{__shfl_xor_sync(kFullWarp, best.value, offset),
                                           __shfl_xor_sync(kFullWarp, best.index, offset)});
        }
        if (lane == 0) {
          warp_value[warp] = best.value;
          warp_index[warp] = best.index;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
          for (int w = 1; w < kWarps; ++w) best = argmax_merge(best, ArgMax{warp_value[w], warp_index[w]});
          const std::int32_t chosen = best.index != argmax_identity().index ? best.index : token;
          const float value = to_float(row[chosen * args.stride_v]);
          const std::int32_t chosen_id = fusion_id(chosen, args.blank);
          if (ws.use_lm) {
            const NgramStep step = score_token(lm, state, chosen_id);
            lm_total += weighted(ws.lm_weight, step.score);
            shared_state = step.next;
          }
          if (ws.use_boost) {
            const NgramStep step = score_token(boost, boost_state, chosen_id);
            boost_total += weighted(ws.boost_weight, step.score);
            shared_boost_state = step.next;
          }
          ws.tokens[b * ws.row_stride + count] = chosen;
          ws.timestamps[b * ws.row_stride + count] = t;
          ws.token_logprobs[b * ws.row_stride + count] = value;
          ++count;
          score += value;
          shared_previous = chosen;
        }
      } else if (threadIdx.x == 0) {
        score += frame_logprob[t];
        shared_previous = token;
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      ws.token_counts[b] = count;
      ws.scores[b] = static_cast<float>(score);
      ws.lm_scores[b] = lm_total;
      ws.boost_scores[b] = boost_total;
      if (args.streaming) {
        CtcGreedyCarry& out = ws.lane_carry[b];
        out.fused_score = score;
        out.previous = shared_previous;
        out.lm_state = shared_state;
        out.boost_state = shared_boost_state;
        out.lm_total = lm_total;
        out.boost_total = boost_total;
      }
    }
    __syncthreads();
  }
}

// Streaming: the lanes' new states become their channels' only when the call found no bad value or length, so a
// call that throws leaves every utterance as it was.
__global__ void __launch_bounds__(kCollapseThreads) commit_kernel(CtcGreedyWorkspace ws) {
  const CtcGreedyArgs args = *ws.args;
  if (!args.streaming || *ws.first_bad_value != kNoBadValue || *ws.first_bad_length != ~0u) return;
  for (std::int64_t b = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; b < args.batch;
       b += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    ws.channels[ws.lane_slot[b]] = ws.lane_carry[b];
  }
}

}  // namespace

void launch_ctc_greedy(DType dtype, const CtcGreedyWorkspace& ws, int argmax_blocks, int collapse_blocks,
                       cudaStream_t stream) {
  ASRDEC_CUDA_CHECK(cudaMemsetAsync(ws.first_bad_value, 0xff, sizeof(unsigned long long), stream));
  ASRDEC_CUDA_CHECK(cudaMemsetAsync(ws.first_bad_length, 0xff, sizeof(unsigned int), stream));
  switch (dtype) {
    case DType::f32:
      frame_argmax_kernel<float><<<argmax_blocks, kArgmaxThreads, 0, stream>>>(ws);
      break;
    case DType::f16:
      frame_argmax_kernel<half_t><<<argmax_blocks, kArgmaxThreads, 0, stream>>>(ws);
      break;
    case DType::bf16:
      frame_argmax_kernel<bfloat16_t><<<argmax_blocks, kArgmaxThreads, 0, stream>>>(ws);
      break;
    default:
      throw InvalidArgument("CTC greedy: logprobs must be float32, float16 or bfloat16");
  }
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "frame_argmax_kernel");
  if (ws.use_lm || ws.use_boost) {
    switch (dtype) {
      case DType::f16:
        fused_collapse_kernel<half_t><<<collapse_blocks, kCollapseThreads, 0, stream>>>(ws);
        break;
      case DType::bf16:
        fused_collapse_kernel<bfloat16_t><<<collapse_blocks, kCollapseThreads, 0, stream>>>(ws);
        break;
      default:
        fused_collapse_kernel<float><<<collapse_blocks, kCollapseThreads, 0, stream>>>(ws);
    }
    ASRDEC_CUDA_CHECK_LAUNCH(stream, "fused_collapse_kernel");
  } else {
    collapse_kernel<<<collapse_blocks, kCollapseThreads, 0, stream>>>(ws);
    ASRDEC_CUDA_CHECK_LAUNCH(stream, "collapse_kernel");
  }
  if (ws.channels != nullptr) {
    commit_kernel<<<collapse_blocks / kCollapseThreads + 1, kCollapseThreads, 0, stream>>>(ws);
    ASRDEC_CUDA_CHECK_LAUNCH(stream, "commit_kernel");
  }
}

void preload_ctc_greedy_kernels() {
  cudaFuncAttributes attributes{};
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, frame_argmax_kernel<float>));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, frame_argmax_kernel<half_t>));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, frame_argmax_kernel<bfloat16_t>));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, collapse_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, commit_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, fused_collapse_kernel<float>));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, fused_collapse_kernel<half_t>));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, fused_collapse_kernel<bfloat16_t>));
}

}  // namespace asrdec::detail

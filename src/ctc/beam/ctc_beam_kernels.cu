// The kernels of CTC beam search on CUDA (launchers in ctc_beam_kernels.hpp).

#include "asrdec/detail/float16.hpp"
#include "core/bad_value.hpp"
#include "core/ctc_input.hpp"
#include "core/cuda/check.hpp"
#include "ctc/beam/ctc_beam_kernels.hpp"
#include "hyps/block_topk.cuh"

namespace asrdec::detail {
namespace {

constexpr int kPhaseThreads = 1024;
constexpr int kCtcFrameThreads = 128;

// Which slots query the fused models on frame t, and whether any utterance has frame t; one block.
__device__ void ctc_frame_mask(const CtcBeamDeviceState& g, std::int32_t t) {
  const std::int32_t batch = g.args->batch;
  int any = 0;
  for (std::int64_t b = threadIdx.x; b < g.max_batch; b += blockDim.x) {
    const bool on = b < batch && t < g.lengths[b];
    for (std::int32_t k = 0; k < g.hyps.beam; ++k) {
      const std::int64_t s = beam_slot(g.hyps, b, k);
      g.query_mask[s] = on && g.hyps.scores[s] != -__builtin_huge_valf() ? 1 : 0;
    }
    any |= on ? 1 : 0;
  }
  any = __syncthreads_or(any);
  if (threadIdx.x == 0) *g.any_frame = any;
}

__global__ void __launch_bounds__(kPhaseThreads) ctc_beam_begin_kernel(CtcBeamDeviceState g) {
  const CtcBeamArgs args = *g.args;
  for (std::int64_t b = threadIdx.x; b < g.max_batch; b += blockDim.x) {
    if (!args.seeded || b >= args.batch || g.seed.fresh[b]) {
      beam_clear(g.hyps, b);
      continue;
    }
    for (std::int32_t k = 0; k < g.hyps.beam; ++k) {  // the channel's slots, with no entries yet
      const std::int64_t s = beam_slot(g.hyps, b, k);
      g.hyps.scores[s] = g.seed.score[s];
      g.hyps.steps[s] = 0;
      g.hyps.tokens[s] = g.seed.tokens[s];
      g.hyps.last_label[s] = g.seed.last_label[s];
      g.hyps.hash[s] = g.seed.hash[s];
      g.hyps.prefix_hash[s] = g.seed.prefix_hash[s];
      g.hyps.next_time[s] = 0;
      g.hyps.on_frame[s] = 0;
    }
    g.hyps.overflow[b] = 0;
  }
  if (threadIdx.x == 0) *g.frame = 0;
  __syncthreads();
  ctc_frame_mask(g, 0);
}

__global__ void __launch_bounds__(kPhaseThreads) ctc_beam_next_frame_kernel(CtcBeamDeviceState g) {
  const std::int32_t t = *g.frame + 1;
  __syncthreads();  // every thread has read t before it changes
  if (threadIdx.x == 0) *g.frame = t;
  ctc_frame_mask(g, t);
}

template <class T>
__device__ float load_logprob(const CtcBeamDeviceState& g, const CtcBeamArgs& args, std::int64_t b, std::int32_t t,
                              std::int32_t v) {
  return to_float(static_cast<const T*>(args.logprobs)[b * args.stride_b + t * args.stride_t + v * args.stride_v]);
}

// Each thread keeps the K best of its share of the (slot, column) pairs; the block merges the lists (a total order,
// so it keeps exactly the K best of all pairs, block_topk_merge) and thread 0 ends the frame.
template <class T>
__global__ void __launch_bounds__(kCtcFrameThreads) ctc_beam_frame_kernel(CtcBeamDeviceState g) {
  __shared__ float best[kMaxBeam];
  __shared__ std::int32_t ids[kMaxBeam];
  __shared__ BlockTopkShared topk;
  const CtcBeamArgs args = *g.args;
  const std::int32_t t = *g.frame;
  const std::int32_t K = g.hyps.beam;
  const std::int32_t C = g.columns;
  for (std::int64_t b = blockIdx.x; b < g.max_batch; b += gridDim.x) {
    if (b >= args.batch || t >= g.lengths[b]) continue;  // block-uniform
    if (g.check_values) {
      for (std::int32_t v = threadIdx.x; v < C; v += blockDim.x) {
        const float x = load_logprob<T>(g, args, b, t, v);
        if (is_invalid_logprob(x)) atomicMin(g.bad_value, pack_bad_value(b, t, v, x != x));
      }
    }
    float my_scores[kMaxBeam];
    std::int32_t my_ids[kMaxBeam];
    std::int32_t count = 0;
    for (std::int32_t i = threadIdx.x; i < K * C; i += blockDim.x) {
      const std::int32_t k = i / C;
      const std::int32_t v = i - k * C;
      const std::int64_t s = beam_slot(g.hyps, b, k);
      const float score = g.hyps.scores[s];
      if (score == -__builtin_huge_valf()) continue;
      const float extension =
          ctc_beam_extension(g.rule, g.states.fusion, s, g.hyps.last_label[s], v, load_logprob<T>(g, args, b, t, v));
      topk_insert(my_scores, my_ids, K, count, score + extension, i);
    }
    const std::int32_t kept = block_topk_merge(my_scores, my_ids, count, K, best, ids, topk);
    if (threadIdx.x == 0) {
      const auto frame_logp = [&](std::int32_t v) { return load_logprob<T>(g, args, b, t, v); };
      ctc_beam_keep(g.hyps, b, best, ids, kept, C, g.threshold, g.states, g.rule.log_add, frame_logp);
    }
    __syncthreads();
  }
}

}  // namespace

void launch_ctc_beam_begin(const CtcBeamDeviceState& g, cudaStream_t stream) {
  ctc_beam_begin_kernel<<<1, kPhaseThreads, 0, stream>>>(g);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "ctc_beam_begin_kernel");
}

void launch_ctc_beam_frame(const CtcBeamDeviceState& g, cudaStream_t stream) {
  const int blocks = static_cast<int>(g.max_batch < 65535 ? g.max_batch : 65535);
  switch (g.dtype) {
    case DType::f16:
      ctc_beam_frame_kernel<half_t><<<blocks, kCtcFrameThreads, 0, stream>>>(g);
      break;
    case DType::bf16:
      ctc_beam_frame_kernel<bfloat16_t><<<blocks, kCtcFrameThreads, 0, stream>>>(g);
      break;
    default:
      ctc_beam_frame_kernel<float><<<blocks, kCtcFrameThreads, 0, stream>>>(g);
  }
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "ctc_beam_frame_kernel");
}

void launch_ctc_beam_next_frame(const CtcBeamDeviceState& g, cudaStream_t stream) {
  ctc_beam_next_frame_kernel<<<1, kPhaseThreads, 0, stream>>>(g);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "ctc_beam_next_frame_kernel");
}

void preload_ctc_beam_kernels() {
  cudaFuncAttributes a{};
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, ctc_beam_begin_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, ctc_beam_next_frame_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, ctc_beam_frame_kernel<float>));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, ctc_beam_frame_kernel<half_t>));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, ctc_beam_frame_kernel<bfloat16_t>));
}

}  // namespace asrdec::detail

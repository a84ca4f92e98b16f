// Full-vocabulary n-gram queries on the GPU (NGPU-LM): a block per (state, vocabulary slice), each running
// ngram_advance_slice (ngram_advance.cuh).

#include <algorithm>

#include "core/cuda/check.hpp"
#include "lm/ngram_advance.cuh"
#include "lm/ngram_kernels.hpp"
#include "lm/ngram_step.hpp"

namespace asrdec::detail {
namespace {

constexpr int kAdvanceThreads = 256;

__global__ void __launch_bounds__(kAdvanceThreads)
    ngram_advance_kernel(NgramLmRef lm, const std::int32_t* states, std::int64_t batch, float* scores,
                         std::int32_t* next_states, std::int32_t slice, const std::int32_t* mask) {
  // gridDim.y is capped at 65535, so a block may serve several states.
  for (std::int64_t b = blockIdx.y; b < batch; b += gridDim.y) {
    if (mask != nullptr && mask[b] == 0) continue;  // uniform across the block
    ngram_advance_slice(lm, states, b, scores, next_states, static_cast<std::int32_t>(blockIdx.x) * slice, slice);
  }
}

__global__ void ngram_final_scores_kernel(NgramLmRef lm, const std::int32_t* states, std::int64_t batch, float* out) {
  for (std::int64_t b = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b < batch;
       b += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    out[b] = lm.final_weight[ngram_clamp_state(lm, states[b])];
  }
}

}  // namespace

void launch_ngram_advance(const NgramLmRef& lm, const std::int32_t* states, std::int64_t batch, float* scores,
                          std::int32_t* next_states, int multiprocessors, cudaStream_t stream,
                          const std::int32_t* mask) {
  if (batch <= 0 || lm.vocab_size <= 0) return;
  const std::int32_t slice = ngram_advance_slice_size(lm.vocab_size, batch, multiprocessors);
  const std::int32_t slices = (lm.vocab_size + slice - 1) / slice;
  const dim3 grid(static_cast<unsigned>(slices), static_cast<unsigned>(std::min<std::int64_t>(batch, 65535)));
  ngram_advance_kernel<<<grid, kAdvanceThreads, 0, stream>>>(lm, states, batch, scores, next_states, slice, mask);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "ngram_advance_kernel");
}

void launch_ngram_final_scores(const NgramLmRef& lm, const std::int32_t* states, std::int64_t batch, float* out,
                               cudaStream_t stream) {
  if (batch <= 0) return;
  constexpr int threads = 256;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((batch + threads - 1) / threads, 1024));
  ngram_final_scores_kernel<<<blocks, threads, 0, stream>>>(lm, states, batch, out);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "ngram_final_scores_kernel");
}

}  // namespace asrdec::detail

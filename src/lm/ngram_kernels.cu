// Full-vocabulary n-gram queries on the GPU (NGPU-LM). One block serves one (state, vocabulary slice): it walks
// the state's backoff chain from START (which lists every token) up to the state itself and, level by level,
// scatters the arcs whose labels fall in its slice, so a longer context overwrites a shorter one. The backoff
// sums are accumulated in the same order as the CPU loop and the shared step functions (longest context
// first), which keeps every score bit-identical to the CPU executor.

#include <algorithm>

#include "core/cuda/check.hpp"
#include "lm/ngram_kernels.hpp"
#include "lm/ngram_step.hpp"

namespace asrdec::detail {
namespace {

constexpr int kAdvanceThreads = 256;
// Contexts deeper than this are walked with the per-token search instead (no realistic LM comes close).
constexpr int kMaxChain = 32;
// The smallest vocabulary slice a block takes: below this the chain walk costs more than the scatter.
constexpr std::int32_t kMinSlice = 256;

__device__ __forceinline__ std::int32_t clamp_state(const NgramLmRef& lm, std::int32_t state) {
  return state < 0 ? 0 : (state >= lm.states ? lm.states - 1 : state);
}

// First arc of [begin, end) whose label is >= label.
__device__ __forceinline__ std::int32_t lower_bound_label(const NgramLmRef& lm, std::int32_t begin, std::int32_t end,
                                                          std::int32_t label) {
  while (begin < end) {
    const std::int32_t middle = begin + (end - begin) / 2;
    if (lm.arc_label[middle] < label) {
      begin = middle + 1;
    } else {
      end = middle;
    }
  }
  return begin;
}

__global__ void __launch_bounds__(kAdvanceThreads)
    ngram_advance_kernel(NgramLmRef lm, const std::int32_t* states, std::int64_t batch, float* scores,
                         std::int32_t* next_states, std::int32_t slice, const std::int32_t* mask) {
  __shared__ std::int32_t chain[kMaxChain];
  __shared__ float chain_backoff[kMaxChain];
  __shared__ int chain_length;
  __shared__ float unk_score;
  __shared__ std::int32_t unk_next;

  const std::int32_t V = lm.vocab_size;
  const std::int32_t lo = static_cast<std::int32_t>(blockIdx.x) * slice;
  const std::int32_t hi = min(V, lo + slice);
  // gridDim.y is capped at 65535, so a block may serve several states.
  for (std::int64_t b = blockIdx.y; b < batch; b += gridDim.y) {
    if (mask != nullptr && mask[b] == 0) continue;  // uniform across the block
    const std::int32_t state = clamp_state(lm, states[b]);
    float* row_scores = scores + b * V;
    std::int32_t* row_next = next_states + b * V;

    if (threadIdx.x == 0) {
      // The backoff chain, longest context first, with the backoff sum that applies at each level.
      int length = 0;
      float backoff = 0.0f;
      std::int32_t s = state;
      for (;;) {
        if (length == kMaxChain) {
          length = -1;
          break;
        }
        chain[length] = s;
        chain_backoff[length] = backoff;
        ++length;
        if (lm.backoff_to[s] < 0) break;  // a root lists every label
        backoff += lm.backoff_weight[s];
        s = lm.backoff_to[s];
      }
      chain_length = length;
      const NgramStep unk = score_label(lm, state, V);
      unk_score = unk.score + lm.missing_offset;
      unk_next = unk.next;
    }
    __syncthreads();
    const int length = chain_length;

    if (length < 0) {
      for (std::int32_t v = lo + static_cast<std::int32_t>(threadIdx.x); v < hi; v += kAdvanceThreads) {
        const NgramStep step = score_token(lm, state, v);
        row_scores[v] = step.score;
        row_next[v] = step.next;
      }
    } else {
      // Shortest context (START) first; each longer context overwrites the labels it lists.
      for (int level = length - 1; level >= 0; --level) {
        const std::int32_t s = chain[level];
        const float backoff = chain_backoff[level];
        const std::int32_t first = lower_bound_label(lm, lm.arc_begin[s], lm.arc_begin[s + 1], lo);
        const std::int32_t last = lower_bound_label(lm, first, lm.arc_begin[s + 1], hi);
        for (std::int32_t a = first + static_cast<std::int32_t>(threadIdx.x); a < last; a += kAdvanceThreads) {
          const std::int32_t label = lm.arc_label[a];
          row_scores[label] = lm.arc_weight[a] + backoff;
          row_next[label] = lm.arc_target[a];
        }
        __syncthreads();
      }
      // Tokens the model does not list score as <unk> in this context.
      for (std::int32_t v = lo + static_cast<std::int32_t>(threadIdx.x); v < hi; v += kAdvanceThreads) {
        if (lm.missing[v]) {
          row_scores[v] = unk_score;
          row_next[v] = unk_next;
        }
      }
    }
    __syncthreads();  // the shared chain is rewritten for the next state
  }
}

__global__ void ngram_final_scores_kernel(NgramLmRef lm, const std::int32_t* states, std::int64_t batch, float* out) {
  for (std::int64_t b = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b < batch;
       b += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    out[b] = lm.final_weight[clamp_state(lm, states[b])];
  }
}

}  // namespace

void launch_ngram_advance(const NgramLmRef& lm, const std::int32_t* states, std::int64_t batch, float* scores,
                          std::int32_t* next_states, int multiprocessors, cudaStream_t stream,
                          const std::int32_t* mask) {
  if (batch <= 0 || lm.vocab_size <= 0) return;
  // Enough blocks to fill the GPU twice over: a small batch splits the vocabulary, a large one does not.
  const std::int64_t wanted_slices = (2 * static_cast<std::int64_t>(multiprocessors) + batch - 1) / batch;
  const std::int64_t max_slices = (lm.vocab_size + kMinSlice - 1) / kMinSlice;
  const auto slices = static_cast<std::int32_t>(std::max<std::int64_t>(1, std::min(wanted_slices, max_slices)));
  const std::int32_t slice = (lm.vocab_size + slices - 1) / slices;
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

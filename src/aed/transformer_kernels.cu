// The CUDA kernels of the built-in Transformer decoder step (transformer_kernels.hpp): a block per row, the CPU
// session's arithmetic in the same order except for block-wide sums (layer norm, softmax), which are reduced in a tree.

#include <cuda_runtime.h>

#include "aed/transformer_kernels.hpp"
#include "core/cuda/check.hpp"

namespace asrdec::detail {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 65535;
constexpr float kEpsilon = 1e-5f;

// Block-wide reductions; `red` is shared scratch of 33 floats. Every thread gets the result.
__device__ float block_sum(float v, float* red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  __syncthreads();  // red may still be read by a previous reduction
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int i = 0; i < static_cast<int>((blockDim.x + 31) / 32); ++i) total += red[i];
    red[32] = total;
  }
  __syncthreads();
  return red[32];
}

__device__ float block_max(float v, float* red) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, o));
  __syncthreads();
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float top = -__builtin_huge_valf();
    for (int i = 0; i < static_cast<int>((blockDim.x + 31) / 32); ++i) top = fmaxf(top, red[i]);
    red[32] = top;
  }
  __syncthreads();
  return red[32];
}

__device__ void layer_norm(const float* x, float* y, int n, const float* w, const float* b, float* red) {
  float s = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[i];
  const float mean = block_sum(s, red) / static_cast<float>(n);
  float v = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) v += (x[i] - mean) * (x[i] - mean);
  const float variance = block_sum(v, red) / static_cast<float>(n);
  const float scale = 1.0f / sqrtf(variance + kEpsilon);
  for (int i = threadIdx.x; i < n; i += blockDim.x) y[i] = (x[i] - mean) * scale * w[i] + b[i];
  __syncthreads();
}

// y[o] = W[o] · x + bias[o], one output per thread at a time.
__device__ void linear(const float* w, const float* bias, const float* x, float* y, int out, int in) {
  for (int o = threadIdx.x; o < out; o += blockDim.x) {
    const float* row = w + static_cast<std::int64_t>(o) * in;
    float acc = 0.0f;
    for (int k = 0; k < in; ++k) acc += row[k] * x[k];
    y[o] = acc + bias[o];
  }
  __syncthreads();
}

__device__ void add_to(float* x, const float* y, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) x[i] += y[i];
  __syncthreads();
}

// Scaled dot-product attention of `q` over n keys/values (rows of D floats), head by head; `w` holds n weights.
__device__ void attend(const float* q, const float* keys, const float* values, int n, int dim, int heads, float* w,
                       float* out, float* red) {
  const int width = dim / heads;
  const float scale = 1.0f / sqrtf(static_cast<float>(width));
  for (int h = 0; h < heads; ++h) {
    const int offset = h * width;
    if (n == 0) {
      for (int k = threadIdx.x; k < width; k += blockDim.x) out[offset + k] = 0.0f;
      __syncthreads();
      continue;
    }
    float top = -__builtin_huge_valf();
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      const float* key = keys + static_cast<std::int64_t>(j) * dim + offset;
      float acc = 0.0f;
      for (int k = 0; k < width; ++k) acc += q[offset + k] * key[k];
      w[j] = acc * scale;
      top = fmaxf(top, w[j]);
    }
    top = block_max(top, red);
    float total = 0.0f;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      w[j] = expf(w[j] - top);
      total += w[j];
    }
    total = block_sum(total, red);
    for (int k = threadIdx.x; k < width; k += blockDim.x) {
      float acc = 0.0f;
      for (int j = 0; j < n; ++j) acc += (w[j] / total) * values[static_cast<std::int64_t>(j) * dim + offset + k];
      out[offset + k] = acc;
    }
    __syncthreads();
  }
}

__global__ void __launch_bounds__(kThreads)
    cross_kernel(TransformerModelRef m, TransformerSessionRef s, const float* encoder, std::int64_t stride_b,
                 std::int64_t stride_t, std::int64_t stride_e, std::int32_t batch) {
  const std::int64_t T = s.max_frames, D = m.dim;
  for (std::int64_t i = blockIdx.x; i < batch * T; i += gridDim.x) {
    const std::int64_t b = i / T, t = i % T;
    if (t >= s.frames[b]) continue;
    const float* frame = encoder + b * stride_b + t * stride_t;
    for (int l = 0; l < m.num_layers; ++l) {
      const TransformerLayerRef& L = m.layers[l];
      float* keys = s.cross + ((b * m.num_layers + l) * 2) * T * D + t * D;
      float* values = keys + T * D;
      for (int o = threadIdx.x; o < m.dim; o += blockDim.x) {
        const float* kw = L.ck_w + static_cast<std::int64_t>(o) * m.encoder_dim;
        const float* vw = L.cv_w + static_cast<std::int64_t>(o) * m.encoder_dim;
        float k_acc = 0.0f, v_acc = 0.0f;
        for (int e = 0; e < m.encoder_dim; ++e) {
          const float x = frame[e * stride_e];
          k_acc += kw[e] * x;
          v_acc += vw[e] * x;
        }
        keys[o] = k_acc + L.ck_b[o];
        values[o] = v_acc + L.cv_b[o];
      }
    }
  }
}

__global__ void __launch_bounds__(kThreads)
    gather_kernel(TransformerModelRef m, TransformerSessionRef s, int from, int to, const std::int32_t* parents,
                  const std::int32_t* positions, const std::int32_t* active, std::int32_t rows) {
  const std::int64_t P = m.max_positions, D = m.dim, L = m.num_layers;
  for (std::int32_t r = blockIdx.x; r < rows; r += gridDim.x) {
    if (!active[r]) continue;
    const std::int64_t p = parents[r];
    const std::int64_t used = static_cast<std::int64_t>(positions[r]) * D;  // the positions before the new one
    for (std::int64_t slab = 0; slab < 2 * L; ++slab) {
      const float* src = s.cache[from] + (p * 2 * L + slab) * P * D;
      float* dst = s.cache[to] + (static_cast<std::int64_t>(r) * 2 * L + slab) * P * D;
      for (std::int64_t i = threadIdx.x; i < used; i += blockDim.x) dst[i] = src[i];
    }
    if (threadIdx.x == 0) s.utterance[to][r] = s.utterance[from][p];
  }
}

__global__ void __launch_bounds__(kThreads)
    rows_kernel(TransformerModelRef m, TransformerSessionRef s, int buffer, const std::int32_t* tokens,
                const std::int32_t* positions, const std::int32_t* active, const std::int32_t* emit, std::int32_t rows,
                float* scores) {
  extern __shared__ float shared[];
  const int D = m.dim;
  float* x = shared;
  float* h = x + D;
  float* q = h + D;
  float* a = q + D;
  float* red = a + D;  // 33 floats
  const std::int64_t P = m.max_positions, T = s.max_frames, L = m.num_layers;
  for (std::int32_t r = blockIdx.x; r < rows; r += gridDim.x) {
    if (!active[r]) continue;  // the same for every thread of the block
    const std::int32_t token = tokens[r], position = positions[r];
    const std::int32_t u = s.utterance[buffer][r];
    const std::int32_t frames = s.frames[u];
    float* f = s.scratch + static_cast<std::int64_t>(r) * s.scratch_floats;  // [F], then the attention weights
    float* w = f + m.ffn;
    for (int i = threadIdx.x; i < D; i += blockDim.x) {
      x[i] =
          m.tokens[static_cast<std::int64_t>(token) * D + i] + m.positions[static_cast<std::int64_t>(position) * D + i];
    }
    __syncthreads();
    for (int l = 0; l < m.num_layers; ++l) {
      const TransformerLayerRef& G = m.layers[l];
      float* keys = s.cache[buffer] + (static_cast<std::int64_t>(r) * 2 * L + 2 * l) * P * D;
      float* values = keys + P * D;
      layer_norm(x, h, D, G.self_norm_w, G.self_norm_b, red);
      linear(G.q_w, G.q_b, h, q, D, D);
      linear(G.k_w, G.k_b, h, keys + static_cast<std::int64_t>(position) * D, D, D);
      linear(G.v_w, G.v_b, h, values + static_cast<std::int64_t>(position) * D, D, D);
      attend(q, keys, values, position + 1, D, m.heads, w, a, red);
      linear(G.o_w, G.o_b, a, h, D, D);
      add_to(x, h, D);

      layer_norm(x, h, D, G.cross_norm_w, G.cross_norm_b, red);
      linear(G.cq_w, G.cq_b, h, q, D, D);
      const float* cross_keys = s.cross + ((static_cast<std::int64_t>(u) * L + l) * 2) * T * D;
      attend(q, cross_keys, cross_keys + T * D, frames, D, m.heads, w, a, red);
      linear(G.co_w, G.co_b, a, h, D, D);
      add_to(x, h, D);

      layer_norm(x, h, D, G.ffn_norm_w, G.ffn_norm_b, red);
      linear(G.in_w, G.in_b, h, f, m.ffn, D);
      for (int i = threadIdx.x; i < m.ffn; i += blockDim.x) f[i] = fmaxf(f[i], 0.0f);
      __syncthreads();
      linear(G.out_w, G.out_b, f, h, D, m.ffn);
      add_to(x, h, D);
    }
    if (emit != nullptr && !emit[r]) continue;
    layer_norm(x, h, D, m.final_norm_w, m.final_norm_b, red);
    float* out = scores + static_cast<std::int64_t>(r) * m.vocab;
    linear(m.cls_w, m.cls_b, h, out, m.vocab, D);
    float top = -__builtin_huge_valf();
    for (int v = threadIdx.x; v < m.vocab; v += blockDim.x) top = fmaxf(top, out[v]);
    top = block_max(top, red);
    float total = 0.0f;
    for (int v = threadIdx.x; v < m.vocab; v += blockDim.x) total += expf(out[v] - top);
    const float log_total = logf(block_sum(total, red));
    for (int v = threadIdx.x; v < m.vocab; v += blockDim.x) out[v] = out[v] - top - log_total;
    __syncthreads();
  }
}

int blocks_for(std::int64_t work) { return static_cast<int>(work < kMaxBlocks ? (work > 0 ? work : 1) : kMaxBlocks); }

}  // namespace

void launch_transformer_cross(const TransformerModelRef& m, const TransformerSessionRef& s, const float* encoder,
                              std::int64_t stride_b, std::int64_t stride_t, std::int64_t stride_e, std::int32_t batch,
                              cudaStream_t stream) {
  cross_kernel<<<blocks_for(static_cast<std::int64_t>(batch) * s.max_frames), kThreads, 0, stream>>>(
      m, s, encoder, stride_b, stride_t, stride_e, batch);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "transformer cross_kernel");
}

void launch_transformer_gather(const TransformerModelRef& m, const TransformerSessionRef& s, int from, int to,
                               const std::int32_t* parents, const std::int32_t* positions, const std::int32_t* active,
                               std::int32_t rows, cudaStream_t stream) {
  gather_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(m, s, from, to, parents, positions, active, rows);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "transformer gather_kernel");
}

void launch_transformer_rows(const TransformerModelRef& m, const TransformerSessionRef& s, int buffer,
                             const std::int32_t* tokens, const std::int32_t* positions, const std::int32_t* active,
                             const std::int32_t* emit, std::int32_t rows, float* scores, cudaStream_t stream) {
  const std::size_t shared = (4 * static_cast<std::size_t>(m.dim) + 33) * sizeof(float);
  rows_kernel<<<blocks_for(rows), kThreads, shared, stream>>>(m, s, buffer, tokens, positions, active, emit, rows,
                                                              scores);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "transformer rows_kernel");
}

}  // namespace asrdec::detail

#include "asrdec/detail/activation.hpp"
#include "asrdec/detail/float16.hpp"
#include "core/cuda/check.hpp"
#include "core/float_type.hpp"
#include "transducer/model/joint_gemv.cuh"
#include "transducer/model/predictor_kernels.hpp"

namespace asrdec::detail {
namespace {

constexpr int kThreads = 256;

int blocks_for(std::int64_t n) {
  const std::int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 1 ? 1 : (blocks > 65535 ? 65535 : blocks));
}

template <class T>
__device__ __forceinline__ void store_as(void* base, std::int64_t i, float value) {
  static_cast<T*>(base)[i] = from_float<T>(value);
}

__device__ __forceinline__ void store(void* base, DType dtype, std::int64_t i, float value) {
  switch (dtype) {
    case DType::f16:
      store_as<half_t>(base, i, value);
      break;
    case DType::bf16:
      store_as<bfloat16_t>(base, i, value);
      break;
    default:
      store_as<float>(base, i, value);
  }
}

__global__ void round_rows_kernel(const float* source, std::int64_t source_stride, void* target, DType dtype,
                                  std::int64_t batch, std::int64_t width) {
  const std::int64_t n = batch * width;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t b = i / width;
    const std::int64_t k = i - b * width;
    store(target, dtype, i, source[b * source_stride + k]);
  }
}

// A gate's pre-activation (column = gate · P + unit) for a row that took `label`: the input part (layer 0: the
// input table's row; above: W_ih · x plus the bias) plus the recurrent part W_hh · round(h), in the CPU executor's
// order. `input_product` is W_ih · x (unused for layer 0). Both LSTM step paths call it.
__device__ float lstm_gate(const float* input_table, std::int32_t label, float input_product, const float* bias,
                           std::int64_t column, std::int64_t P, float recurrent) {
  const float input = input_table != nullptr ? input_table[static_cast<std::int64_t>(label) * 4 * P + column]
                                             : input_product + bias[column];
  return input + recurrent;
}

// One thread per (row, unit): the four gate pre-activations, then the cell update for masked rows. The order of
// the additions matches the CPU executor's: (input part) + (recurrent part).
__global__ void lstm_cell_kernel(LstmCellParams p) {
  const std::int64_t n = p.batch * p.hidden;
  const std::int64_t P = p.hidden;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t b = i / P;
    const std::int64_t k = i - b * P;
    float* h = p.state + b * p.state_stride + p.h_offset;
    float* c = h + P;
    if (!p.mask[b]) {
      store(p.next_input, p.dtype, b * P + k, h[k]);
      continue;
    }
    float gate[4];
    for (int g = 0; g < 4; ++g) {
      const std::int64_t column = g * P + k;
      const float product = p.input_table != nullptr ? 0.0f : p.input_gemm[b * 4 * P + column];
      gate[g] = lstm_gate(p.input_table, p.labels[b], product, p.bias, column, P, p.recurrent[b * 4 * P + column]);
    }
    const LstmCellState next = lstm_cell(gate[0], gate[1], gate[2], gate[3], c[k]);
    c[k] = next.c;
    h[k] = next.h;
    store(p.next_input, p.dtype, b * P + k, next.h);
  }
}

__global__ void masked_bias_kernel(const float* product, const float* bias, const std::int32_t* mask, float* output,
                                   std::int64_t batch, std::int64_t width) {
  const std::int64_t n = batch * width;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t b = i / width;
    if (mask[b]) {
      output[i] = product[i] + bias[i - b * width];
    }
  }
}

// One block per row: gather the embeddings of the context into shared memory, then (optionally) normalise.
__global__ void stateless_features_kernel(StatelessParams p) {
  extern __shared__ float features[];
  __shared__ float reduce[kThreads];
  for (std::int64_t b = blockIdx.x; b < p.batch; b += gridDim.x) {
    if (!p.mask[b]) continue;  // uniform for the block
    const float* previous = p.state + b * p.state_size;
    for (std::int64_t k = threadIdx.x; k < p.width; k += blockDim.x) {
      int position = 0;
      while (position + 1 < p.context && p.slice_offsets[position + 1] <= k) ++position;
      const std::int64_t slice = p.slice_offsets[position + 1] - p.slice_offsets[position];
      const std::int32_t id =
          position == 0 ? p.labels[b] : static_cast<std::int32_t>(previous[p.context - 1 - position]);
      features[k] =
          p.tables[p.table_offsets[position] + static_cast<std::int64_t>(id) * slice + (k - p.slice_offsets[position])];
    }
    __syncthreads();
    float mean = 0.0f;
    float scale = 1.0f;
    if (p.layer_norm) {
      float sum = 0.0f;
      for (std::int64_t k = threadIdx.x; k < p.width; k += blockDim.x) sum += features[k];
      reduce[threadIdx.x] = sum;
      __syncthreads();
      for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) reduce[threadIdx.x] += reduce[threadIdx.x + stride];
        __syncthreads();
      }
      mean = reduce[0] / static_cast<float>(p.width);
      __syncthreads();
      float squares = 0.0f;
      for (std::int64_t k = threadIdx.x; k < p.width; k += blockDim.x) {
        squares += (features[k] - mean) * (features[k] - mean);
      }
      reduce[threadIdx.x] = squares;
      __syncthreads();
      for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) reduce[threadIdx.x] += reduce[threadIdx.x + stride];
        __syncthreads();
      }
      scale = 1.0f / sqrtf(reduce[0] / static_cast<float>(p.width) + 1e-5f);
      __syncthreads();
    }
    for (std::int64_t k = threadIdx.x; k < p.width; k += blockDim.x) {
      store(p.features, p.dtype, b * p.width + k, p.layer_norm ? (features[k] - mean) * scale : features[k]);
    }
    __syncthreads();
  }
}

__global__ void stateless_shift_kernel(StatelessParams p) {
  for (std::int64_t b = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; b < p.batch;
       b += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    if (!p.mask[b] || p.context < 2) continue;
    float* previous = p.state + b * p.state_size;
    for (std::int32_t i = 0; i + 1 < p.context - 1; ++i) previous[i] = previous[i + 1];
    previous[p.context - 2] = static_cast<float>(p.labels[b]);
  }
}

// ---- fused kernels for a few rows (joint_gemv_shape.hpp) ----

constexpr int kLstmRowTile = 8;  // rows per pass over a unit's weights: 4 gates x 8 rows x 2 sums in registers
constexpr int kLstmUnroll = 2;   // steps of the inner dimension whose weight loads are in flight together

// Row b's cell update for unit k from the gates' two matrix products, as lstm_cell_kernel does it.
__device__ void lstm_fused_cell(const LstmFusedLayer& p, std::int64_t b, std::int64_t k, const float (&recurrent)[4],
                                const float (&input)[4]) {
  const std::int64_t P = p.hidden;
  const float* h = p.state + b * p.state_stride + p.h_offset;
  float* c = p.state + b * p.state_stride + p.h_offset + P;
  if (!p.mask[b]) {
    p.h_next[b * P + k] = h[k];
    store(p.next_input, p.dtype, b * P + k, h[k]);
    return;
  }
  float gate[4];
#pragma unroll
  for (int g = 0; g < 4; ++g) {
    gate[g] = lstm_gate(p.input_table, p.labels[b], input[g], p.bias, g * P + k, P, recurrent[g]);
  }
  const LstmCellState next = lstm_cell(gate[0], gate[1], gate[2], gate[3], c[k]);
  c[k] = next.c;
  p.h_next[b * P + k] = next.h;
  store(p.next_input, p.dtype, b * P + k, next.h);
}

// Each block rounds every row's h (and loads the layer below's round(h')) into shared memory; a warp takes a unit k
// at a time, its lanes over the inner dimension for the unit's four gate rows, the sums reduced by a fixed shuffle
// tree; lane t then updates row first + t's cell.
template <class TWeight>
__global__ void __launch_bounds__(kJointGemvThreads) lstm_fused_layer_kernel(LstmFusedLayer p) {
  extern __shared__ float x[];  // [batch, P] round(h); layers >= 1: then [batch, P] the layer below's round(h')
  const std::int64_t P = p.hidden;
  const bool has_below = p.below != nullptr;
  float* xh = x;
  float* xb = x + p.batch * P;
  const auto fill = static_cast<std::uint32_t>(p.batch * P);  // fits in shared memory
  for (std::uint32_t i = threadIdx.x; i < fill; i += blockDim.x) {
    const std::uint32_t b = i / static_cast<std::uint32_t>(P);
    const std::uint32_t k = i - b * static_cast<std::uint32_t>(P);
    xh[i] = to_float(from_float<TWeight>(p.state[b * p.state_stride + p.h_offset + k]));
    if (has_below) xb[i] = to_float(static_cast<const TWeight*>(p.below)[i]);
  }
  __syncthreads();
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int warps = static_cast<int>(blockDim.x / 32);
  const TWeight* weight_hh = static_cast<const TWeight*>(p.weight_hh);
  const TWeight* weight_ih = static_cast<const TWeight*>(p.weight_ih);
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * warps + threadIdx.x / 32; k < P;
       k += static_cast<std::int64_t>(gridDim.x) * warps) {
    for (std::int64_t first = 0; first < p.batch; first += kLstmRowTile) {
      const std::int64_t left = p.batch - first;
      const int tile = left < kLstmRowTile ? static_cast<int>(left) : kLstmRowTile;
      float recurrent[4][kLstmRowTile];
      float input[4][kLstmRowTile];
#pragma unroll
      for (int g = 0; g < 4; ++g) {
#pragma unroll
        for (int t = 0; t < kLstmRowTile; ++t) recurrent[g][t] = input[g][t] = 0.0f;
      }
      // The unit's weights for kLstmUnroll steps of m are loaded before the first product needs them.
      for (std::int64_t m0 = lane; m0 < P; m0 += 32 * kLstmUnroll) {
        float wh[4][kLstmUnroll];
        float wi[4][kLstmUnroll];
#pragma unroll
        for (int g = 0; g < 4; ++g) {
#pragma unroll
          for (int u = 0; u < kLstmUnroll; ++u) {
            const std::int64_t m = m0 + 32 * u;
            wh[g][u] = m < P ? to_float(weight_hh[(g * P + k) * P + m]) : 0.0f;
            wi[g][u] = has_below && m < P ? to_float(weight_ih[(g * P + k) * P + m]) : 0.0f;
          }
        }
#pragma unroll
        for (int u = 0; u < kLstmUnroll; ++u) {
          const std::int64_t m = m0 + 32 * u;
          if (m >= P) break;
#pragma unroll
          for (int g = 0; g < 4; ++g) {
#pragma unroll
            for (int t = 0; t < kLstmRowTile; ++t) {
              if (t < tile) recurrent[g][t] = __fmaf_rn(wh[g][u], xh[(first + t) * P + m], recurrent[g][t]);
            }
            if (has_below) {
#pragma unroll
              for (int t = 0; t < kLstmRowTile; ++t) {
                if (t < tile) input[g][t] = __fmaf_rn(wi[g][u], xb[(first + t) * P + m], input[g][t]);
              }
            }
          }
        }
      }
      float mine_recurrent[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      float mine_input[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int g = 0; g < 4; ++g) {
#pragma unroll
        for (int t = 0; t < kLstmRowTile; ++t) {
          if (t >= tile) continue;  // the same for the whole warp
          for (int offset = 16; offset > 0; offset >>= 1) {
            recurrent[g][t] += __shfl_xor_sync(0xffffffffu, recurrent[g][t], offset);
            if (has_below) input[g][t] += __shfl_xor_sync(0xffffffffu, input[g][t], offset);
          }
          if (lane == t) {
            mine_recurrent[g] = recurrent[g][t];
            mine_input[g] = input[g][t];
          }
        }
      }
      if (lane < tile) lstm_fused_cell(p, first + lane, k, mine_recurrent, mine_input);
    }
  }
}

// The input rows into shared memory, the LSTM commit (independent of the product: nothing here reads the state),
// then the columns by joint_gemv_columns, bias added for masked rows as masked_bias_kernel does.
template <class TWeight>
__global__ void __launch_bounds__(kJointGemvThreads) fused_projection_kernel(FusedProjection p) {
  extern __shared__ float x[];  // [batch, width]
  for (std::int64_t i = threadIdx.x; i < p.batch * p.width; i += blockDim.x) {
    x[i] = to_float(static_cast<const TWeight*>(p.input)[i]);
  }
  if (p.h_next != nullptr) {
    const std::int64_t per_layer = p.batch * p.hidden;
    for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < p.layers * per_layer;
         i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
      const std::int64_t l = i / per_layer;
      const std::int64_t b = (i - l * per_layer) / p.hidden;
      const std::int64_t k = i - l * per_layer - b * p.hidden;
      if (p.mask[b]) p.state[b * p.state_stride + 2 * l * p.hidden + k] = p.h_next[i];
    }
  }
  __syncthreads();
  const JointGemvRows rows{nullptr, p.weight, p.output, p.batch, p.width, p.joint, JointActivation::relu};
  joint_gemv_columns<TWeight>(rows, x, [&](std::int64_t o, std::int64_t b, float product) {
    if (p.mask[b]) p.output[b * p.joint + o] = product + p.bias[o];
  });
}

}  // namespace

void launch_round_rows(const float* source, std::int64_t source_stride, void* target, DType dtype, std::int64_t batch,
                       std::int64_t width, cudaStream_t stream) {
  round_rows_kernel<<<blocks_for(batch * width), kThreads, 0, stream>>>(source, source_stride, target, dtype, batch,
                                                                        width);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "round_rows_kernel");
}

void launch_lstm_cell(const LstmCellParams& params, cudaStream_t stream) {
  lstm_cell_kernel<<<blocks_for(params.batch * params.hidden), kThreads, 0, stream>>>(params);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "lstm_cell_kernel");
}

void launch_masked_bias(const float* product, const float* bias, const std::int32_t* mask, float* output,
                        std::int64_t batch, std::int64_t width, cudaStream_t stream) {
  masked_bias_kernel<<<blocks_for(batch * width), kThreads, 0, stream>>>(product, bias, mask, output, batch, width);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "masked_bias_kernel");
}

void launch_lstm_fused_layer(const LstmFusedLayer& params, cudaStream_t stream) {
  const auto bytes = static_cast<std::size_t>(
      joint_gemv_shared_bytes(params.batch, params.hidden * (params.below != nullptr ? 2 : 1)));
  with_float_type(params.dtype, [&](auto weight) {
    lstm_fused_layer_kernel<decltype(weight)>
        <<<joint_gemv_blocks(params.hidden), kJointGemvThreads, bytes, stream>>>(params);
  });
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "lstm_fused_layer_kernel");
}

void launch_fused_projection(const FusedProjection& params, cudaStream_t stream) {
  const auto bytes = static_cast<std::size_t>(joint_gemv_shared_bytes(params.batch, params.width));
  with_float_type(params.dtype, [&](auto weight) {
    fused_projection_kernel<decltype(weight)>
        <<<joint_gemv_blocks(params.joint), kJointGemvThreads, bytes, stream>>>(params);
  });
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "fused_projection_kernel");
}

void prepare_stateless_features(std::int64_t width) {
  const std::size_t bytes = static_cast<std::size_t>(width) * sizeof(float);
  if (bytes > 48 * 1024) {
    ASRDEC_CUDA_CHECK(cudaFuncSetAttribute(stateless_features_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(bytes)));
  }
}

void launch_stateless_features(const StatelessParams& params, cudaStream_t stream) {
  const int blocks = static_cast<int>(params.batch < 1 ? 1 : (params.batch > 4096 ? 4096 : params.batch));
  stateless_features_kernel<<<blocks, kThreads, static_cast<std::size_t>(params.width) * sizeof(float), stream>>>(
      params);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "stateless_features_kernel");
}

void launch_stateless_shift(const StatelessParams& params, cudaStream_t stream) {
  stateless_shift_kernel<<<blocks_for(params.batch), kThreads, 0, stream>>>(params);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "stateless_shift_kernel");
}

std::int64_t preload_predictor_kernels() {
  cudaFuncAttributes attributes{};
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, round_rows_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, lstm_cell_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, masked_bias_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, stateless_features_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, stateless_shift_kernel));
  std::int64_t least = kJointGemvMaxSharedBytes;
  for (DType dtype : kFloatDTypes) {
    with_float_type(dtype, [&](auto weight) {
      for (const std::int64_t bytes : {opt_in_joint_gemv_shared(lstm_fused_layer_kernel<decltype(weight)>),
                                       opt_in_joint_gemv_shared(fused_projection_kernel<decltype(weight)>)}) {
        least = bytes < least ? bytes : least;
      }
    });
  }
  return least;
}

}  // namespace asrdec::detail

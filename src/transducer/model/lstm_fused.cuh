#pragma once
// Internal (CUDA): the bodies of the fused predictor kernels for a few rows (predictor_kernels.hpp): one LSTM layer of
// a step, and the projection that commits it. Device functions, so that the predictor's own kernels and a persistent
// decode kernel (greedy decoding's, greedy_kernels.cu) run the same code. Each is a whole-grid step: every block takes
// its share of units or columns; a caller must let every block finish one before another reads its results (a kernel
// boundary or a grid barrier).

#include <cuda_runtime.h>

#include <cstdint>

#include "asrdec/core/dtype.hpp"
#include "asrdec/detail/activation.hpp"
#include "asrdec/detail/float16.hpp"
#include "transducer/model/joint_gemv.cuh"
#include "transducer/model/predictor_kernels.hpp"

namespace asrdec::detail {

template <class T>
__device__ __forceinline__ void store_rounded_as(void* base, std::int64_t i, float value) {
  static_cast<T*>(base)[i] = from_float<T>(value);
}

__device__ __forceinline__ void store_rounded(void* base, DType dtype, std::int64_t i, float value) {
  switch (dtype) {
    case DType::f16:
      store_rounded_as<half_t>(base, i, value);
      break;
    case DType::bf16:
      store_rounded_as<bfloat16_t>(base, i, value);
      break;
    default:
      store_rounded_as<float>(base, i, value);
  }
}

// A gate's pre-activation (column = gate · P + unit) for a row that took `label`: the input part (layer 0: the
// input table's row; above: W_ih · x plus the bias) plus the recurrent part W_hh · round(h), in the CPU executor's
// order. `input_product` is W_ih · x (unused for layer 0). Both LSTM step paths call it.
__device__ inline float lstm_gate(const float* input_table, std::int32_t label, float input_product, const float* bias,
                                  std::int64_t column, std::int64_t P, float recurrent) {
  const float input = input_table != nullptr ? input_table[static_cast<std::int64_t>(label) * 4 * P + column]
                                             : input_product + bias[column];
  return input + recurrent;
}

constexpr int kLstmRowTile = 8;  // rows per pass over a unit's weights: 4 gates x 8 rows x 2 sums in registers
constexpr int kLstmUnroll = 2;   // steps of the inner dimension whose weight loads are in flight together

// Row b's cell update for unit k from the gates' two matrix products, as lstm_cell_kernel does it.
__device__ inline void lstm_fused_cell(const LstmFusedLayer& p, std::int64_t b, std::int64_t k,
                                       const float (&recurrent)[4], const float (&input)[4]) {
  const std::int64_t P = p.hidden;
  const float* h = p.state + b * p.state_stride + p.h_offset;
  float* c = p.state + b * p.state_stride + p.h_offset + P;
  if (!p.mask[b]) {
    p.h_next[b * P + k] = h[k];
    store_rounded(p.next_input, p.dtype, b * P + k, h[k]);
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
  store_rounded(p.next_input, p.dtype, b * P + k, next.h);
}

// Each block rounds every row's h (and loads the layer below's round(h')) into shared memory; a warp takes a unit k
// at a time, its lanes over the inner dimension for the unit's four gate rows, the sums reduced by a fixed shuffle
// tree; lane t then updates row first + t's cell.
template <class TWeight>
__device__ void lstm_fused_layer(const LstmFusedLayer& p, float* x) {
  const std::int64_t P = p.hidden;
  const bool has_below = p.below != nullptr;
  float* xh = x;
  float* xb = x + p.batch * P;
  const auto fill = static_cast<std::uint32_t>(p.batch * P);  // fits in shared memory
#pragma unroll 4
  for (std::uint32_t i = threadIdx.x; i < fill; i += blockDim.x) {  // several rows' loads in flight at once
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
__device__ void fused_projection(const FusedProjection& p, float* x) {
  const auto fill = static_cast<std::uint32_t>(p.batch * p.width);  // fits in shared memory
#pragma unroll 4
  for (std::uint32_t i = threadIdx.x; i < fill; i += blockDim.x) {
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

}  // namespace asrdec::detail

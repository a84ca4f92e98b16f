#include "asrdec/detail/activation.hpp"
#include "asrdec/detail/float16.hpp"
#include "core/cuda/check.hpp"
#include "core/float_type.hpp"
#include "transducer/model/joint_gemv.cuh"
#include "transducer/model/lstm_fused.cuh"
#include "transducer/model/predictor_kernels.hpp"

namespace asrdec::detail {
namespace {

constexpr int kThreads = 256;

int blocks_for(std::int64_t n) {
  const std::int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 1 ? 1 : (blocks > 65535 ? 65535 : blocks));
}

__global__ void round_rows_kernel(const float* source, std::int64_t source_stride, void* target, DType dtype,
                                  std::int64_t batch, std::int64_t width) {
  const std::int64_t n = batch * width;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t b = i / width;
    const std::int64_t k = i - b * width;
    store_rounded(target, dtype, i, source[b * source_stride + k]);
  }
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
      store_rounded(p.next_input, p.dtype, b * P + k, h[k]);
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
    store_rounded(p.next_input, p.dtype, b * P + k, next.h);
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
      store_rounded(p.features, p.dtype, b * p.width + k, p.layer_norm ? (features[k] - mean) * scale : features[k]);
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

// ---- fused kernels for a few rows (joint_gemv_shape.hpp; their bodies are in lstm_fused.cuh) ----

template <class TWeight>
__global__ void __launch_bounds__(kJointGemvThreads) lstm_fused_layer_kernel(LstmFusedLayer p) {
  extern __shared__ float x[];  // lstm_fused_layer_shared_floats
  lstm_fused_layer<TWeight>(p, x);
}

template <class TWeight>
__global__ void __launch_bounds__(kJointGemvThreads) fused_projection_kernel(FusedProjection p) {
  extern __shared__ float x[];  // [batch, width]
  fused_projection<TWeight>(p, x);
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

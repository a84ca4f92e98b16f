#pragma once
// Internal (CUDA): the joint of a few rows in one kernel, without cuBLAS: logits[r, o] = sum_k W[o, k] · hidden[r, k]
// with hidden = act(enc_proj + dec) rounded to the weight dtype: the same products as the hidden kernel
// (joint_hidden.cuh) and the cuBLAS GEMM after it, in fp32, summed in another order (no bias, which the epilogues
// add), in one graph node instead of two. Which shapes take it: joint_gemv_shape.hpp.
//
// Each block computes every row's hidden layer into shared memory (the rows are few), then each warp takes output
// columns in turn: its lanes stride over k, reading the weight row once for all rows (coalesced; the weights stay in
// L2 between steps), and a fixed shuffle tree sums the lanes, so results repeat bit for bit. Only
// block 0 records non-finite encoder values (the same rows the hidden kernel records). The two halves are device
// functions so that a decoder can fuse its epilogue into the same kernel (greedy decoding's joint step).

#include <cuda_runtime.h>

#include <cstdint>

#include "asrdec/core/dtype.hpp"
#include "asrdec/detail/activation.hpp"
#include "asrdec/detail/float16.hpp"
#include "asrdec/detail/transducer_step.hpp"  // is_finite_value
#include "core/bad_value.hpp"
#include "core/cuda/check.hpp"
#include "core/float_type.hpp"
#include "transducer/model/joint_enc_args.hpp"
#include "transducer/model/joint_gemv_shape.hpp"
#include "transducer/model/joint_hidden.cuh"

namespace asrdec::detail {

/** The arrays of one fused joint evaluation. */
struct JointGemvRows {
  const float* dec;    ///< [*, J] predictor outputs
  const void* weight;  ///< [outputs, J] in the weight dtype
  float* logits;       ///< [rows, outputs], without bias
  std::int64_t rows;
  std::int64_t hidden_size;  ///< J
  std::int64_t outputs;
  JointActivation activation;
};

constexpr int kJointGemvRowTile = 8;  // rows whose products a warp skips together when there are fewer
constexpr int kJointGemvUnroll = 4;   // weight loads a lane issues before it waits for the first

/** Every row's gather (dependent loads of the decoder's state), once, a thread each, into the block's shared memory;
 *  then the hidden values i = first, first + stride, ... < rows × J into out[i], rounded to the weight dtype and back
 *  to float (0 for a row nothing reads); non-finite encoder values recorded when `record` (joint_hidden_value). The
 *  element loop issues independent loads. */
template <class TEnc, class TWeight, class Rows>
__device__ void joint_gemv_hidden_values(const JointGemvRows& h, const Rows& rows, float* out, std::uint32_t first,
                                         std::uint32_t stride, bool record) {
  __shared__ JointGather at[kJointGemvMaxRows];
  __shared__ bool used[kJointGemvMaxRows];
  const JointEncArgs args = rows.args();
  if (threadIdx.x < h.rows) {
    JointGather mine{};
    used[threadIdx.x] = rows.gather(threadIdx.x, args, mine);
    at[threadIdx.x] = mine;
  }
  __syncthreads();
  const auto J = static_cast<std::uint32_t>(h.hidden_size);
  const auto n = static_cast<std::uint32_t>(h.rows) * J;  // rows <= 32 and rows * J floats fit in shared memory
#pragma unroll 4
  for (std::uint32_t i = first; i < n; i += stride) {
    const std::uint32_t r = i / J;
    const std::uint32_t j = i - r * J;
    out[i] =
        used[r] ? to_float(joint_hidden_value<TEnc, TWeight>(args, at[r], h.dec, J, j, h.activation, record)) : 0.0f;
  }
}

/** The block's part of a fused joint, first half: every row's hidden layer into `hidden` ([rows, J] in shared
 *  memory); ends with a barrier. Latency is what counts here: each row's gather runs once, in its own thread. Only
 *  block 0 records non-finite encoder values (every block computes the same values). */
template <class TEnc, class TWeight, class Rows>
__device__ void joint_gemv_hidden(const JointGemvRows& h, const Rows& rows, float* hidden) {
  joint_gemv_hidden_values<TEnc, TWeight>(h, rows, hidden, threadIdx.x, blockDim.x, blockIdx.x == 0);
  __syncthreads();
}

/** The first half for a kernel whose blocks can wait for each other (a persistent kernel, grid barriers): every
 *  row's hidden layer computed once across the grid, each block its share of the rows × J values, into `out` (float32
 *  in global memory, [rows, J], the values joint_gemv_hidden would put in shared memory); the caller lets every block
 *  finish, then loads it whole (load_rows_to_shared). Where rows × J is large, every block computing all of it costs
 *  more than the barrier. Each value is computed by one block, which records its own non-finite encoder values. */
template <class TEnc, class TWeight, class Rows>
__device__ void joint_gemv_hidden_share(const JointGemvRows& h, const Rows& rows, float* out) {
  joint_gemv_hidden_values<TEnc, TWeight>(h, rows, out, blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x,
                                          true);
}

/** `n` floats from global memory into this block's shared memory, then a barrier. Both must be 16-byte aligned (a
 *  device buffer's start; dynamic shared memory declared __align__(16)): four floats a load, a quarter of the load
 *  rounds a thread waits for (the bench models' 32 rows: 20 a thread instead of 80). The loads skip L1 (other blocks
 *  wrote the values since this one last read them). */
__device__ inline void load_rows_to_shared(const float* from, float* to, std::uint32_t n) {
  const std::uint32_t quads = n / 4;
  const auto* from4 = reinterpret_cast<const float4*>(from);
  auto* to4 = reinterpret_cast<float4*>(to);
#pragma unroll 4
  for (std::uint32_t i = threadIdx.x; i < quads; i += blockDim.x) to4[i] = __ldcg(from4 + i);
  for (std::uint32_t i = 4 * quads + threadIdx.x; i < n; i += blockDim.x) to[i] = __ldcg(from + i);
  __syncthreads();
}

/** Second half: the output columns of this block, a warp per column. The lanes stride over k, each loading its
 *  weights kJointGemvUnroll at a time and multiplying each into every row's sum (fmaf, in registers; the weights are
 *  read once per column); a fixed shuffle tree then sums the lanes, so results repeat bit for bit. Lane r calls
 *  visit(o, r, logit) for row r, so a caller may keep per-row state in lane r's registers across columns. */
template <class TWeight, class Visit>
__device__ void joint_gemv_columns(const JointGemvRows& h, const float* hidden, Visit&& visit) {
  const auto J = static_cast<std::int32_t>(h.hidden_size);
  const auto rows = static_cast<std::int32_t>(h.rows);  // <= kJointGemvMaxRows, the same for every thread
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int warps = static_cast<int>(blockDim.x / 32);
  const TWeight* weight = static_cast<const TWeight*>(h.weight);
  for (std::int64_t o = static_cast<std::int64_t>(blockIdx.x) * warps + threadIdx.x / 32; o < h.outputs;
       o += static_cast<std::int64_t>(gridDim.x) * warps) {
    const TWeight* w = weight + o * J;
    float sum[kJointGemvMaxRows];
#pragma unroll
    for (int t = 0; t < kJointGemvMaxRows; ++t) sum[t] = 0.0f;
    for (std::int32_t k0 = lane; k0 < J; k0 += 32 * kJointGemvUnroll) {
      float wk[kJointGemvUnroll];
#pragma unroll
      for (int u = 0; u < kJointGemvUnroll; ++u) {
        const std::int32_t k = k0 + 32 * u;
        wk[u] = k < J ? to_float(w[k]) : 0.0f;
      }
#pragma unroll
      for (int u = 0; u < kJointGemvUnroll; ++u) {
        const std::int32_t k = k0 + 32 * u;
        if (k >= J) break;
#pragma unroll
        for (int first = 0; first < kJointGemvMaxRows; first += kJointGemvRowTile) {
          if (first >= rows) break;  // uniform over the warp
#pragma unroll
          for (int t = first; t < first + kJointGemvRowTile; ++t) {
            if (t < rows) sum[t] = __fmaf_rn(wk[u], hidden[t * J + k], sum[t]);
          }
        }
      }
    }
    float mine = 0.0f;  // lane t's row; constant indices keep `sum` in registers
#pragma unroll
    for (int t = 0; t < kJointGemvMaxRows; ++t) {
      if (t >= rows) break;
      for (int offset = 16; offset > 0; offset >>= 1) sum[t] += __shfl_xor_sync(0xffffffffu, sum[t], offset);
      if (lane == t) mine = sum[t];
    }
    if (lane < rows) visit(o, static_cast<std::int64_t>(lane), mine);
  }
}

template <class TEnc, class TWeight, class Rows>
__global__ void __launch_bounds__(kJointGemvThreads) joint_gemv_kernel(JointGemvRows h, Rows rows) {
  extern __shared__ float hidden[];  // [rows, J]
  joint_gemv_hidden<TEnc, TWeight>(h, rows, hidden);
  joint_gemv_columns<TWeight>(
      h, hidden, [&](std::int64_t o, std::int64_t row, float logit) { h.logits[row * h.outputs + o] = logit; });
}

/** Enqueues the logits of `h.rows` joint rows described by `rows`; the shape must pass joint_gemv_fits (the caller
 *  chose this kernel by it) and preload_joint_gemv must have run on this device. */
template <class Rows>
void launch_joint_gemv(const JointGemvRows& h, DType enc_dtype, DType weight_dtype, const Rows& rows,
                       cudaStream_t stream) {
  const auto bytes = static_cast<std::size_t>(joint_gemv_shared_bytes(h.rows, h.hidden_size));
  with_float_type(enc_dtype, [&](auto enc) {
    with_float_type(weight_dtype, [&](auto weight) {
      joint_gemv_kernel<decltype(enc), decltype(weight)>
          <<<joint_gemv_blocks(h.outputs), kJointGemvThreads, bytes, stream>>>(h, rows);
    });
  });
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "joint_gemv_kernel");
}

/** The shared memory a block of `kernel` (a joint_gemv kernel, or a kernel built on its halves) may take
 *  dynamically: up to kJointGemvMaxSharedBytes, or what the current device allows beside the kernel's static shared
 *  memory if less. Loads the kernel and opts it in to that (outside any capture: lazy module loading and attribute
 *  changes may not happen inside one). */
template <class Kernel>
std::int64_t opt_in_joint_gemv_shared(Kernel kernel) {
  int device = 0;
  int optin = 0;
  ASRDEC_CUDA_CHECK(cudaGetDevice(&device));
  ASRDEC_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  cudaFuncAttributes a{};
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, kernel));
  std::int64_t bytes = static_cast<std::int64_t>(optin) - static_cast<std::int64_t>(a.sharedSizeBytes);
  bytes = bytes < kJointGemvMaxSharedBytes ? bytes : kJointGemvMaxSharedBytes;
  bytes = bytes > 0 ? bytes : 0;
  ASRDEC_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  return bytes;
}

/** The least opt_in_joint_gemv_shared over the nine kernels kernel_of(enc, weight) of the (encoder, weight) element
 *  types: the limit for joint_gemv_fits when any of them may run. */
template <class KernelOf>
std::int64_t opt_in_joint_gemv_shared_all(KernelOf&& kernel_of) {
  std::int64_t least = kJointGemvMaxSharedBytes;
  for (DType enc_dtype : kFloatDTypes) {
    for (DType weight_dtype : kFloatDTypes) {
      with_float_type(enc_dtype, [&](auto enc) {
        with_float_type(weight_dtype, [&](auto weight) {
          const std::int64_t bytes = opt_in_joint_gemv_shared(kernel_of(enc, weight));
          least = bytes < least ? bytes : least;
        });
      });
    }
  }
  return least;
}

/** Loads the nine joint_gemv kernels of `Rows` and opts them in; returns their limit, for joint_gemv_fits. */
template <class Rows>
std::int64_t preload_joint_gemv() {
  return opt_in_joint_gemv_shared_all(
      [](auto enc, auto weight) { return joint_gemv_kernel<decltype(enc), decltype(weight), Rows>; });
}

}  // namespace asrdec::detail

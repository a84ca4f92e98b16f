#pragma once
// Internal (CUDA): the joint's hidden layer, act(enc_proj[b, frame, :] + dec[predictor row, :]), for the rows a
// transducer decoder evaluates in one step. Greedy decoding and beam search share it (their GEMM and epilogues
// follow); each describes its rows with a gather functor, so the kernel needs no copy of their states:
//   rows.args()                  the per-call encoder view (JointEncArgs in device memory, rewritten before replays)
//   rows.gather(r, args, &at)    fills `at` for joint row r, or returns false for an idle row (zeros)
// The launch picks one of nine kernels by the encoder's and the weights' dtypes.

#include <cuda_runtime.h>

#include <cstdint>

#include "asrdec/core/dtype.hpp"
#include "asrdec/detail/activation.hpp"
#include "asrdec/detail/float16.hpp"
#include "asrdec/detail/transducer_step.hpp"  // is_finite_value
#include "core/bad_value.hpp"
#include "core/cuda/check.hpp"
#include "transducer/model/joint_enc_args.hpp"

namespace asrdec::detail {

/** Where joint row r reads: utterance b's frame, predictor output row dec_row; a non-finite encoder value is
 *  recorded (packed, atomicMin) in *bad when `check`. */
struct JointGather {
  std::int64_t b;
  std::int32_t frame;
  std::int64_t dec_row;
  unsigned long long* bad;
  bool check;
};

/** The arrays of one joint-hidden evaluation. */
struct JointHiddenRows {
  const float* dec;  ///< [*, J] predictor outputs
  void* hidden;      ///< [rows, J] in the weight dtype
  std::int64_t rows;
  std::int64_t hidden_size;  ///< J
  JointActivation activation;
};

constexpr int kJointHiddenThreads = 256;

/** Element j of joint row `at`'s hidden layer, act(enc + dec) rounded to TWeight; a non-finite encoder value is
 *  recorded in *at.bad when at.check and `record`. The hidden kernel and the fused joint (joint_gemv.cuh) share it. */
template <class TEnc, class TWeight>
__device__ TWeight joint_hidden_value(const JointEncArgs& args, const JointGather& at, const float* dec,
                                      std::int64_t hidden_size, std::int64_t j, JointActivation activation,
                                      bool record) {
  const TEnc* enc = static_cast<const TEnc*>(args.enc);
  const float x = to_float(enc[at.b * args.stride_b + at.frame * args.stride_t + j * args.stride_j]);
  if (record && at.check && !is_finite_value(x)) atomicMin(at.bad, pack_bad_value(at.b, at.frame, j, x != x));
  return from_float<TWeight>(activate(activation, x + dec[at.dec_row * hidden_size + j]));
}

template <class TEnc, class TWeight, class Rows>
__global__ void __launch_bounds__(kJointHiddenThreads) joint_hidden_kernel(JointHiddenRows h, Rows rows) {
  const JointEncArgs args = rows.args();
  const std::int64_t n = h.rows * h.hidden_size;
  TWeight* hidden = static_cast<TWeight*>(h.hidden);
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / h.hidden_size;
    const std::int64_t j = i - r * h.hidden_size;
    JointGather at{};
    if (!rows.gather(r, args, at)) {
      hidden[i] = from_float<TWeight>(0.0f);
      continue;
    }
    hidden[i] = joint_hidden_value<TEnc, TWeight>(args, at, h.dec, h.hidden_size, j, h.activation, true);
  }
}

template <class TEnc, class Rows>
void launch_joint_hidden_for(const JointHiddenRows& h, DType weight_dtype, const Rows& rows, int blocks,
                             cudaStream_t stream) {
  switch (weight_dtype) {
    case DType::f16:
      joint_hidden_kernel<TEnc, half_t><<<blocks, kJointHiddenThreads, 0, stream>>>(h, rows);
      break;
    case DType::bf16:
      joint_hidden_kernel<TEnc, bfloat16_t><<<blocks, kJointHiddenThreads, 0, stream>>>(h, rows);
      break;
    default:
      joint_hidden_kernel<TEnc, float><<<blocks, kJointHiddenThreads, 0, stream>>>(h, rows);
  }
}

/** Enqueues the hidden layer of `h.rows` joint rows described by `rows`. */
template <class Rows>
void launch_joint_hidden(const JointHiddenRows& h, DType enc_dtype, DType weight_dtype, const Rows& rows,
                         cudaStream_t stream) {
  const std::int64_t wanted = (h.rows * h.hidden_size + kJointHiddenThreads - 1) / kJointHiddenThreads;
  const int blocks = static_cast<int>(wanted < 1 ? 1 : (wanted > 65535 ? 65535 : wanted));
  switch (enc_dtype) {
    case DType::f16:
      launch_joint_hidden_for<half_t>(h, weight_dtype, rows, blocks, stream);
      break;
    case DType::bf16:
      launch_joint_hidden_for<bfloat16_t>(h, weight_dtype, rows, blocks, stream);
      break;
    default:
      launch_joint_hidden_for<float>(h, weight_dtype, rows, blocks, stream);
  }
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "joint_hidden_kernel");
}

/** Loads the nine kernels of `Rows` (outside any capture: lazy module loading may not happen inside one). */
template <class Rows>
void preload_joint_hidden() {
  cudaFuncAttributes a{};
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, joint_hidden_kernel<float, float, Rows>));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, joint_hidden_kernel<float, half_t, Rows>));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, joint_hidden_kernel<float, bfloat16_t, Rows>));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, joint_hidden_kernel<half_t, float, Rows>));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, joint_hidden_kernel<half_t, half_t, Rows>));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, joint_hidden_kernel<half_t, bfloat16_t, Rows>));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, joint_hidden_kernel<bfloat16_t, float, Rows>));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, joint_hidden_kernel<bfloat16_t, half_t, Rows>));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&a, joint_hidden_kernel<bfloat16_t, bfloat16_t, Rows>));
}

}  // namespace asrdec::detail

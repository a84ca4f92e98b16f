#pragma once
// Internal: the one GEMM shape the transducer needs, through cuBLAS (opened on first use, cublas_library.hpp): Y[r, o]
// = sum_k W[o, k] * X[r, k] for a weight matrix W [O, K] (row-major, fp32/fp16/bf16) and R input rows X (row-major,
// same dtype), fp32 output and fp32 accumulation. The handle owns a fixed workspace so that the GEMM can be captured
// into CUDA graphs (cuBLAS must not allocate during capture).

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "asrdec/core/buffer.hpp"
#include "asrdec/core/dtype.hpp"
#include "core/cuda/cublas_library.hpp"

namespace asrdec::detail {

class Gemm {
 public:
  explicit Gemm(Device device);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  /** Enqueues Y = X · Wᵀ on `stream`. ldx / ldy are the row strides of X and Y in elements. */
  void rows_times_weight_t(const void* weight, DType dtype, std::int64_t outputs, std::int64_t inner, const void* x,
                           std::int64_t ldx, std::int64_t rows, float* y, std::int64_t ldy, cudaStream_t stream);

 private:
  const CublasLibrary& cublas_;  // opened by the first Gemm of the process
  cublasHandle_t handle_ = nullptr;
  DeviceBuffer<std::byte> workspace_;
};

[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line);

}  // namespace asrdec::detail

#define ASRDEC_CUBLAS_CHECK(call)                                                             \
  do {                                                                                        \
    const cublasStatus_t asrdec_cublas_status_ = (call);                                      \
    if (asrdec_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                                     \
      ::asrdec::detail::throw_cublas_error(asrdec_cublas_status_, #call, __FILE__, __LINE__); \
    }                                                                                         \
  } while (false)

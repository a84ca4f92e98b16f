#include "core/cuda/gemm.hpp"

#include "core/cuda/check.hpp"
#include "core/cuda/cublas_library.hpp"

namespace asrdec::detail {
namespace {

// 32 MiB: what cuBLAS recommends on Hopper for its fastest kernels; smaller GPUs need less.
constexpr std::size_t kWorkspaceBytes = 32u << 20;

cudaDataType cuda_type(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

}  // namespace

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  const CublasLibrary& cublas = cublas_library();
  throw CudaError(call, static_cast<int>(status), cublas.status_name(status), cublas.status_string(status), file, line);
}

Gemm::Gemm(Device device) : cublas_(cublas_library()), workspace_(kWorkspaceBytes, device) {
  DeviceGuard guard(device);
  ASRDEC_CUBLAS_CHECK(cublas_.create(&handle_));
  ASRDEC_CUBLAS_CHECK(cublas_.set_workspace(handle_, workspace_.data(), workspace_.bytes()));
  // fp32 inputs stay fp32 (no TF32) and no split-K reduction runs in reduced precision, so CUDA logits match the
  // CPU's to float rounding of a different summation order; with a fixed workspace, cuBLAS repeats its results bit
  // for bit on the same GPU model (docs/cuda-contract.md).
  ASRDEC_CUBLAS_CHECK(cublas_.set_math_mode(
      handle_, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
}

Gemm::~Gemm() {
  if (handle_ != nullptr) {
    (void)cublas_.destroy(handle_);
  }
}

void Gemm::rows_times_weight_t(const void* weight, DType dtype, std::int64_t outputs, std::int64_t inner, const void* x,
                               std::int64_t ldx, std::int64_t rows, float* y, std::int64_t ldy, cudaStream_t stream) {
  if (rows == 0 || outputs == 0) {
    return;
  }
  // cuBLAS is column-major. Row-major Y [R, O] is the column-major O x R matrix C; row-major W [O, K] read
  // column-major is the K x O matrix Wᵀ, so op(A) = transpose gives W (O x K); row-major X [R, K] read
  // column-major is the K x R matrix Xᵀ, used as is. C = W · Xᵀ, i.e. Y = X · Wᵀ.
  const float alpha = 1.0f;
  const float beta = 0.0f;
  ASRDEC_CUBLAS_CHECK(cublas_.set_stream(handle_, stream));
  // cublasSetStream resets the workspace to cuBLAS's own pool, which allocates — illegal inside captured
  // (conditional) graphs. Hand it our fixed workspace again every time.
  ASRDEC_CUBLAS_CHECK(cublas_.set_workspace(handle_, workspace_.data(), workspace_.bytes()));
  ASRDEC_CUBLAS_CHECK(cublas_.gemm_ex(handle_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(outputs),
                                      static_cast<int>(rows), static_cast<int>(inner), &alpha, weight, cuda_type(dtype),
                                      static_cast<int>(inner), x, cuda_type(dtype), static_cast<int>(ldx), &beta, y,
                                      CUDA_R_32F, static_cast<int>(ldy), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace asrdec::detail

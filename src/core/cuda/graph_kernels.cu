#include "core/cuda/check.hpp"
#include "core/cuda/graph_kernels.hpp"

namespace asrdec::detail {
namespace {

__global__ void set_while_condition_kernel(cudaGraphConditionalHandle handle, const std::int32_t* flag) {
  cudaGraphSetConditional(handle, *flag != 0 ? 1u : 0u);
}

__global__ void counter_reset_kernel(std::int32_t* counter, std::int32_t* flag, const std::int32_t* limit) {
  *counter = 0;
  *flag = 0 < *limit ? 1 : 0;
}

__global__ void counter_step_kernel(std::int32_t* counter, std::int32_t* flag, const std::int32_t* limit) {
  const std::int32_t next = *counter + 1;
  *counter = next;
  *flag = next < *limit ? 1 : 0;
}

__global__ void counter_add_kernel(std::int32_t* total) { *total += 1; }

}  // namespace

void launch_set_while_condition(cudaGraphConditionalHandle handle, const std::int32_t* flag, cudaStream_t stream) {
  set_while_condition_kernel<<<1, 1, 0, stream>>>(handle, flag);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "set_while_condition_kernel");
}

void launch_counter_reset(std::int32_t* counter, std::int32_t* flag, const std::int32_t* limit, cudaStream_t stream) {
  counter_reset_kernel<<<1, 1, 0, stream>>>(counter, flag, limit);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "counter_reset_kernel");
}

void launch_counter_step(std::int32_t* counter, std::int32_t* flag, const std::int32_t* limit, cudaStream_t stream) {
  counter_step_kernel<<<1, 1, 0, stream>>>(counter, flag, limit);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "counter_step_kernel");
}

void launch_counter_add(std::int32_t* total, cudaStream_t stream) {
  counter_add_kernel<<<1, 1, 0, stream>>>(total);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "counter_add_kernel");
}

void preload_graph_kernels() {
  cudaFuncAttributes attributes{};
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, set_while_condition_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, counter_reset_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, counter_step_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, counter_add_kernel));
}

}  // namespace asrdec::detail

#include "core/cuda/check.hpp"
#include "core/cuda/graph_kernels.hpp"

namespace asrdec::detail {
namespace {

__global__ void loop_enter_kernel(cudaGraphConditionalHandle handle, const std::int32_t* flag,
                                  std::int64_t* iterations) {
  *iterations = 0;
  cudaGraphSetConditional(handle, *flag != 0 ? 1u : 0u);
}

__global__ void loop_continue_kernel(cudaGraphConditionalHandle handle, const std::int32_t* flag,
                                     std::int64_t* iterations, std::int64_t cap, std::int32_t loop_id,
                                     std::int32_t* overflow) {
  const std::int64_t done = *iterations + 1;
  *iterations = done;
  bool again = *flag != 0;
  if (again && done >= cap) {
    *overflow = loop_id;
    again = false;
  }
  cudaGraphSetConditional(handle, again ? 1u : 0u);
}

__global__ void clear_word_kernel(std::int32_t* word) { *word = 0; }

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

void launch_loop_enter(cudaGraphConditionalHandle handle, const std::int32_t* flag, std::int64_t* iterations,
                       cudaStream_t stream) {
  loop_enter_kernel<<<1, 1, 0, stream>>>(handle, flag, iterations);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "loop_enter_kernel");
}

void launch_loop_continue(cudaGraphConditionalHandle handle, const std::int32_t* flag, std::int64_t* iterations,
                          std::int64_t cap, std::int32_t loop_id, std::int32_t* overflow, cudaStream_t stream) {
  loop_continue_kernel<<<1, 1, 0, stream>>>(handle, flag, iterations, cap, loop_id, overflow);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "loop_continue_kernel");
}

void launch_clear_word(std::int32_t* word, cudaStream_t stream) {
  clear_word_kernel<<<1, 1, 0, stream>>>(word);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "clear_word_kernel");
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

cudaError_t kernel_image_status() {
  cudaFuncAttributes attributes{};
  const cudaError_t status = cudaFuncGetAttributes(&attributes, clear_word_kernel);
  (void)cudaGetLastError();  // the status is the answer; leave no error behind for the next check
  return status;
}

void preload_graph_kernels() {
  cudaFuncAttributes attributes{};
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, loop_enter_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, loop_continue_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, clear_word_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, counter_reset_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, counter_step_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, counter_add_kernel));
}

}  // namespace asrdec::detail

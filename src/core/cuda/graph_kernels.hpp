#pragma once
// Internal: the kernels behind GraphExecutor's conditional WHILE nodes, and small counter kernels used to
// probe graph support at run time (and by the tests of the graph helper).

#include <cuda_runtime.h>

#include <cstdint>

namespace asrdec::detail {

/** Entry test of a WHILE node, launched before it: *iterations = 0; the condition `handle` = (*flag != 0). */
void launch_loop_enter(cudaGraphConditionalHandle handle, const std::int32_t* flag, std::int64_t* iterations,
                       cudaStream_t stream);
/** Continue test, launched at the end of the body: ++*iterations; the condition = (*flag != 0), except that a loop
 *  whose body ran `cap` times with the flag still set stops and writes `loop_id` to *overflow (a runaway loop
 *  becomes an error flag instead of a hung GPU). */
void launch_loop_continue(cudaGraphConditionalHandle handle, const std::int32_t* flag, std::int64_t* iterations,
                          std::int64_t cap, std::int32_t loop_id, std::int32_t* overflow, cudaStream_t stream);
/** *word = 0. */
void launch_clear_word(std::int32_t* word, cudaStream_t stream);

/** *counter = 0; *flag = (*counter < *limit). */
void launch_counter_reset(std::int32_t* counter, std::int32_t* flag, const std::int32_t* limit, cudaStream_t stream);
/** ++*counter; *flag = (*counter < *limit). */
void launch_counter_step(std::int32_t* counter, std::int32_t* flag, const std::int32_t* limit, cudaStream_t stream);
/** ++*total. */
void launch_counter_add(std::int32_t* total, cudaStream_t stream);

/** Whether the current device can run asrdec's kernels: cudaSuccess, or cudaErrorNoKernelImageForDevice (or
 *  cudaErrorInvalidDeviceFunction) when the library holds no code for its architecture. Every .cu file is compiled
 *  for the same architectures, so one kernel answers for all. Does not throw. */
cudaError_t kernel_image_status();

/** Loads the module holding these kernels so that their first launch never happens during stream capture. */
void preload_graph_kernels();

}  // namespace asrdec::detail

#pragma once
// Internal: the kernels behind GraphExecutor's conditional WHILE nodes, and small counter kernels used to
// probe graph support at run time (and by the tests of the graph helper).

#include <cuda_runtime.h>

#include <cstdint>

namespace asrdec::detail {

/** Sets the loop condition `handle` to (*flag != 0). Launched once before a WHILE node (entry test) and once at
 *  the end of its body (continue test). */
void launch_set_while_condition(cudaGraphConditionalHandle handle, const std::int32_t* flag, cudaStream_t stream);

/** *counter = 0; *flag = (*counter < *limit). */
void launch_counter_reset(std::int32_t* counter, std::int32_t* flag, const std::int32_t* limit, cudaStream_t stream);
/** ++*counter; *flag = (*counter < *limit). */
void launch_counter_step(std::int32_t* counter, std::int32_t* flag, const std::int32_t* limit, cudaStream_t stream);
/** ++*total. */
void launch_counter_add(std::int32_t* total, cudaStream_t stream);

/** Loads the module holding these kernels so that their first launch never happens during stream capture. */
void preload_graph_kernels();

}  // namespace asrdec::detail

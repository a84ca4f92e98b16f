#pragma once
// Internal (CUDA): the stream-capture calls whose signatures CUDA 13 changed, under one name for every toolkit the
// library builds with (CUDA 12.4 and newer). CUDA 12.3 added forms that carry the graph's edge data beside the
// dependencies (cudaStreamGetCaptureInfo_v3, cudaGraphAddNode_v2, cudaStreamUpdateCaptureDependencies_v2); CUDA 13
// gave those signatures to the unsuffixed names and dropped the old ones. Conditional loop nodes need the edge data.

#include <cuda_runtime.h>

#include <cstddef>

namespace asrdec::detail {

/** The capture status of `stream` and, where not null, its capture id, graph, and open dependencies with their
 *  edge data. */
inline cudaError_t capture_info(cudaStream_t stream, cudaStreamCaptureStatus* status, unsigned long long* id,
                                cudaGraph_t* graph, const cudaGraphNode_t** dependencies,
                                const cudaGraphEdgeData** edges, std::size_t* dependency_count) {
#if CUDART_VERSION >= 13000
  return cudaStreamGetCaptureInfo(stream, status, id, graph, dependencies, edges, dependency_count);
#else
  return cudaStreamGetCaptureInfo_v3(stream, status, id, graph, dependencies, edges, dependency_count);
#endif
}

/** Adds a node of `params` to `graph` after `dependencies` (with their edge data). */
inline cudaError_t add_graph_node(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies,
                                  const cudaGraphEdgeData* edges, std::size_t dependency_count,
                                  cudaGraphNodeParams* params) {
#if CUDART_VERSION >= 13000
  return cudaGraphAddNode(node, graph, dependencies, edges, dependency_count, params);
#else
  return cudaGraphAddNode_v2(node, graph, dependencies, edges, dependency_count, params);
#endif
}

/** Sets or adds (`flags`) the nodes the next work captured on `stream` depends on. */
inline cudaError_t update_capture_dependencies(cudaStream_t stream, cudaGraphNode_t* nodes,
                                               const cudaGraphEdgeData* edges, std::size_t count, unsigned int flags) {
#if CUDART_VERSION >= 13000
  return cudaStreamUpdateCaptureDependencies(stream, nodes, edges, count, flags);
#else
  return cudaStreamUpdateCaptureDependencies_v2(stream, nodes, edges, count, flags);
#endif
}

}  // namespace asrdec::detail

#pragma once
/**
 * @file
 * Raw memory operations behind the typed buffers. Kept out of line so that public headers need no CUDA
 * headers. All functions throw CudaError when a CUDA call fails and Unsupported when CUDA is needed but not
 * available.
 */

#include <cstddef>

#include "asrdec/core/device.hpp"
#include "asrdec/core/stream.hpp"

namespace asrdec {

/** host: pageable memory (64-byte aligned); pinned: page-locked host memory (cudaMallocHost), readable by
 *  CUDA kernels and the only host memory that copies truly overlap with; device: CUDA device memory. */
enum class MemoryKind { host, pinned, device };

const char* to_string(MemoryKind kind) noexcept;

namespace detail {
void* allocate_bytes(MemoryKind kind, std::size_t bytes, Device device);
void free_bytes(MemoryKind kind, void* pointer, Device device) noexcept;
}  // namespace detail

/** Copies `bytes` bytes. Host-to-host copies are a synchronous memcpy; anything that touches a CUDA device
 *  is enqueued on `stream` (cudaMemcpyAsync; nullptr is the legacy default stream) and the memory must stay
 *  valid until the stream passes it. */
void copy_bytes_async(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes,
                      StreamHandle stream);

/** Sets `bytes` bytes to `byte_value`; synchronous on the host, enqueued on `stream` on a device (nullptr: the
 *  legacy default stream). */
void fill_bytes_async(void* dst, Device device, int byte_value, std::size_t bytes, StreamHandle stream);

}  // namespace asrdec

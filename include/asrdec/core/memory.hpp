#pragma once
/**
 * @file
 * Raw memory operations behind the typed buffers. Kept out of line so that public headers need no CUDA
 * headers. All functions throw CudaError when a CUDA call fails and Unsupported when CUDA is needed but not
 * available.
 */

#include <cstddef>

#include "asrdec/core/device.hpp"
#include "asrdec/core/export.hpp"
#include "asrdec/core/stream.hpp"

namespace asrdec {

/** host: pageable memory (64-byte aligned); pinned: page-locked host memory (cudaMallocHost), readable by
 *  CUDA kernels and the only host memory that copies truly overlap with; device: CUDA device memory. */
enum class MemoryKind { host, pinned, device };

ASRDEC_API const char* to_string(MemoryKind kind) noexcept;

/** Allocates `bytes` bytes of `kind` memory (on `device` for device memory). Every allocation of the library goes
 *  through here, so device allocations are counted against a decoder's `max_device_bytes` cap. Throws
 *  OutOfMemory naming the bytes and the device. Buffer<T, Kind> is the typed owner; use these only for raw bytes. */
ASRDEC_API void* allocate_bytes(MemoryKind kind, std::size_t bytes, Device device);
/** Frees memory from allocate_bytes with the same kind and device; nullptr is a no-op. */
ASRDEC_API void free_bytes(MemoryKind kind, void* pointer, Device device) noexcept;

/** Copies `bytes` bytes. Host-to-host copies are a synchronous memcpy; anything that touches a CUDA device
 *  is enqueued on `stream` (cudaMemcpyAsync; nullptr is the legacy default stream) and the memory must stay
 *  valid until the stream passes it. */
ASRDEC_API void copy_bytes_async(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes,
                                 StreamHandle stream);

/** Sets `bytes` bytes to `byte_value`; synchronous on the host, enqueued on `stream` on a device (nullptr: the
 *  legacy default stream). */
ASRDEC_API void fill_bytes_async(void* dst, Device device, int byte_value, std::size_t bytes, StreamHandle stream);

}  // namespace asrdec

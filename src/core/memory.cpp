#include "asrdec/core/memory.hpp"

#include <cstring>
#include <new>

#include "asrdec/config.hpp"
#include "asrdec/core/error.hpp"

#if ASRDEC_WITH_CUDA
#include "core/cuda/check.hpp"
#include "core/cuda/device_bytes_meter.hpp"
#endif

namespace asrdec {
namespace {

constexpr std::align_val_t kHostAlignment{64};

[[noreturn]] void no_cuda(const char* what) {
  throw Unsupported(detail::concat(what, " needs CUDA: ", cuda_info().reason));
}

}  // namespace

const char* to_string(MemoryKind kind) noexcept {
  switch (kind) {
    case MemoryKind::host:
      return "host";
    case MemoryKind::pinned:
      return "pinned";
    case MemoryKind::device:
      return "device";
  }
  return "unknown";
}

void* allocate_bytes(MemoryKind kind, std::size_t bytes, Device device) {
  switch (kind) {
    case MemoryKind::host:
      try {
        return ::operator new(bytes, kHostAlignment);
      } catch (const std::bad_alloc&) {
        throw OutOfMemory(detail::concat("cannot allocate ", bytes, " bytes of host memory"));
      }
    case MemoryKind::pinned: {
#if ASRDEC_WITH_CUDA
      if (!cuda_info().available) {
        no_cuda("pinned host memory");
      }
      void* pointer = nullptr;
      const cudaError_t status = cudaMallocHost(&pointer, bytes);
      if (status == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        throw OutOfMemory(detail::concat("cannot allocate ", bytes, " bytes of pinned host memory"));
      }
      ASRDEC_CUDA_CHECK(status);
      return pointer;
#else
      no_cuda("pinned host memory");
#endif
    }
    case MemoryKind::device: {
#if ASRDEC_WITH_CUDA
      ASRDEC_CHECK_ARG(device.is_cuda(), "device memory needs a CUDA device, got ", device.to_string());
      detail::DeviceBytesMeter::charge(bytes, device);
      detail::DeviceGuard guard(device);
      void* pointer = nullptr;
      const cudaError_t status = cudaMalloc(&pointer, bytes);
      if (status == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();  // not sticky: the device stays usable
        throw OutOfMemory(detail::concat("cannot allocate ", bytes, " bytes of device memory on ", device.to_string()));
      }
      ASRDEC_CUDA_CHECK(status);
      return pointer;
#else
      (void)device;
      no_cuda("device memory");
#endif
    }
  }
  throw InvalidArgument("unknown memory kind");
}

void free_bytes(MemoryKind kind, void* pointer, Device device) noexcept {
  switch (kind) {
    case MemoryKind::host:
      ::operator delete(pointer, kHostAlignment);
      return;
    case MemoryKind::pinned:
#if ASRDEC_WITH_CUDA
      (void)cudaFreeHost(pointer);
#endif
      return;
    case MemoryKind::device:
#if ASRDEC_WITH_CUDA
      // Freeing must not throw; a failure here (driver shutting down, sticky error) leaks at worst.
      int previous = -1;
      if (cudaGetDevice(&previous) == cudaSuccess && previous != device.index()) {
        (void)cudaSetDevice(device.index());
        (void)cudaFree(pointer);
        (void)cudaSetDevice(previous);
      } else {
        (void)cudaFree(pointer);
      }
      (void)cudaGetLastError();
#else
      (void)device;
#endif
      return;
  }
}

void copy_bytes_async(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes,
                      StreamHandle stream) {
  if (bytes == 0) {
    return;
  }
  ASRDEC_CHECK_ARG(dst != nullptr && src != nullptr, "copy_bytes_async: null pointer for a copy of ", bytes, " bytes");
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memcpy(dst, src, bytes);
    return;
  }
#if ASRDEC_WITH_CUDA
  ASRDEC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, detail::caller_stream(stream)));
#else
  (void)stream;
  no_cuda("a copy to or from a CUDA device");
#endif
}

void fill_bytes_async(void* dst, Device device, int byte_value, std::size_t bytes, StreamHandle stream) {
  if (bytes == 0) {
    return;
  }
  if (device.is_cpu()) {
    std::memset(dst, byte_value, bytes);
    return;
  }
#if ASRDEC_WITH_CUDA
  ASRDEC_CUDA_CHECK(cudaMemsetAsync(dst, byte_value, bytes, detail::caller_stream(stream)));
#else
  (void)stream;
  no_cuda("filling device memory");
#endif
}

}  // namespace asrdec

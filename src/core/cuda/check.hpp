#pragma once
// Internal: checking CUDA runtime calls and kernel launches. Included by host .cpp files of the CUDA executor
// and by .cu files; never by public headers.

#include <cuda_runtime.h>

#include "asrdec/core/device.hpp"
#include "asrdec/core/error.hpp"
#include "asrdec/core/stream.hpp"

namespace asrdec::detail {

/** The stream a StreamHandle names: nullptr is the legacy default stream, as in CUB and cuBLAS. */
inline cudaStream_t caller_stream(StreamHandle stream) noexcept {
  return stream != nullptr ? stream : cudaStreamLegacy;
}

[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line);

/** Checks the launch that was just made; with ASRDEC_SYNC_KERNELS=1 also synchronises `stream` (unless it is
 *  being captured into a graph) so that a fault inside the kernel surfaces here. */
void check_launch(cudaStream_t stream, const char* kernel, const char* file, int line);

/** Makes `device` current for its lifetime and restores the previous device afterwards. */
class DeviceGuard {
 public:
  explicit DeviceGuard(Device device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

/** Throws InvalidArgument naming `what` unless `pointer` can be read by kernels on `device`: device memory of
 *  that device, managed memory or pinned host memory. Catches host pointers mislabelled as device data before
 *  a kernel faults on them. */
void check_device_readable(const void* pointer, Device device, const char* what);

}  // namespace asrdec::detail

#define ASRDEC_CUDA_CHECK(call)                                                           \
  do {                                                                                    \
    const cudaError_t asrdec_cuda_status_ = (call);                                       \
    if (asrdec_cuda_status_ != cudaSuccess) {                                             \
      ::asrdec::detail::throw_cuda_error(asrdec_cuda_status_, #call, __FILE__, __LINE__); \
    }                                                                                     \
  } while (false)

#define ASRDEC_CUDA_CHECK_LAUNCH(stream, kernel) ::asrdec::detail::check_launch(stream, kernel, __FILE__, __LINE__)

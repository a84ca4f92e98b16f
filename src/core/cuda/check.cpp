#include "core/cuda/check.hpp"

#include <cstring>

#include "asrdec/core/stream.hpp"

namespace asrdec::detail {
namespace {

// Error messages name the file relative to the source tree, not the build machine's absolute path.
const char* short_path(const char* file) {
  for (const char* marker : {"/src/", "/cuda/", "/include/", "/tests/", "/tools/", "/bench/"}) {
    if (const char* found = std::strstr(file, marker)) {
      return found + 1;
    }
  }
  return file;
}

}  // namespace

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  // Clear the thread's last-error slot so that a recoverable error does not resurface at the next check.
  (void)cudaGetLastError();
  throw CudaError(call, static_cast<int>(code), cudaGetErrorName(code), cudaGetErrorString(code), short_path(file),
                  line);
}

void check_launch(cudaStream_t stream, const char* kernel, const char* file, int line) {
  const cudaError_t launch = cudaGetLastError();
  if (launch != cudaSuccess) {
    throw_cuda_error(launch, kernel, file, line);
  }
  if (sync_kernels_enabled()) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    const cudaError_t query = cudaStreamIsCapturing(stream, &capture);
    if (query != cudaSuccess) {
      throw_cuda_error(query, "cudaStreamIsCapturing", file, line);
    }
    if (capture == cudaStreamCaptureStatusNone) {
      const cudaError_t sync = cudaStreamSynchronize(stream);
      if (sync != cudaSuccess) {
        throw_cuda_error(sync, kernel, file, line);
      }
    }
  }
}

DeviceGuard::DeviceGuard(Device device) {
  ASRDEC_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device.index()) {
    ASRDEC_CUDA_CHECK(cudaSetDevice(device.index()));
  } else {
    previous_ = -1;
  }
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) {
    (void)cudaSetDevice(previous_);
  }
}

void check_device_readable(const void* pointer, Device device, const char* what) {
  ASRDEC_CHECK_ARG(device.is_cuda(), what, ": expected a CUDA device, got ", device.to_string());
  cudaPointerAttributes attributes{};
  const cudaError_t status = cudaPointerGetAttributes(&attributes, pointer);
  if (status == cudaErrorInvalidValue) {
    (void)cudaGetLastError();
    throw InvalidArgument(
        detail::concat(what, ": pointer is not known to CUDA; expected memory readable by ", device.to_string()));
  }
  if (status != cudaSuccess) {
    throw_cuda_error(status, "cudaPointerGetAttributes", __FILE__, __LINE__);
  }
  switch (attributes.type) {
    case cudaMemoryTypeDevice:
      ASRDEC_CHECK_ARG(attributes.device == device.index(), what, ": data is on cuda:", attributes.device,
                       " but the decoder runs on ", device.to_string());
      return;
    case cudaMemoryTypeManaged:
    case cudaMemoryTypeHost:
      return;
    case cudaMemoryTypeUnregistered:
    default:
      throw InvalidArgument(
          detail::concat(what, ": data is in pageable host memory but the decoder runs on ", device.to_string(),
                         "; copy it to the device (or to pinned memory) first, or decode on the cpu"));
  }
}

}  // namespace asrdec::detail

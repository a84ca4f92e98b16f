#include "asrdec/core/stream.hpp"

#include <cstdlib>
#include <cstring>
#include <utility>

#include "asrdec/config.hpp"
#include "asrdec/core/error.hpp"

#if ASRDEC_WITH_CUDA
#include "core/cuda/check.hpp"
#endif

namespace asrdec {

bool sync_kernels_enabled() noexcept {
  static const bool enabled = [] {
    const char* value = std::getenv("ASRDEC_SYNC_KERNELS");
    return value != nullptr && *value != '\0' && std::strcmp(value, "0") != 0;
  }();
  return enabled;
}

Stream::Stream(Device device) : device_(device) {
  if (device.is_cpu()) {
    return;
  }
#if ASRDEC_WITH_CUDA
  detail::DeviceGuard guard(device);
  cudaStream_t stream = nullptr;
  ASRDEC_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  handle_ = stream;
#else
  throw Unsupported(cuda_info().reason);
#endif
}

Stream::~Stream() {
#if ASRDEC_WITH_CUDA
  if (handle_ != nullptr) {
    (void)cudaStreamDestroy(handle_);
  }
#endif
}

Stream::Stream(Stream&& other) noexcept : device_(other.device_), handle_(std::exchange(other.handle_, nullptr)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    Stream old(std::move(*this));
    device_ = other.device_;
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

void Stream::synchronize() const {
#if ASRDEC_WITH_CUDA
  if (handle_ != nullptr) {
    ASRDEC_CUDA_CHECK(cudaStreamSynchronize(handle_));
  }
#endif
}

}  // namespace asrdec

#include "core/cuda/stream_fork.hpp"

namespace asrdec::detail {

StreamFork::StreamFork(Device device) : device_(device), side_(device) {
  DeviceGuard guard(device_);
  ASRDEC_CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
  const cudaError_t status = cudaEventCreateWithFlags(&join_, cudaEventDisableTiming);
  if (status != cudaSuccess) {
    (void)cudaEventDestroy(fork_);
    ASRDEC_CUDA_CHECK(status);
  }
}

StreamFork::~StreamFork() {
  DeviceGuard guard(device_);
  (void)cudaEventDestroy(fork_);
  (void)cudaEventDestroy(join_);
}

}  // namespace asrdec::detail

#include "core/cuda/kernel_image.hpp"

#include <mutex>

#include "asrdec/core/error.hpp"
#include "asrdec/core/version.hpp"
#include "core/cuda/check.hpp"
#include "core/cuda/graph_kernels.hpp"

namespace asrdec::detail {

void require_kernel_image(Device device) {
  // Device index -> kernel_image_status() on it; a plain array, so no container instantiation is exported.
  constexpr int kCachedDevices = 64;
  static std::mutex mutex;
  static bool known[kCachedDevices] = {};
  static cudaError_t answers[kCachedDevices] = {};
  cudaError_t status = cudaSuccess;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    const int index = device.index();
    if (index >= 0 && index < kCachedDevices && known[index]) {
      status = answers[index];
    } else {
      DeviceGuard guard(device);
      status = kernel_image_status();
      if (index >= 0 && index < kCachedDevices) {
        known[index] = true;
        answers[index] = status;
      }
    }
  }
  if (status == cudaSuccess) {
    return;
  }
  if (status != cudaErrorNoKernelImageForDevice && status != cudaErrorInvalidDeviceFunction) {
    throw_cuda_error(status, "cudaFuncGetAttributes (kernel image check)", __FILE__, __LINE__);
  }
  int major = 0;
  int minor = 0;
  (void)cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device.index());
  (void)cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device.index());
  throw Unsupported(concat("this asrdec was compiled for CUDA architectures ", build_info().cuda_architectures_list(),
                           ", which do not cover ", device.to_string(), " (compute capability ", major, ".", minor,
                           "); rebuild asrdec with -DASRDEC_CUDA_ARCHITECTURES=", major, minor,
                           " (or \"native\" on that machine), or decode on the CPU"));
}

}  // namespace asrdec::detail

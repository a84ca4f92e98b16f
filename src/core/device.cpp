#include "asrdec/core/device.hpp"

#include <charconv>

#include "asrdec/config.hpp"
#include "asrdec/core/error.hpp"

#if ASRDEC_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace asrdec {
namespace {

CudaInfo discover() {
  CudaInfo info;
#if ASRDEC_WITH_CUDA
  info.compiled = true;
  (void)cudaRuntimeGetVersion(&info.runtime_version);
  if (cudaDriverGetVersion(&info.driver_version) != cudaSuccess) {
    info.driver_version = 0;
  }
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    info.reason = detail::concat("no CUDA device: ", cudaGetErrorString(status), " (", cudaGetErrorName(status),
                                 ", error ", static_cast<int>(status), ")");
    return info;
  }
  if (count == 0) {
    info.reason = "no CUDA device: the driver reports 0 devices";
    return info;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp properties{};
    if (cudaGetDeviceProperties(&properties, i) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    CudaDeviceProperties device;
    device.index = i;
    device.name = properties.name;
    device.compute_capability_major = properties.major;
    device.compute_capability_minor = properties.minor;
    device.multiprocessors = properties.multiProcessorCount;
    device.total_memory_bytes = properties.totalGlobalMem;
    info.devices.push_back(device);
  }
  if (info.devices.empty()) {
    info.reason = "no CUDA device: properties of every device failed to load";
    return info;
  }
  info.available = true;
#else
  info.reason = "no CUDA device: asrdec was built without CUDA (ASRDEC_ENABLE_CUDA=OFF or no nvcc)";
#endif
  return info;
}

}  // namespace

const CudaInfo& cuda_info() noexcept {
  // Function-local static: discovery runs once, thread-safely, on first use. discover() only throws on
  // allocation failure, which we let terminate as any other out-of-memory in a noexcept function would.
  static const CudaInfo info = discover();
  return info;
}

int cuda_device_count() noexcept { return static_cast<int>(cuda_info().devices.size()); }

std::string format_cuda_version(int version) {
  if (version <= 0) {
    return "none";
  }
  return detail::concat(version / 1000, ".", (version % 1000) / 10);
}

Device Device::cuda(int index) {
  const CudaInfo& info = cuda_info();
  if (!info.available) {
    throw Unsupported(info.reason);
  }
  const int count = cuda_device_count();
  ASRDEC_CHECK_ARG(index >= 0 && index < count, "CUDA device index ", index, " out of range: ", count,
                   count == 1 ? " device is" : " devices are", " visible (cuda:0..cuda:", count - 1, ")");
  return Device(DeviceKind::cuda, index);
}

Device Device::parse(std::string_view text) {
  if (text == "cpu") {
    return cpu();
  }
  if (text == "cuda") {
    return cuda(0);
  }
  if (text == "auto") {
    return cuda_info().available ? cuda(0) : cpu();
  }
  constexpr std::string_view prefix = "cuda:";
  if (text.substr(0, prefix.size()) == prefix) {
    const std::string_view digits = text.substr(prefix.size());
    int index = -1;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (error == std::errc() && end == digits.data() + digits.size() && !digits.empty()) {
      return cuda(index);
    }
  }
  throw InvalidArgument(detail::concat("unknown device '", text, "': expected cpu, cuda, cuda:N or auto"));
}

std::string Device::to_string() const { return is_cpu() ? std::string("cpu") : detail::concat("cuda:", index_); }

}  // namespace asrdec

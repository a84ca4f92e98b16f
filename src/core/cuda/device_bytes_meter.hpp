#pragma once
// Internal: counts the device memory a CUDA executor's buffers take while they are (re)allocated, and enforces a
// decoder's max_device_bytes before cudaMalloc is asked (docs/cuda-contract.md, "Memory"). Every device allocation
// goes through allocate_bytes, which charges the meters of its thread; so the count is the allocations
// themselves, not a formula that could drift from them.

#include <cstddef>
#include <cstdint>

#include "asrdec/core/device.hpp"

namespace asrdec::detail {

class DeviceBytesMeter {
 public:
  /** Meters this thread's device allocations until destroyed. With `cap` > 0, an allocation that would take the
   *  total above `cap` throws OutOfMemory (naming `what`, the setting that sets the cap) before it is made. */
  DeviceBytesMeter(std::int64_t cap, const char* what);
  ~DeviceBytesMeter();
  DeviceBytesMeter(const DeviceBytesMeter&) = delete;
  DeviceBytesMeter& operator=(const DeviceBytesMeter&) = delete;

  /** Device bytes allocated on this thread since construction. */
  std::int64_t bytes() const noexcept { return bytes_; }

  /** Called by allocate_bytes before each device allocation of the current thread: charges every live meter of
   *  the thread, innermost first, or throws OutOfMemory (charging none) when one of them would exceed its cap. */
  static void charge(std::size_t bytes, Device device);

 private:
  std::int64_t cap_;
  const char* what_;
  std::int64_t bytes_ = 0;
  DeviceBytesMeter* outer_;
};

}  // namespace asrdec::detail

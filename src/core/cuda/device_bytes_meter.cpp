#include "core/cuda/device_bytes_meter.hpp"

#include "asrdec/core/error.hpp"

namespace asrdec::detail {
namespace {

thread_local DeviceBytesMeter* innermost = nullptr;

}  // namespace

DeviceBytesMeter::DeviceBytesMeter(std::int64_t cap, const char* what) : cap_(cap), what_(what), outer_(innermost) {
  innermost = this;
}

DeviceBytesMeter::~DeviceBytesMeter() { innermost = outer_; }

void DeviceBytesMeter::charge(std::size_t bytes, Device device) {
  const auto amount = static_cast<std::int64_t>(bytes);
  for (const DeviceBytesMeter* m = innermost; m != nullptr; m = m->outer_) {
    if (m->cap_ > 0 && amount > m->cap_ - m->bytes_) {
      throw OutOfMemory(concat("the buffers for these limits need more than ", m->what_, " = ", m->cap_,
                               " bytes of device memory on ", device.to_string(), " (", m->bytes_, " allocated, ",
                               amount, " more asked); raise it or lower the batch limits"));
    }
  }
  for (DeviceBytesMeter* m = innermost; m != nullptr; m = m->outer_) m->bytes_ += amount;
}

}  // namespace asrdec::detail

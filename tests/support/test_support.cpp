#include "support/test_support.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>

namespace asrdec::testing {

std::uint64_t test_seed() {
  if (const char* forced = std::getenv("ASRDEC_TEST_SEED")) {
    return std::strtoull(forced, nullptr, 10);
  }
  return std::random_device{}() ^ (static_cast<std::uint64_t>(std::random_device{}()) << 32);
}

std::string seed_message(std::uint64_t seed) {
  return "random seed " + std::to_string(seed) + " (replay with ASRDEC_TEST_SEED=" + std::to_string(seed) + ")";
}

std::string temp_path(const std::string& name) {
  static std::atomic<int> counter{0};
  return ::testing::TempDir() + "asrdec_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" +
         name;
}

std::string write_temp_file(const std::string& name, const std::string& bytes) {
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string source_path(const std::string& relative) { return std::string(ASRDEC_SOURCE_DIR) + "/" + relative; }

bool cuda_test_device_available(std::string* reason) {
  const CudaInfo& info = cuda_info();
  if (!info.available && reason != nullptr) {
    *reason = info.reason;
  }
  return info.available;
}

DeviceBuffer<std::byte> to_device(const void* data, std::size_t bytes, Device device) {
  DeviceBuffer<std::byte> buffer(bytes, device);
  Stream stream(device);
  copy_bytes_async(buffer.data(), device, data, Device::cpu(), bytes, stream.handle());
  stream.synchronize();
  return buffer;
}

TensorView f32_on(const std::vector<float>& values, std::int64_t b, std::int64_t t, std::int64_t c, Device device,
                  DeviceBuffer<std::byte>& storage) {
  if (device.is_cpu() || values.empty()) return TensorView(values.data(), DType::f32, {b, t, c}, device);
  storage = to_device(values.data(), values.size() * sizeof(float), device);
  return TensorView(storage.data(), DType::f32, {b, t, c}, device);
}

ScopedEnvironmentVariable::ScopedEnvironmentVariable(const char* name, const char* value) : name_(name) {
  const char* before = std::getenv(name);
  had_value_ = before != nullptr;
  saved_ = had_value_ ? before : "";
  if (value != nullptr) {
    ::setenv(name, value, 1);
  } else {
    ::unsetenv(name);
  }
}

ScopedEnvironmentVariable::~ScopedEnvironmentVariable() {
  if (had_value_) {
    ::setenv(name_.c_str(), saved_.c_str(), 1);
  } else {
    ::unsetenv(name_.c_str());
  }
}

}  // namespace asrdec::testing

#pragma once
/**
 * @file
 * Where an object computes: the CPU or one CUDA device. Discovery never throws and works on machines without
 * a driver: it reports "no CUDA device: <reason>" instead.
 */

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "asrdec/core/export.hpp"

namespace asrdec {

enum class DeviceKind { cpu, cuda };

class ASRDEC_API Device {
 public:
  /** The CPU. */
  constexpr Device() noexcept = default;
  static constexpr Device cpu() noexcept { return Device(); }
  /** CUDA device `index`. Throws Unsupported ("no CUDA device: <reason>") when CUDA is not usable and
   *  InvalidArgument when the index is out of range. */
  static Device cuda(int index = 0);
  /** "cpu", "cuda" (= cuda:0), "cuda:N" or "auto" (cuda:0 when CUDA is usable, else the CPU); throws
   *  InvalidArgument for anything else, and as cuda(). */
  static Device parse(std::string_view text);

  constexpr DeviceKind kind() const noexcept { return kind_; }
  constexpr int index() const noexcept { return index_; }
  constexpr bool is_cpu() const noexcept { return kind_ == DeviceKind::cpu; }
  constexpr bool is_cuda() const noexcept { return kind_ == DeviceKind::cuda; }
  /** "cpu" or "cuda:N". */
  std::string to_string() const;

  friend constexpr bool operator==(Device a, Device b) noexcept { return a.kind_ == b.kind_ && a.index_ == b.index_; }
  friend constexpr bool operator!=(Device a, Device b) noexcept { return !(a == b); }

 private:
  constexpr Device(DeviceKind kind, int index) noexcept : kind_(kind), index_(index) {}
  DeviceKind kind_ = DeviceKind::cpu;
  int index_ = 0;
};

struct ASRDEC_API CudaDeviceProperties {
  int index = 0;
  std::string name;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int multiprocessors = 0;
  std::size_t total_memory_bytes = 0;
};

/** What the process can see of CUDA, gathered once. */
struct ASRDEC_API CudaInfo {
  bool compiled = false;   ///< this build has the CUDA executor
  bool available = false;  ///< at least one device can be used
  /** Empty when available; otherwise "no CUDA device: <reason>", e.g. the runtime's error for a missing or
   *  too old driver ("CUDA driver version is insufficient for CUDA runtime version (error 35)"). */
  std::string reason;
  int runtime_version = 0;  ///< e.g. 13000 for CUDA 13.0; 0 when unknown
  int driver_version = 0;   ///< highest CUDA version the driver supports; 0 when there is no driver
  std::vector<CudaDeviceProperties> devices;
};

/** Discovers CUDA devices on the first call and returns the cached result; never throws. */
ASRDEC_API const CudaInfo& cuda_info() noexcept;

/** Number of usable CUDA devices (0 when CUDA is unavailable); never throws. */
ASRDEC_API int cuda_device_count() noexcept;

/** Formats a CUDA version number such as 12040 as "12.4". */
ASRDEC_API std::string format_cuda_version(int version);

}  // namespace asrdec

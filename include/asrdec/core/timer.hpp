#pragma once
/**
 * @file
 * CudaEventTimer measures GPU time between two points of a stream with CUDA events (what benchmarks use for
 * manual timing). Not for CPU code: use std::chrono there.
 */

#include "asrdec/core/export.hpp"
#include "asrdec/core/stream.hpp"

namespace asrdec {

class ASRDEC_API CudaEventTimer {
 public:
  /** Creates two events on `device` (a CUDA device; throws InvalidArgument for the CPU). */
  explicit CudaEventTimer(Device device);
  ~CudaEventTimer();
  CudaEventTimer(CudaEventTimer&& other) noexcept;
  CudaEventTimer& operator=(CudaEventTimer&& other) noexcept;
  CudaEventTimer(const CudaEventTimer&) = delete;
  CudaEventTimer& operator=(const CudaEventTimer&) = delete;

  /** Records the start event on `stream`. */
  void start(StreamHandle stream);
  /** Records the stop event on `stream`. */
  void stop(StreamHandle stream);
  /** Waits for the stop event and returns the milliseconds between start and stop. */
  float elapsed_ms() const;

 private:
  void release() noexcept;
  Device device_;
  CUevent_st* start_ = nullptr;
  CUevent_st* stop_ = nullptr;
};

}  // namespace asrdec

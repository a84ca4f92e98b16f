#pragma once
// Internal: what every CUDA executor shares (docs/cuda-contract.md) — the caller's stream and the ordering of calls,
// the graph mode that really runs, and capacity growth that leaves the executor usable when an allocation fails.
// The executors keep only what is theirs: buffers, device states, the programs they run.

#include <cuda_runtime.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "asrdec/core/device.hpp"
#include "asrdec/core/graph.hpp"
#include "asrdec/core/stream.hpp"
#include "core/cuda/check.hpp"
#include "core/cuda/device_bytes_meter.hpp"

namespace asrdec::detail {

class ExecutorLifecycle {
 public:
  /** Resolves the graph mode on `device` (a one-time warning when `requested` is not available). With
   *  `max_device_bytes` > 0, growth refuses (OutOfMemory) buffers that would take more device memory. */
  ExecutorLifecycle(Device device, GraphMode requested, std::int64_t max_device_bytes = 0);
  ~ExecutorLifecycle();
  ExecutorLifecycle(const ExecutorLifecycle&) = delete;
  ExecutorLifecycle& operator=(const ExecutorLifecycle&) = delete;

  Device device() const noexcept { return device_; }
  GraphMode requested_mode() const noexcept { return requested_; }
  /** The mode that runs: the resolved one, lowered to per_step once a conditional capture has failed. New
   *  GraphExecutors are built with it. */
  GraphMode mode() const noexcept { return mode_; }

  /** One call of the executor, from construction to destruction (also when it throws): stream() is the caller's
   *  stream, ordered after the work of the previous call when that ran on another stream (the executor's buffers
   *  are shared by its calls); the end of the call is recorded for the next one. */
  class Call {
   public:
    Call(ExecutorLifecycle& lifecycle, StreamHandle caller);
    ~Call();
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;
    cudaStream_t stream() const noexcept { return stream_; }

   private:
    ExecutorLifecycle& lifecycle_;
    cudaStream_t stream_;
  };
  /** Blocks until the work of every call so far is done. */
  void wait_idle();

  /** Runs `executor` on `stream`; a fallback inside it (conditional capture failed) lowers mode(). */
  void run(GraphExecutor& executor, cudaStream_t stream);
  /** After a synchronisation that covers the runs so far: throws Error if a conditional loop of one of them stopped
   *  at its iteration cap (GraphExecutor::check_loops). */
  void check_loops();

  /** Grows `capacity` to `wanted` once earlier calls are done: `allocate()` sizes every buffer from `capacity` and
   *  drops captured graphs. When it throws (e.g. OutOfMemory), `capacity` is restored and allocated again, so the
   *  executor stays usable at its old size, and the error propagates; if even that fails, usable() is false
   *  until a later growth succeeds. */
  template <class Capacity, class Allocate>
  void grow(Capacity& capacity, Capacity wanted, Allocate&& allocate) {
    wait_idle();
    ran_.clear();  // allocate() destroys the executors
    const Capacity old = std::exchange(capacity, std::move(wanted));
    try {
      metered(allocate);
    } catch (...) {
      capacity = old;
      usable_ = false;
      try {
        metered(allocate);
        usable_ = true;
      } catch (...) {
      }
      throw;
    }
    usable_ = true;
  }
  /** Device bytes of the buffers the last successful allocate() made (each executor reallocates all of its sized
   *  buffers there), as counted by a DeviceBytesMeter. */
  std::int64_t device_bytes() const noexcept { return device_bytes_; }
  /** False before the first successful allocation and after a growth that could not restore the old size. */
  bool usable() const noexcept { return usable_; }

 private:
  template <class Allocate>
  void metered(Allocate& allocate) {
    DeviceBytesMeter meter(max_device_bytes_, "max_device_bytes");
    allocate();
    device_bytes_ = meter.bytes();
  }

  Device device_;
  GraphMode requested_;
  GraphMode mode_;
  cudaEvent_t done_ = nullptr;          // recorded at the end of the last call
  cudaStream_t last_stream_ = nullptr;  // the stream the last call ended on
  bool recorded_ = false;
  bool usable_ = false;
  std::int64_t max_device_bytes_ = 0;
  std::int64_t device_bytes_ = 0;
  std::vector<const GraphExecutor*> ran_;  // run since the last check_loops()
};

}  // namespace asrdec::detail

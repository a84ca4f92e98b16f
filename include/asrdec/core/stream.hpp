#pragma once
/**
 * @file
 * CUDA streams without CUDA headers: StreamHandle is exactly cudaStream_t (both are `CUstream_st*`), so an
 * engine passes its own cudaStream_t wherever asrdec takes a StreamHandle.
 *
 * Convention for every asrdec call that takes a StreamHandle: nullptr means the legacy default stream, as in CUB
 * and cuBLAS. A call's work is ordered after everything enqueued earlier on that stream, and its results are ready
 * when the stream reaches the point after the call (docs/cuda-contract.md).
 */

#include "asrdec/core/device.hpp"
#include "asrdec/core/export.hpp"

struct CUstream_st;
struct CUevent_st;

namespace asrdec {

using StreamHandle = CUstream_st*;

/** An owned, non-blocking CUDA stream on one device; for Device::cpu() it holds no stream and every operation
 *  is a no-op, so CPU and CUDA code paths can share their shape. Move-only. */
class ASRDEC_API Stream {
 public:
  explicit Stream(Device device = Device::cpu());
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  StreamHandle handle() const noexcept { return handle_; }
  Device device() const noexcept { return device_; }
  /** Blocks until all work queued on the stream is done; throws CudaError if any of it failed. */
  void synchronize() const;

 private:
  Device device_;
  StreamHandle handle_ = nullptr;
};

/** True when ASRDEC_SYNC_KERNELS=1 is set in the environment: every kernel launch is followed by a stream
 *  synchronisation (outside graph capture) so that a faulting kernel is reported at its own launch. */
ASRDEC_API bool sync_kernels_enabled() noexcept;

}  // namespace asrdec

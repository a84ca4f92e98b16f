#include "asrdec/core/timer.hpp"

#include <utility>

#include "asrdec/config.hpp"
#include "asrdec/core/error.hpp"

#if ASRDEC_WITH_CUDA
#include "core/cuda/check.hpp"
#endif

namespace asrdec {

CudaEventTimer::CudaEventTimer(Device device) : device_(device) {
  ASRDEC_CHECK_ARG(device.is_cuda(), "CudaEventTimer needs a CUDA device, got ", device.to_string());
#if ASRDEC_WITH_CUDA
  detail::DeviceGuard guard(device);
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  ASRDEC_CUDA_CHECK(cudaEventCreate(&start));
  start_ = start;
  ASRDEC_CUDA_CHECK(cudaEventCreate(&stop));
  stop_ = stop;
#else
  throw Unsupported(cuda_info().reason);
#endif
}

CudaEventTimer::~CudaEventTimer() { release(); }

CudaEventTimer::CudaEventTimer(CudaEventTimer&& other) noexcept
    : device_(other.device_),
      start_(std::exchange(other.start_, nullptr)),
      stop_(std::exchange(other.stop_, nullptr)) {}

CudaEventTimer& CudaEventTimer::operator=(CudaEventTimer&& other) noexcept {
  if (this != &other) {
    release();
    device_ = other.device_;
    start_ = std::exchange(other.start_, nullptr);
    stop_ = std::exchange(other.stop_, nullptr);
  }
  return *this;
}

void CudaEventTimer::release() noexcept {
#if ASRDEC_WITH_CUDA
  if (start_ != nullptr) (void)cudaEventDestroy(start_);
  if (stop_ != nullptr) (void)cudaEventDestroy(stop_);
#endif
  start_ = nullptr;
  stop_ = nullptr;
}

void CudaEventTimer::start(StreamHandle stream) {
#if ASRDEC_WITH_CUDA
  ASRDEC_CUDA_CHECK(cudaEventRecord(start_, stream));
#else
  (void)stream;
#endif
}

void CudaEventTimer::stop(StreamHandle stream) {
#if ASRDEC_WITH_CUDA
  ASRDEC_CUDA_CHECK(cudaEventRecord(stop_, stream));
#else
  (void)stream;
#endif
}

float CudaEventTimer::elapsed_ms() const {
  float ms = 0.0f;
#if ASRDEC_WITH_CUDA
  ASRDEC_CUDA_CHECK(cudaEventSynchronize(stop_));
  ASRDEC_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
#endif
  return ms;
}

}  // namespace asrdec

#include "core/cuda/stream_fork.hpp"

namespace asrdec::detail {
namespace {

struct Capture {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
};

Capture capture_of(cudaStream_t stream) {
  Capture c;
  ASRDEC_CUDA_CHECK(cudaStreamGetCaptureInfo(stream, &c.status, &c.id, nullptr, nullptr, nullptr, nullptr));
  return c;
}

}  // namespace

StreamFork::StreamFork(Device device) : device_(device) {
  DeviceGuard guard(device_);
  try {
    for (Side& side : sides_) {
      side.stream = Stream(device_);
      ASRDEC_CUDA_CHECK(cudaEventCreateWithFlags(&side.fork, cudaEventDisableTiming));
      ASRDEC_CUDA_CHECK(cudaEventCreateWithFlags(&side.join, cudaEventDisableTiming));
    }
  } catch (...) {
    destroy_events();  // the streams are Stream's own
    throw;
  }
}

StreamFork::~StreamFork() {
  DeviceGuard guard(device_);
  destroy_events();
}

void StreamFork::destroy_events() noexcept {
  for (Side& side : sides_) {
    if (side.fork != nullptr) (void)cudaEventDestroy(side.fork);
    if (side.join != nullptr) (void)cudaEventDestroy(side.join);
    side.fork = side.join = nullptr;
  }
}

StreamFork::Side* StreamFork::side_for(cudaStream_t stream) {
  const Capture step = capture_of(stream);
  for (Side& side : sides_) {
    const Capture c = capture_of(side.stream.handle());
    if (c.status == cudaStreamCaptureStatusNone) return &side;
    if (step.status == cudaStreamCaptureStatusActive && c.status == cudaStreamCaptureStatusActive && c.id == step.id) {
      return &side;
    }
  }
  return nullptr;
}

}  // namespace asrdec::detail

#include "core/cuda/stream_fork.hpp"

#include "asrdec/core/log.hpp"
#include "core/cuda/capture_calls.hpp"

namespace asrdec::detail {
namespace {

struct Capture {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
};

Capture capture_of(cudaStream_t stream) {
  Capture c;
  ASRDEC_CUDA_CHECK(capture_info(stream, &c.status, &c.id, nullptr, nullptr, nullptr, nullptr));
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
  // Run eagerly: no side stream is in a capture either (only this decoder's calls use them, one at a time).
  if (step.status == cudaStreamCaptureStatusNone) return &sides_[0];
  for (Side& side : sides_) {
    const Capture c = capture_of(side.stream.handle());
    if (c.status == cudaStreamCaptureStatusNone) return &side;
    if (step.status == cudaStreamCaptureStatusActive && c.status == cudaStreamCaptureStatusActive && c.id == step.id) {
      return &side;
    }
  }
  // A program that forks at more capture levels than kSides: correct in line, but without the overlap.
  warn_once("stream-fork-in-line",
            "a decode program forks at more nested capture levels than its side streams cover; the pieces run in line");
  return nullptr;
}

}  // namespace asrdec::detail

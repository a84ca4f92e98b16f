#include "core/cuda/executor_lifecycle.hpp"

#include <algorithm>

#include "asrdec/core/error.hpp"
#include "asrdec/core/log.hpp"
#include "core/cuda/check.hpp"
#include "core/cuda/kernel_image.hpp"

namespace asrdec::detail {

ExecutorLifecycle::ExecutorLifecycle(Device device, GraphMode requested, std::int64_t max_device_bytes)
    : device_(device),
      requested_(requested),
      mode_(resolve_graph_mode(requested, device)),
      max_device_bytes_(max_device_bytes) {
  require_kernel_image(device_);
  DeviceGuard guard(device_);
  ASRDEC_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
}

ExecutorLifecycle::~ExecutorLifecycle() {
  if (done_ != nullptr) {
    DeviceGuard guard(device_);
    (void)cudaEventDestroy(done_);
  }
}

ExecutorLifecycle::Call::Call(ExecutorLifecycle& lifecycle, StreamHandle caller)
    : lifecycle_(lifecycle), stream_(caller_stream(caller)) {
  // Refused before anything is enqueued, so the caller's capture stays valid: a call copies its arguments from host
  // memory, may grow buffers and synchronises or captures graphs of its own, none of which a capture can hold.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  ASRDEC_CUDA_CHECK(cudaStreamIsCapturing(stream_, &capture));
  ASRDEC_EXPECTS(capture == cudaStreamCaptureStatusNone, Unsupported,
                 "a decoder cannot be called on a stream that is being captured into a CUDA graph (every graph mode "
                 "copies per-call arguments from host memory and checks results on the host); call it outside the "
                 "capture");
  // Calls on one stream are ordered by the stream itself; a call on another stream waits for the last one.
  if (lifecycle_.recorded_ && stream_ != lifecycle_.last_stream_) {
    ASRDEC_CUDA_CHECK(cudaStreamWaitEvent(stream_, lifecycle_.done_, 0));
  }
}

ExecutorLifecycle::Call::~Call() {
  // Recorded also when the call throws: whatever it enqueued must finish before the next call reuses the buffers.
  if (cudaEventRecord(lifecycle_.done_, stream_) == cudaSuccess) {
    lifecycle_.last_stream_ = stream_;
    lifecycle_.recorded_ = true;
  } else {
    (void)cudaGetLastError();
    (void)cudaStreamSynchronize(stream_);
    lifecycle_.recorded_ = false;
  }
}

void ExecutorLifecycle::check_loops() {
  std::vector<const GraphExecutor*> ran;
  ran.swap(ran_);
  for (const GraphExecutor* executor : ran) executor->check_loops();
}

void ExecutorLifecycle::wait_idle() {
  if (recorded_) ASRDEC_CUDA_CHECK(cudaEventSynchronize(done_));
}

void ExecutorLifecycle::run(GraphExecutor& executor, cudaStream_t stream) {
  executor.run(stream);
  if (executor.mode() == GraphMode::conditional && std::find(ran_.begin(), ran_.end(), &executor) == ran_.end()) {
    ran_.push_back(&executor);
  }
  if (executor.mode() != mode_ && executor.mode() != executor.requested_mode()) {
    // The executor fell back (it logged why, once): every later one is built in the mode that works.
    mode_ = executor.mode();
  }
}

}  // namespace asrdec::detail

#pragma once
// Internal (CUDA): two independent pieces of one program step side by side. `along` runs on the step's stream;
// `beside` runs on a side stream, ordered after what the step's stream had queued, and the step's stream waits for it
// before anything queued after. Captured into a graph (whole, a step at a time, or a conditional loop's body) that is a
// fork and a join — two parallel branches, with no event nodes — so the shorter branch's latency hides behind the
// longer one; run eagerly, the two streams overlap. The side stream and the events belong to the fork, created with it
// and never mid-capture.

#include <cuda_runtime.h>

#include "asrdec/core/device.hpp"
#include "asrdec/core/stream.hpp"
#include "core/cuda/check.hpp"

namespace asrdec::detail {

class StreamFork {
 public:
  explicit StreamFork(Device device);
  ~StreamFork();
  StreamFork(const StreamFork&) = delete;
  StreamFork& operator=(const StreamFork&) = delete;

  /** beside(side stream) and along(`stream`), joined on `stream`. Neither may touch what the other writes. */
  template <class Beside, class Along>
  void run(cudaStream_t stream, const Beside& beside, const Along& along) {
    ASRDEC_CUDA_CHECK(cudaEventRecord(fork_, stream));
    ASRDEC_CUDA_CHECK(cudaStreamWaitEvent(side_.handle(), fork_, 0));
    beside(side_.handle());
    along(stream);
    ASRDEC_CUDA_CHECK(cudaEventRecord(join_, side_.handle()));
    ASRDEC_CUDA_CHECK(cudaStreamWaitEvent(stream, join_, 0));
  }

 private:
  Device device_;
  Stream side_;  // non-blocking: no implicit order with the legacy default stream, only the fork's events
  cudaEvent_t fork_ = nullptr;
  cudaEvent_t join_ = nullptr;
};

}  // namespace asrdec::detail

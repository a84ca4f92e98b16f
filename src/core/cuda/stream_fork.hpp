#pragma once
// Internal (CUDA): two independent pieces of one program step side by side. `along` runs on the step's stream;
// `beside` runs on a side stream, ordered after what the step's stream had queued, and the step's stream waits for it
// before anything queued after. Captured into a graph (whole, a step at a time, or a conditional loop's body) that is a
// fork and a join — two parallel branches, with no event nodes — so the shorter branch's latency hides behind the
// longer one; run eagerly, the two streams overlap.
//
// A stream that joins a capture stays in it until the capture ends, and a decode loop's body is captured while the
// body around it is still being captured, so one side stream cannot serve both: the fork keeps a side stream per
// capture level it may be used in (kSides), each with its own events, and takes one that is in no capture or in the
// step's own. Should none be free, the two pieces run in line on the step's stream: the same results, no overlap. The
// streams and events belong to the fork, created with it and never mid-capture.

#include <cuda_runtime.h>

#include <array>

#include "asrdec/core/device.hpp"
#include "asrdec/core/stream.hpp"
#include "core/cuda/check.hpp"

namespace asrdec::detail {

class StreamFork {
 public:
  /** Side streams: one per nesting level of the captured loops whose bodies fork (AES++: a frame's and a step's). */
  static constexpr int kSides = 2;

  explicit StreamFork(Device device);
  ~StreamFork();
  StreamFork(const StreamFork&) = delete;
  StreamFork& operator=(const StreamFork&) = delete;

  /** beside(side stream) and along(`stream`), joined on `stream`. Neither may touch what the other writes. */
  template <class Beside, class Along>
  void run(cudaStream_t stream, const Beside& beside, const Along& along) {
    Side* side = side_for(stream);
    if (side == nullptr) {
      along(stream);
      beside(stream);
      return;
    }
    const cudaStream_t s = side->stream.handle();
    ASRDEC_CUDA_CHECK(cudaEventRecord(side->fork, stream));
    ASRDEC_CUDA_CHECK(cudaStreamWaitEvent(s, side->fork, 0));
    try {
      beside(s);
      along(stream);
    } catch (...) {
      // Joined all the same: neither a capture nor a later call may be left with the side stream's work unordered.
      (void)cudaEventRecord(side->join, s);
      (void)cudaStreamWaitEvent(stream, side->join, 0);
      (void)cudaGetLastError();  // should those fail, the error is not left for an unrelated later launch to report
      throw;
    }
    ASRDEC_CUDA_CHECK(cudaEventRecord(side->join, s));
    ASRDEC_CUDA_CHECK(cudaStreamWaitEvent(stream, side->join, 0));
  }

 private:
  struct Side {
    Stream stream;  // non-blocking: no implicit order with the legacy default stream, only the events
    cudaEvent_t fork = nullptr;
    cudaEvent_t join = nullptr;
  };

  // A side stream that `stream` may fork to: one in no capture, or in the capture `stream` is in; null if none.
  Side* side_for(cudaStream_t stream);
  void destroy_events() noexcept;

  Device device_;
  std::array<Side, kSides> sides_;
};

}  // namespace asrdec::detail

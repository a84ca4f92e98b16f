#pragma once
// Internal: how a CUDA executor moves per-utterance state between its channels (one row per open utterance, kept
// between decode_chunks() calls) and its lanes (the rows its captured programs work on), asrdec/core/streaming.hpp.
// Before a call, one kernel gathers each lane's rows from its channel, or from the start state when the utterance
// starts; after the call, one kernel scatters the lanes' new rows back, only when the call met no bad value, so a
// call that throws changes no channel. The programs themselves stay fixed-size and never see a channel.

#include <cuda_runtime.h>

#include <cstdint>

#include "asrdec/core/buffer.hpp"
#include "core/cuda/check.hpp"

namespace asrdec::detail {

/** One state array: rows of `words` 4-byte words (float, int32; a double is two words). */
struct LaneArray {
  void* lanes;         ///< [max_batch, words]
  void* channels;      ///< [max_open_utterances, words]
  const void* start;   ///< where a starting utterance's row comes from: [words], or [max_batch, words] per lane
  std::int32_t words;  ///< words per row
  std::int32_t per_lane_start;  ///< 1: `start` holds a row per lane
};

struct LaneCopies {
  static constexpr int kMaxArrays = 12;
  LaneArray arrays[kMaxArrays];
  int count = 0;
  const std::int32_t* slot = nullptr;   ///< [max_batch] each lane's channel
  const std::int32_t* fresh = nullptr;  ///< [max_batch] 1: the lane's utterance starts (gather from `start`)
  /** Scatter only: the call's first bad value (packed, all bits set when none); null: always scatter. */
  const unsigned long long* bad_value = nullptr;

  void add(void* lanes, void* channels, const void* start, std::int32_t words, bool per_lane_start = false) {
    arrays[count++] = LaneArray{lanes, channels, start, words, per_lane_start ? 1 : 0};
  }
};

/** Lanes [0, lanes) from their channels or the start state; with `all_fresh`, every lane from the start state
 *  (whole utterances: slot and fresh are not read, channels may be null). */
void launch_gather_lanes(const LaneCopies& copies, std::int32_t lanes, bool all_fresh, cudaStream_t stream);
/** Lanes [0, lanes) into their channels, unless copies.bad_value reports a bad value. */
void launch_scatter_lanes(const LaneCopies& copies, std::int32_t lanes, cudaStream_t stream);

void preload_lane_copy_kernels();

/** Replaces a channel buffer by one of `count` elements, keeping the open utterances' rows when the size stays (an
 *  executor reallocates all of its buffers when it grows, and the allocation meter counts them all). */
template <class T>
void reallocate_channels(DeviceBuffer<T>& buffer, std::size_t count, Device device) {
  DeviceBuffer<T> next(count, device);
  if (buffer.size() == count && count > 0) {
    // Growth runs between calls (ExecutorLifecycle::grow waits for them); the copy is finished before the old
    // buffer goes and before any later call's work can read the new one.
    ASRDEC_CUDA_CHECK(
        cudaMemcpyAsync(next.data(), buffer.data(), buffer.bytes(), cudaMemcpyDeviceToDevice, cudaStreamLegacy));
    ASRDEC_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  }
  buffer = std::move(next);
}

}  // namespace asrdec::detail

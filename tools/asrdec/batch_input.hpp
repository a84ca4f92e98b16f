#pragma once
// Slicing an [N, T, ...] .npy array into batches of utterances for a decoder, staged in device memory when the
// decoder runs on CUDA (the copy is not decoder time), plus the matching slice of the lengths.

#include <cstdint>
#include <string>
#include <vector>

#include "asrdec/asrdec.hpp"

namespace asrdec::cli {

class BatchInput {
 public:
  /** `array` must be 3-d [N, T, C]; `what` names it in errors. */
  BatchInput(const std::string& path, const std::string& what, Device device, std::int64_t max_batch);

  std::int64_t utterances() const { return array_.shape()[0]; }
  std::int64_t frames() const { return array_.shape()[1]; }
  std::int64_t columns() const { return array_.shape()[2]; }
  DType dtype() const { return array_.dtype(); }

  /** Utterances [first, first + count), frames [frame, frame + frames) — on the decoder's device. */
  TensorView slice(std::int64_t first, std::int64_t count, std::int64_t frame, std::int64_t frames,
                   StreamHandle stream);
  TensorView batch(std::int64_t first, std::int64_t count, StreamHandle stream) {
    return slice(first, count, 0, frames(), stream);
  }
  /** Row r: utterance utterances[r], frames [starts[r], starts[r] + frames) (any past T left unset) — a dense
   *  [rows, frames, C] block on the decoder's device; at most max_batch rows. */
  TensorView gather(const std::vector<std::int64_t>& utterances, const std::vector<std::int64_t>& starts,
                    std::int64_t frames, StreamHandle stream);

 private:
  NpyArray array_;
  Device device_;
  std::int64_t max_batch_;
  DeviceBuffer<std::byte> staging_;
  std::vector<std::byte> host_staging_;
};

/** Lengths [N] as int64: from a file (int32 or int64, shape [N], each in [0, T]; InvalidArgument naming the file
 *  otherwise), or T for every utterance when `path` is empty. */
NpyArray load_lengths(const std::string& path, std::int64_t utterances, std::int64_t frames);

/** The length of one utterance from load_lengths(). */
std::int64_t length_at(const NpyArray& lengths, std::int64_t utterance);

/** Lengths of utterances [first, first + count) as a host view. */
TensorView lengths_slice(const NpyArray& lengths, std::int64_t first, std::int64_t count);

/** Sum of the lengths of utterances [first, first + count). */
std::int64_t total_frames(const NpyArray& lengths, std::int64_t first, std::int64_t count);

}  // namespace asrdec::cli

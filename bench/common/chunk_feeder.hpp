#pragma once
// Streaming input for the benchmarks (docs/streaming.md): `lanes` utterances in flight, each call carrying the next
// `chunk` frames of every one of them. Utterance i loops over row i % B of a [B, T, X] source; when it ends, a new
// utterance (a new id) starts on the same row, so every call is a full one, mixing first, middle and last chunks.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "asrdec/asrdec.hpp"

namespace asrdec::bench {

class ChunkFeeder {
 public:
  /** `source`: host [batch, frames, width] values of `element` bytes; lengths[b] frames of row b are used. */
  ChunkFeeder(const void* source, std::int64_t batch, std::int64_t frames, std::int64_t width, std::size_t element,
              std::vector<std::int32_t> lengths, std::int64_t lanes, std::int64_t chunk, DType dtype, Device device);

  /** Prepares the next call (not decoder time): its rows, their lengths and their frames on the device. */
  void next(StreamHandle stream);

  const std::vector<ChunkRow>& rows() const { return rows_; }
  TensorView frames() const;
  TensorView lengths() const { return TensorView(row_lengths_.data(), DType::i32, {lanes_}); }
  /** Frames the prepared call decodes. */
  std::int64_t frames_in_call() const { return frames_in_call_; }

 private:
  const std::byte* source_;
  std::int64_t batch_, frames_, width_, lanes_, chunk_;
  std::size_t element_;
  std::vector<std::int32_t> lengths_;
  DType dtype_;
  Device device_;
  std::vector<std::int64_t> position_;  // per lane: the next frame of its utterance
  std::vector<std::int64_t> id_;        // per lane: its utterance's id
  std::int64_t next_id_ = 0;
  std::vector<ChunkRow> rows_;
  std::vector<std::int32_t> row_lengths_;
  std::vector<std::byte> host_chunk_;
  DeviceBuffer<std::byte> device_chunk_;
  std::int64_t frames_in_call_ = 0;
};

}  // namespace asrdec::bench

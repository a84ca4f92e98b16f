#pragma once
// Streaming input for the benchmarks (docs/streaming.md): `lanes` utterances in flight, each call carrying the next
// `chunk` frames of every one of them. Utterance i loops over row i % B of a [B, T, X] source; when it ends, a new
// utterance (a new id) starts on the same row, so every call is a full one, mixing first, middle and last chunks.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "asrdec/asrdec.hpp"
#include "common/bench_support.hpp"

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

/** One decoder.decode_chunks() call per benchmark iteration on the feeder's next call (prepared untimed); sets the
 *  RTFx counter from the frames decoded. */
template <class Decoder>
void time_streaming(benchmark::State& state, ChunkFeeder& feeder, Decoder& decoder, Stream& stream) {
  std::int64_t frames = 0;
  for (auto _ : state) {
    state.PauseTiming();
    feeder.next(stream.handle());
    stream.synchronize();
    state.ResumeTiming();
    benchmark::DoNotOptimize(decoder.decode_chunks(feeder.rows(), feeder.frames(), feeder.lengths(), stream.handle()));
    frames += feeder.frames_in_call();
  }
  state.counters["RTFx"] =
      benchmark::Counter(static_cast<double>(frames) * kDefaultFrameShiftSeconds, benchmark::Counter::kIsRate);
}

}  // namespace asrdec::bench

// How many real-time streams one decoder sustains (docs/streaming.md): N streams each bring a 160 ms chunk (two
// 80 ms frames) every tick; the server decodes the tick's chunks in calls of at most `lanes` streams, one call after
// another. A benchmark iteration is one tick. Counters:
// - tick_ms: the time to decode one tick's chunks; real time holds while it stays under 160 ms (realtime_margin =
//   160 ms / tick_ms > 1);
// - p99_latency_ms: the 99th percentile, over every chunk of every tick, of the time from the tick's start (all
//   chunks arrive together, the worst case for batching) to the end of the call that decoded the chunk.
// The baseline in the same process is the same streams decoded at 64 lanes a call. Utterances are 10 s long and
// staggered (each stream's first one is cut short), so every tick mixes first, middle and last chunks; a stream
// whose utterance ends starts the next.
// The transducer cases need the benchmark models (ASRDEC_BENCH_MODELS); CTC greedy uses synthetic log-probabilities;
// WFST decodes the CTC sample's frames (its utterances joined into 10 s rows) through the sample TLG at beam 17
// (common/sample_tlg.hpp, built at start-up).

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "asrdec/detail/float16.hpp"
#include "common/bench_support.hpp"
#include "common/sample_tlg.hpp"
#include "common/synthetic_ctc.hpp"
#include "common/transducer_models.hpp"

namespace asrdec::bench {
namespace {

constexpr std::int64_t kChunkFrames = 2;        // 160 ms of 80 ms frames
constexpr std::int64_t kUtteranceFrames = 125;  // 10 s
constexpr double kTickSeconds = 0.160;

enum class Kind { ctc_greedy, rnnt_greedy, ctc_wfst };

// N streams at staggered offsets into 10 s utterances; next_tick() lays out every stream's chunk as rows of one
// host block (stream order) and returns the rows.
class Streams {
 public:
  Streams(std::int64_t count, std::int64_t width, std::size_t element, const std::byte* source, std::int64_t rows)
      : width_(width),
        element_(element),
        source_(source),
        source_rows_(rows),
        position_(count),
        id_(count),
        started_(static_cast<std::size_t>(count), 0) {
    for (std::int64_t s = 0; s < count; ++s) {
      position_[static_cast<std::size_t>(s)] = (s * 7) % kUtteranceFrames;  // staggered starts
      id_[static_cast<std::size_t>(s)] = s;
    }
    next_id_ = count;
    chunk_.resize(static_cast<std::size_t>(count * kChunkFrames * width) * element);
  }

  std::vector<ChunkRow> next_tick(std::vector<std::int32_t>& lengths) {
    const auto count = static_cast<std::int64_t>(position_.size());
    std::vector<ChunkRow> rows(static_cast<std::size_t>(count));
    lengths.assign(static_cast<std::size_t>(count), static_cast<std::int32_t>(kChunkFrames));
    const auto frame_bytes = static_cast<std::size_t>(width_) * element_;
    for (std::int64_t s = 0; s < count; ++s) {
      const auto i = static_cast<std::size_t>(s);
      if (position_[i] >= kUtteranceFrames) {
        position_[i] = 0;
        id_[i] = next_id_++;
      }
      rows[i] = ChunkRow{id_[i], position_[i] == 0 || !started_[i], position_[i] + kChunkFrames >= kUtteranceFrames};
      started_[i] = 1;
      const std::int64_t row = s % source_rows_;
      const std::int64_t frame = position_[i] % (kUtteranceFrames - kChunkFrames);
      std::copy_n(source_ + static_cast<std::size_t>(row * kUtteranceFrames + frame) * frame_bytes,
                  static_cast<std::size_t>(kChunkFrames) * frame_bytes,
                  chunk_.data() + static_cast<std::size_t>(s * kChunkFrames) * frame_bytes);
      position_[i] += kChunkFrames;
    }
    return rows;
  }
  const std::vector<std::byte>& chunk() const { return chunk_; }

 private:
  std::int64_t width_;
  std::size_t element_;
  const std::byte* source_;  // [source_rows, kUtteranceFrames, width]
  std::int64_t source_rows_;
  std::vector<std::int64_t> position_, id_;
  std::vector<char> started_;  // the first utterance of a stream starts mid-way (staggered): as a first chunk
  std::int64_t next_id_ = 0;
  std::vector<std::byte> chunk_;
};

// The inputs every stream draws from: [rows, 125, width] float32.
const std::vector<std::byte>& source_of(Kind kind, std::int64_t& rows, std::int64_t& width) {
  static std::map<Kind, std::vector<std::byte>> cache;
  rows = 32;
  if (kind == Kind::ctc_greedy) {
    width = 1025;
    auto& slot = cache[kind];
    if (slot.empty()) slot = make_synthetic_ctc(rows, kUtteranceFrames, width, DType::f32, 2026).logprobs;
    return slot;
  }
  if (kind == Kind::ctc_wfst) {  // the sample's utterances one after another, cut into 125-frame rows
    const SampleTlg& s = sample_tlg();
    width = s.logprobs.shape()[2];
    auto& slot = cache[kind];
    if (slot.empty()) {
      const std::int64_t frames = s.logprobs.shape()[1];
      const auto* values = static_cast<const half_t*>(s.logprobs.data());
      const auto* lengths = static_cast<const std::int32_t*>(s.lengths.data());
      std::vector<float> joined;
      for (std::int64_t u = 0; static_cast<std::int64_t>(joined.size()) < rows * kUtteranceFrames * width; ++u) {
        const std::int64_t row = u % s.logprobs.shape()[0];
        for (std::int64_t e = 0; e < lengths[row] * width; ++e) {
          joined.push_back(detail::to_float(values[row * frames * width + e]));
        }
      }
      joined.resize(static_cast<std::size_t>(rows * kUtteranceFrames * width));
      slot.resize(joined.size() * 4);
      std::copy_n(reinterpret_cast<const std::byte*>(joined.data()), slot.size(), slot.data());
    }
    return slot;
  }
  const TransducerModel& m = model("rnnt", Device::cpu());
  width = m.joint_hidden();
  auto& slot = cache[kind];
  if (slot.empty()) {
    const std::vector<float> values = tiled_input(source("rnnt"), rows, kUtteranceFrames);
    slot.resize(values.size() * 4);
    std::copy_n(reinterpret_cast<const std::byte*>(values.data()), slot.size(), slot.data());
  }
  return slot;
}

// WfstDecoder's decode_chunks as the other decoders' (no word boosts).
struct WfstStreams {
  WfstDecoder decoder;
  std::vector<WfstResult> decode_chunks(const std::vector<ChunkRow>& rows, const TensorView& logprobs,
                                        const TensorView& lengths, StreamHandle stream) {
    return decoder.decode_chunks(rows, logprobs, lengths, {}, stream);
  }
};

template <class Decoder>
void run_ticks(benchmark::State& state, Decoder& decoder, Streams& streams, std::int64_t lanes, std::int64_t width,
               Device device) {
  const auto count = static_cast<std::int64_t>(streams.chunk().size() / (kChunkFrames * width * 4));
  Stream stream(device);
  DeviceBuffer<std::byte> on_device;
  if (device.is_cuda()) on_device = DeviceBuffer<std::byte>(streams.chunk().size(), device);
  std::vector<double> latencies, ticks;
  std::vector<std::int32_t> lengths;
  const auto one_tick = [&](bool timed) {
    const std::vector<ChunkRow> rows = streams.next_tick(lengths);
    const std::byte* base = streams.chunk().data();
    if (device.is_cuda()) {
      copy_bytes_async(on_device.data(), device, base, Device::cpu(), streams.chunk().size(), stream.handle());
      stream.synchronize();
      base = on_device.data();
    }
    const auto start = std::chrono::steady_clock::now();
    for (std::int64_t first = 0; first < count; first += lanes) {
      const std::int64_t n = std::min(lanes, count - first);
      const std::vector<ChunkRow> call(rows.begin() + first, rows.begin() + first + n);
      const TensorView frames(base + static_cast<std::size_t>(first * kChunkFrames * width) * 4, DType::f32,
                              {n, kChunkFrames, width}, device);
      benchmark::DoNotOptimize(
          decoder.decode_chunks(call, frames, TensorView(lengths.data() + first, DType::i32, {n}), stream.handle()));
      const double done = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (timed) latencies.insert(latencies.end(), static_cast<std::size_t>(n), done);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  for (int warm = 0; warm < 3; ++warm) one_tick(false);  // graph capture, first launches
  for (auto _ : state) {
    const double seconds = one_tick(true);
    state.SetIterationTime(seconds);
    ticks.push_back(seconds);
  }
  std::sort(latencies.begin(), latencies.end());
  std::sort(ticks.begin(), ticks.end());
  const double p99 = latencies.empty() ? 0.0 : latencies[latencies.size() * 99 / 100];
  const double tick = ticks.empty() ? 0.0 : ticks[ticks.size() / 2];
  state.counters["streams"] = static_cast<double>(count);
  state.counters["tick_ms"] = tick * 1000.0;
  state.counters["p99_latency_ms"] = p99 * 1000.0;
  state.counters["realtime_margin"] = tick > 0 ? kTickSeconds / tick : 0.0;
}

void streams(benchmark::State& state, Kind kind, bool cuda) {
  if ((cuda && skip_if(state, cuda_unavailable_reason())) ||
      (kind == Kind::rnnt_greedy && skip_if(state, missing_models_reason("rnnt")))) {
    return;
  }
  const Device device = cuda ? Device::cuda(0) : Device::cpu();
  const std::int64_t count = state.range(0), lanes = state.range(1);
  std::int64_t rows = 0, width = 0;
  const std::vector<std::byte>& source = source_of(kind, rows, width);
  Streams all(count, width, 4, source.data(), rows);
  BatchLimits limits{lanes, kChunkFrames};
  limits.max_open_utterances = count;
  if (kind == Kind::ctc_greedy) {
    CtcGreedyDecoder decoder(device, {}, limits);
    run_ticks(state, decoder, all, lanes, width, device);
  } else if (kind == Kind::ctc_wfst) {
    WfstDecoderConfig config;
    config.acoustic_scale = 2.0f;  // the sample's setting (README)
    config.max_open_utterances = count;
    WfstStreams decoder{WfstDecoder(*sample_tlg().graph, config, device)};
    run_ticks(state, decoder, all, lanes, width, device);
  } else {
    TransducerGreedyDecoder decoder(model("rnnt", device), TransducerGreedyConfig{}, limits);
    run_ticks(state, decoder, all, lanes, width, device);
  }
}

void register_all() {
  for (const auto& [name, kind] :
       {std::pair{"ctc_greedy", Kind::ctc_greedy}, std::pair{"rnnt_greedy", Kind::rnnt_greedy},
        std::pair{"ctc_wfst", Kind::ctc_wfst}}) {
    for (const bool cuda : {false, true}) {
      auto* b = benchmark::RegisterBenchmark((std::string("streaming/") + (cuda ? "cuda/" : "cpu/") + name).c_str(),
                                             streams, kind, cuda);
      b->ArgNames({"streams", "lanes"})->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(20);
      if (cuda) {
        for (std::int64_t n : {512, 1024, 2048, 4096}) {
          b->Args({n, 64});  // the baseline: 64 lanes a call
          b->Args({n, std::min<std::int64_t>(n, 1024)});
        }
      } else {
        for (std::int64_t n : {16, 64}) b->Args({n, n});
      }
    }
  }
}

}  // namespace
}  // namespace asrdec::bench

int main(int argc, char** argv) {
  asrdec::bench::register_all();
  return asrdec::bench::run_benchmarks(argc, argv, "streaming");
}

// The CUDA executor of WFST beam search (wfst_decoder.hpp).
//
// Whole utterances (decode) and stream chunks (decode_chunks): one launch per call of a lane kernel
// (wfst_rows_kernel.hpp). Lanes are sized by tokens (wfst_lane_layout.hpp: a few MB each, whatever the graph), as many
// as the rows, max_device_bytes, the blocks the GPU runs at once and 1024 allow; each takes rows from a queue and
// leaves the path of each row's result. The host makes results from the paths with the CPU's code. A stream's channel
// (arena, active tokens) stays on the device between chunks, one per open utterance's slot. A row a lane could not
// hold (more tokens in a frame, or more live back-pointers, than a lane has room for) is decoded on the CPU, exactly:
// a whole utterance again from the start, a stream from the last frame its lane stored, to its end.
//
// N-best lists (advance): rows are decoded in groups of `lanes_`; per group, programs of kWfstFramesPerProgram frame
// steps (one CUDA graph each) alternate between two output segments: while the device fills one, the host copies the
// other's tokens and appends them to the channels. These lanes' arrays are dense over the graph's states (about 100
// bytes per state per lane, most of it the two segments).

#include <algorithm>
#include <array>
#include <limits>
#include <optional>

#include "asrdec/core/buffer.hpp"
#include "asrdec/core/error.hpp"
#include "asrdec/core/graph.hpp"
#include "core/bad_value.hpp"
#include "core/cuda/check.hpp"
#include "core/cuda/executor_lifecycle.hpp"
#include "wfst/lane_step/wfst_channel_import.hpp"
#include "wfst/lane_step/wfst_row_result.hpp"
#include "wfst/wfst_backend.hpp"
#include "wfst/wfst_kernels.hpp"
#include "wfst/wfst_rows_kernel.hpp"

namespace asrdec::detail {
namespace {

constexpr std::int64_t kMaxLanes = 1024;
constexpr std::int32_t kMinSegmentCapacity = 8192;

// An owned CUDA event without timing, created on the current device by create().
class Event {
 public:
  Event() = default;
  void create() { ASRDEC_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming)); }
  ~Event() {
    if (event_ != nullptr) cudaEventDestroy(event_);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const noexcept { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

class WfstCuda final : public WfstBackend {
 public:
  WfstCuda(const WfstGraph& graph, const WfstDecoderConfig& config, Device device, const WfstSearcher& searcher)
      : graph_(graph),
        config_(config),
        device_(device),
        searcher_(&searcher),
        lifecycle_(device, config.graph_mode),
        copy_stream_(device),
        input_(1, device),
        bad_value_(1, device),
        queue_(2, device),
        fallback_(graph, config) {
    const WfstGraphArrays& a = graph.arrays();
    ASRDEC_EXPECTS(graph.num_arcs() < (std::int64_t{1} << 31) && a.num_states < (1 << 30), Unsupported,
                   "WFST decoding on CUDA supports graphs of up to 2^31 arcs and 2^30 states; ", graph.source(),
                   " has ", graph.num_arcs(), " arcs and ", a.num_states, " states");
    DeviceGuard guard(device_);
    for (std::size_t s = 0; s < 2; ++s) {
      program_done_[s].create();
      segment_free_[s].create();
    }
    preload_wfst_kernels();
    row_layout_ = wfst_lane_layout(
        config.device_frame_tokens > 0 ? static_cast<std::int32_t>(config.device_frame_tokens) : kWfstLaneTokens,
        config.device_history_tokens > 0 ? static_cast<std::int32_t>(config.device_history_tokens) : kWfstLaneHistory,
        static_cast<std::int32_t>(graph.max_input_label()), kWfstLaneThreads);
    channel_layout_ = wfst_channel_layout(row_layout_);
    resident_lanes_ = wfst_lanes_resident();
    Stream setup(device_);
    cudaStream_t stream = setup.handle();
    const auto upload = [&](auto& buffer, const auto& values) {
      using T = typename std::decay_t<decltype(values)>::value_type;
      buffer = DeviceBuffer<T>(std::max<std::size_t>(values.size(), 1), device_);
      if (!values.empty()) {
        copy_bytes_async(buffer.data(), device_, values.data(), Device::cpu(), values.size() * sizeof(T), stream);
      }
    };
    upload(emitting_begin_, a.emitting_begin);
    upload(epsilon_begin_, a.epsilon_begin);
    upload(ilabel_, a.ilabel);
    upload(olabel_, a.olabel);
    upload(next_state_, a.next_state);
    upload(weight_, a.weight);
    upload(arc_source_, wfst_arc_sources(a.emitting_begin, a.num_states, a.ilabel.size()));
    if (config.use_final_probs) upload(final_weight_, a.final_weight);
    setup.synchronize();
  }

  GraphMode graph_mode() const noexcept override { return lifecycle_.mode(); }
  std::int64_t lane_device_bytes() const override { return row_layout_.bytes; }
  std::int64_t host_fallbacks() const override { return host_rows_; }

  void check_values(const CtcInput& p, StreamHandle user_stream) override {
    if (p.batch == 0 || p.logprobs.numel() == 0) return;
    DeviceGuard guard(device_);
    for (std::int64_t extent : {p.batch, p.frames, p.columns}) {
      ASRDEC_CHECK_ARG(extent < kBadValueFieldLimit, "logprobs: dimensions above ", kBadValueFieldLimit - 1,
                       " are not supported on CUDA, got ", p.logprobs.shape_string());
    }
    check_device_readable(p.logprobs.data(), device_, "logprobs");
    const ExecutorLifecycle::Call call(lifecycle_, user_stream);
    const cudaStream_t stream = call.stream();
    upload_lengths(p, stream);
    fill_bytes_async(bad_value_.data(), device_, 0xff, sizeof(unsigned long long), stream);
    launch_wfst_check_values(p.logprobs.dtype(), input_of(p), lengths_.data(), static_cast<std::int32_t>(p.batch),
                             static_cast<std::int32_t>(p.frames), static_cast<std::int32_t>(p.columns),
                             bad_value_.data(), stream);
    unsigned long long bad = kNoBadValue;
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(&bad, bad_value_.data(), sizeof bad, cudaMemcpyDeviceToHost, stream));
    ASRDEC_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (bad != kNoBadValue) {
      const BadValue at = unpack_bad_value(bad);
      throw InvalidArgument(concat("logprobs[", at.b, ", ", at.t, ", ", at.v, "] is ", at.is_nan ? "NaN" : "+inf",
                                   "; log-probabilities must be finite or -inf"));
    }
  }

  void advance(const CtcInput& p, const std::vector<WfstChannel*>& channels, StreamHandle user_stream) override {
    if (p.batch == 0) return;
    DeviceGuard guard(device_);
    if (p.logprobs.numel() > 0) check_device_readable(p.logprobs.data(), device_, "logprobs");
    const ExecutorLifecycle::Call call(lifecycle_, user_stream);
    const cudaStream_t stream = call.stream();
    const WfstInputArgs input = input_of(p);
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(input_.data(), &input, sizeof input, cudaMemcpyHostToDevice, stream));
    ensure_lanes(p.batch, stream);
    try {
      for (std::int64_t first = 0; first < p.batch; first += lanes_) {
        const std::int64_t rows = std::min<std::int64_t>(lanes_, p.batch - first);
        decode_group(p, channels, first, rows, stream);
      }
    } catch (...) {
      // Nothing may still be writing into the lanes, segments or pinned buffers once the error leaves.
      cudaStreamSynchronize(stream);
      cudaStreamSynchronize(copy_stream_.handle());
      throw;
    }
  }

  std::vector<WfstResult> decode_chunks(const CtcInput& p, const std::vector<WfstChunk>& chunks,
                                        StreamHandle user_stream) override {
    const auto batch = static_cast<std::size_t>(p.batch);
    std::vector<WfstResult> results(batch);
    if (batch == 0) return results;
    DeviceGuard guard(device_);
    if (p.logprobs.numel() > 0) check_device_readable(p.logprobs.data(), device_, "logprobs");
    const ExecutorLifecycle::Call call(lifecycle_, user_stream);
    const cudaStream_t stream = call.stream();
    // A stream starts on the device; one a lane gave up on stays on the host to its end.
    std::int64_t slots = 0;
    for (const WfstChunk& c : chunks) {
      slots = std::max<std::int64_t>(slots, c.slot + 1);
      if (static_cast<std::size_t>(c.slot) >= on_host_.size()) on_host_.resize(static_cast<std::size_t>(c.slot) + 1, 0);
      if (c.fresh) on_host_[static_cast<std::size_t>(c.slot)] = 0;
    }
    std::vector<std::int32_t> queue;  // the rows decoded on the device
    std::int64_t path_capacity = 0;
    for (std::size_t b = 0; b < batch; ++b) {
      if (on_host_[static_cast<std::size_t>(chunks[b].slot)] != 0) continue;
      queue.push_back(static_cast<std::int32_t>(b));
      path_capacity += 4 * (chunks[b].offset + p.host_lengths[b]) + 64;
    }
    try {
      if (!queue.empty()) launch_chunks(p, chunks, queue, slots, path_capacity, stream);
    } catch (...) {
      cudaStreamSynchronize(stream);
      rows_clean_ = false;  // a lane may have stopped mid-row: wiped before the next call
      throw;
    }
    const std::int32_t blank_label = p.blank + 1;
    std::size_t next = 0;  // into queue
    for (std::size_t b = 0; b < batch; ++b) {
      const WfstChunk& c = chunks[b];
      std::int32_t first = 0;  // the chunk's first frame left to decode on the host
      if (next < queue.size() && queue[next] == static_cast<std::int32_t>(b)) {
        next += 1;
        const WfstRowOutcome& o = host_outcomes_[b];
        ASRDEC_EXPECTS((o.status & kWfstLaneBroken) == 0, Error,
                       "WFST decoding on CUDA: a way in could not be rebuilt from its key (internal error)");
        if (o.status == 0) {
          const WfstPathStep* steps = host_paths_.data() + o.path_offset;
          results[b] = wfst_row_result(fallback_, o, std::vector<WfstPathStep>(steps, steps + o.path_length), o.frames,
                                       c.channel->boost_by_word, blank_label);
          continue;
        }
        first = import_channel(c, stream);
        on_host_[static_cast<std::size_t>(c.slot)] = 1;
      }
      advance_on_host(p, static_cast<std::int64_t>(b), *c.channel, first, stream);
      results[b] = fallback_.result(*c.channel, c.last, blank_label);
      host_rows_ += 1;
    }
    return results;
  }

  std::vector<WfstResult> decode(const CtcInput& p, const std::vector<std::vector<float>>& boost_rows,
                                 StreamHandle user_stream) override {
    std::vector<WfstResult> results(static_cast<std::size_t>(p.batch));
    if (p.batch == 0) return results;
    DeviceGuard guard(device_);
    if (p.logprobs.numel() > 0) check_device_readable(p.logprobs.data(), device_, "logprobs");
    const ExecutorLifecycle::Call call(lifecycle_, user_stream);
    const cudaStream_t stream = call.stream();
    const auto batch = static_cast<std::size_t>(p.batch);
    std::int64_t path_capacity = 0;
    for (const std::int32_t length : p.host_lengths) path_capacity += 4 * static_cast<std::int64_t>(length) + 64;
    try {
      ensure_row_lanes(p.batch, p.batch, path_capacity, stream);
      upload_boosts(
          batch, [&](std::size_t b) { return b < boost_rows.size() ? &boost_rows[b] : nullptr; }, stream);
      upload_lengths(p, stream);
      fill_bytes_async(queue_.data(), device_, 0, queue_.bytes(), stream);
      const WfstRowsArgs a = rows_args(p, path_capacity);
      launch_wfst_rows(p.logprobs.dtype(), a, static_cast<std::int32_t>(std::min(row_lane_count_, p.batch)), stream);
      ASRDEC_CUDA_CHECK(cudaMemcpyAsync(host_outcomes_.data(), outcomes_.data(), batch * sizeof(WfstRowOutcome),
                                        cudaMemcpyDeviceToHost, stream));
      ASRDEC_CUDA_CHECK(cudaMemcpyAsync(host_paths_.data(), paths_.data(),
                                        static_cast<std::size_t>(path_capacity) * sizeof(WfstPathStep),
                                        cudaMemcpyDeviceToHost, stream));
      ASRDEC_CUDA_CHECK(cudaStreamSynchronize(stream));
    } catch (...) {
      cudaStreamSynchronize(stream);
      rows_clean_ = false;  // a lane may have stopped mid-row: wiped before the next call
      throw;
    }
    const std::int32_t blank_label = p.blank + 1;
    for (std::size_t b = 0; b < batch; ++b) {
      const WfstRowOutcome& o = host_outcomes_[b];
      ASRDEC_EXPECTS((o.status & kWfstLaneBroken) == 0, Error,
                     "WFST decoding on CUDA: a way in could not be rebuilt from its key (internal error)");
      const std::vector<float> none;
      const std::vector<float>& boosts = b < boost_rows.size() ? boost_rows[b] : none;
      if (o.status != 0) {
        results[b] = decode_on_host(p, static_cast<std::int64_t>(b), boosts, stream);
        host_rows_ += 1;
        continue;
      }
      const WfstPathStep* steps = host_paths_.data() + o.path_offset;
      results[b] = wfst_row_result(fallback_, o, std::vector<WfstPathStep>(steps, steps + o.path_length),
                                   p.host_lengths[b], boosts, blank_label);
    }
    return results;
  }

 private:
  static WfstInputArgs input_of(const CtcInput& p) {
    return WfstInputArgs{p.logprobs.data(), p.logprobs.stride(0), p.logprobs.stride(1), p.logprobs.stride(2)};
  }

  // Lanes for `wanted` rows (as many as max_device_bytes, the blocks the device runs at once and kMaxLanes allow) and
  // the per-call buffers of `batch` rows; never shrunk. Every lane byte is 0xff (an empty lane) after allocation, and
  // after each row.
  void ensure_row_lanes(std::int64_t wanted, std::int64_t batch, std::int64_t path_capacity, cudaStream_t stream) {
    const std::int64_t max_lanes = std::min(kMaxLanes, config_.max_device_bytes / row_layout_.bytes);
    ASRDEC_EXPECTS(max_lanes >= 1, OutOfMemory, "WFST decoding on CUDA: one lane needs ", row_layout_.bytes,
                   " bytes of device memory, above WfstDecoderConfig.max_device_bytes = ", config_.max_device_bytes);
    const std::int64_t lanes = std::min({wanted, max_lanes, static_cast<std::int64_t>(resident_lanes_)});
    if (lanes > row_lane_count_ || !rows_clean_) {
      const std::int64_t count = std::max(lanes, row_lane_count_);
      if (count > row_lane_count_) {
        row_lanes_ = DeviceBuffer<unsigned char>();  // the old lanes go first: both may not fit
        row_lane_count_ = 0;
        row_lanes_ = DeviceBuffer<unsigned char>(static_cast<std::size_t>(count * row_layout_.bytes), device_);
        row_lane_count_ = count;
      }
      fill_bytes_async(row_lanes_.data(), device_, 0xff, row_lanes_.bytes(), stream);
      rows_clean_ = true;
    }
    const auto rows = static_cast<std::size_t>(batch);
    if (outcomes_.size() < rows) {
      outcomes_ = DeviceBuffer<WfstRowOutcome>(rows, device_);
      host_outcomes_ = PinnedBuffer<WfstRowOutcome>(rows, Device::cpu());
    }
    const auto steps = static_cast<std::size_t>(path_capacity);
    if (paths_.size() < steps) {
      paths_ = DeviceBuffer<WfstPathStep>(steps, device_);
      host_paths_ = PinnedBuffer<WfstPathStep>(steps, Device::cpu());
    }
  }

  // Row b from the start on the CPU executor (a row no lane could hold).
  WfstResult decode_on_host(const CtcInput& p, std::int64_t b, const std::vector<float>& boosts, cudaStream_t stream) {
    WfstChannel channel;
    fallback_.start_with(channel, boosts);
    advance_on_host(p, b, channel, 0, stream);
    return fallback_.result(channel, true, p.blank + 1);
  }

  // Frames [first, lengths[b]) of row b through `channel` on the CPU executor: the frames copied to the host.
  void advance_on_host(const CtcInput& p, std::int64_t b, WfstChannel& channel, std::int32_t first,
                       cudaStream_t stream) {
    const std::int32_t length = p.host_lengths[static_cast<std::size_t>(b)];
    if (first >= length) return;
    const std::int64_t element = dtype_size(p.logprobs.dtype());
    const std::int64_t span = (length - 1) * p.logprobs.stride(1) + (p.columns - 1) * p.logprobs.stride(2) + 1;
    std::vector<unsigned char> bytes(static_cast<std::size_t>(span * element));
    const auto* row = static_cast<const unsigned char*>(p.logprobs.data()) + b * p.logprobs.stride(0) * element;
    ASRDEC_CUDA_CHECK(
        cudaMemcpyAsync(bytes.data(), row, static_cast<std::size_t>(span * element), cudaMemcpyDeviceToHost, stream));
    ASRDEC_CUDA_CHECK(cudaStreamSynchronize(stream));
    CtcInput one = p;
    one.logprobs = TensorView(bytes.data(), p.logprobs.dtype(), {1, std::max(p.frames, std::int64_t{1}), p.columns},
                              {0, p.logprobs.stride(1), p.logprobs.stride(2)});
    std::vector<float> frame(static_cast<std::size_t>(p.columns));
    for (std::int32_t t = first; t < length; ++t) {
      read_ctc_frame(one, 0, t, false, frame.data());
      fallback_.advance(channel, frame.data());
    }
  }

  // A stream its lane gave up on, from its device channel into its host channel (left as started when the lane
  // stored nothing of a fresh stream); returns the chunk's first frame the lane did not store.
  std::int32_t import_channel(const WfstChunk& c, cudaStream_t stream) {
    const unsigned char* base = channels_.data() + static_cast<std::int64_t>(c.slot) * channel_layout_.bytes;
    WfstChannelScalars s{};
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(&s, base + channel_layout_.scalars, sizeof s, cudaMemcpyDeviceToHost, stream));
    ASRDEC_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (s.used == 0) {
      ASRDEC_EXPECTS(c.fresh, Error,
                     "WFST decoding on CUDA: a stream's channel is empty after its first chunk "
                     "(internal error)");
      return 0;
    }
    std::vector<WfstArenaEntry> entries(static_cast<std::size_t>(s.used));
    std::vector<std::int32_t> active(static_cast<std::size_t>(s.active_count));
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(entries.data(), base + channel_layout_.entries,
                                      entries.size() * sizeof(WfstArenaEntry), cudaMemcpyDeviceToHost, stream));
    if (!active.empty()) {
      ASRDEC_CUDA_CHECK(cudaMemcpyAsync(active.data(), base + channel_layout_.active, active.size() * 4,
                                        cudaMemcpyDeviceToHost, stream));
    }
    ASRDEC_CUDA_CHECK(cudaStreamSynchronize(stream));
    *c.channel = wfst_channel_from_lane(graph_, entries.data(), s, active.data(), std::move(c.channel->boost_by_word));
    return static_cast<std::int32_t>(s.frames - c.offset);
  }

  // The chunk rows `queue` on the device: their outcomes into host_outcomes_ (by row) and paths into host_paths_.
  void launch_chunks(const CtcInput& p, const std::vector<WfstChunk>& chunks, const std::vector<std::int32_t>& queue,
                     std::int64_t slots, std::int64_t path_capacity, cudaStream_t stream) {
    const auto batch = static_cast<std::size_t>(p.batch);
    ensure_row_lanes(static_cast<std::int64_t>(queue.size()), p.batch, path_capacity, stream);
    ensure_channels(slots, stream);
    upload_boosts(
        batch, [&](std::size_t b) { return &chunks[b].channel->boost_by_word; }, stream);
    upload_lengths(p, stream);
    // One upload: the queue, then each row's slot and flags.
    host_chunk_rows_.reserve_discard(queue.size() + 2 * batch);
    std::int32_t* rows = host_chunk_rows_.data();
    std::copy(queue.begin(), queue.end(), rows);
    for (std::size_t b = 0; b < batch; ++b) {
      rows[queue.size() + b] = chunks[b].slot;
      rows[queue.size() + batch + b] = (chunks[b].fresh ? kWfstChunkFresh : 0) | (chunks[b].last ? kWfstChunkLast : 0);
    }
    if (chunk_rows_.size() < queue.size() + 2 * batch) {
      chunk_rows_ = DeviceBuffer<std::int32_t>(std::max(queue.size() + 2 * batch, 2 * chunk_rows_.size()), device_);
    }
    copy_bytes_async(chunk_rows_.data(), device_, rows, Device::cpu(), (queue.size() + 2 * batch) * 4, stream);
    fill_bytes_async(queue_.data(), device_, 0, queue_.bytes(), stream);
    WfstChunksArgs c{};
    c.rows = rows_args(p, path_capacity);
    c.queue = chunk_rows_.data();
    c.count = static_cast<std::int32_t>(queue.size());
    c.slot = chunk_rows_.data() + queue.size();
    c.flags = chunk_rows_.data() + queue.size() + batch;
    c.channels = channels_.data();
    c.channel = channel_layout_;
    launch_wfst_chunks(p.logprobs.dtype(), c,
                       static_cast<std::int32_t>(std::min<std::int64_t>(row_lane_count_, c.count)), stream);
    // The outcomes and the paths' length first, then only the paths written.
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(host_outcomes_.data(), outcomes_.data(), batch * sizeof(WfstRowOutcome),
                                      cudaMemcpyDeviceToHost, stream));
    ASRDEC_CUDA_CHECK(
        cudaMemcpyAsync(host_queue_.data(), queue_.data(), queue_.bytes(), cudaMemcpyDeviceToHost, stream));
    ASRDEC_CUDA_CHECK(cudaStreamSynchronize(stream));
    const auto used = static_cast<std::size_t>(std::min<unsigned long long>(host_queue_[1], path_capacity));
    if (used > 0) {
      ASRDEC_CUDA_CHECK(cudaMemcpyAsync(host_paths_.data(), paths_.data(), used * sizeof(WfstPathStep),
                                        cudaMemcpyDeviceToHost, stream));
      ASRDEC_CUDA_CHECK(cudaStreamSynchronize(stream));
    }
  }

  // Device channels for slots [0, slots) (grown geometrically up to max_open_utterances, never shrunk; a fresh
  // channel needs no initial contents).
  void ensure_channels(std::int64_t slots, cudaStream_t stream) {
    if (slots <= channel_slots_) return;
    const std::int64_t count = std::min(std::max(slots, 2 * channel_slots_), config_.max_open_utterances);
    DeviceBuffer<unsigned char> grown(static_cast<std::size_t>(count * channel_layout_.bytes), device_);
    if (channel_slots_ > 0) {
      copy_bytes_async(grown.data(), device_, channels_.data(), device_,
                       static_cast<std::size_t>(channel_slots_ * channel_layout_.bytes), stream);
      ASRDEC_CUDA_CHECK(cudaStreamSynchronize(stream));
    }
    channels_ = std::move(grown);
    channel_slots_ = count;
  }

  // The rows' boosts, packed: row b reads row boost_row[b] of the table, or none; `row(b)`: row b's boosts by word
  // (null or empty: none).
  template <class Row>
  void upload_boosts(std::size_t batch, const Row& row, cudaStream_t stream) {
    const std::size_t width = static_cast<std::size_t>(graph_.max_output_label()) + 1;
    std::size_t boosted = 0;
    for (std::size_t b = 0; b < batch; ++b) {
      const std::vector<float>* r = row(b);
      boosted += r == nullptr || r->empty() ? 0 : 1;
    }
    host_boost_row_.reserve_discard(batch);
    host_boosts_.reserve_discard(std::max<std::size_t>(boosted * width, 1));
    if (boosts_.size() < boosted * width) boosts_ = DeviceBuffer<float>(boosted * width, device_);
    if (boost_row_.size() < batch) boost_row_ = DeviceBuffer<std::int32_t>(batch, device_);
    std::size_t next = 0;
    for (std::size_t b = 0; b < batch; ++b) {
      const std::vector<float>* r = row(b);
      const bool has = r != nullptr && !r->empty();
      host_boost_row_[b] = has ? static_cast<std::int32_t>(next) : -1;
      if (has) std::copy(r->begin(), r->end(), host_boosts_.data() + (next++) * width);
    }
    copy_bytes_async(boost_row_.data(), device_, host_boost_row_.data(), Device::cpu(), batch * 4, stream);
    if (boosted > 0) {
      copy_bytes_async(boosts_.data(), device_, host_boosts_.data(), Device::cpu(), boosted * width * 4, stream);
    }
  }

  // A lane kernel's arguments for the rows of `p` (boosts, lengths and the queue uploaded).
  WfstRowsArgs rows_args(const CtcInput& p, std::int64_t path_capacity) {
    WfstRowsArgs a{};
    const WfstGraphArrays& g = graph_.arrays();
    a.graph =
        WfstLaneGraph{emitting_begin_.data(), epsilon_begin_.data(), ilabel_.data(), olabel_.data(),    weight_.data(),
                      next_state_.data(),     g.num_states,          g.start,        arc_source_.data()};
    a.final_weight = config_.use_final_probs ? final_weight_.data() : nullptr;
    a.config = WfstLaneConfig{config_.beam, config_.acoustic_scale, config_.max_active, config_.min_active,
                              config_.max_tokens_per_frame};
    a.input = input_of(p);
    a.lengths = lengths_.data();
    a.boost_row = boost_row_.data();
    a.boosts = boosts_.data();
    a.boost_width = graph_.max_output_label() + 1;
    a.batch = static_cast<std::int32_t>(p.batch);
    a.layout = row_layout_;
    a.lanes = row_lanes_.data();
    a.next_row = reinterpret_cast<std::int32_t*>(queue_.data());
    a.outcomes = outcomes_.data();
    a.paths = paths_.data();
    a.path_capacity = path_capacity;
    a.paths_used = queue_.data() + 1;
    return a;
  }

  void upload_lengths(const CtcInput& p, cudaStream_t stream) {
    if (lengths_.size() < p.host_lengths.size()) {
      ASRDEC_CUDA_CHECK(cudaStreamSynchronize(stream));
      DeviceBuffer<std::int32_t> grown(p.host_lengths.size(), device_);  // the old buffer stays if this throws
      lengths_ = std::move(grown);
    }
    copy_bytes_async(lengths_.data(), device_, p.host_lengths.data(), Device::cpu(), p.host_lengths.size() * 4, stream);
  }

  std::int32_t num_states() const { return graph_.arrays().num_states; }
  std::int32_t segment_capacity() const { return std::max(num_states(), kMinSegmentCapacity); }

  // Bytes of device memory one lane needs.
  std::size_t lane_bytes(std::int64_t columns) const {
    const auto S = static_cast<std::size_t>(num_states());
    const std::size_t dense = S * (8 + 4 + 4 + 8 + 8 + 4 + 4 + 8 + 4 + 4 + 4) + 2 * ((S + 31) / 32) * 4;
    const std::size_t segments =
        2 * (static_cast<std::size_t>(segment_capacity()) * sizeof(WfstStoredToken) + sizeof(WfstSegmentHeader));
    return dense + segments + static_cast<std::size_t>(columns) * 4 + sizeof(WfstLaneControl) +
           static_cast<std::size_t>(graph_.max_output_label() + 1) * 4;
  }

  // Allocates lanes for a batch (as many as the budget max_device_bytes holds, up to the batch and kMaxLanes); they
  // are never shrunk. A failed allocation restores the old lanes (ExecutorLifecycle::grow).
  void ensure_lanes(std::int64_t batch, cudaStream_t stream) {
    const std::int64_t columns = graph_.max_input_label();  // the columns input labels read (0: none)
    const std::int64_t per_lane = static_cast<std::int64_t>(lane_bytes(columns));
    const std::int64_t max_lanes = std::min(kMaxLanes, config_.max_device_bytes / per_lane);
    ASRDEC_EXPECTS(max_lanes >= 1, OutOfMemory, "WFST decoding on CUDA: one lane needs ", per_lane,
                   " bytes of device memory for ", graph_.source(), " (", num_states(),
                   " states), above WfstDecoderConfig.max_device_bytes = ", config_.max_device_bytes);
    const std::int64_t lanes = std::max(std::min(batch, max_lanes), lanes_);
    if (lifecycle_.usable() && lanes == lanes_) return;
    ASRDEC_CUDA_CHECK(cudaStreamSynchronize(copy_stream_.handle()));
    Lanes current{lanes_, columns_};
    lifecycle_.grow(current, Lanes{lanes, columns}, [&] {
      if (current.lanes > 0) allocate(current.lanes, current.columns, stream);
    });
  }

  // What the lane buffers are sized for.
  struct Lanes {
    std::int64_t lanes = 0;
    std::int64_t columns = 0;
  };

  void allocate(std::int64_t lanes, std::int64_t columns, cudaStream_t stream) {
    for (auto& executor : executors_) executor.reset();
    const auto S = static_cast<std::size_t>(num_states());
    const auto n = static_cast<std::size_t>(lanes);
    const std::size_t words = (S + 31) / 32;
    const auto capacity = static_cast<std::size_t>(segment_capacity());
    key_ = DeviceBuffer<unsigned long long>(n * S, device_);
    slot_ = DeviceBuffer<std::int32_t>(n * S, device_);
    list_state_ = DeviceBuffer<std::int32_t>(n * S, device_);
    emit_win_ = DeviceBuffer<unsigned long long>(n * S, device_);
    eps_win_ = DeviceBuffer<unsigned long long>(n * S, device_);
    mark_ = DeviceBuffer<std::int32_t>(n * S, device_);
    stored_ = DeviceBuffer<std::int32_t>(n * S, device_);
    frontier_ = DeviceBuffer<std::int32_t>(2 * n * S, device_);
    queued_ = DeviceBuffer<unsigned int>(2 * n * words, device_);
    active_state_ = DeviceBuffer<std::int32_t>(n * S, device_);
    active_cost_ = DeviceBuffer<float>(n * S, device_);
    active_stored_ = DeviceBuffer<std::int32_t>(n * S, device_);
    frame_logp_ = DeviceBuffer<float>(std::max<std::size_t>(n * static_cast<std::size_t>(columns), 1), device_);
    boost_ = DeviceBuffer<float>(n * static_cast<std::size_t>(graph_.max_output_label() + 1), device_);
    control_ = DeviceBuffer<WfstLaneControl>(n, device_);
    host_control_ = PinnedBuffer<WfstLaneControl>(n, Device::cpu());
    for (std::size_t s = 0; s < 2; ++s) {
      tokens_[s] = DeviceBuffer<WfstStoredToken>(n * capacity, device_);
      headers_[s] = DeviceBuffer<WfstSegmentHeader>(n, device_);
      host_headers_[s] = PinnedBuffer<WfstSegmentHeader>(n, Device::cpu());
    }
    fill_bytes_async(key_.data(), device_, 0xff, key_.bytes(), stream);
    fill_bytes_async(slot_.data(), device_, 0xff, slot_.bytes(), stream);
    fill_bytes_async(queued_.data(), device_, 0, queued_.bytes(), stream);
    fill_bytes_async(control_.data(), device_, 0, control_.bytes(), stream);
    ASRDEC_CUDA_CHECK(cudaStreamSynchronize(stream));
    lanes_ = lanes;
    columns_ = columns;
  }

  WfstKernelArgs kernel_args(std::size_t segment) {
    WfstKernelArgs g{};
    g.graph = WfstDeviceGraph{emitting_begin_.data(), epsilon_begin_.data(), ilabel_.data(), olabel_.data(),
                              next_state_.data(),     weight_.data(),        num_states()};
    WfstLanes& w = g.lanes;
    w.key = key_.data();
    w.slot = slot_.data();
    w.list_state = list_state_.data();
    w.emit_win = emit_win_.data();
    w.eps_win = eps_win_.data();
    w.mark = mark_.data();
    w.stored = stored_.data();
    w.frontier = frontier_.data();
    w.queued = queued_.data();
    w.active_state = active_state_.data();
    w.active_cost = active_cost_.data();
    w.active_stored = active_stored_.data();
    w.frame_logp = frame_logp_.data();
    w.boost = boost_.data();
    w.control = control_.data();
    w.boost_width = graph_.max_output_label() + 1;
    w.queued_words = (num_states() + 31) / 32;
    w.columns = static_cast<std::int32_t>(columns_);
    w.lanes = static_cast<std::int32_t>(lanes_);
    g.params =
        WfstSearchParams{config_.beam,       config_.acoustic_scale, config_.max_active, config_.max_tokens_per_frame,
                         segment_capacity(), config_.min_active};
    g.segment = WfstSegment{tokens_[segment].data(), headers_[segment].data()};
    g.input = input_.data();
    return g;
  }

  // The program of one segment: begin, then kWfstFramesPerProgram × (gather the frame, frame step).
  GraphExecutor& executor(DType dtype, std::size_t segment) {
    auto& slot = executors_[static_cast<std::size_t>(dtype) * 2 + segment];
    if (!slot) {
      const WfstKernelArgs g = kernel_args(segment);
      StreamProgram program;
      program.then([g](StreamHandle s) { launch_wfst_begin_segment(g, s); });
      for (std::int32_t f = 0; f < kWfstFramesPerProgram; ++f) {
        program.then([g, dtype](StreamHandle s) {
          launch_wfst_gather_frame(dtype, g, s);
          launch_wfst_frame(g, s);
        });
      }
      slot.emplace(device_, lifecycle_.mode(), program);
    }
    return *slot;
  }

  // Rows [first, first + rows) on lanes 0 … rows − 1.
  void decode_group(const CtcInput& p, const std::vector<WfstChannel*>& channels, std::int64_t first, std::int64_t rows,
                    cudaStream_t stream) {
    const auto n = static_cast<std::size_t>(lanes_);
    const auto S = static_cast<std::size_t>(num_states());
    const auto width = static_cast<std::size_t>(graph_.max_output_label() + 1);
    for (std::size_t l = 0; l < n; ++l) {
      WfstLaneControl& c = host_control_[l];
      c = WfstLaneControl{-1, 0, 0, 0, 0, 0};
      if (static_cast<std::int64_t>(l) >= rows) continue;
      const std::int64_t b = first + static_cast<std::int64_t>(l);
      const WfstChannel& channel = *channels[static_cast<std::size_t>(b)];
      c.row = static_cast<std::int32_t>(b);
      c.length = p.host_lengths[static_cast<std::size_t>(b)];
      c.active_count = static_cast<std::int32_t>(channel.active.size());
      c.has_boost = channel.boost_by_word.empty() ? 0 : 1;
      // The channel's active tokens, with their index in its last frame.
      active_state_host_.resize(channel.active.size());
      active_cost_host_.resize(channel.active.size());
      active_stored_host_.resize(channel.active.size());
      for (std::size_t i = 0; i < channel.active.size(); ++i) {
        const WfstToken& t = channel.history[static_cast<std::size_t>(channel.active[i])];
        active_state_host_[i] = t.state;
        active_cost_host_[i] = t.cost;
        active_stored_host_[i] = static_cast<std::int32_t>(channel.active[i] - channel.last_frame_begin);
      }
      const std::size_t count = channel.active.size();
      if (count > 0) {
        copy_bytes_async(active_state_.data() + l * S, device_, active_state_host_.data(), Device::cpu(), count * 4,
                         stream);
        copy_bytes_async(active_cost_.data() + l * S, device_, active_cost_host_.data(), Device::cpu(), count * 4,
                         stream);
        copy_bytes_async(active_stored_.data() + l * S, device_, active_stored_host_.data(), Device::cpu(), count * 4,
                         stream);
      }
      if (c.has_boost != 0) {
        copy_bytes_async(boost_.data() + l * width, device_, channel.boost_by_word.data(), Device::cpu(), width * 4,
                         stream);
      }
    }
    copy_bytes_async(control_.data(), device_, host_control_.data(), Device::cpu(), n * sizeof(WfstLaneControl),
                     stream);
    const DType dtype = p.logprobs.dtype();
    std::array<bool, 2> launched_before{false, false};
    const auto launch = [&](std::size_t s) {
      if (launched_before[s]) ASRDEC_CUDA_CHECK(cudaStreamWaitEvent(stream, segment_free_[s].get(), 0));
      launched_before[s] = true;
      lifecycle_.run(executor(dtype, s), stream);
      ASRDEC_CUDA_CHECK(cudaMemcpyAsync(host_headers_[s].data(), headers_[s].data(), n * sizeof(WfstSegmentHeader),
                                        cudaMemcpyDeviceToHost, stream));
      ASRDEC_CUDA_CHECK(cudaEventRecord(program_done_[s].get(), stream));
    };
    launch(0);
    std::int64_t last_progress = -1;
    int idle_programs = 0;
    for (std::int64_t iteration = 0;; ++iteration) {
      const auto s = static_cast<std::size_t>(iteration & 1);
      ASRDEC_CUDA_CHECK(cudaEventSynchronize(program_done_[s].get()));
      const WfstSegmentHeader* headers = host_headers_[s].data();
      bool finished = true;
      std::int64_t progress = 0;
      std::size_t total = 0;
      for (std::size_t l = 0; l < static_cast<std::size_t>(rows); ++l) {
        finished = finished && headers[l].progress >= host_control_[l].length;
        progress += headers[l].progress;
        total += static_cast<std::size_t>(headers[l].used);
      }
      // Every program moves some lane on (a fresh segment has room for any frame); guard against a hang anyway.
      idle_programs = progress == last_progress ? idle_programs + 1 : 0;
      last_progress = progress;
      ASRDEC_EXPECTS(idle_programs < 3, Error, "WFST decoding on CUDA made no progress (internal error)");
      if (!finished) launch(s ^ 1);
      // This segment's tokens to the host (on the copy stream, while the device decodes the next program).
      // The pinned buffer grows geometrically, so reallocating (which may synchronise) is rare.
      if (host_tokens_[s].size() < total) {
        host_tokens_[s].reserve_discard(std::max(total, 2 * host_tokens_[s].size()));
      }
      std::size_t offset = 0;
      for (std::size_t l = 0; l < static_cast<std::size_t>(rows); ++l) {
        const auto used = static_cast<std::size_t>(headers[l].used);
        if (used == 0) continue;
        ASRDEC_CUDA_CHECK(cudaMemcpyAsync(
            host_tokens_[s].data() + offset, tokens_[s].data() + l * static_cast<std::size_t>(segment_capacity()),
            used * sizeof(WfstStoredToken), cudaMemcpyDeviceToHost, copy_stream_.handle()));
        offset += used;
      }
      ASRDEC_CUDA_CHECK(cudaEventRecord(segment_free_[s].get(), copy_stream_.handle()));
      ASRDEC_CUDA_CHECK(cudaEventSynchronize(segment_free_[s].get()));
      offset = 0;
      for (std::size_t l = 0; l < static_cast<std::size_t>(rows); ++l) {
        WfstChannel& channel = *channels[static_cast<std::size_t>(first) + l];
        const WfstSegmentHeader& h = headers[l];
        for (std::int32_t f = 0; f < h.frames; ++f) {
          searcher_->append_frame(channel, host_tokens_[s].data() + offset, h.sizes[f],
                                  ((h.overflow_mask >> f) & 1) != 0);
          offset += static_cast<std::size_t>(h.sizes[f]);
        }
      }
      if (finished) break;
    }
  }

  const WfstGraph& graph_;
  WfstDecoderConfig config_;
  Device device_;
  const WfstSearcher* searcher_;
  ExecutorLifecycle lifecycle_;
  Stream copy_stream_;
  DeviceBuffer<WfstInputArgs> input_;
  DeviceBuffer<unsigned long long> bad_value_;
  DeviceBuffer<std::int32_t> lengths_;
  DeviceBuffer<std::int64_t> emitting_begin_, epsilon_begin_;
  DeviceBuffer<std::int32_t> ilabel_, olabel_, next_state_;
  DeviceBuffer<float> weight_;
  DeviceBuffer<float> final_weight_;
  DeviceBuffer<std::int32_t> arc_source_;  // [arcs] the state each arc leaves (WfstLaneGraph::arc_source)
  // decode(): the rows kernel's lanes and per-call buffers; a searcher for the rows no lane could hold.
  DeviceBuffer<unsigned long long> queue_;  // [0]: the next row (int32), [1]: path steps used
  WfstSearcher fallback_;
  WfstLaneLayout row_layout_;
  DeviceBuffer<unsigned char> row_lanes_;
  std::int64_t row_lane_count_ = 0;
  bool rows_clean_ = true;
  std::int64_t host_rows_ = 0;
  std::int32_t resident_lanes_ = 1;
  PinnedBuffer<unsigned long long> host_queue_{2, Device::cpu()};
  // decode_chunks(): the streams' channels by slot, and which streams continue on the host.
  WfstChannelLayout channel_layout_;
  DeviceBuffer<unsigned char> channels_;
  std::int64_t channel_slots_ = 0;
  std::vector<char> on_host_;
  DeviceBuffer<std::int32_t> chunk_rows_;
  PinnedBuffer<std::int32_t> host_chunk_rows_;
  DeviceBuffer<std::int32_t> boost_row_;
  DeviceBuffer<float> boosts_;
  PinnedBuffer<std::int32_t> host_boost_row_;
  PinnedBuffer<float> host_boosts_;
  DeviceBuffer<WfstRowOutcome> outcomes_;
  PinnedBuffer<WfstRowOutcome> host_outcomes_;
  DeviceBuffer<WfstPathStep> paths_;
  PinnedBuffer<WfstPathStep> host_paths_;
  std::int64_t lanes_ = 0;
  std::int64_t columns_ = 0;
  DeviceBuffer<unsigned long long> key_, emit_win_, eps_win_;
  DeviceBuffer<std::int32_t> slot_, list_state_, mark_, stored_, frontier_, active_state_, active_stored_;
  DeviceBuffer<unsigned int> queued_;
  DeviceBuffer<float> active_cost_, frame_logp_, boost_;
  DeviceBuffer<WfstLaneControl> control_;
  PinnedBuffer<WfstLaneControl> host_control_;
  std::array<DeviceBuffer<WfstStoredToken>, 2> tokens_;
  std::array<DeviceBuffer<WfstSegmentHeader>, 2> headers_;
  std::array<PinnedBuffer<WfstSegmentHeader>, 2> host_headers_;
  std::array<PinnedBuffer<WfstStoredToken>, 2> host_tokens_;
  std::array<Event, 2> program_done_, segment_free_;
  std::vector<std::int32_t> active_state_host_, active_stored_host_;
  std::vector<float> active_cost_host_;
  std::array<std::optional<GraphExecutor>, 6> executors_;
};

}  // namespace

std::unique_ptr<WfstBackend> make_wfst_cuda(const WfstGraph& graph, const WfstDecoderConfig& config, Device device,
                                            const WfstSearcher& searcher) {
  return std::make_unique<WfstCuda>(graph, config, device, searcher);
}

}  // namespace asrdec::detail

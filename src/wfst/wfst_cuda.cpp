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
// N-best lists (decode_into): rows are decoded as streams of one chunk, in groups of as many as lanes run at once,
// each into a channel of its own (not the open streams' ones); the host then copies each channel into the row's host
// channel (wfst_channel_import.hpp), where the CPU's code ranks the last frame's tokens.

#include <algorithm>
#include <utility>

#include "asrdec/core/buffer.hpp"
#include "asrdec/core/error.hpp"
#include "asrdec/core/graph.hpp"
#include "core/bad_value.hpp"
#include "core/cuda/check.hpp"
#include "core/cuda/executor_lifecycle.hpp"
#include "wfst/lane_step/wfst_channel_import.hpp"
#include "wfst/lane_step/wfst_row_result.hpp"
#include "wfst/wfst_backend.hpp"
#include "wfst/wfst_rows_kernel.hpp"

namespace asrdec::detail {
namespace {

constexpr std::int64_t kMaxLanes = 1024;

// Channels in device memory (open streams', or the rows decode_nbest decodes at once), one per slot
// (wfst_lane_chunk.hpp's WfstChannelLayout).
struct DeviceChannels {
  DeviceBuffer<unsigned char> memory;
  std::int64_t slots = 0;
};

class WfstCuda final : public WfstBackend {
 public:
  WfstCuda(const WfstGraph& graph, const WfstDecoderConfig& config, Device device)
      : graph_(graph),
        config_(config),
        device_(device),
        lifecycle_(device, config.graph_mode),
        bad_value_(1, device),
        queue_(2, device),
        fallback_(graph, config) {
    const WfstGraphArrays& a = graph.arrays();
    ASRDEC_EXPECTS(graph.num_arcs() < (std::int64_t{1} << 31) && a.num_states < (1 << 30), Unsupported,
                   "WFST decoding on CUDA supports graphs of up to 2^31 arcs and 2^30 states; ", graph.source(),
                   " has ", graph.num_arcs(), " arcs and ", a.num_states, " states");
    DeviceGuard guard(device_);
    // The fast frame as large as asked while the lanes' shared memory lets as many lane blocks run at once as
    // without it (also loads the kernels, so that the first call does not).
    const std::int32_t fast_tokens =
        wfst_fast_tokens_within(wfst_lane_fast_budget(), static_cast<std::int32_t>(config.device_fast_tokens));
    row_layout_ = wfst_lane_layout(
        config.device_frame_tokens > 0 ? static_cast<std::int32_t>(config.device_frame_tokens) : kWfstLaneTokens,
        config.device_history_tokens > 0 ? static_cast<std::int32_t>(config.device_history_tokens) : kWfstLaneHistory,
        static_cast<std::int32_t>(graph.max_input_label()), kWfstLaneThreads, fast_tokens);
    channel_layout_ = wfst_channel_layout(row_layout_);
    resident_lanes_ = wfst_lanes_resident(row_layout_);
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
    max_emitting_degree_ = wfst_max_emitting_degree(a.emitting_begin.data(), a.epsilon_begin.data(), a.num_states);
    if (config.use_final_probs) upload(final_weight_, a.final_weight);
    setup.synchronize();
  }

  GraphMode graph_mode() const noexcept override { return lifecycle_.mode(); }
  std::int64_t lane_device_bytes() const override { return row_layout_.bytes; }
  std::int64_t device_bytes() const override {
    std::size_t bytes = 0;
    const auto add = [&](const auto&... buffers) { ((bytes += buffers.bytes()), ...); };
    add(bad_value_, lengths_, emitting_begin_, epsilon_begin_, ilabel_, olabel_, next_state_, weight_, final_weight_,
        arc_source_, queue_, row_lanes_, streams_.memory, nbest_.memory, chunk_rows_, boost_row_, boosts_, outcomes_,
        paths_);
    return static_cast<std::int64_t>(bytes);
  }
  std::int64_t host_fallbacks() const override { return host_rows_; }

  void check_values(const CtcInput& p, StreamHandle user_stream) override {
    if (!values_to_check(p)) return;
    DeviceGuard guard(device_);
    check_device_readable(p.logprobs.data(), device_, "logprobs");
    const ExecutorLifecycle::Call call(lifecycle_, user_stream);
    const cudaStream_t stream = call.stream();
    upload_lengths(p, stream);
    enqueue_value_check(p, stream);
    ASRDEC_CUDA_CHECK(cudaStreamSynchronize(stream));
    throw_on_bad_value();
  }

  void decode_into(const CtcInput& p, const std::vector<WfstChannel*>& channels, StreamHandle user_stream) override {
    if (p.batch == 0) return;
    DeviceGuard guard(device_);
    if (p.logprobs.numel() > 0) check_device_readable(p.logprobs.data(), device_, "logprobs");
    const ExecutorLifecycle::Call call(lifecycle_, user_stream);
    const cudaStream_t stream = call.stream();
    // Rows at once, each with a lane and a channel: as many as max_device_bytes holds both for.
    const std::int64_t group =
        std::min(lanes_for(p.batch),
                 std::max<std::int64_t>(1, config_.max_device_bytes / (row_layout_.bytes + channel_layout_.bytes)));
    for (std::int64_t first = 0; first < p.batch; first += group) {
      const std::int64_t rows = std::min(group, p.batch - first);
      const CtcInput part = rows_of(p, first, rows);
      std::vector<WfstChunk> chunks;
      std::vector<std::int32_t> queue;
      for (std::int64_t r = 0; r < rows; ++r) {
        chunks.push_back(
            WfstChunk{channels[static_cast<std::size_t>(first + r)], static_cast<std::int32_t>(r), true, true, 0});
        queue.push_back(static_cast<std::int32_t>(r));
      }
      try {
        ensure_channels(nbest_, rows, group, stream, false);
        // No room for paths: the lists come from the channels, so a row's kWfstLanePathFull means nothing here.
        launch_chunks(part, chunks, queue, nbest_, 0, stream);
      } catch (...) {
        cudaStreamSynchronize(stream);
        rows_clean_ = false;  // a lane may have stopped mid-row: wiped before the next call
        throw;
      }
      std::vector<const WfstChunk*> all;
      for (std::size_t r = 0; r < chunks.size(); ++r) {
        ASRDEC_EXPECTS((host_outcomes_[r].status & kWfstLaneBroken) == 0, Error,
                       "WFST decoding on CUDA: a way in could not be rebuilt from its key (internal error)");
        all.push_back(&chunks[r]);
      }
      const std::vector<std::int32_t> stored = import_channels(nbest_, all, stream);
      for (std::size_t r = 0; r < chunks.size(); ++r) {
        if ((host_outcomes_[r].status & ~kWfstLanePathFull) == 0) continue;
        // The lane gave up: the CPU continues from the last frame it stored (from the start when it stored none).
        advance_on_host(part, static_cast<std::int64_t>(r), *chunks[r].channel, stored[r], stream);
        host_rows_ += 1;
      }
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
      path_capacity += path_room(chunks[b].offset + p.host_lengths[b]);
    }
    try {
      if (!queue.empty()) {
        ensure_channels(streams_, slots, config_.max_open_utterances, stream);
        launch_chunks(p, chunks, queue, streams_, path_capacity, stream);
      }
    } catch (...) {
      cudaStreamSynchronize(stream);
      rows_clean_ = false;  // a lane may have stopped mid-row: wiped before the next call
      throw;
    }
    const std::int32_t blank_label = p.blank + 1;
    std::vector<char> on_device(batch, 0);
    std::vector<const WfstChunk*> given_up;  // by their lanes: their channels come to the host, all at once
    for (const std::int32_t b : queue) {
      const WfstChunk& c = chunks[static_cast<std::size_t>(b)];
      const WfstRowOutcome& o = host_outcomes_[static_cast<std::size_t>(b)];
      ASRDEC_EXPECTS((o.status & kWfstLaneBroken) == 0, Error,
                     "WFST decoding on CUDA: a way in could not be rebuilt from its key (internal error)");
      if (o.status == 0) {
        const WfstPathStep* steps = host_paths_.data() + o.path_offset;
        results[static_cast<std::size_t>(b)] =
            wfst_row_result(fallback_, o, std::vector<WfstPathStep>(steps, steps + o.path_length), o.frames,
                            c.channel->boost_by_word, blank_label);
        on_device[static_cast<std::size_t>(b)] = 1;
      } else {
        given_up.push_back(&c);
        on_host_[static_cast<std::size_t>(c.slot)] = 1;
      }
    }
    const std::vector<std::int32_t> stored = import_channels(streams_, given_up, stream);
    std::size_t next = 0;  // into given_up
    for (std::size_t b = 0; b < batch; ++b) {
      if (on_device[b] != 0) continue;
      const WfstChunk& c = chunks[b];
      // The chunk's first frame left to decode on the host: after those its lane stored, or all of a stream that was
      // already on the host.
      const std::int32_t first = next < given_up.size() && given_up[next] == &c ? stored[next++] : 0;
      advance_on_host(p, static_cast<std::int64_t>(b), *c.channel, first, stream);
      results[b] = fallback_.result(*c.channel, c.last, blank_label);
      host_rows_ += 1;
    }
    return results;
  }

  std::vector<WfstResult> decode(const CtcInput& p, const std::vector<std::vector<float>>& boost_rows,
                                 bool check_values, StreamHandle user_stream) override {
    std::vector<WfstResult> results(static_cast<std::size_t>(p.batch));
    if (p.batch == 0) return results;
    DeviceGuard guard(device_);
    if (p.logprobs.numel() > 0) check_device_readable(p.logprobs.data(), device_, "logprobs");
    // The values are checked before the lanes in the same stream, and the verdict comes back with the results:
    // lanes that read a bad value stop like any other (a NaN way is never offered, a -inf cost prunes everything
    // after it) and leave themselves empty, and their results are dropped.
    const bool check = check_values && values_to_check(p);
    const ExecutorLifecycle::Call call(lifecycle_, user_stream);
    const cudaStream_t stream = call.stream();
    const auto batch = static_cast<std::size_t>(p.batch);
    std::int64_t path_capacity = 0;
    for (const std::int32_t length : p.host_lengths) path_capacity += path_room(length);
    try {
      ensure_row_lanes(p.batch, p.batch, path_capacity, stream);
      upload_boosts(
          batch, [&](std::size_t b) { return b < boost_rows.size() ? &boost_rows[b] : nullptr; }, stream);
      upload_lengths(p, stream);
      if (check) enqueue_value_check(p, stream);
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
    if (check) throw_on_bad_value();
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
  // Whether a call has values to check, after the checks of its shape that the device's check needs.
  static bool values_to_check(const CtcInput& p) {
    if (p.batch == 0 || p.logprobs.numel() == 0) return false;
    for (std::int64_t extent : {p.batch, p.frames, p.columns}) {
      ASRDEC_CHECK_ARG(extent < kBadValueFieldLimit, "logprobs: dimensions above ", kBadValueFieldLimit - 1,
                       " are not supported on CUDA, got ", p.logprobs.shape_string());
    }
    return true;
  }

  // Finds the first NaN or +inf of frames [0, lengths[b]) of every row (the lengths uploaded), into host_bad_ once
  // the stream reaches it.
  void enqueue_value_check(const CtcInput& p, cudaStream_t stream) {
    fill_bytes_async(bad_value_.data(), device_, 0xff, sizeof(unsigned long long), stream);
    launch_wfst_check_values(p.logprobs.dtype(), input_of(p), lengths_.data(), static_cast<std::int32_t>(p.batch),
                             static_cast<std::int32_t>(p.frames), static_cast<std::int32_t>(p.columns),
                             bad_value_.data(), stream);
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(host_bad_.data(), bad_value_.data(), sizeof(unsigned long long),
                                      cudaMemcpyDeviceToHost, stream));
  }

  // After the stream reached enqueue_value_check's copy: the CPU executor's InvalidArgument for the value found.
  void throw_on_bad_value() const {
    const unsigned long long bad = host_bad_[0];
    if (bad == kNoBadValue) return;
    const BadValue at = unpack_bad_value(bad);
    throw InvalidArgument(concat("logprobs[", at.b, ", ", at.t, ", ", at.v, "] is ", at.is_nan ? "NaN" : "+inf",
                                 "; log-probabilities must be finite or -inf"));
  }

  static WfstInputArgs input_of(const CtcInput& p) {
    return WfstInputArgs{p.logprobs.data(), p.logprobs.stride(0), p.logprobs.stride(1), p.logprobs.stride(2)};
  }

  // Lanes for `wanted` rows: as many as max_device_bytes, the blocks the device runs at once and kMaxLanes allow.
  std::int64_t lanes_for(std::int64_t wanted) const {
    const std::int64_t max_lanes = std::min(kMaxLanes, config_.max_device_bytes / row_layout_.bytes);
    ASRDEC_EXPECTS(max_lanes >= 1, OutOfMemory, "WFST decoding on CUDA: one lane needs ", row_layout_.bytes,
                   " bytes of device memory, above WfstDecoderConfig.max_device_bytes = ", config_.max_device_bytes);
    return std::min({wanted, max_lanes, static_cast<std::int64_t>(resident_lanes_)});
  }

  // Path steps to reserve for a row's result after `frames` frames: a lane traces at most half its history's entries
  // (its scratch's room), so no more than that (a longer guess could only grow with a stream's length); a path that
  // does not fit sends its row to the CPU.
  std::int64_t path_room(std::int64_t frames) const {
    return std::min<std::int64_t>(4 * frames + 64, row_layout_.history / 2);
  }

  // Rows [first, first + rows) of `p` as a problem of their own (the same frames in place).
  static CtcInput rows_of(const CtcInput& p, std::int64_t first, std::int64_t rows) {
    CtcInput part = p;
    const auto* data = static_cast<const unsigned char*>(p.logprobs.data());
    if (data != nullptr) data += first * p.logprobs.stride(0) * dtype_size(p.logprobs.dtype());
    part.logprobs = TensorView(data, p.logprobs.dtype(), {rows, p.frames, p.columns},
                               {p.logprobs.stride(0), p.logprobs.stride(1), p.logprobs.stride(2)}, p.logprobs.device());
    part.lengths = TensorView();  // read from host_lengths
    part.batch = rows;
    part.host_lengths.assign(p.host_lengths.begin() + first, p.host_lengths.begin() + first + rows);
    return part;
  }

  // Lanes for `wanted` rows (as many as max_device_bytes, the blocks the device runs at once and kMaxLanes allow) and
  // the per-call buffers of `batch` rows; never shrunk. Every lane byte is 0xff (an empty lane) after allocation, and
  // after each row.
  void ensure_row_lanes(std::int64_t wanted, std::int64_t batch, std::int64_t path_capacity, cudaStream_t stream) {
    const std::int64_t lanes = lanes_for(wanted);
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
    // Each device/pinned pair is allocated whole before it replaces the old one, so a pair that cannot be leaves
    // both halves as they were, of one size (the copies between them take the device half's size).
    const auto rows = static_cast<std::size_t>(batch);
    if (outcomes_.size() < rows || host_outcomes_.size() < rows) {
      DeviceBuffer<WfstRowOutcome> outcomes(rows, device_);
      PinnedBuffer<WfstRowOutcome> host_outcomes(rows, Device::cpu());
      outcomes_ = std::move(outcomes);
      host_outcomes_ = std::move(host_outcomes);
    }
    const auto steps = static_cast<std::size_t>(path_capacity);
    if (paths_.size() < steps || host_paths_.size() < steps) {
      DeviceBuffer<WfstPathStep> paths(steps, device_);
      PinnedBuffer<WfstPathStep> host_paths(steps, Device::cpu());
      paths_ = std::move(paths);
      host_paths_ = std::move(host_paths);
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

  // Streams' device channels in `store` into their host channels (a fresh stream's left as started when its lane
  // stored nothing); returns each chunk's first frame its lane did not store. Two synchronisations for them all.
  std::vector<std::int32_t> import_channels(const DeviceChannels& store, const std::vector<const WfstChunk*>& chunks,
                                            cudaStream_t stream) {
    const std::size_t n = chunks.size();
    if (n == 0) return {};
    const auto base = [&](std::size_t i) {
      return store.memory.data() + static_cast<std::int64_t>(chunks[i]->slot) * channel_layout_.bytes;
    };
    std::vector<WfstChannelScalars> scalars(n);
    for (std::size_t i = 0; i < n; ++i) {
      ASRDEC_CUDA_CHECK(cudaMemcpyAsync(&scalars[i], base(i) + channel_layout_.scalars, sizeof(WfstChannelScalars),
                                        cudaMemcpyDeviceToHost, stream));
    }
    ASRDEC_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<std::vector<WfstArenaEntry>> entries(n);
    std::vector<std::vector<std::int32_t>> active(n);
    for (std::size_t i = 0; i < n; ++i) {
      const WfstChannelScalars& s = scalars[i];
      ASRDEC_EXPECTS(s.used >= 0 && s.used <= channel_layout_.history && s.active_count >= 0 &&
                         s.active_count <= channel_layout_.capacity,
                     Error, "WFST decoding on CUDA: a channel holds ", s.used, " entries and ", s.active_count,
                     " active tokens (internal error)");
      if (s.used == 0) continue;
      entries[i].resize(static_cast<std::size_t>(s.used));
      active[i].resize(static_cast<std::size_t>(s.active_count));
      ASRDEC_CUDA_CHECK(cudaMemcpyAsync(entries[i].data(), base(i) + channel_layout_.entries,
                                        entries[i].size() * sizeof(WfstArenaEntry), cudaMemcpyDeviceToHost, stream));
      if (!active[i].empty()) {
        ASRDEC_CUDA_CHECK(cudaMemcpyAsync(active[i].data(), base(i) + channel_layout_.active, active[i].size() * 4,
                                          cudaMemcpyDeviceToHost, stream));
      }
    }
    ASRDEC_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<std::int32_t> first(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const WfstChunk& c = *chunks[i];
      const WfstChannelScalars& s = scalars[i];
      if (s.used == 0) {
        ASRDEC_EXPECTS(c.fresh, Error,
                       "WFST decoding on CUDA: a stream's channel is empty after its first chunk (internal error)");
        continue;
      }
      *c.channel =
          wfst_channel_from_lane(graph_, entries[i].data(), s, active[i].data(), std::move(c.channel->boost_by_word));
      first[i] = static_cast<std::int32_t>(s.frames - c.offset);
    }
    return first;
  }

  // The chunk rows `queue` on the device, their channels by slot in `store` (which holds their slots): their outcomes
  // into host_outcomes_ (by row) and paths into host_paths_.
  void launch_chunks(const CtcInput& p, const std::vector<WfstChunk>& chunks, const std::vector<std::int32_t>& queue,
                     DeviceChannels& store, std::int64_t path_capacity, cudaStream_t stream) {
    const auto batch = static_cast<std::size_t>(p.batch);
    ensure_row_lanes(static_cast<std::int64_t>(queue.size()), p.batch, path_capacity, stream);
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
    c.channels = store.memory.data();
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

  // Channels in `store` for slots [0, slots) (grown geometrically up to `most`, never shrunk; with `keep`, the
  // channels there are copied — a fresh channel needs no initial contents).
  void ensure_channels(DeviceChannels& store, std::int64_t slots, std::int64_t most, cudaStream_t stream,
                       bool keep = true) {
    if (slots <= store.slots) return;
    const std::int64_t count = std::max(slots, std::min(2 * store.slots, most));
    if (!keep) store = DeviceChannels{};  // the old channels go first: both may not fit
    DeviceBuffer<unsigned char> grown(static_cast<std::size_t>(count * channel_layout_.bytes), device_);
    if (store.slots > 0) {
      copy_bytes_async(grown.data(), device_, store.memory.data(), device_,
                       static_cast<std::size_t>(store.slots * channel_layout_.bytes), stream);
      ASRDEC_CUDA_CHECK(cudaStreamSynchronize(stream));
    }
    store.memory = std::move(grown);
    store.slots = count;
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
    a.graph = WfstLaneGraph{emitting_begin_.data(), epsilon_begin_.data(), ilabel_.data(), olabel_.data(),
                            weight_.data(),         next_state_.data(),    g.num_states,   g.start,
                            arc_source_.data(),     max_emitting_degree_};
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

  const WfstGraph& graph_;
  WfstDecoderConfig config_;
  Device device_;
  ExecutorLifecycle lifecycle_;
  DeviceBuffer<unsigned long long> bad_value_;
  DeviceBuffer<std::int32_t> lengths_;
  DeviceBuffer<std::int64_t> emitting_begin_, epsilon_begin_;
  DeviceBuffer<std::int32_t> ilabel_, olabel_, next_state_;
  DeviceBuffer<float> weight_;
  DeviceBuffer<float> final_weight_;
  DeviceBuffer<std::int32_t> arc_source_;  // [arcs] the state each arc leaves (WfstLaneGraph::arc_source)
  std::int64_t max_emitting_degree_ = 0;   // WfstLaneGraph::max_emitting_degree
  // The lanes and per-call buffers; a searcher for the rows no lane could hold.
  DeviceBuffer<unsigned long long> queue_;  // [0]: the next row (int32), [1]: path steps used
  WfstSearcher fallback_;
  WfstLaneLayout row_layout_;
  DeviceBuffer<unsigned char> row_lanes_;
  std::int64_t row_lane_count_ = 0;
  bool rows_clean_ = true;
  std::int64_t host_rows_ = 0;
  std::int32_t resident_lanes_ = 1;
  PinnedBuffer<unsigned long long> host_queue_{2, Device::cpu()};
  PinnedBuffer<unsigned long long> host_bad_{1, Device::cpu()};  // enqueue_value_check's verdict
  // decode_chunks(): the streams' channels by slot, and which streams continue on the host; decode_into(): the
  // channels of the rows decoded at once.
  WfstChannelLayout channel_layout_;
  DeviceChannels streams_;
  DeviceChannels nbest_;
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
};

}  // namespace

std::unique_ptr<WfstBackend> make_wfst_cuda(const WfstGraph& graph, const WfstDecoderConfig& config, Device device) {
  return std::make_unique<WfstCuda>(graph, config, device);
}

}  // namespace asrdec::detail

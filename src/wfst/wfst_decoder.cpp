// WfstDecoder: validation of configs, inputs and stream chunks, and the CPU executor (rows spread over a thread pool,
// a WfstSearcher per thread).

#include "asrdec/wfst/wfst_decoder.hpp"

#include <cmath>

#include "asrdec/core/batch_limits.hpp"
#include "asrdec/core/error.hpp"
#include "core/ctc_input.hpp"
#include "core/exclusive_use.hpp"
#include "core/thread_pool.hpp"
#include "core/utterance_channels.hpp"
#include "wfst/wfst_backend.hpp"
#include "wfst/wfst_channel.hpp"

namespace asrdec {

using detail::concat;

void WfstDecoderConfig::validate() const {
  ASRDEC_CHECK_ARG(std::isfinite(beam) && beam > 0.0f, "WfstDecoderConfig.beam must be positive and finite, got ",
                   beam);
  ASRDEC_CHECK_ARG(max_active >= 1, "WfstDecoderConfig.max_active must be at least 1, got ", max_active);
  ASRDEC_CHECK_ARG(min_active >= 0 && min_active <= max_active,
                   "WfstDecoderConfig.min_active must be in [0, max_active = ", max_active, "], got ", min_active);
  ASRDEC_CHECK_ARG(max_tokens_per_frame >= 1, "WfstDecoderConfig.max_tokens_per_frame must be at least 1, got ",
                   max_tokens_per_frame);
  ASRDEC_CHECK_ARG(std::isfinite(acoustic_scale) && acoustic_scale >= 0.0f,
                   "WfstDecoderConfig.acoustic_scale must be finite and not negative, got ", acoustic_scale);
  ASRDEC_CHECK_ARG(blank_id >= -1, "WfstDecoderConfig.blank_id must be -1 (last column) or a column, got ", blank_id);
  ASRDEC_CHECK_ARG(max_device_bytes >= 1, "WfstDecoderConfig.max_device_bytes must be at least 1, got ",
                   max_device_bytes);
  ASRDEC_CHECK_ARG(device_frame_tokens >= 0 && device_frame_tokens <= (std::int64_t{1} << 24),
                   "WfstDecoderConfig.device_frame_tokens must be in [0, 2^24] (0: the default), got ",
                   device_frame_tokens);
  ASRDEC_CHECK_ARG(
      device_history_tokens == 0 || (device_history_tokens >= 16 && device_history_tokens <= (std::int64_t{1} << 28)),
      "WfstDecoderConfig.device_history_tokens must be 0 (the default) or in [16, 2^28], got ", device_history_tokens);
  ASRDEC_CHECK_ARG(device_fast_tokens == 0 || (device_fast_tokens >= 2 && device_fast_tokens <= 512 &&
                                               (device_fast_tokens & (device_fast_tokens - 1)) == 0),
                   "WfstDecoderConfig.device_fast_tokens must be 0 or a power of two in [2, 512], got ",
                   device_fast_tokens);
  ASRDEC_CHECK_ARG(threads >= 0 && threads <= 1024,
                   "WfstDecoderConfig.threads must be in [0, 1024] (0: every core), got ", threads);
  ASRDEC_CHECK_ARG(max_open_utterances >= 1 && max_open_utterances <= BatchLimits::kMaxBatch,
                   "WfstDecoderConfig.max_open_utterances must be in [1, ", BatchLimits::kMaxBatch, "], got ",
                   max_open_utterances);
  for (const std::int32_t column : word_start_columns) {
    ASRDEC_CHECK_ARG(column >= 0, "WfstDecoderConfig.word_start_columns holds ", column, ", not a column");
  }
}

std::string WfstDecoderConfig::to_string() const {
  return concat("WfstDecoderConfig{beam=", beam, ", max_active=", max_active,
                min_active > 0 ? concat(", min_active=", min_active) : std::string(),
                ", max_tokens_per_frame=", max_tokens_per_frame, ", acoustic_scale=", acoustic_scale,
                ", use_final_probs=", use_final_probs ? "true" : "false", ", blank_id=", blank_id,
                ", check_values=", check_values ? "true" : "false", ", graph_mode=", asrdec::to_string(graph_mode),
                ", max_device_bytes=", max_device_bytes,
                device_frame_tokens > 0 ? concat(", device_frame_tokens=", device_frame_tokens) : std::string(),
                device_history_tokens > 0 ? concat(", device_history_tokens=", device_history_tokens) : std::string(),
                device_fast_tokens != 512 ? concat(", device_fast_tokens=", device_fast_tokens) : std::string(),
                ", threads=", threads, ", max_open_utterances=", max_open_utterances, "}");
}

// The CPU executor's parallel loops: functions of this file, not members, so that the closures they hand the thread
// pool are not types of the exported decoder's (the shared library would export their type information).
namespace {
void check_rows(WfstDecoder::Impl& self, const detail::CtcInput& p);
// The n best of a finished channel; n == 1 is decode()'s single result (kept when no path survived).
std::vector<WfstResult> best_of(const detail::WfstSearcher& searcher, const detail::WfstChannel& channel,
                                std::int32_t blank_label, std::int64_t n) {
  std::vector<WfstResult> list;
  if (n > 1) list = searcher.nbest(channel, blank_label, n);
  if (list.empty()) list.push_back(searcher.result(channel, true, blank_label));  // n == 1, or no path survived
  return list;
}

void advance_rows(WfstDecoder::Impl& self, const detail::CtcInput& p, const std::vector<detail::WfstChannel*>& lanes);
void decode_rows(WfstDecoder::Impl& self, const detail::CtcInput& p, const std::vector<WordBoosts>& boosts,
                 std::int64_t n, std::vector<std::vector<WfstResult>>& results);
}  // namespace

struct WfstDecoder::Impl {
  WfstGraph graph;
  WfstDecoderConfig config;
  Device device;
  detail::WfstSearcher searcher;
  std::unique_ptr<detail::WfstBackend> cuda;  // the CUDA executor; null on the CPU
  detail::UtteranceChannels open{config.max_open_utterances, "WfstDecoder"};
  std::vector<detail::WfstChannel> channels;  // by slot of `open`, grown as slots are first used
  // CPU: the threads rows are spread over, and per thread a searcher (its frame scratch) and a frame as floats.
  std::unique_ptr<detail::ThreadPool> pool;
  std::vector<detail::WfstSearcher> worker_searchers;  // threads 1.. (thread 0 uses `searcher`)
  std::vector<std::vector<float>> frames;
  detail::OwnerSlot owner;

  Impl(WfstGraph g, const WfstDecoderConfig& c, Device d)
      : graph(std::move(g)), config(c), device(d), searcher(graph, config) {
    if (!d.is_cpu()) return;
    const int threads = detail::resolve_threads(config.threads);
    pool = std::make_unique<detail::ThreadPool>(threads);
    for (int w = 1; w < threads; ++w) worker_searchers.emplace_back(graph, config);
    frames.resize(static_cast<std::size_t>(threads));
  }

  detail::WfstSearcher& searcher_of(int worker) {
    return worker == 0 ? searcher : worker_searchers[static_cast<std::size_t>(worker - 1)];
  }

  detail::CtcInput problem(const TensorView& logprobs, const TensorView& lengths) const {
    detail::CtcInput p = detail::make_ctc_input(logprobs, lengths, device, config.blank_id);
    ASRDEC_CHECK_ARG(p.lengths_on_host, "lengths: WFST decoding needs them in host memory, got ",
                     lengths.device().to_string());
    ASRDEC_CHECK_ARG(graph.max_input_label() <= p.columns, "the graph's input label ", graph.max_input_label(),
                     " scores model column ", graph.max_input_label() - 1, ", but logprobs have ", p.columns,
                     " columns (", graph.source(), ")");
    for (const std::int32_t column : config.word_start_columns) {
      ASRDEC_CHECK_ARG(column < p.columns, "WfstDecoderConfig.word_start_columns holds column ", column,
                       ", but logprobs have ", p.columns, " columns (a token table of another model?)");
    }
    return p;
  }

  // Rejects NaN and +inf in the frames that are read.
  void check_values(const detail::CtcInput& p, StreamHandle stream) {
    if (cuda) {
      cuda->check_values(p, stream);
      return;
    }
    check_rows(*this, p);
  }

  // Frames [0, length) of row b, through the channel, on thread `worker`; `check`: reject NaN and +inf (unless
  // already checked).
  void run(detail::WfstChannel& channel, const detail::CtcInput& p, std::int64_t b, bool check, int worker) {
    std::vector<float>& frame = frames[static_cast<std::size_t>(worker)];
    detail::WfstSearcher& mine = searcher_of(worker);
    frame.resize(static_cast<std::size_t>(p.columns));
    const std::int32_t length = p.host_lengths[static_cast<std::size_t>(b)];
    for (std::int32_t t = 0; t < length; ++t) {
      detail::read_ctc_frame(p, b, t, check, frame.data());
      mine.advance(channel, frame.data());
    }
  }
};

namespace {

// Rejects NaN and +inf in the frames that are read, rows in parallel; the exception of the lowest bad row is the one
// thrown, as by a plain loop.
void check_rows(WfstDecoder::Impl& self, const detail::CtcInput& p) {
  self.pool->parallel_for(p.batch, [&](std::int64_t b, int worker) {
    std::vector<float>& frame = self.frames[static_cast<std::size_t>(worker)];
    frame.resize(static_cast<std::size_t>(p.columns));
    for (std::int32_t t = 0; t < p.host_lengths[static_cast<std::size_t>(b)]; ++t) {
      detail::read_ctc_frame(p, b, t, true, frame.data());
    }
  });
}

void advance_rows(WfstDecoder::Impl& self, const detail::CtcInput& p, const std::vector<detail::WfstChannel*>& lanes) {
  self.pool->parallel_for(static_cast<std::int64_t>(lanes.size()), [&](std::int64_t b, int worker) {
    self.run(*lanes[static_cast<std::size_t>(b)], p, b, false, worker);
  });
}

// Whole utterances, each through a channel of its own on one of the pool's threads (checking values as it reads
// them); a bad row throws what a plain loop over the rows would have thrown first. `n` best per row.
void decode_rows(WfstDecoder::Impl& self, const detail::CtcInput& p, const std::vector<WordBoosts>& boosts,
                 std::int64_t n, std::vector<std::vector<WfstResult>>& results) {
  const WordBoosts none;
  self.pool->parallel_for(p.batch, [&](std::int64_t b, int worker) {
    detail::WfstSearcher& searcher = self.searcher_of(worker);
    detail::WfstChannel channel;
    searcher.start(channel, boosts.empty() ? none : boosts[static_cast<std::size_t>(b)]);
    self.run(channel, p, b, self.config.check_values, worker);
    results[static_cast<std::size_t>(b)] = best_of(searcher, channel, p.blank + 1, n);
  });
}

}  // namespace

WfstDecoder::WfstDecoder(WfstGraph graph, WfstDecoderConfig config, Device device) {
  config.validate();
  ASRDEC_EXPECTS(device.is_cpu() || ASRDEC_WITH_CUDA, Unsupported, "WFST decoding on ", device.to_string(),
                 " needs a build with CUDA");
  impl_ = std::make_unique<Impl>(std::move(graph), config, device);
#if ASRDEC_WITH_CUDA
  if (!device.is_cpu()) impl_->cuda = detail::make_wfst_cuda(impl_->graph, impl_->config, device);
#endif
}

WfstDecoder::~WfstDecoder() = default;
WfstDecoder::WfstDecoder(WfstDecoder&&) noexcept = default;
WfstDecoder& WfstDecoder::operator=(WfstDecoder&&) noexcept = default;

std::vector<WfstResult> WfstDecoder::decode(const TensorView& logprobs, const TensorView& lengths,
                                            const std::vector<WordBoosts>& boosts, StreamHandle stream) {
  std::vector<std::vector<WfstResult>> lists = decode_nbest(logprobs, lengths, 1, boosts, stream);
  std::vector<WfstResult> results;
  results.reserve(lists.size());
  for (auto& list : lists) results.push_back(std::move(list.front()));
  return results;
}

std::vector<std::vector<WfstResult>> WfstDecoder::decode_nbest(const TensorView& logprobs, const TensorView& lengths,
                                                               std::int64_t n, const std::vector<WordBoosts>& boosts,
                                                               StreamHandle stream) {
  Impl& self = detail::live(impl_, "WfstDecoder");
  const detail::ExclusiveCall call(self.owner, "WfstDecoder::decode");
  ASRDEC_CHECK_ARG(n >= 1, "WfstDecoder::decode_nbest: n must be at least 1, got ", n);
  const detail::CtcInput p = self.problem(logprobs, lengths);
  ASRDEC_CHECK_ARG(boosts.empty() || static_cast<std::int64_t>(boosts.size()) == p.batch,
                   "word boosting: expected one list per utterance (", p.batch, "), got ", boosts.size());
  std::vector<std::vector<WfstResult>> results;
  results.reserve(static_cast<std::size_t>(p.batch));
  const WordBoosts none;
  if (self.cuda && n == 1) {  // whole utterances on the device, only paths back; values checked there too
    std::vector<std::vector<float>> boost_rows(static_cast<std::size_t>(p.batch));
    for (std::size_t b = 0; b < boosts.size(); ++b) boost_rows[b] = self.searcher.boost_row(boosts[b]);
    for (WfstResult& r : self.cuda->decode(p, boost_rows, self.config.check_values, stream)) {
      results.push_back({std::move(r)});
    }
    return results;
  }
  if (self.cuda) {
    if (self.config.check_values) self.check_values(p, stream);
    std::vector<detail::WfstChannel> channels(static_cast<std::size_t>(p.batch));
    std::vector<detail::WfstChannel*> rows;
    for (std::size_t b = 0; b < channels.size(); ++b) {
      self.searcher.start(channels[b], boosts.empty() ? none : boosts[b]);
      rows.push_back(&channels[b]);
    }
    self.cuda->decode_into(p, rows, stream);  // on the device, then ranked on the host
    for (const detail::WfstChannel& channel : channels)
      results.push_back(best_of(self.searcher, channel, p.blank + 1, n));
    return results;
  }
  results.resize(static_cast<std::size_t>(p.batch));
  decode_rows(self, p, boosts, n, results);
  return results;
}

std::vector<WfstResult> WfstDecoder::decode_chunks(const std::vector<ChunkRow>& rows, const TensorView& logprobs,
                                                   const TensorView& lengths, const std::vector<WordBoosts>& boosts,
                                                   StreamHandle stream) {
  Impl& self = detail::live(impl_, "WfstDecoder");
  const detail::ExclusiveCall call(self.owner, "WfstDecoder::decode_chunks");
  const detail::CtcInput p = self.problem(logprobs, lengths);
  ASRDEC_CHECK_ARG(static_cast<std::int64_t>(rows.size()) == p.batch, "WfstDecoder::decode_chunks: ", rows.size(),
                   " rows for a batch of ", p.batch);
  ASRDEC_CHECK_ARG(boosts.empty() || static_cast<std::int64_t>(boosts.size()) == p.batch,
                   "word boosting: expected one list per row (", p.batch, "), got ", boosts.size());
  const detail::ChunkPlan plan = self.open.plan(rows, p.host_lengths);
  // Everything that can be rejected is checked before any utterance changes, so a failed call leaves them as they
  // were: the frames' values, and the boosts of first chunks (their new channels are built aside).
  if (self.config.check_values) self.check_values(p, stream);
  const WordBoosts none;
  std::vector<detail::WfstChannel> started(rows.size());
  for (std::size_t b = 0; b < rows.size(); ++b) {
    if (plan.fresh[b]) self.searcher.start(started[b], boosts.empty() ? none : boosts[b]);
  }
  for (const std::int32_t slot : plan.slot) {
    if (static_cast<std::size_t>(slot) >= self.channels.size())
      self.channels.resize(static_cast<std::size_t>(slot) + 1);
  }
  // A fresh row decodes in its started channel, which replaces the slot's only once the call has succeeded: a
  // restarted utterance whose call throws keeps its old channel (the device may still hold its lane's).
  std::vector<detail::WfstChannel*> lanes;  // into `channels` (which no longer grows in this call) or `started`
  for (std::size_t b = 0; b < rows.size(); ++b) {
    lanes.push_back(plan.fresh[b] ? &started[b] : &self.channels[static_cast<std::size_t>(plan.slot[b])]);
  }
  std::vector<WfstResult> results;
  if (self.cuda) {  // the streams' channels stay on the device between calls
    std::vector<detail::WfstChunk> chunks;
    for (std::size_t b = 0; b < rows.size(); ++b) {
      chunks.push_back(detail::WfstChunk{lanes[b], plan.slot[b], plan.fresh[b] != 0, rows[b].last, plan.offset[b]});
    }
    results = self.cuda->decode_chunks(p, chunks, stream);
  } else {
    advance_rows(self, p, lanes);
    results.reserve(rows.size());
    for (std::size_t b = 0; b < rows.size(); ++b)
      results.push_back(self.searcher.result(*lanes[b], rows[b].last, p.blank + 1));
  }
  for (std::size_t b = 0; b < rows.size(); ++b) {
    detail::WfstChannel& channel = self.channels[static_cast<std::size_t>(plan.slot[b])];
    if (rows[b].last) {
      channel = detail::WfstChannel{};  // its history's memory goes back now, not on reuse
    } else if (plan.fresh[b]) {
      channel = std::move(started[b]);
    }
  }
  self.open.commit(rows, plan, p.host_lengths);
  return results;
}

bool WfstDecoder::cancel(std::int64_t utterance) {
  Impl& self = detail::live(impl_, "WfstDecoder");
  const detail::ExclusiveCall call(self.owner, "WfstDecoder::cancel");
  const std::int32_t slot = self.open.cancel(utterance);
  if (slot >= 0) self.channels[static_cast<std::size_t>(slot)] = detail::WfstChannel{};
  return slot >= 0;
}

std::int64_t WfstDecoder::open_utterances() const { return detail::live(impl_, "WfstDecoder").open.open(); }
std::int64_t WfstDecoder::lane_device_bytes() const {
  const Impl& self = detail::live(impl_, "WfstDecoder");
  return self.cuda ? self.cuda->lane_device_bytes() : 0;
}
std::int64_t WfstDecoder::device_bytes() const {
  const Impl& self = detail::live(impl_, "WfstDecoder");
  return self.cuda ? self.cuda->device_bytes() : 0;
}
std::int64_t WfstDecoder::host_fallbacks() const {
  const Impl& self = detail::live(impl_, "WfstDecoder");
  return self.cuda ? self.cuda->host_fallbacks() : 0;
}
const WfstGraph& WfstDecoder::graph() const { return detail::live(impl_, "WfstDecoder").graph; }
const WfstDecoderConfig& WfstDecoder::config() const { return detail::live(impl_, "WfstDecoder").config; }
Device WfstDecoder::device() const { return detail::live(impl_, "WfstDecoder").device; }
GraphMode WfstDecoder::graph_mode() const {
  const Impl& self = detail::live(impl_, "WfstDecoder");
  return self.cuda ? self.cuda->graph_mode() : GraphMode::eager;
}

}  // namespace asrdec

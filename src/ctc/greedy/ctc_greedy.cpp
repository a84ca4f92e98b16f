#include "asrdec/ctc/ctc_greedy.hpp"

#include <cmath>

#include "asrdec/config.hpp"
#include "asrdec/core/error.hpp"
#include "core/exclusive_use.hpp"
#include "ctc/greedy/ctc_greedy_backend.hpp"
#include "hyps/token_confidences.hpp"
#include "lm/fusion_checks.hpp"

namespace asrdec {

void CtcGreedyConfig::validate() const {
  ASRDEC_CHECK_ARG(blank_id >= -1, "CtcGreedyConfig.blank_id must be -1 (last column) or a column index, got ",
                   blank_id);
  ASRDEC_CHECK_ARG(std::isfinite(lm_weight), "CtcGreedyConfig.lm_weight must be finite, got ", lm_weight);
  ASRDEC_CHECK_ARG(std::isfinite(boost_weight), "CtcGreedyConfig.boost_weight must be finite, got ", boost_weight);
  ASRDEC_CHECK_ARG(max_device_bytes >= 0, "CtcGreedyConfig.max_device_bytes must be 0 (no cap) or positive, got ",
                   max_device_bytes);
  ASRDEC_CHECK_ARG(threads >= 0 && threads <= 1024,
                   "CtcGreedyConfig.threads must be in [0, 1024] (0: every core), got ", threads);
}

std::string CtcGreedyConfig::to_string() const {
  return detail::concat(
      "CtcGreedyConfig{blank_id=", blank_id, blank_id < 0 ? " (last)" : "",
      ", graph_mode=", asrdec::to_string(graph_mode), ", check_values=", check_values ? "true" : "false",
      lm != nullptr ? detail::concat(", lm=", lm->order(), "-gram, lm_weight=", lm_weight) : "",
      boost != nullptr ? detail::concat(", boost=", boost->num_phrases(), " phrases, boost_weight=", boost_weight) : "",
      max_device_bytes > 0 ? detail::concat(", max_device_bytes=", max_device_bytes) : "",
      threads > 0 ? detail::concat(", threads=", threads) : "", "}");
}

namespace detail {

std::vector<Hypothesis> unpack_ctc_greedy(const CtcGreedyBatchResult& result) {
  std::vector<Hypothesis> hypotheses(static_cast<std::size_t>(result.batch));
  for (std::int64_t b = 0; b < result.batch; ++b) {
    Hypothesis& hypothesis = hypotheses[static_cast<std::size_t>(b)];
    const std::int64_t begin = b * result.row_stride;
    const std::int64_t end = begin + result.lengths[b];
    hypothesis.tokens.assign(result.tokens + begin, result.tokens + end);
    hypothesis.timestamps.assign(result.timestamps + begin, result.timestamps + end);
    hypothesis.token_scores.assign(result.token_logprobs + begin, result.token_logprobs + end);
    detail::confidences_from_scores(hypothesis);
    hypothesis.am_score = result.scores[b];
    hypothesis.lm_score = result.lm_scores != nullptr ? result.lm_scores[b] : 0.0f;
    hypothesis.boost_score = result.boost_scores != nullptr ? result.boost_scores[b] : 0.0f;
    hypothesis.score = hypothesis.am_score + hypothesis.lm_score + hypothesis.boost_score;
    hypothesis.ranking_score = hypothesis.score;
  }
  return hypotheses;
}

std::vector<Hypothesis> unpack_ctc_greedy_chunks(const CtcGreedyBatchResult& result, const ChunkPlan& plan) {
  std::vector<Hypothesis> chunks = unpack_ctc_greedy(result);
  for (std::size_t b = 0; b < chunks.size(); ++b) {
    for (std::int32_t& t : chunks[b].timestamps) t += static_cast<std::int32_t>(plan.offset[b]);
  }
  return chunks;
}

}  // namespace detail

struct CtcGreedyDecoder::Impl {
  Impl(Device d, const CtcGreedyConfig& c, const BatchLimits& limits)
      : device(d),
        config(c),
        open(limits.max_open_utterances, "CtcGreedyDecoder"),
        partial(limits.max_open_utterances) {}

  Device device;
  CtcGreedyConfig config;
  std::unique_ptr<detail::CtcGreedyBackend> backend;
  detail::UtteranceChannels open;
  detail::PartialHypotheses partial;
  detail::OwnerSlot owner;
};

namespace {

// A call's input, with the fused models checked against its vocabulary.
detail::CtcInput fused_input(const TensorView& logprobs, const TensorView& lengths, Device device,
                             const CtcGreedyConfig& config) {
  detail::CtcInput problem = detail::make_ctc_input(logprobs, lengths, device, config.blank_id);
  detail::check_ctc_fusion(config.lm.get(), config.boost.get(), problem.columns);
  return problem;
}

}  // namespace

CtcGreedyDecoder::CtcGreedyDecoder(Device device, CtcGreedyConfig config, BatchLimits limits) {
  config.validate();
  limits.validate();
  impl_ = std::make_unique<Impl>(device, config, limits);
  detail::check_fusion_device(config.lm.get(), config.boost.get(), device, "CtcGreedyConfig", "decoder");
  if (device.is_cpu()) {
    impl_->backend = detail::make_ctc_greedy_cpu(config, limits);
  } else {
#if ASRDEC_WITH_CUDA
    if (!cuda_info().available) {
      throw Unsupported(cuda_info().reason);
    }
    impl_->backend = detail::make_ctc_greedy_cuda(device, config, limits);
#else
    throw Unsupported(cuda_info().reason);
#endif
  }
}

CtcGreedyDecoder::~CtcGreedyDecoder() = default;
CtcGreedyDecoder::CtcGreedyDecoder(CtcGreedyDecoder&&) noexcept = default;
CtcGreedyDecoder& CtcGreedyDecoder::operator=(CtcGreedyDecoder&&) noexcept = default;

std::vector<Hypothesis> CtcGreedyDecoder::decode(const TensorView& logprobs, const TensorView& lengths,
                                                 StreamHandle stream) {
  Impl& self = detail::live(impl_, "CtcGreedyDecoder");
  const detail::ExclusiveCall call(self.owner, "CtcGreedyDecoder::decode");
  const auto problem = fused_input(logprobs, lengths, self.device, self.config);
  if (self.config.boost != nullptr) self.config.boost->check_batch(problem.batch);
  return self.backend->decode(problem, stream);
}

CtcGreedyBatchResult CtcGreedyDecoder::decode_async(const TensorView& logprobs, const TensorView& lengths,
                                                    StreamHandle stream) {
  Impl& self = detail::live(impl_, "CtcGreedyDecoder");
  const detail::ExclusiveCall call(self.owner, "CtcGreedyDecoder::decode_async");
  const auto problem = fused_input(logprobs, lengths, self.device, self.config);
  if (self.config.boost != nullptr) self.config.boost->check_batch(problem.batch);
  return self.backend->decode_async(problem, stream);
}

void CtcGreedyDecoder::synchronize_and_check(StreamHandle stream) {
  Impl& self = detail::live(impl_, "CtcGreedyDecoder");
  const detail::ExclusiveCall call(self.owner, "CtcGreedyDecoder::synchronize_and_check");
  self.backend->synchronize_and_check(stream);
}

std::vector<Hypothesis> CtcGreedyDecoder::decode_chunks(const std::vector<ChunkRow>& rows, const TensorView& logprobs,
                                                        const TensorView& lengths, StreamHandle stream) {
  Impl& self = detail::live(impl_, "CtcGreedyDecoder");
  const detail::ExclusiveCall call(self.owner, "CtcGreedyDecoder::decode_chunks");
  const auto problem = fused_input(logprobs, lengths, self.device, self.config);
  ASRDEC_CHECK_ARG(problem.lengths_on_host, "CtcGreedyDecoder::decode_chunks: lengths must be in host memory, got ",
                   lengths.device().to_string());
  ASRDEC_CHECK_ARG(static_cast<std::int64_t>(rows.size()) == problem.batch,
                   "CtcGreedyDecoder::decode_chunks: ", rows.size(), " rows for a batch of ", problem.batch);
  const detail::ChunkPlan plan = self.open.plan(rows, problem.host_lengths);
  const std::vector<std::int32_t> roots = detail::boost_roots_of(rows, self.config.boost.get(), "CtcGreedyDecoder");
  std::vector<Hypothesis> chunks = self.backend->decode_chunks(problem, plan, roots, stream);
  self.open.commit(rows, plan, problem.host_lengths);
  return self.partial.append(rows, plan, std::move(chunks));
}

bool CtcGreedyDecoder::cancel(std::int64_t utterance) {
  Impl& self = detail::live(impl_, "CtcGreedyDecoder");
  const detail::ExclusiveCall call(self.owner, "CtcGreedyDecoder::cancel");
  const std::int32_t slot = self.open.cancel(utterance);
  if (slot >= 0) self.partial.clear(slot);
  return slot >= 0;
}

std::int64_t CtcGreedyDecoder::open_utterances() const { return detail::live(impl_, "CtcGreedyDecoder").open.open(); }

Device CtcGreedyDecoder::device() const { return detail::live(impl_, "CtcGreedyDecoder").device; }
const CtcGreedyConfig& CtcGreedyDecoder::config() const { return detail::live(impl_, "CtcGreedyDecoder").config; }
GraphMode CtcGreedyDecoder::graph_mode() const { return detail::live(impl_, "CtcGreedyDecoder").backend->graph_mode(); }
std::int64_t CtcGreedyDecoder::device_bytes() const {
  return detail::live(impl_, "CtcGreedyDecoder").backend->device_bytes();
}

}  // namespace asrdec

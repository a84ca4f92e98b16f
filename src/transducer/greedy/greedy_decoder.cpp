#include "asrdec/transducer/greedy_decoder.hpp"

#include <cmath>

#include "asrdec/core/error.hpp"
#include "core/environment_switch.hpp"
#include "core/exclusive_use.hpp"
#include "core/utterance_channels.hpp"
#include "lm/fusion_checks.hpp"
#include "transducer/greedy/greedy_backend.hpp"

namespace asrdec {

const char* to_string(TransducerGreedyAlgorithm algorithm) noexcept {
  switch (algorithm) {
    case TransducerGreedyAlgorithm::frame_looping:
      return "frame-looping";
    case TransducerGreedyAlgorithm::label_looping:
      return "label-looping";
    case TransducerGreedyAlgorithm::wind:
      return "wind";
  }
  return "unknown";
}

TransducerGreedyAlgorithm parse_greedy_algorithm(std::string_view name) {
  if (name == "frame-looping" || name == "frame_looping") return TransducerGreedyAlgorithm::frame_looping;
  if (name == "label-looping" || name == "label_looping") return TransducerGreedyAlgorithm::label_looping;
  if (name == "wind") return TransducerGreedyAlgorithm::wind;
  throw InvalidArgument(
      detail::concat("unknown greedy algorithm '", name, "': expected frame-looping, label-looping or wind"));
}

void TransducerGreedyConfig::validate() const {
  ASRDEC_CHECK_ARG(window >= 1 && window <= detail::kMaxWindow, "TransducerGreedyConfig.window must be in [1, ",
                   detail::kMaxWindow, "], got ", window);
  ASRDEC_CHECK_ARG(max_symbols_per_frame >= 1 && max_symbols_per_frame <= detail::kMaxSymbolsPerFrame,
                   "TransducerGreedyConfig.max_symbols_per_frame must be in [1, ", detail::kMaxSymbolsPerFrame,
                   "], got ", max_symbols_per_frame);
  ASRDEC_CHECK_ARG(std::isfinite(lm_weight), "TransducerGreedyConfig.lm_weight must be finite, got ", lm_weight);
  ASRDEC_CHECK_ARG(std::isfinite(boost_weight), "TransducerGreedyConfig.boost_weight must be finite, got ",
                   boost_weight);
  ASRDEC_CHECK_ARG(max_device_bytes >= 0,
                   "TransducerGreedyConfig.max_device_bytes must be 0 (no cap) or positive, got ", max_device_bytes);
  ASRDEC_CHECK_ARG(threads >= 0 && threads <= 1024,
                   "TransducerGreedyConfig.threads must be in [0, 1024] (0: every core), got ", threads);
  confidence.validate();
}

std::string TransducerGreedyConfig::to_string() const {
  return detail::concat(
      "TransducerGreedyConfig{algorithm=", asrdec::to_string(algorithm), ", window=", window,
      ", max_symbols_per_frame=", max_symbols_per_frame, ", graph_mode=", asrdec::to_string(graph_mode),
      ", check_values=", check_values ? "true" : "false",
      lm != nullptr ? detail::concat(", lm=", lm->order(), "-gram, lm_weight=", lm_weight) : "",
      boost != nullptr ? detail::concat(", boost=", boost->num_phrases(), " phrases, boost_weight=", boost_weight) : "",
      max_device_bytes > 0 ? detail::concat(", max_device_bytes=", max_device_bytes) : "",
      threads > 0 ? detail::concat(", threads=", threads) : "",
      confidence.measure != ConfidenceMeasure::probability ? ", confidence=" + confidence.to_string() : "", "}");
}

namespace detail {

GreedyRules rules_of(const TransducerModel& model, const TransducerGreedyConfig& config) {
  // ASRDEC_CUT_STRAGGLERS=0 turns the straggler cut off: a diagnostic switch and the baseline the benchmarks' /no_cut
  // cases measure it against (the results are the same either way).
  return GreedyRules{model.blank_id(), config.max_symbols_per_frame, model.type() == TransducerType::tdt,
                     environment_switch("ASRDEC_CUT_STRAGGLERS", true)};
}

}  // namespace detail

struct TransducerGreedyDecoder::Impl {
  Impl(const TransducerModel& m, const TransducerGreedyConfig& c, const BatchLimits& limits)
      : model(m),
        config(c),
        open(limits.max_open_utterances, "TransducerGreedyDecoder"),
        partial(limits.max_open_utterances) {}

  TransducerModel model;
  TransducerGreedyConfig config;
  std::unique_ptr<detail::GreedyBackend> backend;
  detail::UtteranceChannels open;
  detail::PartialHypotheses partial;
  detail::OwnerSlot owner;

  BatchedHypsView decode_async(const TensorView& enc_proj, const TensorView& lengths, StreamHandle stream) {
    const detail::TransducerInput problem = detail::make_transducer_input(model, enc_proj, lengths, stream);
    std::vector<std::int32_t> roots(static_cast<std::size_t>(problem.batch), 0);
    if (config.boost != nullptr) {
      config.boost->check_batch(problem.batch);
      for (std::int64_t b = 0; b < problem.batch; ++b) {
        roots[static_cast<std::size_t>(b)] = config.boost->root_for(b, problem.batch);
      }
    }
    return backend->decode(problem, nullptr, roots, stream);
  }
};

TransducerGreedyDecoder::TransducerGreedyDecoder(const TransducerModel& model, TransducerGreedyConfig config,
                                                 BatchLimits limits) {
  config.validate();
  limits.validate();
  impl_ = std::make_unique<Impl>(model, config, limits);
  ASRDEC_EXPECTS(!(config.algorithm == TransducerGreedyAlgorithm::wind && model.type() == TransducerType::tdt),
                 Unsupported, "WIND greedy decoding is defined for RNN-T models; this model is TDT");
  if (config.lm != nullptr || config.boost != nullptr) {
    detail::check_fusion_device(config.lm.get(), config.boost.get(), model.device(), "TransducerGreedyConfig", "model");
    detail::check_fusion_vocab(config.lm.get(), config.boost.get(), model.vocab_size(),
                               detail::concat("the model ", model.vocab_size()));
  }
  if (model.device().is_cpu()) {
    impl_->backend = detail::make_greedy_cpu(model, config, limits);
  } else {
#if ASRDEC_WITH_CUDA
    impl_->backend = detail::make_greedy_cuda(model, config, limits);
#else
    throw Unsupported(cuda_info().reason);
#endif
  }
}

TransducerGreedyDecoder::~TransducerGreedyDecoder() = default;
TransducerGreedyDecoder::TransducerGreedyDecoder(TransducerGreedyDecoder&&) noexcept = default;
TransducerGreedyDecoder& TransducerGreedyDecoder::operator=(TransducerGreedyDecoder&&) noexcept = default;

BatchedHypsView TransducerGreedyDecoder::decode_async(const TensorView& enc_proj, const TensorView& lengths,
                                                      StreamHandle stream) {
  Impl& self = detail::live(impl_, "TransducerGreedyDecoder");
  const detail::ExclusiveCall call(self.owner, "TransducerGreedyDecoder::decode_async");
  return self.decode_async(enc_proj, lengths, stream);
}

std::vector<Hypothesis> TransducerGreedyDecoder::decode(const TensorView& enc_proj, const TensorView& lengths,
                                                        StreamHandle stream) {
  Impl& self = detail::live(impl_, "TransducerGreedyDecoder");
  const detail::ExclusiveCall call(self.owner, "TransducerGreedyDecoder::decode");
  const BatchedHypsView view = self.decode_async(enc_proj, lengths, stream);
  return self.backend->collect(view, std::vector<std::int64_t>(static_cast<std::size_t>(view.batch), 0), true, stream);
}

void TransducerGreedyDecoder::synchronize_and_check(StreamHandle stream) {
  Impl& self = detail::live(impl_, "TransducerGreedyDecoder");
  const detail::ExclusiveCall call(self.owner, "TransducerGreedyDecoder::synchronize_and_check");
  self.backend->synchronize_and_check(stream);
}

std::vector<Hypothesis> TransducerGreedyDecoder::decode_chunks(const std::vector<ChunkRow>& rows,
                                                               const TensorView& enc_proj, const TensorView& lengths,
                                                               StreamHandle stream) {
  Impl& self = detail::live(impl_, "TransducerGreedyDecoder");
  const detail::ExclusiveCall call(self.owner, "TransducerGreedyDecoder::decode_chunks");
  const detail::TransducerInput problem = detail::make_transducer_input(self.model, enc_proj, lengths, stream);
  ASRDEC_CHECK_ARG(static_cast<std::int64_t>(rows.size()) == problem.batch,
                   "TransducerGreedyDecoder::decode_chunks: ", rows.size(), " rows for a batch of ", problem.batch);
  const detail::ChunkPlan plan = self.open.plan(rows, problem.lengths);
  const std::vector<std::int32_t> roots =
      detail::boost_roots_of(rows, self.config.boost.get(), "TransducerGreedyDecoder");
  // The executor keeps the rows' new states only when the chunk decodes without error (bad values included), so a
  // call that throws changes no utterance.
  const BatchedHypsView view = self.backend->decode(problem, &plan, roots, stream);
  std::vector<Hypothesis> chunks = self.backend->collect(view, plan.offset, false, stream);
  self.open.commit(rows, plan, problem.lengths);
  return self.partial.append(rows, plan, std::move(chunks));
}

bool TransducerGreedyDecoder::cancel(std::int64_t utterance) {
  Impl& self = detail::live(impl_, "TransducerGreedyDecoder");
  const detail::ExclusiveCall call(self.owner, "TransducerGreedyDecoder::cancel");
  const std::int32_t slot = self.open.cancel(utterance);
  if (slot >= 0) self.partial.clear(slot);
  return slot >= 0;
}

std::int64_t TransducerGreedyDecoder::open_utterances() const {
  return detail::live(impl_, "TransducerGreedyDecoder").open.open();
}

const TransducerModel& TransducerGreedyDecoder::model() const {
  return detail::live(impl_, "TransducerGreedyDecoder").model;
}
const TransducerGreedyConfig& TransducerGreedyDecoder::config() const {
  return detail::live(impl_, "TransducerGreedyDecoder").config;
}
Device TransducerGreedyDecoder::device() const { return model().device(); }
GraphMode TransducerGreedyDecoder::graph_mode() const {
  return detail::live(impl_, "TransducerGreedyDecoder").backend->graph_mode();
}

std::int64_t TransducerGreedyDecoder::device_bytes() const {
  return detail::live(impl_, "TransducerGreedyDecoder").backend->device_bytes();
}

GreedyLoopCounts TransducerGreedyDecoder::loop_counts() const {
  return detail::live(impl_, "TransducerGreedyDecoder").backend->loop_counts();
}

}  // namespace asrdec

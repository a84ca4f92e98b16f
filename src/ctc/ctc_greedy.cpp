#include "asrdec/ctc/ctc_greedy.hpp"

#include <cmath>

#include "asrdec/config.hpp"
#include "asrdec/core/error.hpp"
#include "asrdec/detail/ctc_greedy_step.hpp"
#include "core/exclusive_use.hpp"
#include "ctc/ctc_greedy_backend.hpp"
#include "lm/fusion_checks.hpp"

namespace asrdec {

void CtcGreedyConfig::validate() const {
  ASRDEC_CHECK_ARG(blank_id >= -1, "CtcGreedyConfig.blank_id must be -1 (last column) or a column index, got ",
                   blank_id);
  ASRDEC_CHECK_ARG(std::isfinite(lm_weight), "CtcGreedyConfig.lm_weight must be finite, got ", lm_weight);
  ASRDEC_CHECK_ARG(std::isfinite(boost_weight), "CtcGreedyConfig.boost_weight must be finite, got ", boost_weight);
}

std::string CtcGreedyConfig::to_string() const {
  return detail::concat(
      "CtcGreedyConfig{blank_id=", blank_id, blank_id < 0 ? " (last)" : "",
      ", graph_mode=", asrdec::to_string(graph_mode), ", check_values=", check_values ? "true" : "false",
      lm != nullptr ? detail::concat(", lm=", lm->order(), "-gram, lm_weight=", lm_weight) : "",
      boost != nullptr ? detail::concat(", boost=", boost->num_phrases(), " phrases, boost_weight=", boost_weight) : "",
      "}");
}

namespace detail {

CtcGreedyProblem make_ctc_greedy_problem(const TensorView& logprobs, const TensorView& lengths, Device device,
                                         const CtcGreedyConfig& config) {
  TensorCheck(logprobs, "logprobs")
      .ndim(3, "[B, T, V+1]")
      .dtype_one_of({DType::f32, DType::f16, DType::bf16})
      .device(device)
      .not_null()
      .non_negative_strides();
  CtcGreedyProblem problem;
  problem.logprobs = logprobs;
  problem.lengths = lengths;
  problem.batch = logprobs.size(0);
  problem.frames = logprobs.size(1);
  problem.columns = logprobs.size(2);
  ASRDEC_CHECK_ARG(problem.columns >= 1,
                   "logprobs: the last dimension (V+1 columns) must hold at least the blank, got ",
                   logprobs.shape_string());
  for (int d = 0; d < 3; ++d) {
    ASRDEC_CHECK_ARG(logprobs.size(d) < kBadValueFieldLimit, "logprobs: dimension ", d, " is ", logprobs.size(d),
                     "; at most ", kBadValueFieldLimit - 1, " per call");
  }
  problem.blank = config.blank_id < 0 ? static_cast<std::int32_t>(problem.columns - 1) : config.blank_id;
  ASRDEC_CHECK_ARG(problem.blank < problem.columns, "blank_id ", config.blank_id, " is out of range for logprobs with ",
                   problem.columns, " columns (valid: 0..", problem.columns - 1, ", or -1 for the last)");
  if (config.lm != nullptr || config.boost != nullptr) {
    check_fusion_vocab(config.lm.get(), config.boost.get(), problem.columns - 1,
                       concat("logprobs has ", problem.columns, " columns (V + 1 expected)"));
    ASRDEC_CHECK_ARG(problem.blank == problem.columns - 1,
                     "LM fusion and boosting need blank in the last column (token ids index the LM); blank_id is ",
                     problem.blank, " of ", problem.columns, " columns");
    if (config.boost != nullptr) config.boost->check_batch(problem.batch);
  }

  TensorCheck(lengths, "lengths")
      .ndim(1, "[B]")
      .dtype_one_of({DType::i32, DType::i64})
      .dim(0, problem.batch, "the batch size B of logprobs")
      .not_null()
      .non_negative_strides();
  problem.lengths_on_host = lengths.device().is_cpu();
  ASRDEC_CHECK_ARG(problem.lengths_on_host || lengths.device() == device, "lengths: expected data on cpu or ",
                   device.to_string(), ", got ", lengths.device().to_string());
  if (problem.lengths_on_host) {
    problem.host_lengths.resize(static_cast<std::size_t>(problem.batch));
    const std::int64_t stride = problem.batch > 0 ? lengths.stride(0) : 1;
    for (std::int64_t b = 0; b < problem.batch; ++b) {
      const std::int64_t length = lengths.dtype() == DType::i32
                                      ? static_cast<const std::int32_t*>(lengths.data())[b * stride]
                                      : static_cast<const std::int64_t*>(lengths.data())[b * stride];
      ASRDEC_CHECK_ARG(length_in_range(length, problem.frames), "lengths[", b, "] = ", length, " is outside [0, ",
                       problem.frames, "] (T, the frames of logprobs)");
      problem.host_lengths[static_cast<std::size_t>(b)] = static_cast<std::int32_t>(length);
    }
  }
  return problem;
}

std::vector<Hypothesis> unpack_ctc_greedy(const CtcGreedyBatchResult& result) {
  std::vector<Hypothesis> hypotheses(static_cast<std::size_t>(result.batch));
  for (std::int64_t b = 0; b < result.batch; ++b) {
    Hypothesis& hypothesis = hypotheses[static_cast<std::size_t>(b)];
    const std::int64_t begin = b * result.row_stride;
    const std::int64_t end = begin + result.lengths[b];
    hypothesis.tokens.assign(result.tokens + begin, result.tokens + end);
    hypothesis.timestamps.assign(result.timestamps + begin, result.timestamps + end);
    hypothesis.token_scores.assign(result.token_logprobs + begin, result.token_logprobs + end);
    hypothesis.am_score = result.scores[b];
    hypothesis.lm_score = result.lm_scores != nullptr ? result.lm_scores[b] : 0.0f;
    hypothesis.boost_score = result.boost_scores != nullptr ? result.boost_scores[b] : 0.0f;
    hypothesis.score = hypothesis.am_score + hypothesis.lm_score + hypothesis.boost_score;
  }
  return hypotheses;
}

}  // namespace detail

struct CtcGreedyDecoder::Impl {
  Device device;
  CtcGreedyConfig config;
  std::unique_ptr<detail::CtcGreedyBackend> backend;
  detail::OwnerSlot owner;
};

CtcGreedyDecoder::CtcGreedyDecoder(Device device, CtcGreedyConfig config, BatchLimits limits)
    : impl_(std::make_unique<Impl>()) {
  config.validate();
  limits.validate();
  impl_->device = device;
  impl_->config = config;
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
  const auto problem = detail::make_ctc_greedy_problem(logprobs, lengths, self.device, self.config);
  return self.backend->decode(problem, stream);
}

CtcGreedyBatchResult CtcGreedyDecoder::decode_async(const TensorView& logprobs, const TensorView& lengths,
                                                    StreamHandle stream) {
  Impl& self = detail::live(impl_, "CtcGreedyDecoder");
  const detail::ExclusiveCall call(self.owner, "CtcGreedyDecoder::decode_async");
  const auto problem = detail::make_ctc_greedy_problem(logprobs, lengths, self.device, self.config);
  return self.backend->decode_async(problem, stream);
}

void CtcGreedyDecoder::synchronize_and_check(StreamHandle stream) {
  Impl& self = detail::live(impl_, "CtcGreedyDecoder");
  const detail::ExclusiveCall call(self.owner, "CtcGreedyDecoder::synchronize_and_check");
  self.backend->synchronize_and_check(stream);
}

Device CtcGreedyDecoder::device() const { return detail::live(impl_, "CtcGreedyDecoder").device; }
const CtcGreedyConfig& CtcGreedyDecoder::config() const { return detail::live(impl_, "CtcGreedyDecoder").config; }
GraphMode CtcGreedyDecoder::graph_mode() const { return detail::live(impl_, "CtcGreedyDecoder").backend->graph_mode(); }

}  // namespace asrdec

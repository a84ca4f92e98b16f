#include "ctc/ctc_beam_input.hpp"

#include "asrdec/core/error.hpp"
#include "asrdec/detail/ctc_greedy_step.hpp"
#include "asrdec/detail/float16.hpp"

namespace asrdec::detail {

CtcGreedyProblem make_ctc_beam_problem(const TensorView& logprobs, const TensorView& lengths,
                                       const CtcBeamConfig& config, Device device) {
  // The same input and fusion rules as greedy decoding.
  CtcGreedyConfig rules;
  rules.blank_id = config.blank_id;
  rules.lm = config.lm;
  rules.boost = config.boost;
  CtcGreedyProblem problem = make_ctc_greedy_problem(logprobs, lengths, device, rules);
  ASRDEC_CHECK_ARG(problem.lengths_on_host, "lengths: CTC beam search needs them in host memory, got ",
                   lengths.device().to_string());
  return problem;
}

void read_frame(const CtcGreedyProblem& p, std::int64_t b, std::int32_t t, bool check_values, float* out) {
  const std::int64_t base = b * p.logprobs.stride(0) + t * p.logprobs.stride(1);
  const std::int64_t stride = p.logprobs.stride(2);
  for (std::int64_t v = 0; v < p.columns; ++v) {
    const std::int64_t at = base + v * stride;
    float x;
    switch (p.logprobs.dtype()) {
      case DType::f16:
        x = to_float(static_cast<const half_t*>(p.logprobs.data())[at]);
        break;
      case DType::bf16:
        x = to_float(static_cast<const bfloat16_t*>(p.logprobs.data())[at]);
        break;
      default:
        x = static_cast<const float*>(p.logprobs.data())[at];
    }
    if (check_values && is_invalid_logprob(x)) {
      throw InvalidArgument(concat("logprobs[", b, ", ", t, ", ", v, "] is ", x != x ? "NaN" : "+inf",
                                   "; log-probabilities must be finite or -inf"));
    }
    out[v] = x;
  }
}

}  // namespace asrdec::detail

#include "core/ctc_input.hpp"

#include "asrdec/core/error.hpp"
#include "asrdec/detail/float16.hpp"
#include "core/bad_value.hpp"

namespace asrdec::detail {

CtcInput make_ctc_input(const TensorView& logprobs, const TensorView& lengths, Device device, std::int32_t blank_id) {
  TensorCheck(logprobs, "logprobs")
      .ndim(3, "[B, T, V+1]")
      .dtype_one_of({DType::f32, DType::f16, DType::bf16})
      .device(device)
      .not_null()
      .non_negative_strides();
  CtcInput problem;
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
  problem.blank = blank_id < 0 ? static_cast<std::int32_t>(problem.columns - 1) : blank_id;
  ASRDEC_CHECK_ARG(problem.blank < problem.columns, "blank_id ", blank_id, " is out of range for logprobs with ",
                   problem.columns, " columns (valid: 0..", problem.columns - 1, ", or -1 for the last)");
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

void read_ctc_frame(const CtcInput& p, std::int64_t b, std::int32_t t, bool check_values, float* out) {
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

#include "transducer/joint_cpu.hpp"

#include "asrdec/detail/activation.hpp"
#include "asrdec/detail/float16.hpp"
#include "asrdec/detail/logsumexp.hpp"
#include "transducer/weights.hpp"

namespace asrdec::detail {
namespace {

float read(const EncodedView& enc, std::int64_t offset) {
  switch (enc.dtype) {
    case DType::f16:
      return to_float(static_cast<const half_t*>(enc.data)[offset]);
    case DType::bf16:
      return to_float(static_cast<const bfloat16_t*>(enc.data)[offset]);
    default:
      return static_cast<const float*>(enc.data)[offset];
  }
}

}  // namespace

JointCpu::JointCpu(const TransducerJoint::Impl& joint, std::int64_t token_columns,
                   const std::vector<std::int32_t>& durations)
    : joint_(joint),
      token_columns_(token_columns),
      durations_(durations),
      hidden_(static_cast<std::size_t>(joint.hidden)) {}

JointChoice JointCpu::evaluate(const EncodedView& enc, std::int64_t b, std::int32_t frame, const float* dec,
                               bool check_values) {
  const std::int64_t J = joint_.hidden;
  const std::int64_t base = b * enc.stride_b + frame * enc.stride_t;
  for (std::int64_t j = 0; j < J; ++j) {
    const float x = read(enc, base + j * enc.stride_j);
    if (check_values && !is_finite_value(x)) {
      throw InvalidArgument(concat("enc_proj[", b, ", ", frame, ", ", j, "] is ", x != x ? "NaN" : "infinite",
                                   "; encoder projections must be finite"));
    }
    hidden_[j] = round_to(joint_.weight_dtype, activate(joint_.activation, x + dec[j]));
  }
  const float* weight = joint_.host_weight.data();
  const float* bias = joint_.host_bias.data();
  ArgMax token = argmax_identity();
  LogSumExp lse = lse_identity();
  for (std::int64_t o = 0; o < token_columns_; ++o) {
    const float logit = dot(weight + o * J, hidden_.data(), J) + bias[o];
    argmax_update(token, logit, static_cast<std::int32_t>(o));
    lse = lse_add(lse, logit);
  }
  JointChoice choice{};
  choice.label = token.index;
  choice.score = token.value;
  choice.confidence = lse_max_probability(lse, token.value);
  if (!durations_.empty()) {
    ArgMax duration = argmax_identity();
    for (std::int64_t d = 0; d < static_cast<std::int64_t>(durations_.size()); ++d) {
      const std::int64_t o = token_columns_ + d;
      argmax_update(duration, dot(weight + o * J, hidden_.data(), J) + bias[o], static_cast<std::int32_t>(d));
    }
    choice.duration = durations_[static_cast<std::size_t>(duration.index)];
  }
  return choice;
}

}  // namespace asrdec::detail

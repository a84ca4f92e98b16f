#include "transducer/model/joint_cpu.hpp"

#include "asrdec/detail/activation.hpp"
#include "asrdec/detail/float16.hpp"
#include "core/bad_value.hpp"
#include "core/dot.hpp"
#include "core/logsumexp.hpp"
#include "core/weights.hpp"
#include "lm/fusion_step.hpp"
#include "transducer/model/bad_enc_value.hpp"

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
                   const std::vector<std::int32_t>& durations, std::int32_t blank)
    : joint_(joint),
      token_columns_(token_columns),
      durations_(durations),
      blank_(blank),
      hidden_(static_cast<std::size_t>(joint.hidden)) {}

JointChoice JointCpu::evaluate(const EncodedView& enc, std::int64_t b, std::int32_t frame, const float* dec,
                               bool check_values) {
  const JointRow row{b, frame};
  JointChoice choice{};
  evaluate_rows(enc, &row, 1, dec, /*dec_stride=*/0, check_values, &choice);
  return choice;
}

void JointCpu::evaluate_rows(const EncodedView& enc, const JointRow* rows, std::int64_t count, const float* dec,
                             std::int64_t dec_stride, bool check_values, JointChoice* out) {
  evaluate_rows(enc, rows, count, dec, dec_stride, check_values, FusionRef{}, out);
}

void JointCpu::token_logits(const EncodedView& enc, std::int64_t b, std::int32_t frame, const float* dec,
                            float* logits) {
  const std::int64_t J = joint_.hidden;
  hidden_.resize(static_cast<std::size_t>(J));
  const std::int64_t base = b * enc.stride_b + frame * enc.stride_t;
  for (std::int64_t j = 0; j < J; ++j) {
    hidden_[static_cast<std::size_t>(j)] =
        round_to(joint_.weight_dtype, activate(joint_.activation, read(enc, base + j * enc.stride_j) + dec[j]));
  }
  const float* weight = joint_.host_weight.data();
  const float* bias = joint_.host_bias.data();
  for (std::int64_t o = 0; o < token_columns_; ++o) {
    logits[o] = dot(weight + o * J, hidden_.data(), J) + bias[o];
  }
}

template <class DecOf>
void JointCpu::fill_hidden(const EncodedView& enc, const JointRow* rows, std::int64_t count, bool check_values,
                           DecOf dec_of) {
  const std::int64_t J = joint_.hidden;
  hidden_.resize(static_cast<std::size_t>(std::max<std::int64_t>(count, 1) * J));
  for (std::int64_t r = 0; r < count; ++r) {
    const std::int64_t b = rows[r].b;
    const std::int64_t base = b * enc.stride_b + rows[r].frame * enc.stride_t;
    float* hidden = hidden_.data() + r * J;
    const float* g = dec_of(r);
    for (std::int64_t j = 0; j < J; ++j) {
      const float x = read(enc, base + j * enc.stride_j);
      if (check_values && !is_finite_value(x)) throw bad_enc_value_error(enc.first_row + b, rows[r].frame, j, x != x);
      hidden[j] = round_to(joint_.weight_dtype, activate(joint_.activation, x + g[j]));
    }
  }
}

void JointCpu::logits_rows(const EncodedView& enc, const JointRow* rows, const float* const* decs, std::int64_t count,
                           bool check_values, float* out) {
  const std::int64_t J = joint_.hidden;
  const std::int64_t outputs = joint_.outputs;
  fill_hidden(enc, rows, count, check_values, [&](std::int64_t r) { return decs[r]; });
  const float* weight = joint_.host_weight.data();
  const float* bias = joint_.host_bias.data();
  for (std::int64_t o = 0; o < outputs; ++o) {
    for (std::int64_t r = 0; r < count; ++r) {
      out[r * outputs + o] = dot(weight + o * J, hidden_.data() + r * J, J) + bias[o];
    }
  }
  if (check_values) {
    for (std::int64_t r = 0; r < count; ++r) check_outputs(enc, rows[r], out + r * outputs, outputs);
  }
}

void JointCpu::check_outputs(const EncodedView& enc, const JointRow& row, const float* outputs, std::int64_t count) {
  for (std::int64_t o = 0; o < count; ++o) {
    if (!is_finite_value(outputs[o])) {
      throw bad_enc_value_error(enc.first_row + row.b, row.frame, kJointOutputColumn, false);
    }
  }
}

void JointCpu::evaluate_rows(const EncodedView& enc, const JointRow* rows, std::int64_t count, const float* dec,
                             std::int64_t dec_stride, bool check_values, const FusionRef& fusion, JointChoice* out) {
  const bool fused = fusion.active();
  const std::int64_t J = joint_.hidden;
  tokens_.assign(static_cast<std::size_t>(count), argmax_identity());
  lse_.assign(static_cast<std::size_t>(count), lse_identity());
  const bool entropy = needs_entropy_sums(confidence_);
  if (entropy) stats_.assign(static_cast<std::size_t>(count), confidence_stats_identity());
  if (fused) {
    fused_.assign(static_cast<std::size_t>(count), argmax_identity());
    fused_logit_.assign(static_cast<std::size_t>(count), 0.0f);
  }
  fill_hidden(enc, rows, count, check_values, [&](std::int64_t r) { return dec + rows[r].b * dec_stride; });
  const float* weight = joint_.host_weight.data();
  const float* bias = joint_.host_bias.data();
  for (std::int64_t o = 0; o < token_columns_; ++o) {
    for (std::int64_t r = 0; r < count; ++r) {
      const float logit = dot(weight + o * J, hidden_.data() + r * J, J) + bias[o];
      if (check_values) check_outputs(enc, rows[r], &logit, 1);
      argmax_update(tokens_[r], logit, static_cast<std::int32_t>(o));
      lse_[r] = lse_add(lse_[r], logit);
      if (entropy) stats_[r] = confidence_stats_add(stats_[r], logit, confidence_.alpha);
      if (fused && o <= fusion.vocab && o != blank_) {
        ArgMax& best = fused_[static_cast<std::size_t>(r)];
        argmax_update(best, logit + fusion_bonus(fusion, rows[r].b, static_cast<std::int32_t>(o)),
                      static_cast<std::int32_t>(o));
        if (best.index == o) fused_logit_[static_cast<std::size_t>(r)] = logit;
      }
    }
  }
  for (std::int64_t r = 0; r < count; ++r) {
    out[r] = JointChoice{};
    out[r].label = label_or_blank(tokens_[r], blank_);
    float logit = tokens_[r].value;
    if (fused && out[r].label != blank_ && fused_[static_cast<std::size_t>(r)].index != argmax_identity().index) {
      out[r].label = fused_[static_cast<std::size_t>(r)].index;
      logit = fused_logit_[static_cast<std::size_t>(r)];
    }
    out[r].token_logprob = lse_log_probability(lse_[r], logit);
    out[r].confidence = step_confidence(confidence_, lse_[r], entropy ? stats_[r] : confidence_stats_identity(),
                                        tokens_[r].value, logit, static_cast<int>(token_columns_));
    out[r].step_logprob = out[r].token_logprob;
  }
  if (!durations_.empty()) {
    durations_best_.assign(static_cast<std::size_t>(count), argmax_identity());
    durations_lse_.assign(static_cast<std::size_t>(count), lse_identity());
    for (std::int64_t d = 0; d < static_cast<std::int64_t>(durations_.size()); ++d) {
      const std::int64_t o = token_columns_ + d;
      for (std::int64_t r = 0; r < count; ++r) {
        const float logit = dot(weight + o * J, hidden_.data() + r * J, J) + bias[o];
        if (check_values) check_outputs(enc, rows[r], &logit, 1);
        argmax_update(durations_best_[r], logit, static_cast<std::int32_t>(d));
        durations_lse_[r] = lse_add(durations_lse_[r], logit);
      }
    }
    for (std::int64_t r = 0; r < count; ++r) {
      out[r].duration = durations_[static_cast<std::size_t>(duration_index_or_first(durations_best_[r]))];
      out[r].step_logprob += lse_log_probability(durations_lse_[r], durations_best_[r].value);
    }
  }
}

}  // namespace asrdec::detail

#pragma once
// Internal: evaluating the joint for one (utterance, frame) on the CPU and choosing the label.

#include <vector>

#include "asrdec/detail/transducer_step.hpp"
#include "core/logsumexp.hpp"
#include "hyps/confidence_step.hpp"
#include "lm/fusion_step.hpp"
#include "transducer/model/joint_impl.hpp"

namespace asrdec::detail {

/** Where enc_proj is and how to read it ([B, T, J], any float dtype, element strides). */
struct EncodedView {
  const void* data = nullptr;
  DType dtype = DType::f32;
  std::int64_t stride_b = 0, stride_t = 0, stride_j = 0;
  /** The caller's index of row 0 (a slice of a batch decoded on its own thread): errors name the caller's row. */
  std::int64_t first_row = 0;

  /** Rows [first, first + ...) of this view, as a view of their own. */
  EncodedView rows_from(std::int64_t first) const {
    EncodedView slice = *this;
    slice.data = static_cast<const std::byte*>(data) + first * stride_b * static_cast<std::int64_t>(dtype_size(dtype));
    slice.first_row = first_row + first;
    return slice;
  }
};

/** One joint evaluation to make: utterance b at `frame`. */
struct JointRow {
  std::int64_t b;
  std::int32_t frame;
};

class JointCpu {
 public:
  JointCpu(const TransducerJoint::Impl& joint, std::int64_t token_columns, const std::vector<std::int32_t>& durations,
           std::int32_t blank);

  /** Joint of utterance b at `frame` with predictor output `dec` ([J]). Throws InvalidArgument for a NaN or
   *  infinite enc_proj value when `check_values`. */
  JointChoice evaluate(const EncodedView& enc, std::int64_t b, std::int32_t frame, const float* dec, bool check_values);

  /** Several evaluations at once, each weight row read once for all of them; the predictor output of row r is
   *  dec + rows[r].b * dec_stride. Each result equals evaluate() on its row, bit for bit. */
  void evaluate_rows(const EncodedView& enc, const JointRow* rows, std::int64_t count, const float* dec,
                     std::int64_t dec_stride, bool check_values, JointChoice* out);
  /** As evaluate_rows, with fusion (when fusion.active()): a non-blank choice becomes the argmax over the
   *  non-blank token columns (fusion.blank = the model's blank) of logit + fusion_bonus; its log-probability and
   * confidence are those of the new label. */
  void evaluate_rows(const EncodedView& enc, const JointRow* rows, std::int64_t count, const float* dec,
                     std::int64_t dec_stride, bool check_values, const FusionRef& fusion, JointChoice* out);

  /** All output logits (V+1 tokens, then D durations) of each row — utterance rows[r].b at rows[r].frame with
   *  predictor output decs[r] — into out + r * output_size; each weight row is read once for all rows. With
   *  check_values, NaN/inf inputs and outputs that are not finite throw InvalidArgument. */
  void logits_rows(const EncodedView& enc, const JointRow* rows, const float* const* decs, std::int64_t count,
                   bool check_values, float* out);

  /** How JointChoice::confidence is computed (default: the chosen token's probability). */
  void set_confidence(const ConfidenceMethod& method) { confidence_ = method; }

  /** The V+1 token logits of utterance b at `frame` (the values evaluate() compares), into `logits`. */
  void token_logits(const EncodedView& enc, std::int64_t b, std::int32_t frame, const float* dec, float* logits);

 private:
  // hidden_[r] <- act(enc_proj[rows[r]] + dec_of(r)), rounded to the weight dtype; checks values when asked.
  template <class DecOf>
  void fill_hidden(const EncodedView& enc, const JointRow* rows, std::int64_t count, bool check_values, DecOf dec_of);
  // Finite values can still make the joint overflow float32; its outputs are checked too (with check_values).
  static void check_outputs(const EncodedView& enc, const JointRow& row, const float* outputs, std::int64_t count);

  const TransducerJoint::Impl& joint_;
  std::int64_t token_columns_;
  const std::vector<std::int32_t>& durations_;
  std::int32_t blank_;
  std::vector<float> hidden_;  // [rows, J]
  std::vector<ArgMax> tokens_, durations_best_, fused_;
  std::vector<float> fused_logit_;
  std::vector<LogSumExp> lse_, durations_lse_;
  ConfidenceMethod confidence_{};
  std::vector<ConfidenceStats> stats_;  // entropy measures: per row, over the token columns
};

}  // namespace asrdec::detail

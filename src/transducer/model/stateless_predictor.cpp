#include "transducer/model/stateless_predictor.hpp"

#include <cmath>

#include "core/dot.hpp"
#include "core/weights.hpp"

namespace asrdec::detail {

StatelessHostWeights prepare_stateless(const StatelessPredictorWeights& w, std::int32_t blank_id, DType dtype) {
  ASRDEC_CHECK_ARG(is_floating(dtype), "stateless predictor weight dtype must be float32, float16 or bfloat16");
  StatelessHostWeights out;
  out.dtype = dtype;
  out.blank = blank_id;
  out.layer_norm = w.layer_norm;
  out.context = static_cast<std::int64_t>(w.embeddings.size());
  ASRDEC_CHECK_ARG(out.context >= 1, "stateless predictor: at least one embedding table (context >= 1) is needed");
  ASRDEC_CHECK_ARG(w.embeddings[0].ndim() == 2, "predictor.embeds.0.weight: expected [V+1, E0], got ",
                   w.embeddings[0].shape_string());
  out.vocab_rows = w.embeddings[0].size(0);
  ASRDEC_CHECK_ARG(blank_id >= 0 && blank_id < out.vocab_rows, "blank id ", blank_id, " is outside the embedding's ",
                   out.vocab_rows, " rows");
  for (std::int64_t i = 0; i < out.context; ++i) {
    const TensorView& table = w.embeddings[static_cast<std::size_t>(i)];
    const std::string name = "predictor.embeds." + std::to_string(i) + ".weight";
    ASRDEC_CHECK_ARG(table.ndim() == 2, name, ": expected [V+1, E], got ", table.shape_string());
    const std::int64_t width = table.size(1);
    expect_shape(table, name, {out.vocab_rows, width});
    std::vector<float> values = to_floats(table, dtype, name);
    std::fill(values.begin() + blank_id * width, values.begin() + (blank_id + 1) * width, 0.0f);
    out.offsets.push_back(out.width);
    out.width += width;
    out.embeddings.push_back(std::move(values));
  }
  ASRDEC_CHECK_ARG(w.projection_weight.ndim() == 2, "joint.pred.weight: expected [J, width], got ",
                   w.projection_weight.shape_string());
  out.joint = w.projection_weight.size(0);
  expect_shape(w.projection_weight, "joint.pred.weight", {out.joint, out.width});
  expect_shape(w.projection_bias, "joint.pred.bias", {out.joint});
  out.projection_weight = to_floats(w.projection_weight, dtype, "joint.pred.weight");
  out.projection_bias = to_floats(w.projection_bias, DType::f32, "joint.pred.bias");
  return out;
}

void stateless_features(const StatelessHostWeights& w, std::int32_t label, const float* previous, float* features) {
  for (std::int64_t i = 0; i < w.context; ++i) {
    // Position 0 is the new label, position i the i-th previous one (previous[] is oldest first).
    const std::int32_t id = i == 0 ? label : static_cast<std::int32_t>(previous[w.context - 1 - i]);
    const std::size_t position = static_cast<std::size_t>(i);
    const std::int64_t width = (i + 1 < w.context ? w.offsets[position + 1] : w.width) - w.offsets[position];
    const float* row = w.embeddings[position].data() + id * width;
    std::copy(row, row + width, features + w.offsets[position]);
  }
  if (w.layer_norm) {
    float mean = 0.0f;
    for (std::int64_t k = 0; k < w.width; ++k) mean += features[k];
    mean /= static_cast<float>(w.width);
    float variance = 0.0f;
    for (std::int64_t k = 0; k < w.width; ++k) variance += (features[k] - mean) * (features[k] - mean);
    variance /= static_cast<float>(w.width);
    const float scale = 1.0f / std::sqrt(variance + kLayerNormEpsilon);
    for (std::int64_t k = 0; k < w.width; ++k) features[k] = (features[k] - mean) * scale;
  }
}

namespace {

class StatelessCpuSession final : public PredictorSession {
 public:
  explicit StatelessCpuSession(const StatelessHostWeights& w) : w_(w), features_(static_cast<std::size_t>(w.width)) {}

  void initial_state(float* state, std::int64_t batch, StreamHandle) override {
    std::fill(state, state + batch * w_.state_size(), static_cast<float>(w_.blank));
  }

  void step(const std::int32_t* labels, const std::int32_t* mask, float* state, float* output, std::int64_t batch,
            StreamHandle) override {
    for (std::int64_t b = 0; b < batch; ++b) {
      if (!mask[b]) continue;
      ASRDEC_CHECK_ARG(labels[b] >= 0 && labels[b] < w_.vocab_rows, "predictor label ", labels[b], " outside [0, ",
                       w_.vocab_rows, ")");
      float* previous = state + b * w_.state_size();
      stateless_features(w_, labels[b], previous, features_.data());
      for (std::int64_t k = 0; k < w_.width; ++k) features_[k] = round_to(w_.dtype, features_[k]);
      float* out = output + b * w_.joint;
      for (std::int64_t j = 0; j < w_.joint; ++j) {
        out[j] = dot(w_.projection_weight.data() + j * w_.width, features_.data(), w_.width) + w_.projection_bias[j];
      }
      if (w_.context > 1) {  // shift in the new label, dropping the oldest
        std::copy(previous + 1, previous + w_.context - 1, previous);
        previous[w_.context - 2] = static_cast<float>(labels[b]);
      }
    }
  }

 private:
  const StatelessHostWeights& w_;
  std::vector<float> features_;
};

class StatelessCpuPredictor final : public TransducerPredictor {
 public:
  explicit StatelessCpuPredictor(StatelessHostWeights weights) : w_(std::move(weights)) {}
  Device device() const override { return Device::cpu(); }
  std::int64_t state_size() const override { return w_.state_size(); }
  std::int64_t output_size() const override { return w_.joint; }
  std::unique_ptr<PredictorSession> start_session(std::int64_t) const override {
    return std::make_unique<StatelessCpuSession>(w_);
  }

 private:
  StatelessHostWeights w_;
};

}  // namespace
}  // namespace asrdec::detail

namespace asrdec {

std::shared_ptr<TransducerPredictor> make_stateless_predictor(const StatelessPredictorWeights& weights,
                                                              std::int32_t blank_id, DType weight_dtype,
                                                              Device device) {
  detail::StatelessHostWeights prepared = detail::prepare_stateless(weights, blank_id, weight_dtype);
  if (device.is_cpu()) {
    return std::make_shared<detail::StatelessCpuPredictor>(std::move(prepared));
  }
#if ASRDEC_WITH_CUDA
  return detail::make_stateless_predictor_cuda(std::move(prepared), device);
#else
  throw Unsupported(cuda_info().reason);
#endif
}

}  // namespace asrdec

#include "transducer/model/lstm_predictor.hpp"

#include "asrdec/config.hpp"
#include "asrdec/detail/activation.hpp"
#include "core/dot.hpp"
#include "core/weights.hpp"

namespace asrdec::detail {

LstmHostWeights prepare_lstm(const LstmPredictorWeights& w, std::int32_t blank_id, DType dtype) {
  ASRDEC_CHECK_ARG(is_floating(dtype), "LSTM weight dtype must be float32, float16 or bfloat16");
  LstmHostWeights out;
  out.dtype = dtype;
  out.layers = static_cast<std::int64_t>(w.weight_hh.size());
  ASRDEC_CHECK_ARG(out.layers >= 1, "LSTM predictor: at least one layer is needed");
  ASRDEC_CHECK_ARG(w.weight_ih.size() == w.weight_hh.size() && w.bias_ih.size() == w.weight_hh.size() &&
                       w.bias_hh.size() == w.weight_hh.size(),
                   "LSTM predictor: weight_ih, weight_hh, bias_ih and bias_hh must list the same number of layers");
  ASRDEC_CHECK_ARG(w.embedding.ndim() == 2, "predictor.embedding.weight: expected [V+1, E], got ",
                   w.embedding.shape_string());
  out.vocab_rows = w.embedding.size(0);
  const std::int64_t embed = w.embedding.size(1);
  ASRDEC_CHECK_ARG(w.weight_hh[0].ndim() == 2, "predictor.lstm.0.weight_hh: expected [4P, P], got ",
                   w.weight_hh[0].shape_string());
  out.hidden = w.weight_hh[0].size(1);
  const std::int64_t P = out.hidden;
  ASRDEC_CHECK_ARG(w.projection_weight.ndim() == 2, "joint.pred.weight: expected [J, P], got ",
                   w.projection_weight.shape_string());
  out.joint = w.projection_weight.size(0);
  ASRDEC_CHECK_ARG(blank_id >= 0 && blank_id < out.vocab_rows, "blank id ", blank_id, " is outside the embedding's ",
                   out.vocab_rows, " rows");
  expect_shape(w.embedding, "predictor.embedding.weight", {out.vocab_rows, embed});
  expect_shape(w.projection_weight, "joint.pred.weight", {out.joint, P});
  expect_shape(w.projection_bias, "joint.pred.bias", {out.joint});

  std::vector<float> embedding = to_floats(w.embedding, dtype, "predictor.embedding.weight");
  // The blank embeds to zero (NeMo's padding_idx), whatever the file holds in that row.
  std::fill(embedding.begin() + blank_id * embed, embedding.begin() + (blank_id + 1) * embed, 0.0f);

  out.weight_ih.resize(static_cast<std::size_t>(out.layers));
  out.weight_hh.resize(static_cast<std::size_t>(out.layers));
  out.bias.resize(static_cast<std::size_t>(out.layers));
  for (std::int64_t l = 0; l < out.layers; ++l) {
    const std::string prefix = "predictor.lstm." + std::to_string(l) + ".";
    const std::size_t i = static_cast<std::size_t>(l);
    expect_shape(w.weight_ih[i], prefix + "weight_ih", {4 * P, l == 0 ? embed : P});
    expect_shape(w.weight_hh[i], prefix + "weight_hh", {4 * P, P});
    expect_shape(w.bias_ih[i], prefix + "bias_ih", {4 * P});
    expect_shape(w.bias_hh[i], prefix + "bias_hh", {4 * P});
    out.weight_hh[i] = to_floats(w.weight_hh[i], dtype, prefix + "weight_hh");
    const std::vector<float> bias_ih = to_floats(w.bias_ih[i], DType::f32, prefix + "bias_ih");
    const std::vector<float> bias_hh = to_floats(w.bias_hh[i], DType::f32, prefix + "bias_hh");
    std::vector<float> bias(static_cast<std::size_t>(4 * P));
    for (std::size_t k = 0; k < bias.size(); ++k) bias[k] = bias_ih[k] + bias_hh[k];
    const std::vector<float> weight_ih = to_floats(w.weight_ih[i], dtype, prefix + "weight_ih");
    if (l == 0) {
      out.input_table.resize(static_cast<std::size_t>(out.vocab_rows * 4 * P));
      for (std::int64_t label = 0; label < out.vocab_rows; ++label) {
        for (std::int64_t k = 0; k < 4 * P; ++k) {
          out.input_table[static_cast<std::size_t>(label * 4 * P + k)] =
              dot(weight_ih.data() + k * embed, embedding.data() + label * embed, embed) + bias[k];
        }
      }
    } else {
      out.weight_ih[i] = weight_ih;
      out.bias[i] = bias;
    }
  }
  out.projection_weight = to_floats(w.projection_weight, dtype, "joint.pred.weight");
  out.projection_bias = to_floats(w.projection_bias, DType::f32, "joint.pred.bias");
  return out;
}

void lstm_cell_row(const float* gates, float* h, float* c, std::int64_t hidden) {
  for (std::int64_t k = 0; k < hidden; ++k) {
    const LstmCellState next =
        lstm_cell(gates[k], gates[hidden + k], gates[2 * hidden + k], gates[3 * hidden + k], c[k]);
    c[k] = next.c;
    h[k] = next.h;
  }
}

namespace {

// Steps all masked rows together, layer by layer: each weight row is read once per step for all of them (the
// weights are megabytes; re-reading them per utterance made the CPU executor memory-bound). Per row, the
// arithmetic and its order are those of a single-row step.
class LstmCpuSession final : public PredictorSession {
 public:
  explicit LstmCpuSession(const LstmHostWeights& w) : w_(w) {}

  void initial_state(float* state, std::int64_t batch, StreamHandle) override {
    std::fill(state, state + batch * w_.state_size(), 0.0f);
  }

  void step(const std::int32_t* labels, const std::int32_t* mask, float* state, float* output, std::int64_t batch,
            StreamHandle) override {
    const std::int64_t P = w_.hidden;
    rows_.clear();
    for (std::int64_t b = 0; b < batch; ++b) {
      if (!mask[b]) continue;
      ASRDEC_CHECK_ARG(labels[b] >= 0 && labels[b] < w_.vocab_rows, "predictor label ", labels[b], " outside [0, ",
                       w_.vocab_rows, ")");
      rows_.push_back(b);
    }
    const auto R = static_cast<std::int64_t>(rows_.size());
    if (R == 0) return;
    gates_.resize(static_cast<std::size_t>(R * 4 * P));
    input_.resize(static_cast<std::size_t>(R * P));
    recurrent_.resize(static_cast<std::size_t>(R * P));
    const auto row_state = [&](std::int64_t r) { return state + rows_[static_cast<std::size_t>(r)] * w_.state_size(); };
    for (std::int64_t l = 0; l < w_.layers; ++l) {
      const std::size_t i = static_cast<std::size_t>(l);
      for (std::int64_t r = 0; r < R; ++r) {
        const float* h = row_state(r) + 2 * l * P;
        for (std::int64_t k = 0; k < P; ++k) recurrent_[r * P + k] = round_to(w_.dtype, h[k]);
      }
      if (l == 0) {
        for (std::int64_t r = 0; r < R; ++r) {
          const float* table = w_.input_table.data() + labels[rows_[static_cast<std::size_t>(r)]] * 4 * P;
          std::copy(table, table + 4 * P, gates_.data() + r * 4 * P);
        }
      } else {
        for (std::int64_t r = 0; r < R; ++r) {
          const float* below = row_state(r) + 2 * (l - 1) * P;  // this step's output of the layer below
          for (std::int64_t k = 0; k < P; ++k) input_[r * P + k] = round_to(w_.dtype, below[k]);
        }
        for (std::int64_t k = 0; k < 4 * P; ++k) {
          const float* weight = w_.weight_ih[i].data() + k * P;
          for (std::int64_t r = 0; r < R; ++r) {
            gates_[r * 4 * P + k] = dot(weight, input_.data() + r * P, P) + w_.bias[i][k];
          }
        }
      }
      for (std::int64_t k = 0; k < 4 * P; ++k) {
        const float* weight = w_.weight_hh[i].data() + k * P;
        for (std::int64_t r = 0; r < R; ++r) {
          gates_[r * 4 * P + k] = gates_[r * 4 * P + k] + dot(weight, recurrent_.data() + r * P, P);
        }
      }
      for (std::int64_t r = 0; r < R; ++r) {
        float* h = row_state(r) + 2 * l * P;
        lstm_cell_row(gates_.data() + r * 4 * P, h, h + P, P);
      }
    }
    for (std::int64_t r = 0; r < R; ++r) {
      const float* top = row_state(r) + 2 * (w_.layers - 1) * P;
      for (std::int64_t k = 0; k < P; ++k) input_[r * P + k] = round_to(w_.dtype, top[k]);
    }
    for (std::int64_t j = 0; j < w_.joint; ++j) {
      const float* weight = w_.projection_weight.data() + j * P;
      for (std::int64_t r = 0; r < R; ++r) {
        output[rows_[static_cast<std::size_t>(r)] * w_.joint + j] =
            dot(weight, input_.data() + r * P, P) + w_.projection_bias[j];
      }
    }
  }

 private:
  const LstmHostWeights& w_;
  std::vector<std::int64_t> rows_;
  std::vector<float> gates_;      // [R, 4P]
  std::vector<float> input_;      // [R, P]
  std::vector<float> recurrent_;  // [R, P]
};

class LstmCpuPredictor final : public TransducerPredictor {
 public:
  explicit LstmCpuPredictor(LstmHostWeights weights) : w_(std::move(weights)) {}
  Device device() const override { return Device::cpu(); }
  std::int64_t state_size() const override { return w_.state_size(); }
  std::int64_t output_size() const override { return w_.joint; }
  std::unique_ptr<PredictorSession> start_session(std::int64_t) const override {
    return std::make_unique<LstmCpuSession>(w_);
  }

 private:
  LstmHostWeights w_;
};

}  // namespace
}  // namespace asrdec::detail

namespace asrdec {

std::shared_ptr<TransducerPredictor> make_lstm_predictor(const LstmPredictorWeights& weights, std::int32_t blank_id,
                                                         DType weight_dtype, Device device) {
  detail::LstmHostWeights prepared = detail::prepare_lstm(weights, blank_id, weight_dtype);
  if (device.is_cpu()) {
    return std::make_shared<detail::LstmCpuPredictor>(std::move(prepared));
  }
#if ASRDEC_WITH_CUDA
  return detail::make_lstm_predictor_cuda(std::move(prepared), device);
#else
  throw Unsupported(cuda_info().reason);
#endif
}

}  // namespace asrdec

// CUDA executors of the built-in predictors: weights uploaded once (immutable, shared), and per-decoder sessions
// holding the scratch of a step and a cuBLAS handle. A step is a fixed sequence of kernels on the given stream, so
// decoders capture it into their graphs: for a few rows fused kernels that do their own matrix products (an LSTM
// layer, the projection; transducer/model/joint_gemv_shape.hpp says which shapes), otherwise GEMMs and elementwise
// kernels.

#include <algorithm>
#include <optional>
#include <vector>

#include "asrdec/core/error.hpp"
#include "core/cuda/check.hpp"
#include "core/cuda/gemm.hpp"
#include "core/weights.hpp"
#include "transducer/model/joint_gemv_shape.hpp"
#include "transducer/model/lstm_predictor.hpp"
#include "transducer/model/predictor_kernels.hpp"
#include "transducer/model/stateless_predictor.hpp"

namespace asrdec::detail {
namespace {

template <class T>
DeviceBuffer<T> upload(const std::vector<T>& values, Device device, cudaStream_t stream) {
  DeviceBuffer<T> buffer(values.size(), device);
  copy_bytes_async(buffer.data(), device, values.data(), Device::cpu(), values.size() * sizeof(T), stream);
  return buffer;
}

DeviceBuffer<std::byte> upload_as(const std::vector<float>& values, DType dtype, std::int64_t rows, std::int64_t cols,
                                  Device device, cudaStream_t stream, const char* name) {
  const TensorView view(values.data(), DType::f32, {rows, cols});
  return upload(to_bytes(view, dtype, name), device, stream);
}

// ---- LSTM -----------------------------------------------------------------------------------------------

class LstmCudaPredictor;

class LstmCudaSession final : public PredictorSession {
 public:
  LstmCudaSession(const LstmCudaPredictor& predictor, std::int64_t max_batch);
  void initial_state(float* state, std::int64_t batch, StreamHandle stream) override;
  void step(const std::int32_t* labels, const std::int32_t* mask, float* state, float* output, std::int64_t batch,
            StreamHandle stream) override;
  /** For lstm_fused_step_of: the fused step's parameters over these arrays, its layers' copied to the device. */
  bool fused_step_of(const std::int32_t* labels, const std::int32_t* mask, float* state, float* output,
                     std::int64_t batch, LstmFusedStep* step);

 private:
  const LstmCudaPredictor& p_;
  std::int64_t max_batch_;
  std::optional<Gemm> gemm_;                    // cuBLAS only if some step may take more rows than the fused kernels do
  DeviceBuffer<std::byte> rounded_state_;       // [B, P] round(h) of the layer being stepped
  DeviceBuffer<std::byte> next_input_;          // [B, P] round(h') of the layer just stepped
  DeviceBuffer<float> recurrent_;               // [B, 4P]
  DeviceBuffer<float> input_;                   // [B, 4P]
  DeviceBuffer<float> projected_;               // [B, J]
  DeviceBuffer<float> h_next_;                  // fused: [layers, B, P] h' until the projection commits it
  DeviceBuffer<std::byte> layer_output_;        // fused: [B, P] a second round(h') buffer (layers alternate)
  bool fused_ = false;                          // steps of few rows may run the fused kernels (fused_kernels_enabled)
  DeviceBuffer<LstmFusedLayer> device_layers_;  // fused_step_of's layers, on the device

  void fused_step(const std::int32_t* labels, const std::int32_t* mask, float* state, float* output, std::int64_t batch,
                  cudaStream_t stream);
  // The fused kernels' parameters of one step: the layers' (layers alternate between next_input_ and layer_output_
  // for their round(h'), since a layer reads the one below while writing its own), then the projection's.
  std::vector<LstmFusedLayer> fused_layers(const std::int32_t* labels, const std::int32_t* mask, float* state,
                                           std::int64_t batch);
  FusedProjection fused_projection(const std::int32_t* mask, float* state, float* output, std::int64_t batch);
  void allocate_fused_scratch();
};

class LstmCudaPredictor final : public TransducerPredictor {
 public:
  LstmCudaPredictor(const LstmHostWeights& w, Device device) : device_(device), w_(w) {
    DeviceGuard guard(device);
    Stream stream(device);
    fused_shared_bytes_ = preload_predictor_kernels();
    const cudaStream_t s = stream.handle();
    input_table_ = upload(w.input_table, device, s);
    const std::int64_t P = w.hidden;
    for (std::int64_t l = 0; l < w.layers; ++l) {
      const auto i = static_cast<std::size_t>(l);
      weight_hh_.push_back(upload_as(w.weight_hh[i], w.dtype, 4 * P, P, device, s, "weight_hh"));
      if (l > 0) {
        weight_ih_.push_back(upload_as(w.weight_ih[i], w.dtype, 4 * P, P, device, s, "weight_ih"));
        bias_.push_back(upload(w.bias[i], device, s));
      } else {
        weight_ih_.emplace_back();
        bias_.emplace_back();
      }
    }
    projection_weight_ = upload_as(w.projection_weight, w.dtype, w.joint, P, device, s, "joint.pred.weight");
    projection_bias_ = upload(w.projection_bias, device, s);
    stream.synchronize();
    // The host copies are no longer needed: keep the sizes only.
    w_.input_table.clear();
    w_.weight_ih.clear();
    w_.weight_hh.clear();
    w_.bias.clear();
    w_.projection_weight.clear();
    w_.projection_bias.clear();
  }

  Device device() const override { return device_; }
  std::int64_t state_size() const override { return w_.state_size(); }
  std::int64_t output_size() const override { return w_.joint; }
  std::unique_ptr<PredictorSession> start_session(std::int64_t max_batch) const override {
    return std::make_unique<LstmCudaSession>(*this, max_batch);
  }

  /** Whether a step of `batch` rows runs the fused kernels: every row's round(h), and the layer below's round(h'),
   *  in one block's shared memory. */
  bool fused(std::int64_t batch) const {
    return joint_gemv_fits(batch, w_.hidden * (w_.layers > 1 ? 2 : 1), fused_shared_bytes_);
  }

  Device device_;
  std::int64_t fused_shared_bytes_ = 0;  // what the fused kernels may use on this device
  LstmHostWeights w_;                    // sizes and dtype
  DeviceBuffer<float> input_table_;
  std::vector<DeviceBuffer<std::byte>> weight_ih_, weight_hh_;
  std::vector<DeviceBuffer<float>> bias_;
  DeviceBuffer<std::byte> projection_weight_;
  DeviceBuffer<float> projection_bias_;
};

LstmCudaSession::LstmCudaSession(const LstmCudaPredictor& predictor, std::int64_t max_batch)
    : p_(predictor), max_batch_(std::max<std::int64_t>(max_batch, 1)) {
  const std::int64_t P = p_.w_.hidden;
  const std::size_t element = dtype_size(p_.w_.dtype);
  const auto rows = static_cast<std::size_t>(max_batch_);
  rounded_state_ = DeviceBuffer<std::byte>(rows * static_cast<std::size_t>(P) * element, p_.device_);
  next_input_ = DeviceBuffer<std::byte>(rows * static_cast<std::size_t>(P) * element, p_.device_);
  recurrent_ = DeviceBuffer<float>(rows * static_cast<std::size_t>(4 * P), p_.device_);
  input_ = DeviceBuffer<float>(rows * static_cast<std::size_t>(4 * P), p_.device_);
  projected_ = DeviceBuffer<float>(rows * static_cast<std::size_t>(p_.w_.joint), p_.device_);
  fused_ = fused_kernels_enabled() && p_.fused(1);
  if (!fused_ || !p_.fused(max_batch_)) gemm_.emplace(p_.device_);
  if (fused_) allocate_fused_scratch();
}

// Steps of up to kJointGemvMaxRows rows may run fused.
void LstmCudaSession::allocate_fused_scratch() {
  if (h_next_.size() > 0 && layer_output_.size() > 0) return;  // both, or (after a failed allocation) again
  const std::int64_t P = p_.w_.hidden;
  const auto fused_rows = static_cast<std::size_t>(std::min(max_batch_, kJointGemvMaxRows));
  h_next_ = DeviceBuffer<float>(static_cast<std::size_t>(p_.w_.layers) * fused_rows * static_cast<std::size_t>(P),
                                p_.device_);
  layer_output_ =
      DeviceBuffer<std::byte>(fused_rows * static_cast<std::size_t>(P) * dtype_size(p_.w_.dtype), p_.device_);
}

void LstmCudaSession::initial_state(float* state, std::int64_t batch, StreamHandle stream) {
  fill_bytes_async(state, p_.device_, 0, static_cast<std::size_t>(batch * p_.w_.state_size()) * sizeof(float), stream);
}

void LstmCudaSession::step(const std::int32_t* labels, const std::int32_t* mask, float* state, float* output,
                           std::int64_t batch, StreamHandle stream) {
  ASRDEC_CHECK_ARG(batch <= max_batch_, "predictor step for ", batch, " rows, the session holds ", max_batch_);
  if (fused_ && p_.fused(batch)) {
    fused_step(labels, mask, state, output, batch, stream);
    return;
  }
  const std::int64_t P = p_.w_.hidden;
  const std::int64_t S = p_.w_.state_size();
  const DType dtype = p_.w_.dtype;
  for (std::int64_t l = 0; l < p_.w_.layers; ++l) {
    const auto i = static_cast<std::size_t>(l);
    launch_round_rows(state + 2 * l * P, S, rounded_state_.data(), dtype, batch, P, stream);
    gemm_->rows_times_weight_t(p_.weight_hh_[i].data(), dtype, 4 * P, P, rounded_state_.data(), P, batch,
                               recurrent_.data(), 4 * P, stream);
    if (l > 0) {
      gemm_->rows_times_weight_t(p_.weight_ih_[i].data(), dtype, 4 * P, P, next_input_.data(), P, batch, input_.data(),
                                 4 * P, stream);
    }
    LstmCellParams cell{};
    cell.labels = labels;
    cell.mask = mask;
    cell.input_table = l == 0 ? p_.input_table_.data() : nullptr;
    cell.vocab_rows = static_cast<std::int32_t>(p_.w_.vocab_rows);
    cell.input_gemm = input_.data();
    cell.bias = l > 0 ? p_.bias_[i].data() : nullptr;
    cell.recurrent = recurrent_.data();
    cell.state = state;
    cell.state_stride = S;
    cell.h_offset = 2 * l * P;
    cell.next_input = next_input_.data();
    cell.dtype = dtype;
    cell.batch = batch;
    cell.hidden = P;
    launch_lstm_cell(cell, stream);
  }
  gemm_->rows_times_weight_t(p_.projection_weight_.data(), dtype, p_.w_.joint, P, next_input_.data(), P, batch,
                             projected_.data(), p_.w_.joint, stream);
  launch_masked_bias(projected_.data(), p_.projection_bias_.data(), mask, output, batch, p_.w_.joint, stream);
}

std::vector<LstmFusedLayer> LstmCudaSession::fused_layers(const std::int32_t* labels, const std::int32_t* mask,
                                                          float* state, std::int64_t batch) {
  const std::int64_t P = p_.w_.hidden;
  void* outputs[2] = {next_input_.data(), layer_output_.data()};
  std::vector<LstmFusedLayer> layers;
  for (std::int64_t l = 0; l < p_.w_.layers; ++l) {
    const auto i = static_cast<std::size_t>(l);
    LstmFusedLayer layer{};
    layer.labels = labels;
    layer.mask = mask;
    layer.input_table = l == 0 ? p_.input_table_.data() : nullptr;
    layer.weight_ih = l > 0 ? p_.weight_ih_[i].data() : nullptr;
    layer.bias = l > 0 ? p_.bias_[i].data() : nullptr;
    layer.below = l > 0 ? outputs[(l - 1) % 2] : nullptr;
    layer.weight_hh = p_.weight_hh_[i].data();
    layer.state = state;
    layer.state_stride = p_.w_.state_size();
    layer.h_offset = 2 * l * P;
    layer.h_next = h_next_.data() + l * batch * P;
    layer.next_input = outputs[l % 2];
    layer.dtype = p_.w_.dtype;
    layer.batch = batch;
    layer.hidden = P;
    layers.push_back(layer);
  }
  return layers;
}

FusedProjection LstmCudaSession::fused_projection(const std::int32_t* mask, float* state, float* output,
                                                  std::int64_t batch) {
  void* outputs[2] = {next_input_.data(), layer_output_.data()};
  FusedProjection projection{};
  projection.mask = mask;
  projection.input = outputs[(p_.w_.layers - 1) % 2];
  projection.weight = p_.projection_weight_.data();
  projection.bias = p_.projection_bias_.data();
  projection.output = output;
  projection.dtype = p_.w_.dtype;
  projection.batch = batch;
  projection.width = p_.w_.hidden;
  projection.joint = p_.w_.joint;
  projection.h_next = h_next_.data();
  projection.state = state;
  projection.state_stride = p_.w_.state_size();
  projection.layers = p_.w_.layers;
  projection.hidden = p_.w_.hidden;
  return projection;
}

// One kernel per layer, one for the projection (which also commits every layer's h').
void LstmCudaSession::fused_step(const std::int32_t* labels, const std::int32_t* mask, float* state, float* output,
                                 std::int64_t batch, cudaStream_t stream) {
  for (const LstmFusedLayer& layer : fused_layers(labels, mask, state, batch)) launch_lstm_fused_layer(layer, stream);
  launch_fused_projection(fused_projection(mask, state, output, batch), stream);
}

bool LstmCudaSession::fused_step_of(const std::int32_t* labels, const std::int32_t* mask, float* state, float* output,
                                    std::int64_t batch, LstmFusedStep* step) {
  if (batch > max_batch_ || !p_.fused(batch)) return false;
  allocate_fused_scratch();
  const std::vector<LstmFusedLayer> layers = fused_layers(labels, mask, state, batch);
  Stream stream(p_.device_);
  device_layers_ = upload(layers, p_.device_, stream.handle());
  stream.synchronize();
  step->layers = device_layers_.data();
  step->layer_count = static_cast<std::int32_t>(layers.size());
  step->projection = fused_projection(mask, state, output, batch);
  step->shared_floats = std::max(lstm_fused_layer_shared_floats(batch, p_.w_.hidden, p_.w_.layers > 1),
                                 batch * p_.w_.hidden);  // the projection's input rows
  return true;
}

// ---- stateless --------------------------------------------------------------------------------------------

class StatelessCudaPredictor;

class StatelessCudaSession final : public PredictorSession {
 public:
  StatelessCudaSession(const StatelessCudaPredictor& predictor, std::int64_t max_batch);
  void initial_state(float* state, std::int64_t batch, StreamHandle stream) override;
  void step(const std::int32_t* labels, const std::int32_t* mask, float* state, float* output, std::int64_t batch,
            StreamHandle stream) override;

 private:
  const StatelessCudaPredictor& p_;
  std::int64_t max_batch_;
  std::optional<Gemm> gemm_;              // cuBLAS only if some step may take more rows than the fused kernel does
  DeviceBuffer<std::byte> features_;      // [B, width] in the weight dtype
  DeviceBuffer<float> projected_;         // [B, J]
  DeviceBuffer<float> blank_state_;       // [max_batch, state_size] all blank, for initial_state
  bool fused_ = fused_kernels_enabled();  // projections of few rows may run the fused kernel
};

class StatelessCudaPredictor final : public TransducerPredictor {
 public:
  StatelessCudaPredictor(const StatelessHostWeights& w, Device device) : device_(device), w_(w) {
    DeviceGuard guard(device);
    Stream stream(device);
    fused_shared_bytes_ = preload_predictor_kernels();
    const cudaStream_t s = stream.handle();
    std::vector<float> tables;
    std::vector<std::int64_t> table_offsets;
    for (const auto& table : w.embeddings) {
      table_offsets.push_back(static_cast<std::int64_t>(tables.size()));
      tables.insert(tables.end(), table.begin(), table.end());
    }
    std::vector<std::int64_t> slices = w.offsets;
    slices.push_back(w.width);
    tables_ = upload(tables, device, s);
    table_offsets_ = upload(table_offsets, device, s);
    slice_offsets_ = upload(slices, device, s);
    projection_weight_ = upload_as(w.projection_weight, w.dtype, w.joint, w.width, device, s, "joint.pred.weight");
    projection_bias_ = upload(w.projection_bias, device, s);
    stream.synchronize();
    w_.embeddings.clear();
    w_.projection_weight.clear();
    w_.projection_bias.clear();
  }

  Device device() const override { return device_; }
  std::int64_t state_size() const override { return w_.state_size(); }
  std::int64_t output_size() const override { return w_.joint; }
  std::unique_ptr<PredictorSession> start_session(std::int64_t max_batch) const override {
    return std::make_unique<StatelessCudaSession>(*this, max_batch);
  }

  /** Whether the projection of `batch` rows runs the fused kernel (every row's features in shared memory). */
  bool fused(std::int64_t batch) const { return joint_gemv_fits(batch, w_.width, fused_shared_bytes_); }

  Device device_;
  std::int64_t fused_shared_bytes_ = 0;  // what the fused kernel may use on this device
  StatelessHostWeights w_;
  DeviceBuffer<float> tables_;
  DeviceBuffer<std::int64_t> table_offsets_, slice_offsets_;
  DeviceBuffer<std::byte> projection_weight_;
  DeviceBuffer<float> projection_bias_;
};

StatelessCudaSession::StatelessCudaSession(const StatelessCudaPredictor& predictor, std::int64_t max_batch)
    : p_(predictor), max_batch_(std::max<std::int64_t>(max_batch, 1)) {
  if (!fused_ || !p_.fused(max_batch_)) gemm_.emplace(p_.device_);
  const auto rows = static_cast<std::size_t>(max_batch_);
  features_ =
      DeviceBuffer<std::byte>(rows * static_cast<std::size_t>(p_.w_.width) * dtype_size(p_.w_.dtype), p_.device_);
  projected_ = DeviceBuffer<float>(rows * static_cast<std::size_t>(p_.w_.joint), p_.device_);
  const std::vector<float> blanks(rows * static_cast<std::size_t>(p_.w_.state_size()), static_cast<float>(p_.w_.blank));
  Stream stream(p_.device_);
  blank_state_ = upload(blanks, p_.device_, stream.handle());
  fill_bytes_async(features_.data(), p_.device_, 0, features_.bytes(), stream.handle());  // rows never masked in
  stream.synchronize();
}

void StatelessCudaSession::initial_state(float* state, std::int64_t batch, StreamHandle stream) {
  ASRDEC_CHECK_ARG(batch <= max_batch_, "initial_state for ", batch, " rows, the session holds ", max_batch_);
  copy_bytes_async(state, p_.device_, blank_state_.data(), p_.device_,
                   static_cast<std::size_t>(batch * p_.w_.state_size()) * sizeof(float), stream);
}

void StatelessCudaSession::step(const std::int32_t* labels, const std::int32_t* mask, float* state, float* output,
                                std::int64_t batch, StreamHandle stream) {
  ASRDEC_CHECK_ARG(batch <= max_batch_, "predictor step for ", batch, " rows, the session holds ", max_batch_);
  StatelessParams params{};
  params.labels = labels;
  params.mask = mask;
  params.state = state;
  params.state_size = p_.w_.state_size();
  params.tables = p_.tables_.data();
  params.table_offsets = p_.table_offsets_.data();
  params.slice_offsets = p_.slice_offsets_.data();
  params.context = static_cast<std::int32_t>(p_.w_.context);
  params.vocab_rows = static_cast<std::int32_t>(p_.w_.vocab_rows);
  params.layer_norm = p_.w_.layer_norm ? 1 : 0;
  params.features = features_.data();
  params.dtype = p_.w_.dtype;
  params.batch = batch;
  params.width = p_.w_.width;
  launch_stateless_features(params, stream);
  if (fused_ && p_.fused(batch)) {
    FusedProjection projection{};
    projection.mask = mask;
    projection.input = features_.data();
    projection.weight = p_.projection_weight_.data();
    projection.bias = p_.projection_bias_.data();
    projection.output = output;
    projection.dtype = p_.w_.dtype;
    projection.batch = batch;
    projection.width = p_.w_.width;
    projection.joint = p_.w_.joint;
    launch_fused_projection(projection, stream);
  } else {
    gemm_->rows_times_weight_t(p_.projection_weight_.data(), p_.w_.dtype, p_.w_.joint, p_.w_.width, features_.data(),
                               p_.w_.width, batch, projected_.data(), p_.w_.joint, stream);
    launch_masked_bias(projected_.data(), p_.projection_bias_.data(), mask, output, batch, p_.w_.joint, stream);
  }
  launch_stateless_shift(params, stream);
}

}  // namespace

bool lstm_fused_step_of(PredictorSession& session, const std::int32_t* labels, const std::int32_t* mask, float* state,
                        float* output, std::int64_t batch, LstmFusedStep* step) {
  auto* lstm = dynamic_cast<LstmCudaSession*>(&session);
  return lstm != nullptr && lstm->fused_step_of(labels, mask, state, output, batch, step);
}

std::shared_ptr<TransducerPredictor> make_lstm_predictor_cuda(LstmHostWeights weights, Device device) {
  return std::make_shared<LstmCudaPredictor>(weights, device);
}

std::shared_ptr<TransducerPredictor> make_stateless_predictor_cuda(StatelessHostWeights weights, Device device) {
  return std::make_shared<StatelessCudaPredictor>(weights, device);
}

}  // namespace asrdec::detail

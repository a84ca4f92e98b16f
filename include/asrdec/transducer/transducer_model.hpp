#pragma once
/**
 * @file
 * A transducer model as asrdec decodes it: the joint network (`logits = W_out · act(enc_proj[t] + dec_proj) +
 * b_out`) and a prediction network (built-in LSTM or stateless, or one supplied by the engine). The encoder is
 * not part of it: engines pass enc_proj, the encoder output already projected into the joint space.
 *
 * Output layout of the joint: V + 1 token columns (the V tokens and the blank, at blank_id, by default V as in
 * NeMo) followed, for TDT, by D duration columns. Weights are fp32, fp16 or bf16; every product accumulates in
 * fp32, and activations that feed a matrix product are rounded to the weight dtype first (as a half-precision
 * GEMM does), identically on the CPU and on CUDA.
 *
 * The file format (safetensors, tensor names and metadata) is specified in docs/model-format.md; NeMo
 * checkpoints convert with `python3 -m asrdec.nemo` (docs/export-nemo.md).
 *
 * Thread safety: a TransducerModel is immutable after construction and may be shared by any number of decoders
 * and threads.
 */

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "asrdec/core/device.hpp"
#include "asrdec/core/dtype.hpp"
#include "asrdec/core/export.hpp"
#include "asrdec/core/tensor.hpp"
#include "asrdec/detail/activation.hpp"
#include "asrdec/transducer/predictor.hpp"

namespace asrdec {

enum class TransducerType { rnnt, tdt };

ASRDEC_API const char* to_string(TransducerType type) noexcept;
ASRDEC_API const char* to_string(JointActivation activation) noexcept;

/** The joint network's weights on one device. */
class ASRDEC_API TransducerJoint {
 public:
  /** out_weight: [V+1+D, J]; out_bias: [V+1+D] (any float dtype, host memory). Weights are stored in
   *  `weight_dtype`; the bias in fp32. Throws InvalidArgument for inconsistent shapes. */
  TransducerJoint(const TensorView& out_weight, const TensorView& out_bias, JointActivation activation,
                  DType weight_dtype, Device device);
  ~TransducerJoint();
  TransducerJoint(TransducerJoint&&) noexcept;
  TransducerJoint& operator=(TransducerJoint&&) noexcept;

  std::int64_t hidden_size() const noexcept;  ///< J
  std::int64_t output_size() const noexcept;  ///< V + 1 + D
  JointActivation activation() const noexcept;
  DType weight_dtype() const noexcept;
  Device device() const noexcept;

  struct Impl;
  const Impl& impl() const noexcept { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

/** The built-in LSTM prediction network (NeMo's RNNTDecoder): embedding (the blank embeds to zero), L LSTM
 *  layers of hidden size P (PyTorch gate order i, f, g, o), then the joint's prediction projection to J. The first
 *  layer's input projection W_ih · emb + b_ih + b_hh is precomputed per label at construction. */
struct ASRDEC_API LstmPredictorWeights {
  TensorView embedding;               ///< [V+1, E]
  std::vector<TensorView> weight_ih;  ///< per layer [4P, E] (layer 0) or [4P, P]
  std::vector<TensorView> weight_hh;  ///< per layer [4P, P]
  std::vector<TensorView> bias_ih;    ///< per layer [4P]
  std::vector<TensorView> bias_hh;    ///< per layer [4P]
  TensorView projection_weight;       ///< [J, P]
  TensorView projection_bias;         ///< [J]
};

ASRDEC_API std::shared_ptr<TransducerPredictor> make_lstm_predictor(const LstmPredictorWeights& weights,
                                                                    std::int32_t blank_id, DType weight_dtype,
                                                                    Device device);

/** The built-in stateless prediction network (NeMo's StatelessTransducerDecoder): the previous `context` labels
 *  (blank before the start), each embedded by its own table — position 0 is the most recent — concatenated,
 *  optionally layer-normalised (no affine), then projected to J. */
struct ASRDEC_API StatelessPredictorWeights {
  std::vector<TensorView> embeddings;  ///< per position [V+1, E_i], position 0 = most recent label
  bool layer_norm = false;
  TensorView projection_weight;  ///< [J, sum E_i]
  TensorView projection_bias;    ///< [J]
};

ASRDEC_API std::shared_ptr<TransducerPredictor> make_stateless_predictor(const StatelessPredictorWeights& weights,
                                                                         std::int32_t blank_id, DType weight_dtype,
                                                                         Device device);

struct ASRDEC_API TransducerLoadOptions {
  /** Weight dtype on the device; unset (the default) keeps the dtype of joint.out.weight in the file. */
  bool override_weight_dtype = false;
  DType weight_dtype = DType::f32;
};

class ASRDEC_API TransducerModel {
 public:
  /** Assembles a model from its parts (e.g. with an engine's own predictor). `durations` empty means RNN-T.
   *  Throws InvalidArgument when the parts do not fit together (sizes, devices, blank id). */
  TransducerModel(std::shared_ptr<const TransducerJoint> joint, std::shared_ptr<TransducerPredictor> predictor,
                  std::int64_t vocab_size, std::int32_t blank_id, std::vector<std::int32_t> durations);

  /** Loads a safetensors file in asrdec's transducer format onto `device`. Throws ParseError for a malformed or
   *  inconsistent file (naming the tensor and the expected versus found shape), Unsupported for a format
   *  version or feature asrdec does not know. */
  static TransducerModel load(const std::string& path, Device device, const TransducerLoadOptions& options = {});

  // Copies are cheap (the parts are shared). A move copies too, so that a moved-from model is still the same
  // working model rather than one whose parts are null.
  TransducerModel(const TransducerModel&) = default;
  TransducerModel& operator=(const TransducerModel&) = default;

  TransducerType type() const noexcept { return durations_.empty() ? TransducerType::rnnt : TransducerType::tdt; }
  std::int64_t vocab_size() const noexcept { return vocab_size_; }  ///< V (tokens, blank excluded)
  std::int32_t blank_id() const noexcept { return blank_id_; }
  const std::vector<std::int32_t>& durations() const noexcept { return durations_; }
  std::int64_t joint_hidden() const noexcept { return joint_->hidden_size(); }  ///< J
  Device device() const noexcept { return joint_->device(); }
  const TransducerJoint& joint() const noexcept { return *joint_; }
  const TransducerPredictor& predictor() const noexcept { return *predictor_; }
  std::string to_string() const;

 private:
  std::shared_ptr<const TransducerJoint> joint_;
  std::shared_ptr<TransducerPredictor> predictor_;
  std::int64_t vocab_size_;
  std::int32_t blank_id_;
  std::vector<std::int32_t> durations_;
};

}  // namespace asrdec

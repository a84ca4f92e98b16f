#include "asrdec/transducer/transducer_model.hpp"

#include <charconv>
#include <limits>
#include <sstream>

#include "asrdec/core/error.hpp"
#include "asrdec/core/safetensors.hpp"

namespace asrdec {
namespace {

constexpr const char* kFormat = "transducer-v1";
// LSTM layers or stateless context tokens: far beyond any published predictor, small enough to bound the loops.
constexpr std::int64_t kMaxPredictorDepth = 1024;
// TDT durations in frames (NeMo's models use 0-4 or 0-8).
constexpr std::int32_t kMaxTdtDuration = 1 << 16;

// Reading one file: every problem becomes a ParseError naming the file, except values asrdec does not know
// (a format version, model type, activation or predictor kind of a newer or other toolkit): Unsupported.
class ModelFile {
 public:
  explicit ModelFile(const std::string& path) : path_(path), file_(path) {}

  [[noreturn]] void fail(const std::string& message) const { throw ParseError(path_, 0, message); }
  [[noreturn]] void unsupported(const std::string& message) const {
    throw Unsupported(detail::concat(path_, ": ", message));
  }

  std::string meta(const std::string& key, const char* fallback = nullptr) const {
    const auto& metadata = file_.metadata();
    const auto found = metadata.find(key);
    if (found == metadata.end()) {
      if (fallback != nullptr) return fallback;
      fail(detail::concat("missing metadata key '", key, "'"));
    }
    return found->second;
  }

  /** An integer metadata value in [min, max]: every value is range-checked before it is narrowed or used. */
  std::int64_t meta_int(const std::string& key, const char* fallback, std::int64_t min, std::int64_t max) const {
    const std::string text = meta(key, fallback);
    std::int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) {
      fail(detail::concat("metadata '", key, "' = '", text, "' is not an integer",
                          error == std::errc::result_out_of_range ? " of 64 bits" : ""));
    }
    if (value < min || value > max) {
      fail(detail::concat("metadata '", key, "' = ", value, " is outside [", min, ", ", max, "]"));
    }
    return value;
  }

  TensorView tensor(const std::string& name) const {
    if (!file_.contains(name)) {
      fail(detail::concat("missing tensor '", name, "'"));
    }
    return file_.tensor(name);  // Unsupported for a dtype asrdec cannot read, naming the file and tensor
  }

  bool contains(const std::string& name) const { return file_.contains(name); }

  /** Wraps construction of a part so that a shape error names the file too. */
  template <class Build>
  auto build(Build&& build) const {
    try {
      return build();
    } catch (const InvalidArgument& error) {
      fail(error.what());
    }
  }

 private:
  std::string path_;
  SafetensorsFile file_;
};

JointActivation parse_activation(const ModelFile& file, const std::string& name) {
  if (name == "relu") return JointActivation::relu;
  if (name == "tanh") return JointActivation::tanh;
  if (name == "sigmoid") return JointActivation::sigmoid;
  file.unsupported(detail::concat("joint_activation '", name, "' is not supported (relu, tanh or sigmoid)"));
}

std::vector<std::int32_t> parse_durations(const ModelFile& file, const std::string& text) {
  std::vector<std::int32_t> durations;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::int32_t value = -1;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (error != std::errc() || end != item.data() + item.size() || value < 0) {
      file.fail(detail::concat("durations '", text, "' must be comma-separated non-negative integers"));
    }
    durations.push_back(value);
  }
  return durations;
}

}  // namespace

TransducerModel::TransducerModel(std::shared_ptr<const TransducerJoint> joint,
                                 std::shared_ptr<TransducerPredictor> predictor, std::int64_t vocab_size,
                                 std::int32_t blank_id, std::vector<std::int32_t> durations)
    : joint_(std::move(joint)),
      predictor_(std::move(predictor)),
      vocab_size_(vocab_size),
      blank_id_(blank_id),
      durations_(std::move(durations)) {
  ASRDEC_CHECK_ARG(joint_ != nullptr && predictor_ != nullptr, "TransducerModel needs a joint and a predictor");
  ASRDEC_CHECK_ARG(vocab_size_ >= 1, "vocab_size must be positive, got ", vocab_size_);
  ASRDEC_CHECK_ARG(blank_id_ >= 0 && blank_id_ <= vocab_size_, "blank id ", blank_id_,
                   " must be one of the V+1 = ", vocab_size_ + 1, " token columns (0..", vocab_size_, ")");
  const auto expected_outputs = vocab_size_ + 1 + static_cast<std::int64_t>(durations_.size());
  ASRDEC_CHECK_ARG(joint_->output_size() == expected_outputs, "joint has ", joint_->output_size(),
                   " outputs but vocab_size ", vocab_size_, " + blank + ", durations_.size(), " durations make ",
                   expected_outputs);
  ASRDEC_CHECK_ARG(predictor_->output_size() == joint_->hidden_size(), "predictor output size ",
                   predictor_->output_size(), " differs from the joint hidden size ", joint_->hidden_size());
  ASRDEC_CHECK_ARG(predictor_->device() == joint_->device(), "predictor on ", predictor_->device().to_string(),
                   " but joint on ", joint_->device().to_string());
  for (std::int32_t d : durations_) {
    // Frame arithmetic is int32 (t + d with t < 2^30): a bounded duration cannot overflow it.
    ASRDEC_CHECK_ARG(d >= 0 && d <= kMaxTdtDuration, "TDT durations must lie in [0, ", kMaxTdtDuration, "], got ", d);
  }
}

TransducerModel TransducerModel::load(const std::string& path, Device device, const TransducerLoadOptions& options) {
  // An argument error is the caller's, not the file's: checked before anything is read.
  ASRDEC_CHECK_ARG(!options.override_weight_dtype || is_floating(options.weight_dtype),
                   "TransducerLoadOptions.weight_dtype must be float32, float16 or bfloat16, got ",
                   dtype_name(options.weight_dtype));
  const ModelFile file(path);
  const std::string format = file.meta("asrdec.format");
  if (format != kFormat) {
    throw Unsupported(detail::concat(path, ": model format '", format, "' is not supported (expected ", kFormat, ")"));
  }
  const std::string type = file.meta("model_type");
  if (type != "rnnt" && type != "tdt") {
    file.unsupported(detail::concat("model_type '", type, "' is not supported (rnnt or tdt)"));
  }
  // Token ids are int32 everywhere (V + 1 columns, blank among them).
  const std::int64_t vocab = file.meta_int("vocab_size", nullptr, 1, std::numeric_limits<std::int32_t>::max() - 1);
  const auto blank = static_cast<std::int32_t>(file.meta_int("blank_id", std::to_string(vocab).c_str(), 0, vocab));
  std::vector<std::int32_t> durations = parse_durations(file, file.meta("durations", ""));
  if (type == "tdt" && durations.empty()) file.fail("model_type tdt needs durations");
  if (type == "rnnt" && !durations.empty()) file.fail("model_type rnnt must not list durations");
  const JointActivation activation = parse_activation(file, file.meta("joint_activation", "relu"));

  const TensorView out_weight = file.tensor("joint.out.weight");
  const DType dtype = options.override_weight_dtype ? options.weight_dtype : out_weight.dtype();
  auto joint = file.build([&] {
    return std::make_shared<const TransducerJoint>(out_weight, file.tensor("joint.out.bias"), activation, dtype,
                                                   device);
  });

  const std::string kind = file.meta("predictor", "lstm");
  std::shared_ptr<TransducerPredictor> predictor;
  if (kind == "lstm") {
    LstmPredictorWeights w;
    w.embedding = file.tensor("predictor.embedding.weight");
    const std::int64_t layers = file.meta_int("predictor_layers", "1", 1, kMaxPredictorDepth);
    for (std::int64_t l = 0; l < layers; ++l) {
      const std::string prefix = "predictor.lstm." + std::to_string(l) + ".";
      w.weight_ih.push_back(file.tensor(prefix + "weight_ih"));
      w.weight_hh.push_back(file.tensor(prefix + "weight_hh"));
      w.bias_ih.push_back(file.tensor(prefix + "bias_ih"));
      w.bias_hh.push_back(file.tensor(prefix + "bias_hh"));
    }
    if (file.contains("predictor.lstm." + std::to_string(layers) + ".weight_hh")) {
      file.fail(detail::concat("predictor_layers says ", layers, " but the file holds more LSTM layers"));
    }
    w.projection_weight = file.tensor("joint.pred.weight");
    w.projection_bias = file.tensor("joint.pred.bias");
    predictor = file.build([&] { return make_lstm_predictor(w, blank, dtype, device); });
  } else if (kind == "stateless") {
    StatelessPredictorWeights w;
    const std::int64_t context = file.meta_int("predictor_context", nullptr, 1, kMaxPredictorDepth);
    for (std::int64_t i = 0; i < context; ++i) {
      w.embeddings.push_back(file.tensor("predictor.embeds." + std::to_string(i) + ".weight"));
    }
    const std::string norm = file.meta("predictor_norm", "none");
    if (norm != "layer" && norm != "none") {
      file.unsupported("predictor_norm '" + norm + "' is not supported (layer or none)");
    }
    w.layer_norm = norm == "layer";
    w.projection_weight = file.tensor("joint.pred.weight");
    w.projection_bias = file.tensor("joint.pred.bias");
    predictor = file.build([&] { return make_stateless_predictor(w, blank, dtype, device); });
  } else {
    throw Unsupported(detail::concat(path, ": predictor '", kind, "' is not supported (lstm or stateless)"));
  }
  return file.build([&] { return TransducerModel(joint, predictor, vocab, blank, std::move(durations)); });
}

std::string TransducerModel::to_string() const {
  std::string durations;
  for (std::size_t i = 0; i < durations_.size(); ++i) durations += (i ? "," : "") + std::to_string(durations_[i]);
  return detail::concat("TransducerModel{", asrdec::to_string(type()), ", V=", vocab_size_, ", blank=", blank_id_,
                        durations_.empty() ? "" : ", durations=" + durations, ", J=", joint_hidden(),
                        ", activation=", asrdec::to_string(joint_->activation()),
                        ", weights=", dtype_name(joint_->weight_dtype()), ", device=", device().to_string(), "}");
}

}  // namespace asrdec

// Greedy transducer decoding with a prediction network supplied by the engine. asrdec runs the search and the
// joint; the engine runs its own predictor (in production a TensorRT or ONNX Runtime engine) behind the
// asrdec::TransducerPredictor interface. Here the engine's predictor is a plain C++ LSTM reading the weights of the
// sample model, so the program can check that it decodes exactly what the built-in predictor decodes.
//
// The contract (asrdec/transducer/predictor.hpp, docs/engine-integration.md): a state of state_size() floats per
// utterance; step() advances only the rows whose mask is set and writes the projected output (J floats). A CUDA
// predictor's step must only enqueue work on the stream it is given — no synchronisation, no allocation, no
// pointers other than its arguments and its session's — because decoders capture it into CUDA graphs.
//
//   transducer_predictor_example model.safetensors enc_proj.npy lengths.npy tokens.txt

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "example_support.hpp"

namespace {

// The engine's network: embedding, L LSTM layers (PyTorch gate order i, f, g, o), projection into the joint space.
// State per utterance: h and c of every layer, [L][2][P] floats.
class EngineLstmPredictor final : public asrdec::TransducerPredictor {
 public:
  explicit EngineLstmPredictor(const asrdec::SafetensorsFile& file) : file_(file) {
    const auto& meta = file.metadata();
    layers_ = meta.count("predictor_layers") != 0 ? std::stoi(meta.at("predictor_layers")) : 1;
    embedding_ = file.tensor("predictor.embedding.weight");
    for (int l = 0; l < layers_; ++l) {
      const std::string prefix = "predictor.lstm." + std::to_string(l) + ".";
      weight_ih_.push_back(file.tensor(prefix + "weight_ih"));
      weight_hh_.push_back(file.tensor(prefix + "weight_hh"));
      bias_ih_.push_back(file.tensor(prefix + "bias_ih"));
      bias_hh_.push_back(file.tensor(prefix + "bias_hh"));
    }
    projection_weight_ = file.tensor("joint.pred.weight");
    projection_bias_ = file.tensor("joint.pred.bias");
    hidden_ = weight_hh_[0].size(1);
  }

  asrdec::Device device() const override { return asrdec::Device::cpu(); }
  std::int64_t state_size() const override { return 2 * layers_ * hidden_; }
  std::int64_t output_size() const override { return projection_weight_.size(0); }
  std::unique_ptr<asrdec::PredictorSession> start_session(std::int64_t /*max_batch*/) const override {
    return std::make_unique<Session>(*this);
  }

 private:
  // y = W x + b for a row-major float32 W [out, in].
  static void affine(const asrdec::TensorView& w, const asrdec::TensorView* b, const float* x, float* y) {
    const float* weight = w.data_as<float>();
    const std::int64_t out = w.size(0), in = w.size(1);
    for (std::int64_t o = 0; o < out; ++o) {
      float sum = b != nullptr ? b->data_as<float>()[o] : 0.0f;
      for (std::int64_t i = 0; i < in; ++i) sum += weight[o * in + i] * x[i];
      y[o] = sum;
    }
  }
  static float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

  class Session final : public asrdec::PredictorSession {
   public:
    explicit Session(const EngineLstmPredictor& net)
        : net_(net), gates_(4 * net.hidden_), recurrent_(4 * net.hidden_) {}

    void initial_state(float* state, std::int64_t batch, asrdec::StreamHandle) override {
      std::fill(state, state + batch * net_.state_size(), 0.0f);
    }

    void step(const std::int32_t* labels, const std::int32_t* mask, float* state, float* output, std::int64_t batch,
              asrdec::StreamHandle) override {
      const std::int64_t p = net_.hidden_;
      for (std::int64_t b = 0; b < batch; ++b) {
        if (mask[b] == 0) continue;  // rows without a new label keep their state and output
        const float* x = net_.embedding_.data_as<float>() + labels[b] * net_.embedding_.size(1);
        float* row = state + b * net_.state_size();
        for (int l = 0; l < net_.layers_; ++l) {
          float* h = row + 2 * l * p;
          float* c = h + p;
          affine(net_.weight_ih_[l], &net_.bias_ih_[l], x, gates_.data());
          affine(net_.weight_hh_[l], &net_.bias_hh_[l], h, recurrent_.data());
          for (std::int64_t j = 0; j < p; ++j) {
            const float i = sigmoid(gates_[j] + recurrent_[j]);
            const float f = sigmoid(gates_[p + j] + recurrent_[p + j]);
            const float g = std::tanh(gates_[2 * p + j] + recurrent_[2 * p + j]);
            const float o = sigmoid(gates_[3 * p + j] + recurrent_[3 * p + j]);
            c[j] = f * c[j] + i * g;
            h[j] = o * std::tanh(c[j]);
          }
          x = h;  // the next layer's input
        }
        affine(net_.projection_weight_, &net_.projection_bias_, x, output + b * net_.output_size());
      }
    }

   private:
    const EngineLstmPredictor& net_;
    std::vector<float> gates_, recurrent_;
  };

  asrdec::SafetensorsFile file_;  // keeps the mapped weights alive
  int layers_ = 1;
  std::int64_t hidden_ = 0;
  asrdec::TensorView embedding_, projection_weight_, projection_bias_;
  std::vector<asrdec::TensorView> weight_ih_, weight_hh_, bias_ih_, bias_hh_;
};

asrdec::JointActivation parse_activation(const std::string& name) {
  if (name == "tanh") return asrdec::JointActivation::tanh;
  if (name == "sigmoid") return asrdec::JointActivation::sigmoid;
  return asrdec::JointActivation::relu;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s model.safetensors enc_proj.npy lengths.npy tokens.txt\n", argv[0]);
    return 2;
  }
  try {
    const asrdec::SafetensorsFile file(argv[1]);
    const auto& meta = file.metadata();
    if (meta.count("predictor") != 0 && meta.at("predictor") != "lstm") {
      std::fprintf(stderr, "this example's predictor is an LSTM; %s has a %s predictor\n", argv[1],
                   meta.at("predictor").c_str());
      return 2;
    }
    if (file.entry("joint.out.weight").dtype != "F32" || file.entry("predictor.embedding.weight").dtype != "F32") {
      std::fprintf(stderr, "this example reads float32 weights\n");
      return 2;
    }

    // The joint comes from asrdec, the predictor from the engine; TransducerModel checks that they fit together.
    auto joint = std::make_shared<const asrdec::TransducerJoint>(
        file.tensor("joint.out.weight"), file.tensor("joint.out.bias"),
        parse_activation(meta.count("joint_activation") != 0 ? meta.at("joint_activation") : "relu"),
        asrdec::DType::f32, asrdec::Device::cpu());
    std::vector<std::int32_t> durations;
    std::stringstream list(meta.count("durations") != 0 ? meta.at("durations") : "");
    for (std::string item; std::getline(list, item, ',');) durations.push_back(std::stoi(item));
    const std::int64_t vocab = std::stoll(meta.at("vocab_size"));
    const auto blank = static_cast<std::int32_t>(meta.count("blank_id") != 0 ? std::stoll(meta.at("blank_id")) : vocab);
    const asrdec::TransducerModel engine_model(joint, std::make_shared<EngineLstmPredictor>(file), vocab, blank,
                                               durations);

    const asrdec::NpyArray enc_proj = asrdec::read_npy(argv[2]);  // [B, T, J]
    const asrdec::NpyArray lengths = asrdec::read_npy(argv[3]);   // [B]
    const asrdec::Vocabulary vocabulary = asrdec::Vocabulary::load(argv[4]);
    asrdec::TransducerGreedyDecoder decoder(engine_model);  // label looping
    const std::vector<asrdec::Hypothesis> hyps = decoder.decode(enc_proj.view(), lengths.view());
    for (std::size_t i = 0; i < hyps.size() && i < 3; ++i) example::print_result(i, hyps[i], vocabulary);

    // The same model with asrdec's built-in predictor: the same search over the same network.
    const asrdec::TransducerModel builtin = asrdec::TransducerModel::load(argv[1], asrdec::Device::cpu());
    const std::vector<asrdec::Hypothesis> want =
        asrdec::TransducerGreedyDecoder(builtin).decode(enc_proj.view(), lengths.view());
    std::size_t equal = 0;
    for (std::size_t i = 0; i < hyps.size(); ++i) {
      equal += hyps[i].tokens == want[i].tokens && hyps[i].timestamps == want[i].timestamps ? 1 : 0;
    }
    std::printf("%zu of %zu transcripts equal the built-in predictor's\n", equal, hyps.size());
    return equal == hyps.size() ? 0 : 1;
  } catch (const asrdec::Error& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
}

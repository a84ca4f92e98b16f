#include <atomic>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "oracles/transducer_greedy_reference.hpp"
#include "transducer/random_transducer.hpp"

namespace asrdec {
namespace {

struct Expected {
  std::vector<std::int32_t> tokens, timestamps, durations;
  double score;
};

std::vector<Expected> load_expected(const std::string& path) {
  std::ifstream in(path);
  std::vector<Expected> out;
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    Expected e{j.at("tokens").get<std::vector<std::int32_t>>(),
               j.at("timestamps").get<std::vector<std::int32_t>>(),
               {},
               j.at("score").get<double>()};
    if (j.contains("durations")) e.durations = j.at("durations").get<std::vector<std::int32_t>>();
    out.push_back(std::move(e));
  }
  return out;
}

// The shipped samples were planted and checked by the generator's own NumPy decoder; the library must agree. The
// real sample (a trained model's outputs) has the exporter's NumPy greedy decoding in expected_rnnt_greedy.jsonl.
void check_sample(const std::string& name, Device device, GraphMode mode) {
  const std::string dir = testing::source_path("examples/data/" + name + "/");
  const std::string expected_file = name == "real" ? "expected_rnnt_greedy.jsonl" : "expected_greedy.jsonl";
  const TransducerModel model = TransducerModel::load(dir + "model.safetensors", device);
  EXPECT_EQ(model.type(), name == "tdt" ? TransducerType::tdt : TransducerType::rnnt);
  EXPECT_EQ(model.vocab_size(), 256);
  EXPECT_EQ(model.blank_id(), 256);
  const NpyArray enc = read_npy(dir + "enc_proj.npy");
  const NpyArray lengths = read_npy(dir + "lengths.npy");
  const std::vector<Expected> expected = load_expected(dir + expected_file);
  DeviceBuffer<std::byte> on_device;
  TensorView input = enc.view();
  if (device.is_cuda()) {
    on_device = testing::to_device(enc.data(), enc.bytes(), device);
    input = TensorView(on_device.data(), enc.dtype(), {enc.shape()[0], enc.shape()[1], enc.shape()[2]}, device);
  }
  std::vector<std::pair<TransducerGreedyAlgorithm, int>> algorithms = {{TransducerGreedyAlgorithm::frame_looping, 1},
                                                                       {TransducerGreedyAlgorithm::label_looping, 1}};
  if (name != "tdt") algorithms.push_back({TransducerGreedyAlgorithm::wind, 8});
  for (const auto& [algorithm, window] : algorithms) {
    SCOPED_TRACE(std::string(to_string(algorithm)));
    TransducerGreedyConfig config;
    config.algorithm = algorithm;
    config.window = window;
    config.graph_mode = mode;
    TransducerGreedyDecoder decoder(model, config);
    const auto hyps = decoder.decode(input, lengths.view());
    ASSERT_EQ(hyps.size(), expected.size());
    for (std::size_t i = 0; i < hyps.size(); ++i) {
      SCOPED_TRACE("utterance " + std::to_string(i));
      EXPECT_EQ(hyps[i].tokens, expected[i].tokens);
      EXPECT_EQ(hyps[i].timestamps, expected[i].timestamps);
      EXPECT_EQ(hyps[i].durations, expected[i].durations);
      EXPECT_NEAR(hyps[i].score, expected[i].score, 1e-3 * std::max(1.0, std::fabs(expected[i].score)));
    }
  }
  if (device.is_cpu()) {
    const auto reference = transducer_greedy_reference(model, input, lengths.view());
    for (std::size_t i = 0; i < reference.size(); ++i) EXPECT_EQ(reference[i].tokens, expected[i].tokens) << i;
  }
}

TEST(TransducerSample, RnntMatchesTheGeneratorsDecoder) { check_sample("rnnt", Device::cpu(), GraphMode::eager); }
TEST(TransducerSample, TdtMatchesTheGeneratorsDecoder) { check_sample("tdt", Device::cpu(), GraphMode::eager); }
TEST(TransducerSample, RealMatchesTheExportersDecoder) { check_sample("real", Device::cpu(), GraphMode::eager); }

TEST(TransducerSampleCUDA, RnntAndTdtMatchTheGeneratorsDecoderInEveryGraphMode) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  for (GraphMode mode : {GraphMode::conditional, GraphMode::per_step, GraphMode::eager}) {
    SCOPED_TRACE(to_string(mode));
    check_sample("rnnt", Device::cuda(0), mode);
    check_sample("tdt", Device::cuda(0), mode);
    check_sample("real", Device::cuda(0), mode);
  }
}

// Writes a copy of the RNN-T sample model with one change, for the loader's error paths.
std::string altered_model(const std::string& name, const std::function<void(nlohmann::json&)>& change) {
  const std::string source = testing::source_path("examples/data/rnnt/model.safetensors");
  std::ifstream in(source, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::uint64_t size = 0;
  for (int i = 0; i < 8; ++i) size |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  nlohmann::json header = nlohmann::json::parse(bytes.substr(8, size));
  change(header);
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const std::string path = testing::temp_path(name);
  std::ofstream out(path, std::ios::binary);
  const std::uint64_t new_size = text.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((new_size >> (8 * i)) & 0xff));
  out << text << bytes.substr(8 + size);
  return path;
}

// Writes a twin of a sample model whose tensors start at offsets that are not multiples of their element sizes, as
// the format allows: either a BF16 tensor of odd length first (every tensor after it moves by 6 bytes), or a header
// whose length leaves the data section at an odd byte of the file (every tensor moves).
std::string unaligned_twin(const std::string& sample, bool odd_tensor_first) {
  const std::string source = testing::source_path("examples/data/" + sample + "/model.safetensors");
  std::ifstream in(source, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::uint64_t size = 0;
  for (int i = 0; i < 8; ++i) size |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  nlohmann::json header = nlohmann::json::parse(bytes.substr(8, size));
  std::string data = bytes.substr(8 + size);
  if (odd_tensor_first) {
    const std::uint64_t shift = 6;  // three BF16 values: 1.0, -2.0, 0.5
    for (auto& [name, entry] : header.items()) {
      if (name == "__metadata__") continue;
      entry["data_offsets"][0] = entry["data_offsets"][0].get<std::uint64_t>() + shift;
      entry["data_offsets"][1] = entry["data_offsets"][1].get<std::uint64_t>() + shift;
    }
    header["extra.odd_bf16"] = {{"dtype", "BF16"}, {"shape", {3}}, {"data_offsets", {0, shift}}};
    data = std::string("\x80\x3f\x00\xc0\x00\x3f", shift) + data;
  }
  std::string text = header.dump();
  const std::size_t want = odd_tensor_first ? 0 : 1;  // data at 8 + text.size(): 8-aligned, or odd
  while (text.size() % 8 != want) text.push_back(' ');
  const std::string path = testing::temp_path(sample + (odd_tensor_first ? "_odd_tensor.st" : "_odd_header.st"));
  std::ofstream out(path, std::ios::binary);
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((std::uint64_t{text.size()} >> (8 * i)) & 0xff));
  out << text << data;
  return path;
}

// Unaligned tensors are read through aligned copies: the twin decodes exactly as the shipped model (greedy and beam
// search, tokens, frames, durations and scores bit for bit).
TEST(TransducerModelLoad, UnalignedTensorsDecodeAsTheirAlignedTwin) {
  for (const std::string sample : {"rnnt", "tdt"}) {
    const std::string dir = testing::source_path("examples/data/" + sample + "/");
    const NpyArray enc = read_npy(dir + "enc_proj.npy");
    const NpyArray lengths = read_npy(dir + "lengths.npy");
    const auto decode = [&](const TransducerModel& model) {
      std::vector<Hypothesis> out = TransducerGreedyDecoder(model).decode(enc.view(), lengths.view());
      TransducerBeamConfig beam;
      beam.beam = 2;
      const std::vector<Hypothesis> beams = TransducerBeamDecoder(model, beam).decode(enc.view(), lengths.view());
      out.insert(out.end(), beams.begin(), beams.end());
      return out;
    };
    const std::vector<Hypothesis> want = decode(TransducerModel::load(dir + "model.safetensors", Device::cpu()));
    for (const bool odd_tensor_first : {true, false}) {
      SCOPED_TRACE(sample + (odd_tensor_first ? ": a BF16 tensor of odd length first" : ": a header of odd length"));
      const std::string path = unaligned_twin(sample, odd_tensor_first);
      const SafetensorsFile file(path);
      const auto address = reinterpret_cast<std::uintptr_t>(file.tensor("joint.out.weight").data());
      EXPECT_EQ(address % 4, 0u) << "a view must be aligned to its elements";
      if (odd_tensor_first) {
        const TensorView odd = file.tensor("extra.odd_bf16");
        EXPECT_EQ(detail::to_float(odd.data_as<bfloat16_t>()[1]), -2.0f);
      }
      const std::vector<Hypothesis> got = decode(TransducerModel::load(path, Device::cpu()));
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].tokens, want[i].tokens) << i;
        EXPECT_EQ(got[i].timestamps, want[i].timestamps) << i;
        EXPECT_EQ(got[i].durations, want[i].durations) << i;
        EXPECT_EQ(got[i].score, want[i].score) << i;
      }
    }
  }
}

TEST(TransducerModelLoad, ErrorsNameTheFileAndTheProblem) {
  const auto load = [](const std::string& path) { return TransducerModel::load(path, Device::cpu()); };
  ASRDEC_EXPECT_THROW_MSG(load(altered_model("format.st", [](auto& h) { h["__metadata__"]["asrdec.format"] = "x"; })),
                          Unsupported, "model format 'x' is not supported (expected transducer-v1)");
  ASRDEC_EXPECT_THROW_MSG(load(altered_model("type.st", [](auto& h) { h["__metadata__"]["model_type"] = "ctc"; })),
                          Unsupported, "type.st: model_type 'ctc' is not supported (rnnt or tdt)");
  ASRDEC_EXPECT_THROW_MSG(load(altered_model("vocab.st", [](auto& h) { h["__metadata__"]["vocab_size"] = "300"; })),
                          ParseError, "joint has 257 outputs but vocab_size 300 + blank + 0 durations make 301");
  ASRDEC_EXPECT_THROW_MSG(load(altered_model("missing.st",
                                             [](auto& h) {
                                               h["unused"] = h["joint.pred.bias"];
                                               h.erase("joint.pred.bias");
                                             })),
                          ParseError, "missing tensor 'joint.pred.bias'");
  // Integers are range-checked before they are narrowed: 2^32 must not become blank id 0.
  ASRDEC_EXPECT_THROW_MSG(
      load(altered_model("blank.st", [](auto& h) { h["__metadata__"]["blank_id"] = "4294967296"; })), ParseError,
      "metadata 'blank_id' = 4294967296 is outside [0, 256]");
  ASRDEC_EXPECT_THROW_MSG(
      load(altered_model("bigvocab.st", [](auto& h) { h["__metadata__"]["vocab_size"] = "1099511627776"; })),
      ParseError, "metadata 'vocab_size' = 1099511627776 is outside [1, 2147483646]");
  ASRDEC_EXPECT_THROW_MSG(
      load(altered_model("huge.st", [](auto& h) { h["__metadata__"]["vocab_size"] = "99999999999999999999"; })),
      ParseError, "metadata 'vocab_size' = '99999999999999999999' is not an integer of 64 bits");
  ASRDEC_EXPECT_THROW_MSG(
      load(altered_model("layers.st", [](auto& h) { h["__metadata__"]["predictor_layers"] = "-1"; })), ParseError,
      "metadata 'predictor_layers' = -1 is outside [1, 1024]");
  ASRDEC_EXPECT_THROW_MSG(load(altered_model("noint.st", [](auto& h) { h["__metadata__"]["vocab_size"] = "many"; })),
                          ParseError, "metadata 'vocab_size' = 'many' is not an integer");
  ASRDEC_EXPECT_THROW_MSG(
      load(altered_model("act.st", [](auto& h) { h["__metadata__"]["joint_activation"] = "gelu"; })), Unsupported,
      "act.st: joint_activation 'gelu' is not supported (relu, tanh or sigmoid)");
  // A bad option is the caller's mistake, not the file's.
  TransducerLoadOptions options;
  options.override_weight_dtype = true;
  options.weight_dtype = DType::i32;
  ASRDEC_EXPECT_THROW_MSG(TransducerModel::load(altered_model("ok.st", [](auto&) {}), Device::cpu(), options),
                          InvalidArgument, "TransducerLoadOptions.weight_dtype must be float32, float16 or bfloat16");
  ASRDEC_EXPECT_THROW_MSG(load(altered_model("durations.st", [](auto& h) { h["__metadata__"]["durations"] = "0,1"; })),
                          ParseError, "model_type rnnt must not list durations");
  // A shape that does not match: swap the two LSTM weight matrices' names.
  ASRDEC_EXPECT_THROW_MSG(load(altered_model("shape.st",
                                             [](auto& h) {
                                               auto pred = h["joint.pred.weight"];
                                               h["joint.pred.weight"] = h["joint.pred.bias"];
                                               h["joint.pred.bias"] = pred;
                                             })),
                          ParseError, "joint.pred.weight: expected [J, P], got [64]");
  ASRDEC_EXPECT_THROW_MSG(load(testing::temp_path("absent.safetensors")), Error, "cannot open for reading");
}

TEST(TransducerModel, PartsMustFitTogether) {
  std::mt19937_64 rng(3);
  testing::RandomTransducerSpec spec;
  const testing::RandomTransducer random = make_random_transducer(spec, rng);
  auto joint = std::make_shared<const TransducerJoint>(random.out_weight, random.out_bias, JointActivation::relu,
                                                       DType::f32, Device::cpu());
  auto predictor = make_lstm_predictor(random.lstm, 8, DType::f32, Device::cpu());
  ASRDEC_EXPECT_THROW_MSG(TransducerModel(joint, predictor, 9, 9, {}), InvalidArgument,
                          "joint has 9 outputs but vocab_size 9 + blank + 0 durations make 10");
  ASRDEC_EXPECT_THROW_MSG(TransducerModel(joint, predictor, 8, 9, {}), InvalidArgument,
                          "blank id 9 must be one of the V+1 = 9 token columns (0..8)");
  const TransducerModel model(joint, predictor, 8, 8, {});
  EXPECT_EQ(model.to_string(),
            "TransducerModel{rnnt, V=8, blank=8, J=8, activation=relu, weights=float32, device=cpu}");
}

}  // namespace
}  // namespace asrdec

namespace asrdec {
namespace {

// An engine's own predictor: here a wrapper around the built-in one that counts the rows it steps and checks
// the interface contract (masked rows only, batch within the session's maximum).
class CountingPredictor final : public TransducerPredictor {
 public:
  explicit CountingPredictor(std::shared_ptr<TransducerPredictor> inner) : inner_(std::move(inner)) {}
  Device device() const override { return inner_->device(); }
  std::int64_t state_size() const override { return inner_->state_size(); }
  std::int64_t output_size() const override { return inner_->output_size(); }
  std::unique_ptr<PredictorSession> start_session(std::int64_t max_batch) const override {
    struct Session final : PredictorSession {
      std::unique_ptr<PredictorSession> inner;
      std::int64_t max_batch;
      std::atomic<std::int64_t>* steps;
      void initial_state(float* state, std::int64_t batch, StreamHandle stream) override {
        inner->initial_state(state, batch, stream);
      }
      void step(const std::int32_t* labels, const std::int32_t* mask, float* state, float* output, std::int64_t batch,
                StreamHandle stream) override {
        EXPECT_LE(batch, max_batch);
        for (std::int64_t b = 0; b < batch; ++b) *steps += mask[b] ? 1 : 0;  // sessions step on several threads
        inner->step(labels, mask, state, output, batch, stream);
      }
    };
    auto session = std::make_unique<Session>();
    session->inner = inner_->start_session(max_batch);
    session->max_batch = max_batch;
    session->steps = &steps_;
    return session;
  }
  mutable std::atomic<std::int64_t> steps_{0};

 private:
  std::shared_ptr<TransducerPredictor> inner_;
};

TEST(TransducerModel, EnginePredictorsPlugIn) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  testing::RandomTransducerSpec spec = testing::random_spec(rng);
  spec.stateless = false;
  const testing::RandomTransducer random = make_random_transducer(spec, rng);
  const TransducerModel plain = random.build(Device::cpu());
  auto joint = std::make_shared<const TransducerJoint>(random.out_weight, random.out_bias, random.spec.activation,
                                                       random.spec.dtype, Device::cpu());
  auto counting = std::make_shared<CountingPredictor>(
      make_lstm_predictor(random.lstm, random.spec.blank, random.spec.dtype, Device::cpu()));
  const TransducerModel custom(joint, counting, spec.vocab, random.spec.blank,
                               spec.tdt ? spec.durations : std::vector<std::int32_t>{});
  const testing::RandomEncoded e = testing::random_encoded(rng, spec, 6, 20);
  const auto want = TransducerGreedyDecoder(plain).decode(e.enc(), e.lens());
  const auto got = TransducerGreedyDecoder(custom).decode(e.enc(), e.lens());
  testing::expect_same_hypotheses(got, want, 0.0, "engine predictor");
  std::int64_t labels = 0;
  for (const auto& h : want) labels += static_cast<std::int64_t>(h.tokens.size());
  // Every utterance starts from the same state, the predictor after the start symbol: one step per decoder.
  EXPECT_EQ(counting->steps_.load(), labels + 1) << "one step per label plus the start symbol once";
}

}  // namespace
}  // namespace asrdec

// The shipped CTC samples decoded by the library must give exactly what a NumPy greedy decoder recorded: the sample
// generator's in ctc/expected_greedy.jsonl, the real model exporter's in real/expected_ctc_greedy.jsonl (a trained
// model's outputs): a cross-implementation check on realistic data.

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/test_support.hpp"

namespace asrdec {
namespace {

struct Expected {
  std::vector<std::int32_t> tokens;
  std::vector<std::int32_t> timestamps;
  double score;
};

std::vector<Expected> load_expected(const std::string& path) {
  std::ifstream in(path);
  std::vector<Expected> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    out.push_back({j.at("tokens").get<std::vector<std::int32_t>>(), j.at("timestamps").get<std::vector<std::int32_t>>(),
                   j.at("score").get<double>()});
  }
  return out;
}

void check_sample(Device device, const std::string& name, const std::string& expected_file) {
  SCOPED_TRACE(name);
  const std::string dir = testing::source_path("examples/data/" + name + "/");
  const NpyArray logprobs = read_npy(dir + "logprobs.npy");
  const NpyArray lengths = read_npy(dir + "lengths.npy");
  const std::vector<Expected> expected = load_expected(dir + expected_file);
  ASSERT_EQ(static_cast<std::int64_t>(expected.size()), logprobs.shape()[0]);
  CtcGreedyDecoder decoder(device);
  DeviceBuffer<std::byte> on_device;
  TensorView input = logprobs.view();
  if (device.is_cuda()) {
    on_device = testing::to_device(logprobs.data(), logprobs.bytes(), device);
    input = TensorView(on_device.data(), logprobs.dtype(),
                       {logprobs.shape()[0], logprobs.shape()[1], logprobs.shape()[2]}, device);
  }
  const auto hypotheses = decoder.decode(input, lengths.view());
  ASSERT_EQ(hypotheses.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("utterance " + std::to_string(i));
    EXPECT_EQ(hypotheses[i].tokens, expected[i].tokens);
    EXPECT_EQ(hypotheses[i].timestamps, expected[i].timestamps);
    EXPECT_NEAR(hypotheses[i].score, expected[i].score, 1e-4 * std::max(1.0, std::fabs(expected[i].score)));
  }
}

TEST(CtcGreedySample, CpuReproducesTheGeneratorsGreedyOutput) {
  check_sample(Device::cpu(), "ctc", "expected_greedy.jsonl");
  check_sample(Device::cpu(), "real", "expected_ctc_greedy.jsonl");
}

TEST(CtcGreedySampleCUDA, CudaReproducesTheGeneratorsGreedyOutput) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  check_sample(Device::cuda(0), "ctc", "expected_greedy.jsonl");
  check_sample(Device::cuda(0), "real", "expected_ctc_greedy.jsonl");
}

TEST(SampleData, TokenTableMatchesTheModels) {
  const Vocabulary vocabulary = Vocabulary::load(testing::source_path("examples/data/tokens.txt"));
  const NpyArray logprobs = read_npy(testing::source_path("examples/data/ctc/logprobs.npy"));
  vocabulary.check_matches(logprobs.shape()[2] - 1, "the CTC sample");
  vocabulary.check_matches(read_npy(testing::source_path("examples/data/real/logprobs.npy")).shape()[2] - 1,
                           "the real CTC sample");
  for (const std::string sample : {"rnnt", "tdt", "real"}) {
    const SafetensorsFile file(testing::source_path("examples/data/" + sample + "/model.safetensors"));
    EXPECT_EQ(file.metadata().at("model_type"), sample == "tdt" ? "tdt" : "rnnt");
    vocabulary.check_matches(std::stoll(file.metadata().at("vocab_size")), sample);
  }
}

}  // namespace
}  // namespace asrdec

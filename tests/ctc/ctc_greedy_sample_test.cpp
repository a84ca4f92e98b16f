// The shipped CTC sample decoded by the library must give exactly what the sample generator's own (NumPy)
// greedy decoder recorded in expected_greedy.jsonl: a cross-implementation check on realistic data.

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

void check_sample(Device device) {
  const std::string dir = testing::source_path("examples/data/ctc/");
  const NpyArray logprobs = read_npy(dir + "logprobs.npy");
  const NpyArray lengths = read_npy(dir + "lengths.npy");
  const std::vector<Expected> expected = load_expected(dir + "expected_greedy.jsonl");
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

TEST(CtcGreedySample, CpuReproducesTheGeneratorsGreedyOutput) { check_sample(Device::cpu()); }

TEST(CtcGreedySampleCUDA, CudaReproducesTheGeneratorsGreedyOutput) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  check_sample(Device::cuda(0));
}

TEST(SampleData, TokenTableMatchesTheModels) {
  const Vocabulary vocabulary = Vocabulary::load(testing::source_path("examples/data/tokens.txt"));
  const NpyArray logprobs = read_npy(testing::source_path("examples/data/ctc/logprobs.npy"));
  vocabulary.check_matches(logprobs.shape()[2] - 1, "the CTC sample");
  for (const char* model : {"rnnt", "tdt"}) {
    const SafetensorsFile file(testing::source_path(std::string("examples/data/") + model + "/model.safetensors"));
    EXPECT_EQ(file.metadata().at("model_type"), model);
    vocabulary.check_matches(std::stoll(file.metadata().at("vocab_size")), model);
  }
}

}  // namespace
}  // namespace asrdec

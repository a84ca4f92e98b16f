#include "common/transducer_models.hpp"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>

namespace asrdec::bench {

std::string models_dir() {
  const char* dir = std::getenv("ASRDEC_BENCH_MODELS");
  return dir != nullptr ? dir : "bench-models";
}

const Source& source(const std::string& kind) {
  static std::map<std::string, Source> cache;
  auto found = cache.find(kind);
  if (found == cache.end()) {
    const std::string dir = models_dir() + "/" + kind + "/";
    found = cache.emplace(kind, Source{read_npy(dir + "enc_proj.npy"), read_npy(dir + "lengths.npy")}).first;
  }
  return found->second;
}

const TransducerModel& model(const std::string& kind, Device device) {
  static std::map<std::pair<std::string, std::string>, std::unique_ptr<TransducerModel>> cache;
  auto& slot = cache[{kind, device.to_string()}];
  if (!slot) {
    slot = std::make_unique<TransducerModel>(
        TransducerModel::load(models_dir() + "/" + kind + "/model.safetensors", device));
  }
  return *slot;
}

std::vector<float> tiled_input(const Source& s, std::int64_t batch, std::int64_t frames) {
  const std::int64_t N = s.enc.shape()[0], T = s.enc.shape()[1], J = s.enc.shape()[2];
  const auto length = [&](std::int64_t u) {
    return s.lengths.dtype() == DType::i32 ? std::int64_t{s.lengths.data_as<std::int32_t>()[u]}
                                           : s.lengths.data_as<std::int64_t>()[u];
  };
  std::vector<float> out(static_cast<std::size_t>(batch * frames * J));
  for (std::int64_t b = 0; b < batch; ++b) {
    std::int64_t t = 0;
    for (std::int64_t u = b; t < frames; ++u) {
      const std::int64_t utterance = u % N;
      const std::int64_t take = std::min(length(utterance), frames - t);
      const float* from = s.enc.data_as<float>() + utterance * T * J;
      std::copy(from, from + take * J, out.data() + (b * frames + t) * J);
      t += take;
    }
  }
  return out;
}

std::string missing_models_reason(const std::string& kind) {
  if (std::filesystem::exists(models_dir() + "/" + kind + "/model.safetensors")) return "";
  return "no benchmark models in " + models_dir() + ": run `python3 -m tools.sample_data --bench-models " +
         models_dir() + "`";
}

std::shared_ptr<const NgramLm> bench_lm(std::int64_t vocab, Device device) {
  NgramLmOptions options;
  options.vocab_size = vocab;
  return std::make_shared<const NgramLm>(NgramLm::load(
      std::string(ASRDEC_SOURCE_DIR) + "/tests/data/arpa/kjv_tokens_6gram_v1024.arpa.gz", options, device));
}

}  // namespace asrdec::bench

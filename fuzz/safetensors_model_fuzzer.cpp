// Transducer models and AED Transformer decoders in safetensors files. Oracle beyond "no crash": every tensor of an
// accepted file is viewable inside the file; an accepted transducer decodes a fixed input with label looping exactly
// as the frame-by-frame reference (Algorithm 1), or refuses it as a typed error (a model whose weights overflow the
// joint); an accepted AED decoder searches a fixed input greedily and with beam 2 exactly as the AED search oracle
// asking a fresh session for every prefix, or refuses it as a typed error (scores that overflow to NaN).

#include <memory>
#include <random>
#include <vector>

#include "asrdec/asrdec.hpp"
#include "fuzz_file.hpp"
#include "oracles/aed_search_reference.hpp"
#include "oracles/transducer_greedy_reference.hpp"

namespace {

using asrdec::fuzz::FuzzFile;

void check_tensors(const std::string& path) {
  const asrdec::SafetensorsFile file(path);
  for (const std::string& name : file.names()) {
    try {
      const asrdec::TensorView view = file.tensor(name);
      // Touch the first and last element: an out-of-file view would fault under ASan.
      if (view.numel() > 0) {
        const auto* bytes = static_cast<const volatile unsigned char*>(view.data());
        (void)bytes[0];
        (void)bytes[static_cast<std::size_t>(view.numel()) * asrdec::dtype_size(view.dtype()) - 1];
      }
    } catch (const asrdec::Error&) {
      // dtypes asrdec cannot view, more than kMaxDims dimensions
    }
  }
}

void check_decoding(const asrdec::TransducerModel& model) {
  const std::int64_t J = model.joint_hidden();
  const std::int64_t outputs = model.joint().output_size();
  if (J * outputs > (1 << 20) || J > 4096) return;  // keep each input fast
  const std::int64_t B = 2, T = 4;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<float> enc(static_cast<std::size_t>(B * T * J));
  for (float& v : enc) v = unit(rng);
  const std::vector<std::int32_t> lengths = {4, 3};
  const asrdec::TensorView enc_view(enc.data(), asrdec::DType::f32, {B, T, J});
  const asrdec::TensorView lengths_view(lengths.data(), asrdec::DType::i32, {B});
  std::vector<asrdec::Hypothesis> got;
  try {
    asrdec::TransducerGreedyDecoder decoder(model);
    got = decoder.decode(enc_view, lengths_view);
  } catch (const asrdec::InvalidArgument&) {
    return;  // weights that overflow the joint: refused
  }
  const std::vector<asrdec::Hypothesis> want = asrdec::transducer_greedy_reference(model, enc_view, lengths_view);
  ASRDEC_FUZZ_CHECK(got.size() == want.size());
  for (std::size_t b = 0; b < got.size(); ++b) {
    ASRDEC_FUZZ_CHECK(got[b].tokens == want[b].tokens);
    ASRDEC_FUZZ_CHECK(got[b].timestamps == want[b].timestamps);
    ASRDEC_FUZZ_CHECK(got[b].durations == want[b].durations);
  }
}

void check_aed(const std::shared_ptr<asrdec::TransformerDecoderStep>& step) {
  const std::int64_t V = step->vocab_size(), D = step->model_dim(), E = step->encoder_dim();
  if (V * D > (1 << 16) || D > 256 || E > 256 || step->layers() > 2 || step->max_positions() > 64) return;
  std::vector<std::int32_t> prompt = step->default_prompt();
  if (prompt.empty()) prompt = {0};
  if (static_cast<std::int64_t>(prompt.size()) >= step->max_positions()) return;
  const std::int64_t B = 2, T = 3;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<float> encoder(static_cast<std::size_t>(B * T * E));
  for (float& v : encoder) v = unit(rng);
  const std::vector<std::int64_t> lengths = {3, 1};
  const asrdec::TensorView encoder_view(encoder.data(), asrdec::DType::f32, {B, T, E});
  const asrdec::TensorView lengths_view(lengths.data(), asrdec::DType::i64, {B});
  // The oracle's decoder: a fresh session fed prompt + prefix as its prompt, for every prefix it asks about.
  const auto scorer = [&](std::int64_t u, const std::vector<std::int32_t>& p, const std::vector<std::int32_t>& g) {
    std::vector<std::int32_t> all = p;
    all.insert(all.end(), g.begin(), g.end());
    const asrdec::TensorView one(encoder.data() + u * T * E, asrdec::DType::f32, {1, T, E});
    std::vector<float> scores(static_cast<std::size_t>(V));
    step->start_session(1)->start(one, &lengths[static_cast<std::size_t>(u)], {all}, scores.data(), nullptr);
    return scores;
  };
  for (const asrdec::AedSearch search : {asrdec::AedSearch::greedy, asrdec::AedSearch::beam}) {
    asrdec::AedDecoderConfig config;
    config.search = search;
    config.beam_size = 2;
    config.eos_id = step->eos_id().value_or(0);
    config.max_new_tokens = 4;
    std::vector<std::vector<asrdec::Hypothesis>> got;
    try {
      got = asrdec::AedDecoder(step, config).decode_nbest(encoder_view, lengths_view, {prompt});
    } catch (const asrdec::InvalidArgument&) {
      return;  // weights whose scores overflow: refused
    }
    const auto want = asrdec::aed_search_reference(scorer, lengths, {prompt}, step->max_positions(), config);
    ASRDEC_FUZZ_CHECK(got.size() == want.size());
    for (std::size_t b = 0; b < got.size(); ++b) {
      ASRDEC_FUZZ_CHECK(got[b].size() == want[b].size());
      for (std::size_t k = 0; k < got[b].size(); ++k) ASRDEC_FUZZ_CHECK(got[b][k].tokens == want[b][k].tokens);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static FuzzFile input("model.safetensors");
  const std::string& path = input.write(data, size);
  try {
    check_tensors(path);
  } catch (const asrdec::Error&) {
    return 0;  // not a safetensors file
  }
  try {
    check_decoding(asrdec::TransducerModel::load(path, asrdec::Device::cpu()));
  } catch (const asrdec::Error&) {
    // a safetensors file that is not a transducer model
  }
  try {
    check_aed(asrdec::TransformerDecoderStep::load(path));
  } catch (const asrdec::Error&) {
    // nor an AED decoder
  }
  return 0;
}

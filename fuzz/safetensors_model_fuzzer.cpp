// Transducer models in safetensors files. Oracle beyond "no crash": every tensor of an accepted file is viewable
// inside the file, and an accepted model decodes a fixed input with label looping exactly as the frame-by-frame
// reference (Algorithm 1), or refuses it as a typed error (a model whose weights overflow the joint).

#include <random>
#include <vector>

#include "asrdec/asrdec.hpp"
#include "fuzz_file.hpp"
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
      // dtypes asrdec cannot view, misaligned tensors
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
  return 0;
}

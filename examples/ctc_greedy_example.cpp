// Greedy CTC decoding with asrdec: load log-probabilities and lengths from .npy files, decode a batch on the
// GPU (or the CPU), print the transcripts.
//
//   ctc_greedy_example logprobs.npy lengths.npy tokens.txt [cpu|cuda]

#include <cstdio>
#include <string>

#include "asrdec/asrdec.hpp"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s logprobs.npy lengths.npy tokens.txt [cpu|cuda]\n", argv[0]);
    return 2;
  }
  try {
    const asrdec::NpyArray logprobs = asrdec::read_npy(argv[1]);  // [B, T, V+1]
    const asrdec::NpyArray lengths = asrdec::read_npy(argv[2]);   // [B]
    const asrdec::Vocabulary vocabulary = asrdec::Vocabulary::load(argv[3]);
    const std::string where = argc > 4 ? argv[4] : "cpu";
    const asrdec::Device device = asrdec::Device::parse(where);

    // An engine normally already holds the log-probabilities on the GPU; here they are copied there first.
    asrdec::Stream stream(device);
    asrdec::TensorView input = logprobs.view();
    asrdec::DeviceBuffer<std::byte> on_device;
    if (device.is_cuda()) {
      on_device = asrdec::DeviceBuffer<std::byte>(logprobs.bytes(), device);
      asrdec::copy_bytes_async(on_device.data(), device, logprobs.data(), asrdec::Device::cpu(), logprobs.bytes(),
                               stream.handle());
      input = asrdec::TensorView(on_device.data(), logprobs.dtype(),
                                 {logprobs.shape()[0], logprobs.shape()[1], logprobs.shape()[2]}, device);
    }

    asrdec::CtcGreedyDecoder decoder(device);  // blank = last column, CUDA graphs when available
    const std::vector<asrdec::Hypothesis> hypotheses = decoder.decode(input, lengths.view(), stream.handle());
    for (std::size_t i = 0; i < hypotheses.size(); ++i) {
      std::printf("%zu: %s  (score %.2f)\n", i, vocabulary.detokenize(hypotheses[i].tokens).c_str(),
                  hypotheses[i].score);
    }
  } catch (const asrdec::Error& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
  return 0;
}

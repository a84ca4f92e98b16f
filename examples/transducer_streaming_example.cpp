// Streaming greedy transducer decoding: the engine hands over a chunk of encoder frames of every utterance as it
// arrives; the decoder keeps each utterance's state (predictor state, last label, frames so far) between calls.
// Concatenating the chunks' outputs gives exactly the whole-utterance result.
//
//   transducer_streaming_example model.safetensors enc_proj.npy lengths.npy tokens.txt [chunk_frames] [cpu|cuda]

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "example_support.hpp"

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s model.safetensors enc_proj.npy lengths.npy tokens.txt [chunk_frames] [cpu|cuda]\n",
                 argv[0]);
    return 2;
  }
  try {
    const std::int64_t chunk = argc > 5 ? std::max(1, std::atoi(argv[5])) : 8;
    const asrdec::Device device = asrdec::Device::parse(argc > 6 ? argv[6] : "cpu");
    const asrdec::TransducerModel model = asrdec::TransducerModel::load(argv[1], device);
    const asrdec::NpyArray enc_proj = asrdec::read_npy(argv[2]);  // [B, T, J] float32
    const asrdec::NpyArray lengths = asrdec::read_npy(argv[3]);   // [B] int32
    const asrdec::Vocabulary vocabulary = asrdec::Vocabulary::load(argv[4]);
    if (enc_proj.dtype() != asrdec::DType::f32 || lengths.dtype() != asrdec::DType::i32) {
      std::fprintf(stderr, "this example reads float32 enc_proj and int32 lengths\n");
      return 2;
    }
    const std::int64_t B = enc_proj.shape()[0], T = enc_proj.shape()[1], J = enc_proj.shape()[2];
    const auto* frames = static_cast<const float*>(enc_proj.data());
    const auto* length = static_cast<const std::int32_t*>(lengths.data());

    asrdec::Stream stream(device);
    asrdec::TransducerGreedyDecoder decoder(model);  // label looping
    asrdec::TransducerStream state = decoder.start_stream(B, stream.handle());
    std::vector<asrdec::Hypothesis> streamed(static_cast<std::size_t>(B));
    std::vector<float> piece(static_cast<std::size_t>(B * chunk * J));
    std::vector<std::int32_t> piece_lengths(static_cast<std::size_t>(B));
    asrdec::DeviceBuffer<float> on_device;
    if (device.is_cuda()) on_device = asrdec::DeviceBuffer<float>(piece.size(), device);
    for (std::int64_t start = 0; start < T; start += chunk) {
      // The next `chunk` frames of every utterance (fewer, or none, near its end).
      for (std::int64_t b = 0; b < B; ++b) {
        const std::int64_t n = std::clamp<std::int64_t>(length[b] - start, 0, chunk);
        piece_lengths[static_cast<std::size_t>(b)] = static_cast<std::int32_t>(n);
        std::memcpy(piece.data() + b * chunk * J, frames + (b * T + start) * J, sizeof(float) * n * J);
      }
      asrdec::TensorView view(piece.data(), asrdec::DType::f32, {B, chunk, J});
      if (device.is_cuda()) {
        asrdec::copy_bytes_async(on_device.data(), device, piece.data(), asrdec::Device::cpu(),
                                 piece.size() * sizeof(float), stream.handle());
        view = asrdec::TensorView(on_device.data(), asrdec::DType::f32, {B, chunk, J}, device);
      }
      const auto partial = decoder.decode_chunk(
          state, view, asrdec::TensorView(piece_lengths.data(), asrdec::DType::i32, {B}), stream.handle());
      for (std::int64_t b = 0; b < B; ++b) {  // append the labels found in this chunk (timestamps are absolute)
        asrdec::Hypothesis& h = streamed[static_cast<std::size_t>(b)];
        const asrdec::Hypothesis& p = partial[static_cast<std::size_t>(b)];
        h.tokens.insert(h.tokens.end(), p.tokens.begin(), p.tokens.end());
        h.timestamps.insert(h.timestamps.end(), p.timestamps.begin(), p.timestamps.end());
        h.durations.insert(h.durations.end(), p.durations.begin(), p.durations.end());
        h.score += p.score;
        h.am_score += p.am_score;
      }
      if (start == 0)
        std::printf("after %lld frames: 0: %s\n", static_cast<long long>(chunk),
                    vocabulary.detokenize(streamed[0].tokens).c_str());
    }
    // The same utterances decoded whole, for comparison.
    const example::OnDevice whole_input = example::place(enc_proj, device, stream.handle());
    const auto whole = decoder.decode(whole_input.view, lengths.view(), stream.handle());
    std::int64_t same = 0;
    for (std::int64_t b = 0; b < B; ++b) {
      example::print_result(static_cast<std::size_t>(b), streamed[static_cast<std::size_t>(b)], vocabulary);
      same += streamed[static_cast<std::size_t>(b)].tokens == whole[static_cast<std::size_t>(b)].tokens ? 1 : 0;
    }
    std::printf("streamed in chunks of %lld frames: %lld of %lld transcripts equal whole-utterance decoding\n",
                static_cast<long long>(chunk), static_cast<long long>(same), static_cast<long long>(B));
    return same == B ? 0 : 1;
  } catch (const asrdec::Error& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
}
